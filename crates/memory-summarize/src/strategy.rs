//! [`SummarizeStrategy`]: older history folded into one summary by a model.

use std::fmt;
use std::sync::Arc;

use memory_core::covered;
use memory_core::{
    Budget, History, MemoryError, Message, ModelOptions, Provider, ProviderError, Selection,
    TokenCounter, TrimResult, TrimStrategy, summary,
};
use memory_layer::{BreakerPolicy, CircuitBreaker};
use memory_summary_engine::cap::{self, CapTooSmall};
use memory_summary_engine::split::OverflowCap;
use memory_summary_engine::{Rejection, SummarySettings, render};
use memory_window::WindowDrop;

use crate::DEFAULT_SUMMARY_MAX_TOKENS;
use crate::fold::{Fold, FoldError};
use crate::plan::{Plan, plan};
use crate::prompt::DEFAULT_SUMMARIZE_PROMPT;

/// The default limit on one summarizer call's input (prompt, running
/// summary and transcript), in tokens of the strategy's counter.
///
/// ```
/// assert_eq!(memory_summarize::DEFAULT_MAX_INPUT_TOKENS, 100_000);
/// ```
pub const DEFAULT_MAX_INPUT_TOKENS: usize = 100_000;

/// Summarizes the older history into one summary message when the history
/// exceeds the budget, and keeps the newest verbatim.
///
/// # What is kept, what is summarized
///
/// - A history within the budget (tokens and rounds) is returned unchanged,
///   and no call is made.
/// - The newest rounds stay verbatim: the newest round, then older ones
///   while they fit the budget less the summary reservation
///   ([`with_summary_max_tokens`](Self::with_summary_max_tokens)) and the
///   rounds limit.
/// - When the newest round alone does not fit (an agent working through one
///   long task), its user message and newest steps stay verbatim, whole
///   steps within the budget less the reservation, the newest always; its
///   older steps are summarized with everything before it.
/// - Protected messages stay verbatim where they are, with their steps, and
///   are never sent to the summarizer; the
///   [task](memory_core::structure::task), the session's first user
///   request, is one of them unless the history forgot it. The previous summary is the
///   exception: it is sent with the older history and the new summary
///   replaces it, so summaries merge and are never summarized on their own.
/// - Everything else before the kept part is rendered as a
///   [`transcript`](memory_core::transcript) (reasoning left out; tool
///   calls by name and arguments; tool results; placeholders for images and
///   pass-through blocks; the previous summary marked as such) and sent after the prompt. The reply becomes one
///   [`summary::message_for`] (naming the [handle](memory_core::recall) of
///   the turns it stands for, [`summary::originals`], when the summary
///   with that line stays within its cap and shorter than what it covers),
///   placed where the first summarized message was,
///   and is materialized (`replace: true`). Tool calls and their results
///   are never separated: the cut falls between steps.
///
/// # What a summary call carries
///
/// The options set with [`with_options`](Self::with_options) (headers,
/// temperature, extra fields) travel with every call; `max_tokens` is the
/// summary cap, or the room the budget leaves for the summary when that is
/// less, less what the summary message's prefix costs (the cap holds the
/// whole message). The temperature is 0
/// unless configured ([`with_temperature`](Self::with_temperature)).
/// A transcript larger than [`with_max_input_tokens`](Self::with_max_input_tokens)
/// is summarized in chunks split between steps, each folded into the
/// running summary; a context overflow reported by the summarizer halves
/// the chunks, and the strategy remembers it: later calls are split to the
/// halved size from the start instead of sending a request the endpoint
/// already refused.
///
/// # Failure never destroys history
///
/// A failed call, a reply that is not an assistant message, asks for tools,
/// is blank, did not end normally (cut off at the token limit, refused,
/// failed: see [`accept_reply`](crate::accept_reply)), or says nothing
/// about the transcript it was sent (by default, it shares next to none of
/// its salient terms: [`Rejection::Ungrounded`](crate::Rejection::Ungrounded);
/// the check is [`SummarySettings::with_grounding`]'s to replace or turn
/// off), in any chunk,
/// or a summary message over the cap
/// ([`Rejection::OverCap`](crate::Rejection::OverCap)) or no shorter than
/// the messages it covers
/// ([`Rejection::NotShorter`](crate::Rejection::NotShorter)), counted with
/// the strategy's counter, gives
/// [`WindowDrop`]'s projection instead (the floor, the task included, then
/// the newest history that fits the whole budget): storage is unchanged
/// (`replace: false`), one `warn` is logged, and the next over-budget call
/// tries again. No call is made when there is nothing new to summarize (one
/// round, or only a summary before it) or when the budget leaves no room
/// for a summary; the projection is returned then too.
///
/// A summarizer that is down is not called on every turn: the provider sits
/// behind a [`CircuitBreaker`] ([`BreakerPolicy::default`]: after 3 failed
/// calls in a row, no call for 30 s, then one probe, the wait doubling
/// while probes fail; see
/// [`with_circuit_breaker`](Self::with_circuit_breaker)). Meanwhile every
/// over-budget turn gets the projection at once.
///
/// A summary within its cap that turns out larger than the room left (a
/// newest round that leaves less room than the cap, and a model that
/// overruns its `max_tokens` by the strategy's counter) is still stored, and what is shown is [`WindowDrop`]'s view of the
/// stored history ([`TrimResult::write_back`]); if even that cannot fit,
/// the summary is dropped as above, unless the history's own view is over
/// the budget too and larger (a newest step over the budget by itself,
/// which the floor cut shortens after the strategy: a summary made before
/// it that leaves the step no room is then replaced by one in half the
/// room the protected messages leave).
///
/// ```
/// use std::sync::Arc;
/// use memory_core::{summary, FakeProvider, FakeReply, Memory, Message};
/// use memory_summarize::SummarizeStrategy;
/// use memory_session::WindowMemory;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = Arc::new(FakeProvider::new([FakeReply::Text("Rounds 1-3: setup done.".into())]));
/// // (Without the index of what the context leaves out, which would keep
/// // a twentieth of the budget for itself.)
/// let mut memory = WindowMemory::new(30)
///     .with_strategy(SummarizeStrategy::new(model.clone()))
///     .with_index(None);
/// for i in 1..=4 {
///     memory.record(Message::user(format!("Question from round {i}"))).await.unwrap();
///     memory.record(Message::assistant(format!("Answer from round {i}"))).await.unwrap();
/// }
/// // 44 tokens in a budget of 30: the task (round 1's question) stays,
/// // the rest of rounds 1-3 becomes one summary.
/// let context = memory.context().await.unwrap();
/// assert_eq!(context[0], Message::user("Question from round 1"));
/// assert_eq!(context[1], summary::message("Rounds 1-3: setup done."));
/// assert_eq!(&context[2..], &[Message::user("Question from round 4"), Message::assistant("Answer from round 4")]);
/// assert_eq!(model.requests().len(), 1);
/// # });
/// ```
pub struct SummarizeStrategy {
    provider: CircuitBreaker<Arc<dyn Provider>>,
    summary: SummarySettings,
    /// The most transcript tokens per call since the summarizer reported a
    /// context overflow.
    chunk_cap: OverflowCap,
}

impl fmt::Debug for SummarizeStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummarizeStrategy")
            .field("summary", &self.summary)
            .field("breaker", self.provider.policy())
            .field("chunk_cap", &self.chunk_cap.get())
            .finish_non_exhaustive()
    }
}

impl SummarizeStrategy {
    /// Summarizes with `provider`, the [`DEFAULT_SUMMARIZE_PROMPT`], a summary cap of
    /// [`DEFAULT_SUMMARY_MAX_TOKENS`], an input limit of
    /// [`DEFAULT_MAX_INPUT_TOKENS`], temperature 0, the default grounding
    /// check and the default [`BreakerPolicy`]. Pass an `Arc` to keep a
    /// handle on the provider.
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// let strategy = SummarizeStrategy::new(ExtractiveSummarizer::new());
    /// assert_eq!(strategy.summary_max_tokens(), 1024);
    /// ```
    pub fn new(provider: impl Provider + 'static) -> Self {
        let provider: Arc<dyn Provider> = Arc::new(provider);
        Self {
            provider: CircuitBreaker::new(provider, BreakerPolicy::default()),
            summary: SummarySettings::new(),
            chunk_cap: OverflowCap::new(),
        }
    }

    /// Takes the shared summary settings whole ([`SummarySettings`]: cap,
    /// input limit, prompt, options, grounding, rejection observer); what
    /// they leave unset is this strategy's default.
    ///
    /// # Errors
    ///
    /// [`CapTooSmall`] when the cap cannot hold the summary message's own
    /// framing ([`summary::PREFIX`]), naming both numbers.
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// use memory_summary_engine::{NoGrounding, SummarySettings};
    /// let settings = SummarySettings::new().with_summary_max_tokens(256).with_grounding(NoGrounding);
    /// let strategy = SummarizeStrategy::new(ExtractiveSummarizer::new()).with_summary(settings).unwrap();
    /// assert_eq!(strategy.summary_max_tokens(), 256);
    /// let small = SummarySettings::new().with_summary_max_tokens(7);
    /// let err = SummarizeStrategy::new(ExtractiveSummarizer::new()).with_summary(small).unwrap_err();
    /// assert_eq!((err.cap, err.framing), (7, 7));
    /// ```
    pub fn with_summary(mut self, settings: SummarySettings) -> Result<Self, CapTooSmall> {
        if let Some(tokens) = settings.summary_max_tokens() {
            cap::check_cap(tokens, framing())?;
        }
        self.summary = settings;
        Ok(self)
    }

    /// Replaces the instruction sent before the transcript.
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// let strategy = SummarizeStrategy::new(ExtractiveSummarizer::new())
    ///     .with_prompt("Summarize for a support agent; keep ticket numbers.");
    /// assert!(strategy.prompt().contains("ticket numbers"));
    /// ```
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.summary = self.summary.with_prompt(prompt);
        self
    }

    /// The cap on a summary message, prefix included, in tokens of the
    /// strategy's counter (default [`DEFAULT_SUMMARY_MAX_TOKENS`]): less the
    /// prefix, sent as each call's `max_tokens` (whatever
    /// [`with_options`](Self::with_options) says; less when the budget has
    /// less room), a reply cut off there or a message over it is rejected,
    /// and as much of the budget is kept for the summary: the rounds kept
    /// verbatim fit the budget less this. A smaller cap keeps more history
    /// verbatim.
    ///
    /// # Errors
    ///
    /// [`CapTooSmall`] when the cap cannot hold the summary message's own
    /// framing: no summary could ever be accepted.
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// let strategy = SummarizeStrategy::new(ExtractiveSummarizer::new()).with_summary_max_tokens(256).unwrap();
    /// assert_eq!(strategy.summary_max_tokens(), 256);
    /// let err = SummarizeStrategy::new(ExtractiveSummarizer::new()).with_summary_max_tokens(5).unwrap_err();
    /// assert!(err.to_string().contains("cap of 5 tokens"));
    /// ```
    pub fn with_summary_max_tokens(self, max_tokens: u32) -> Result<Self, CapTooSmall> {
        let settings = self.summary.clone().with_summary_max_tokens(max_tokens);
        self.with_summary(settings)
    }

    /// Limits one call's input (prompt, running summary and transcript) to
    /// `max_tokens` of the strategy's counter; a longer transcript is
    /// summarized in chunks. Set it below the summarizer's context window
    /// less the summary cap.
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// let strategy = SummarizeStrategy::new(ExtractiveSummarizer::new()).with_max_input_tokens(6_000);
    /// assert_eq!(strategy.max_input_tokens(), 6_000);
    /// ```
    pub fn with_max_input_tokens(mut self, max_tokens: usize) -> Self {
        self.summary = self.summary.with_max_input_tokens(max_tokens);
        self
    }

    /// Options for every summarizer call: headers (a gateway's route or
    /// tenant), sampling, extra body fields. The strategy builds its own
    /// requests, so whatever the endpoint needs on every call must be set
    /// here. `max_tokens` is replaced by the summary cap; a `temperature`
    /// left unset keeps the one in force (0 unless
    /// [`with_temperature`](Self::with_temperature) changed it).
    ///
    /// ```
    /// use memory_core::ModelOptions;
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    ///
    /// let mut options = ModelOptions::default();
    /// options.headers.insert("x-tenant".into(), "acme".into());
    /// let strategy = SummarizeStrategy::new(ExtractiveSummarizer::new()).with_options(options);
    /// assert_eq!(strategy.options().headers["x-tenant"], "acme");
    /// assert_eq!(strategy.options().temperature, Some(0.0));
    /// ```
    pub fn with_options(mut self, options: ModelOptions) -> Self {
        self.summary = self.summary.with_options(options);
        self
    }

    /// Samples summaries at `temperature`; `None` sends none, leaving the
    /// endpoint's default (often 0.8 on local servers).
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// let strategy = SummarizeStrategy::new(ExtractiveSummarizer::new());
    /// assert_eq!(strategy.options().temperature, Some(0.0));
    /// let strategy = strategy.with_temperature(0.3);
    /// assert_eq!(strategy.options().temperature, Some(0.3));
    /// assert_eq!(strategy.with_temperature(None).options().temperature, None);
    /// ```
    pub fn with_temperature(mut self, temperature: impl Into<Option<f32>>) -> Self {
        self.summary = self.summary.with_temperature(temperature);
        self
    }

    /// Guards the summarizer with a circuit breaker of `policy` instead of
    /// the default one: after `policy.failures` failed calls in a row, no
    /// call is made for a cool-down and over-budget turns get the
    /// projection at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use memory_layer::BreakerPolicy;
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// let strategy = SummarizeStrategy::new(ExtractiveSummarizer::new())
    ///     .with_circuit_breaker(BreakerPolicy::new(5, Duration::from_secs(60)));
    /// assert_eq!(strategy.circuit_breaker().failures, 5);
    /// ```
    pub fn with_circuit_breaker(mut self, policy: BreakerPolicy) -> Self {
        self.provider = CircuitBreaker::new(self.provider.into_inner(), policy);
        self
    }

    /// The shared summary settings as given (unset ones are this
    /// strategy's defaults; the getters below resolve them).
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// assert_eq!(SummarizeStrategy::new(ExtractiveSummarizer::new()).summary().prompt(), None);
    /// ```
    pub fn summary(&self) -> &SummarySettings {
        &self.summary
    }

    /// The instruction sent before the transcript.
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy, DEFAULT_SUMMARIZE_PROMPT};
    /// assert_eq!(SummarizeStrategy::new(ExtractiveSummarizer::new()).prompt(), DEFAULT_SUMMARIZE_PROMPT);
    /// ```
    pub fn prompt(&self) -> &str {
        self.summary.prompt().unwrap_or(DEFAULT_SUMMARIZE_PROMPT)
    }

    /// The cap on a summary, in tokens (also the room kept for it).
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// assert_eq!(SummarizeStrategy::new(ExtractiveSummarizer::new()).summary_max_tokens(), 1024);
    /// ```
    pub fn summary_max_tokens(&self) -> u32 {
        self.summary
            .summary_max_tokens()
            .unwrap_or(DEFAULT_SUMMARY_MAX_TOKENS)
    }

    /// The limit on one call's input.
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// assert_eq!(SummarizeStrategy::new(ExtractiveSummarizer::new()).max_input_tokens(), 100_000);
    /// ```
    pub fn max_input_tokens(&self) -> usize {
        self.summary
            .max_input_tokens()
            .unwrap_or(DEFAULT_MAX_INPUT_TOKENS)
    }

    /// The options every call carries.
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// assert!(SummarizeStrategy::new(ExtractiveSummarizer::new()).options().headers.is_empty());
    /// ```
    pub fn options(&self) -> &ModelOptions {
        self.summary.options()
    }

    /// The circuit breaker's policy.
    ///
    /// ```
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// assert_eq!(SummarizeStrategy::new(ExtractiveSummarizer::new()).circuit_breaker().failures, 3);
    /// ```
    pub fn circuit_breaker(&self) -> &BreakerPolicy {
        self.provider.policy()
    }

    /// The summary of what `plan` replaces, or why there is none.
    async fn summarize(
        &self,
        history: &History<'_>,
        plan: &Plan,
        max_tokens: u32,
        counter: &dyn TokenCounter,
    ) -> Result<String, FoldError> {
        let parts = render::steps(history.messages(), &plan.summarized);
        Fold {
            provider: &self.provider,
            counter,
            prompt: self.prompt(),
            settings: &self.summary,
            max_tokens,
            max_input_tokens: Some(self.max_input_tokens()),
            chunk_cap: &self.chunk_cap,
        }
        .run(&parts)
        .await
    }
}

#[async_trait::async_trait]
impl TrimStrategy for SummarizeStrategy {
    fn name(&self) -> &str {
        "summarize"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        if history.is_empty() || history.fits(budget) {
            return Ok(TrimResult::unchanged(history, budget));
        }
        let fallback = || WindowDrop::new().window(history, budget);
        let cap = self.summary_max_tokens() as usize;
        let plan = plan(history, budget, cap);
        if !plan.has_new_material(history) {
            return Ok(fallback());
        }
        // What the summary message costs beyond its body: the cap and the
        // room hold the whole message.
        let overhead = counter.count_message(&summary::message("")).await?;
        let room = self.room(history, budget, &plan, overhead);
        let whole = room.min(cap);
        let Some(allowance) = cap::reply_allowance(whole, overhead) else {
            tracing::debug!(
                room,
                cap,
                "the budget or the summary cap leaves no room for a summary; showing the newest history"
            );
            return Ok(fallback());
        };
        let max_tokens = u32::try_from(allowance).unwrap_or(u32::MAX);

        let folded = self.summarize(history, &plan, max_tokens, counter).await;
        let Some(body) = body_of(folded)? else {
            return Ok(fallback());
        };
        let (message, tokens) = self
            .with_originals(history, &plan, &body, room, counter)
            .await?;
        if let Err(rejection) = self.admit(history, &plan, tokens) {
            tracing::warn!(
                %rejection,
                "summary rejected; showing the newest history instead (storage unchanged, retried on the next call over budget)"
            );
            return Ok(fallback());
        }
        let stored = assemble(history, &plan, message, tokens, budget);
        shown(stored, history, budget, tokens, room)
    }
}

/// What is shown of a stored result with a summary: itself when it fits;
/// the window of it (stored as it is) when only that fits; else the
/// window of the history, storage unchanged.
fn shown(
    stored: TrimResult,
    history: &History<'_>,
    budget: &Budget,
    tokens: usize,
    room: usize,
) -> Result<TrimResult, MemoryError> {
    if stored.fits {
        return Ok(stored);
    }
    // The summary overran its room: store it, show the window of it.
    let mut view = WindowDrop::new().window(&stored.as_history()?, budget);
    let without = || WindowDrop::new().window(history, budget);
    // Or a newest step over the budget by itself, for the floor cut to
    // shorten: shown with the new summary when that leaves more room than
    // the history as it was.
    if view.fits || without().tokens() > view.tokens().max(budget.max_tokens.unwrap_or(0)) {
        view.replace = false;
        view.write_back = Some(Box::new(stored));
        return Ok(view);
    }
    tracing::warn!(
        summary_tokens = tokens,
        room,
        "the summary does not fit the budget even with the newest history alone; dropped (storage unchanged)"
    );
    Ok(WindowDrop::new().window(history, budget))
}

impl SummarizeStrategy {
    /// The summary message for `body` of `plan`, and its count: naming
    /// the handle of the turns it stands for ([`summary::originals`]) when
    /// it is admitted so and fits the `room` the kept turns leave, else
    /// without that line (a summary that fills its cap or its room, or a
    /// short history whose summary would not be shorter).
    async fn with_originals(
        &self,
        history: &History<'_>,
        plan: &Plan,
        body: &str,
        room: usize,
        counter: &dyn TokenCounter,
    ) -> Result<(Message, usize), MemoryError> {
        let named = summary::message_for(
            body,
            summary::originals(history.messages(), &plan.summarized),
        );
        let tokens = counter.count_message(&named).await?;
        if tokens <= room && self.admit(history, plan, tokens).is_ok() {
            return Ok((named, tokens));
        }
        let plain = summary::message(body);
        let tokens = counter.count_message(&plain).await?;
        Ok((plain, tokens))
    }

    /// The room for the summary message beside what `plan` keeps under
    /// `budget`. Where that leaves none (`overhead`, the summary's
    /// framing, at most), because the newest step alone fills the budget
    /// (a long output, which the floor cut shortens after the strategy),
    /// beside a summary made before it that is larger than the room below,
    /// and no cap was set: at most half the room the protected messages
    /// leave ([`cap::in_room`]; where that is less than the budget), so
    /// that the step, cut, fits beside the new summary, which is never
    /// shed. (Without a larger summary to replace, a summary would only
    /// take room from the step.) Figure (chars counter; SWE-smith's
    /// trajectories with a fifth of the observations 30,000 characters
    /// long, 2,000 tokens, whose system prompt and task hold 1,550 to
    /// 1,750): the summary made
    /// before such a step (424 tokens) stood, no summary could be made
    /// beside the step, and 4 calls were over the budget with their
    /// protected messages within it; none with this room. Always taking
    /// that room (as Compact does): SWE-Gym's support recall at 2,000
    /// tokens 0.817 -> 0.711.
    fn room(&self, history: &History<'_>, budget: &Budget, plan: &Plan, overhead: usize) -> usize {
        let Some(max) = budget.max_tokens else {
            return usize::MAX;
        };
        let room = max.saturating_sub(plan.kept_tokens);
        if room > overhead || self.summary.summary_max_tokens().is_some() {
            return room;
        }
        let held = cap::held(history);
        let in_room = cap::in_room(self.summary_max_tokens() as usize, max, held);
        if held + in_room >= max || cap::summaries(history) <= in_room {
            return room;
        }
        in_room
    }

    /// Whether a summary message of `tokens` may replace what `plan`
    /// summarizes: within the summary cap, and shorter than the messages it
    /// covers.
    fn admit(&self, history: &History<'_>, plan: &Plan, tokens: usize) -> Result<(), Rejection> {
        cap::within_cap(tokens, self.summary_max_tokens() as usize)?;
        let covered: usize = plan
            .summarized
            .iter()
            .map(|range| history.tokens(range.clone()))
            .sum();
        cap::shorter(tokens, covered)
    }
}

/// Tokens of this strategy's summary framing (an empty summary message),
/// by the character estimate: what a cap must exceed.
fn framing() -> usize {
    cap::framing_estimate(&summary::message(""))
}

/// The summary body a fold made; `None` when it failed (and said so in the
/// log); a counting error is passed on.
fn body_of(folded: Result<String, FoldError>) -> Result<Option<String>, MemoryError> {
    match folded {
        Ok(body) => Ok(Some(body)),
        Err(FoldError::Count(error)) => Err(error),
        Err(FoldError::Provider(error @ ProviderError::CircuitOpen { .. })) => {
            tracing::debug!(%error, "the summarizer is down; showing the newest history");
            Ok(None)
        }
        Err(error) => {
            tracing::warn!(
                %error,
                "summarization failed; showing the newest history instead (storage unchanged, retried on the next call over budget)"
            );
            Ok(None)
        }
    }
}

/// The history with what `plan` summarizes replaced by `summary`, to store.
fn assemble(
    history: &History<'_>,
    plan: &Plan,
    summary: Message,
    tokens: usize,
    budget: &Budget,
) -> TrimResult {
    let at = plan.insert_at();
    let mut selection = Selection::new(history);
    let mut summary = Some(summary);
    for range in &plan.kept {
        if range.start >= at
            && let Some(s) = summary.take()
        {
            selection.push(s, tokens, true);
        }
        selection.keep(range.clone());
    }
    if let Some(s) = summary {
        selection.push(s, tokens, true);
    }
    let fits = budget.admits_tokens(plan.kept_tokens + tokens);
    let mut result = selection.finish(true, fits);
    // What the summary stands for stays within reach, up to the horizon,
    // as a session opened again recovers it from the store.
    result.covered = covered::after_folding(history, &plan.summarized, covered::horizon(budget));
    result
}
