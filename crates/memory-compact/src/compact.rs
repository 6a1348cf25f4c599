//! [`Compact`]: the strategy, its builder and its getters. It holds
//! [`Settings`](crate::settings) (fixed once built) and a
//! [`CompactState`](crate::compact_state) (the state that changes), and
//! hands each turn to [foreground](crate::foreground) or
//! [background](crate::background) compaction.

use std::sync::Arc;
use std::time::Duration;

use memory_core::covered;
use memory_core::{
    Budget, History, MemoryError, ModelOptions, Provider, TokenCounter, TrimResult, TrimStrategy,
};

use crate::background::Background;
use crate::compact_state::CompactState;
use crate::foreground::Foreground;
use crate::settings::{Mode, Settings};
use crate::{BackgroundStatus, CompactEvents, CompactHook, CompactObserver, FileOps, body};
use memory_summary_engine::SummarySettings;
use memory_summary_engine::cap::{self, CapTooSmall};

/// Keeps the newest turns verbatim and folds the older history into one
/// rolling summary, made by a model, once it has grown past a threshold.
///
/// **Turns.** In the newest round (the current request) each step is a
/// turn; before it each whole round is one. The newest
/// [`keep_verbatim`](Compact::with_keep_verbatim) turns (default 2) and the
/// current question stay as they are, so an agent loop keeps its newest
/// steps and a chat its newest exchanges. Protected messages (with their
/// steps; the [task](memory_core::structure::task), the session's first
/// request, among them unless the history forgot it), the leading system
/// messages and other strategies' summaries stay in place, verbatim. The cut falls between steps only: a tool call never
/// loses its results.
///
/// **When.** Under a token budget, by default, a summary is made on a call
/// where a cut is due (the fit would not be the previous call's with the
/// new messages appended, so the prompt's prefix changes on this call
/// anyway), once the messages older than the kept turns, and not yet
/// summarized, hold at least
/// [`DEFAULT_DEPTH_RATIO`](crate::DEFAULT_DEPTH_RATIO) of the budget, and
/// when the compacted history leaves room for the kept turns once more,
/// so that the new prefix lasts for several calls, and is smaller than
/// the fit (behind a large turn the fit may keep less than the summary
/// and the kept turns would: the summary would then buy no room);
/// otherwise the fit sheds the oldest turns from view that time. A threshold set with
/// [`with_summarize_at_tokens`](Compact::with_summarize_at_tokens) (and,
/// without a token budget, its default of 2,500) summarizes as soon as that
/// material passes it, and under pressure at the smaller of it and the
/// depth. One request folds that material, together with the previous
/// summary, into one new summary, which replaces them (the result
/// materializes: `replace: true`; a memory keeps what it replaced readable).
/// Until then they stay verbatim or are shed from view only, never
/// replaced: nothing is summarized on turns that do not call for it. Under
/// a token budget, the summary cap and the request's input limit follow the
/// budget unless set (a twelfth and a quarter of it, within bounds; the cap at
/// most half the room the protected messages leave). When the
/// newest round is itself cut (a long agent task), its older steps are
/// summarized by a second request of their own, and the custom instructions
/// reach both. Paths read and modified by tool calls are listed at the end
/// of the summary and carried from one summary to the next.
///
/// **Failure.** A failed call, or a reply that is cut off, refused, empty,
/// not an assistant message, or asks for tools, replaces nothing: the
/// history is returned as it is, or, over the budget, with its oldest
/// history dropped from view by [`WindowDrop`](memory_window::WindowDrop)
/// (a projection; storage keeps everything). The next attempt waits until
/// the older material has grown by the threshold again; a view shown
/// meanwhile, trimmed again or gone on from, waits until the threshold has
/// been appended since the failure, so trimming that view again changes
/// nothing.
///
/// **Fit.** When the compacted history still exceeds the budget, the view is
/// `WindowDrop`'s projection of it (the summary is protected), and the
/// compacted history is what is stored
/// ([`TrimResult::to_store`]). For the tightest fit, run
/// `Compact` upstream of a subtractive stage such as thrift:
/// `Pipeline::new().then(compact).then(thrift)`.
///
/// **Covered originals.** The messages a summary replaces stay within reach
/// of later stages as the result's [`covered`](TrimResult::covered) set
/// (the newest of them, up to [`memory_core::covered::horizon`]): a stage
/// such as thrift may show again, verbatim, the covered turns the current
/// question needs, while `compact,window` shows the summary and the recent
/// turns only. See [`memory_core::covered`].
///
/// **Background mode** ([`with_background`](Compact::with_background)): the
/// request starts off the hot path where the foreground would summarize
/// (past [`trigger_ratio`](Compact::with_trigger_ratio) of the token
/// budget), and is spliced in at a later call whose fit moves, if the
/// messages it summarized are unchanged; meanwhile (and without a tokio
/// runtime) the turn is fitted by `WindowDrop`'s projection. See
/// [`with_background`](Compact::with_background).
///
/// ```
/// use std::sync::Arc;
/// use memory_compact::{Compact, EventLog};
/// use memory_core::{summary, FakeProvider, FakeReply, Memory, Message};
/// use memory_session::WindowMemory;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = Arc::new(FakeProvider::new([FakeReply::Text("## Goals\nRename the fields.".into())]));
/// let log = Arc::new(EventLog::new());
/// let compact = Compact::new(model.clone())
///     .with_summarize_at_tokens(20)
///     .with_observer(log.clone());
/// // Without an index of the turns the summary covers (see `with_index`).
/// let mut memory = WindowMemory::new(1_000).with_strategy(compact).with_index(None);
/// memory.record_protected(Message::system("You are a coding agent.")).await.unwrap();
/// for i in 1..=4 {
///     memory.record(Message::user(format!("Rename field_{i} in src/model.rs, please."))).await.unwrap();
///     memory.record(Message::assistant(format!("Renamed field_{i}; its serde name and the tests that use it are unchanged."))).await.unwrap();
/// }
/// let context = memory.context().await.unwrap();
/// // The system prompt, the task (the first request) verbatim, the summary
/// // of the rest of rounds 1 and 2, rounds 3 and 4 verbatim.
/// assert_eq!(context.len(), 7);
/// assert_eq!(context[1], Message::user("Rename field_1 in src/model.rs, please."));
/// assert!(summary::is_summary(&context[2]));
/// assert_eq!(context[3], Message::user("Rename field_3 in src/model.rs, please."));
/// assert_eq!(model.requests().len(), 1);
/// assert_eq!(log.cost().calls, 1);
/// # });
/// ```
pub struct Compact {
    settings: Arc<Settings>,
    state: CompactState,
}

impl std::fmt::Debug for Compact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compact")
            .field("settings", &self.settings)
            .field("status", &self.background_status())
            .finish_non_exhaustive()
    }
}

impl Compact {
    /// Compaction with `provider` as the summarizer, in the foreground, with
    /// the defaults.
    ///
    /// ```
    /// let compact = memory_compact::Compact::new(memory_core::FakeProvider::default());
    /// assert_eq!(compact.keep_verbatim(), 2);
    /// assert_eq!(compact.summarize_at_tokens(), 2_500);
    /// ```
    pub fn new(provider: impl Provider + 'static) -> Self {
        Self::from_arc(Arc::new(provider))
    }

    /// Compaction with a shared provider.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use memory_core::Provider;
    /// let provider: Arc<dyn Provider> = Arc::new(memory_core::FakeProvider::default());
    /// let compact = memory_compact::Compact::from_arc(provider);
    /// assert!(!compact.is_background());
    /// ```
    pub fn from_arc(provider: Arc<dyn Provider>) -> Self {
        Self {
            settings: Arc::new(Settings::new(provider)),
            state: CompactState::default(),
        }
    }

    /// Compaction in background mode (see
    /// [`with_background`](Compact::with_background)).
    ///
    /// ```
    /// let compact = memory_compact::Compact::background(memory_core::FakeProvider::default());
    /// assert!(compact.is_background());
    /// ```
    pub fn background(provider: impl Provider + 'static) -> Self {
        Self::new(provider).with_background(true)
    }

    /// Changes the settings while building.
    fn set(mut self, change: impl FnOnce(&mut Settings)) -> Self {
        change(Arc::make_mut(&mut self.settings));
        self
    }

    /// Keeps the newest `turns` turns verbatim (0 is taken as 1: the newest
    /// step is always kept).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_keep_verbatim(4);
    /// assert_eq!(c.keep_verbatim(), 4);
    /// ```
    pub fn with_keep_verbatim(self, turns: usize) -> Self {
        self.set(|s| s.set_keep_verbatim(turns))
    }

    /// Summarizes once the older, not yet summarized messages hold more than
    /// `tokens` tokens, within the budget or not (without it, a summary
    /// waits for a cut under a token budget; see **When** above). Over the
    /// budget the summary comes at the smaller of `tokens` and the depth.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_summarize_at_tokens(1_000);
    /// assert_eq!(c.summarize_at_tokens(), 1_000);
    /// ```
    pub fn with_summarize_at_tokens(self, tokens: usize) -> Self {
        self.set(|s| s.set_summarize_at_tokens(tokens))
    }

    /// The cap on a summary, in tokens (default
    /// [`DEFAULT_SUMMARY_MAX_TOKENS`](crate::DEFAULT_SUMMARY_MAX_TOKENS)):
    /// sent as each request's `max_tokens` (whatever
    /// [`with_options`](Compact::with_options) says), and a reply cut off
    /// there is rejected, never used. Compact keeps no room for the summary
    /// in the budget; a summary that would push what may never be shed over
    /// the budget is refused instead ([`Failure::TooLarge`](crate::Failure::TooLarge)).
    ///
    /// # Errors
    ///
    /// [`CapTooSmall`] when the cap cannot hold the summary message's own
    /// framing ([`body::HEADER`](crate::body::HEADER), the summary
    /// prefix and the line naming what it stands for): no summary could
    /// ever be accepted.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_summary_max_tokens(2_000)
    ///     .unwrap();
    /// assert_eq!(c.summary_max_tokens(), 2_000);
    /// let err = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_summary_max_tokens(20)
    ///     .unwrap_err();
    /// assert_eq!((err.cap, err.framing), (20, 35));
    /// ```
    pub fn with_summary_max_tokens(self, tokens: u32) -> Result<Self, CapTooSmall> {
        let summary = self
            .settings
            .summary()
            .clone()
            .with_summary_max_tokens(tokens);
        self.with_summary(summary)
    }

    /// Takes the shared summary settings whole ([`SummarySettings`]: cap,
    /// input limit, prompt, options, grounding, rejection observer). A cap
    /// or input limit left unset follows the budget; a prompt left unset is
    /// [`DEFAULT_COMPACT_PROMPT`](crate::DEFAULT_COMPACT_PROMPT).
    ///
    /// # Errors
    ///
    /// [`CapTooSmall`] when the cap cannot hold the summary message's own
    /// framing, naming both numbers.
    ///
    /// ```
    /// use memory_summary_engine::{NoGrounding, SummarySettings};
    /// let settings = SummarySettings::new().with_max_input_tokens(6_000).with_grounding(NoGrounding);
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_summary(settings)
    ///     .unwrap();
    /// assert_eq!(c.max_input_tokens(), 6_000);
    /// ```
    pub fn with_summary(self, summary: SummarySettings) -> Result<Self, CapTooSmall> {
        if let Some(tokens) = summary.summary_max_tokens() {
            cap::check_cap(tokens, cap::framing_estimate(&body::framing()))?;
        }
        Ok(self.set(|s| s.set_summary(summary)))
    }

    /// The shared summary settings as given (unset ones are this
    /// strategy's defaults; the getters resolve them).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default());
    /// assert_eq!(c.summary().summary_max_tokens(), None);
    /// ```
    pub fn summary(&self) -> &SummarySettings {
        self.settings.summary()
    }

    /// Changes the shared summary settings with `change`.
    fn set_summary(self, change: impl FnOnce(SummarySettings) -> SummarySettings) -> Self {
        let summary = change(self.settings.summary().clone());
        self.set(|s| s.set_summary(summary))
    }

    /// Replaces the summarizer's prompt
    /// ([`DEFAULT_COMPACT_PROMPT`](crate::DEFAULT_COMPACT_PROMPT)).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_prompt("Summarize tersely. Keep exact paths.");
    /// assert!(c.prompt().starts_with("Summarize tersely"));
    /// ```
    pub fn with_prompt(self, prompt: impl Into<String>) -> Self {
        let prompt = prompt.into();
        self.set_summary(|s| s.with_prompt(prompt))
    }

    /// Custom instructions added to every summary request (both requests of
    /// a split turn).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_instructions("Record every failing test by name.");
    /// # let _ = c;
    /// ```
    pub fn with_instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.set(|s| s.set_instructions(instructions))
    }

    /// Options for every summary request: headers (a gateway's route or
    /// tenant), sampling, extra body fields. Without a temperature, the one
    /// in force is kept (summaries are asked for at
    /// [`DEFAULT_SUMMARY_TEMPERATURE`](memory_core::summary::DEFAULT_SUMMARY_TEMPERATURE),
    /// 0, unless set); `max_tokens` is replaced by the summary cap
    /// ([`with_summary_max_tokens`](Compact::with_summary_max_tokens)).
    ///
    /// ```
    /// let mut options = memory_core::ModelOptions::default();
    /// options.headers.insert("x-tenant".into(), "acme".into());
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_options(options);
    /// assert_eq!(c.options().headers["x-tenant"], "acme");
    /// assert_eq!(c.options().temperature, Some(0.0));
    /// ```
    pub fn with_options(self, options: ModelOptions) -> Self {
        self.set_summary(|s| s.with_options(options))
    }

    /// Samples summaries at `temperature`; `None` sends none, leaving the
    /// endpoint's default (as `SummarizeStrategy::with_temperature`).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_temperature(0.3);
    /// assert_eq!(c.options().temperature, Some(0.3));
    /// ```
    pub fn with_temperature(self, temperature: impl Into<Option<f32>>) -> Self {
        let temperature = temperature.into();
        self.set_summary(|s| s.with_temperature(temperature))
    }

    /// Limits one request's input (prompt, previous summary, instructions
    /// and transcript) to `tokens` of the strategy's counter (default
    /// [`DEFAULT_MAX_INPUT_TOKENS`](crate::DEFAULT_MAX_INPUT_TOKENS)): past
    /// it, each message of the transcript longer than its share is
    /// shortened in the middle. Set it below the summarizer's context
    /// window less the summary cap.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_max_input_tokens(6_000);
    /// assert_eq!(c.max_input_tokens(), 6_000);
    /// ```
    pub fn with_max_input_tokens(self, tokens: usize) -> Self {
        self.set_summary(|s| s.with_max_input_tokens(tokens))
    }

    /// Background mode: summaries are made off the hot path.
    ///
    /// - On a call where the foreground would summarize, the request is
    ///   spawned on the current tokio runtime; `trim` never waits for it.
    ///   That is a call past [`trigger_ratio`](Compact::with_trigger_ratio)
    ///   of the token budget (default 0.6) whose older, not yet summarized
    ///   messages pass [`summarize_at_tokens`](Compact::with_summarize_at_tokens)
    ///   when it is set, or, over the budget with the window's cut due,
    ///   hold as much as the foreground folds (three quarters of the
    ///   budget, or that threshold when smaller) and leave a compacted
    ///   history with room for the turns it keeps and one more step like
    ///   the newest (the summary lands later than the foreground's).
    /// - When the budget is crossed, the fit would move and the summary is
    ///   ready, it is spliced in, only if the messages it summarized (and
    ///   all before them) are unchanged, byte for byte; a stale summary is
    ///   discarded (and reported). A cut-off, refused or empty summary is
    ///   never spliced.
    /// - Each attempt has a timeout (default 120 s) and retryable failures are
    ///   tried again (default 3 times, backoff from 1 s, doubling); the
    ///   [status](Compact::background_status) is idle again however the task
    ///   ends (a panic included).
    /// - While the summary is pending, or without a tokio runtime, a crossed
    ///   budget is met by `WindowDrop`'s projection, which leaves storage,
    ///   and so the pending summary, intact.
    /// - Dropping the strategy cancels the request.
    ///
    /// The task uses tokio's timers: the runtime needs them enabled.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_background(true);
    /// assert!(c.is_background());
    /// ```
    pub fn with_background(self, background: bool) -> Self {
        let mode = if background {
            Mode::Background
        } else {
            Mode::Foreground
        };
        self.set(|s| s.set_mode(mode))
    }

    /// Share of the token budget past which background mode may start a
    /// summary where the foreground would (without a threshold set,
    /// [`with_summarize_at_tokens`](Compact::with_summarize_at_tokens),
    /// that is over the budget anyway, so the ratio decides only with
    /// one), clamped to 0.05..=1.0 (a value that is not a number is taken
    /// as the default).
    ///
    /// ```
    /// let c = memory_compact::Compact::background(memory_core::FakeProvider::default())
    ///     .with_trigger_ratio(0.5);
    /// assert_eq!(c.trigger_ratio(), 0.5);
    /// ```
    pub fn with_trigger_ratio(self, ratio: f32) -> Self {
        self.set(|s| s.set_trigger_ratio(ratio))
    }

    /// Limits how long one attempt may take. Background mode uses
    /// [`DEFAULT_TIMEOUT`](crate::DEFAULT_TIMEOUT) unless this is set; in
    /// the foreground there is no limit unless this is set. Applies only
    /// inside a tokio runtime (with timers enabled).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_timeout(std::time::Duration::from_secs(30));
    /// # let _ = c;
    /// ```
    pub fn with_timeout(self, timeout: Duration) -> Self {
        self.set(|s| s.set_timeout(timeout))
    }

    /// How often a request is tried again after a retryable failure
    /// (network, timeout, rate limit, server error). Background mode uses
    /// [`DEFAULT_RETRIES`](crate::DEFAULT_RETRIES) unless this is set; in
    /// the foreground a failed request is not retried on the turn's
    /// critical path unless this is set (the next threshold crossing tries
    /// again).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_retries(1);
    /// # let _ = c;
    /// ```
    pub fn with_retries(self, retries: u32) -> Self {
        self.set(|s| s.set_retries(retries))
    }

    /// Wait before the first retry (default 1 s), doubled for each further
    /// one; a rate limit's own delay is used when the provider gives one.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_backoff(std::time::Duration::from_millis(200));
    /// # let _ = c;
    /// ```
    pub fn with_backoff(self, backoff: Duration) -> Self {
        self.set(|s| s.set_backoff(backoff))
    }

    /// Reports every compaction's events and cost to `observer` (they are
    /// also logged through `tracing`, target `memory_compact`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let log = Arc::new(memory_compact::EventLog::new());
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_observer(log);
    /// # let _ = c;
    /// ```
    pub fn with_observer(self, observer: Arc<dyn CompactObserver>) -> Self {
        self.set(|s| s.set_observer(observer))
    }

    /// Runs `hook` before every compaction: it may let it go ahead, decline
    /// it, or supply the summary.
    ///
    /// ```
    /// use memory_compact::{Compact, HookDecision, Preparation};
    /// let c = Compact::new(memory_core::FakeProvider::default())
    ///     .with_before_compaction(|_: &Preparation| HookDecision::Decline);
    /// # let _ = c;
    /// ```
    pub fn with_before_compaction(self, hook: impl CompactHook + 'static) -> Self {
        let hook: Arc<dyn CompactHook> = Arc::new(hook);
        self.set(|s| s.set_hook(hook))
    }

    /// Turns kept verbatim.
    ///
    /// ```
    /// assert_eq!(memory_compact::Compact::new(memory_core::FakeProvider::default()).keep_verbatim(), 2);
    /// ```
    pub fn keep_verbatim(&self) -> usize {
        self.settings.keep_verbatim()
    }

    /// The summary threshold, in tokens.
    ///
    /// ```
    /// assert_eq!(memory_compact::Compact::new(memory_core::FakeProvider::default()).summarize_at_tokens(), 2_500);
    /// ```
    pub fn summarize_at_tokens(&self) -> usize {
        self.settings.summarize_at_tokens()
    }

    /// The cap on a summary, in tokens.
    ///
    /// ```
    /// assert_eq!(memory_compact::Compact::new(memory_core::FakeProvider::default()).summary_max_tokens(), 1_024);
    /// ```
    pub fn summary_max_tokens(&self) -> u32 {
        self.settings.summary_max_tokens()
    }

    /// The limit on one request's input, in tokens.
    ///
    /// ```
    /// assert_eq!(memory_compact::Compact::new(memory_core::FakeProvider::default()).max_input_tokens(), 12_000);
    /// ```
    pub fn max_input_tokens(&self) -> usize {
        self.settings.max_input_tokens()
    }

    /// The summarizer's prompt.
    ///
    /// ```
    /// use memory_compact::{Compact, DEFAULT_COMPACT_PROMPT};
    /// assert_eq!(Compact::new(memory_core::FakeProvider::default()).prompt(), DEFAULT_COMPACT_PROMPT);
    /// ```
    pub fn prompt(&self) -> &str {
        self.settings.prompt()
    }

    /// The options every request carries (its `max_tokens` is the summary
    /// cap when sent).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default());
    /// assert_eq!(c.options().temperature, Some(0.0));
    /// ```
    pub fn options(&self) -> &ModelOptions {
        self.settings.options()
    }

    /// Whether background mode is on.
    ///
    /// ```
    /// assert!(!memory_compact::Compact::new(memory_core::FakeProvider::default()).is_background());
    /// ```
    pub fn is_background(&self) -> bool {
        self.settings.mode() == Mode::Background
    }

    /// The background trigger ratio.
    ///
    /// ```
    /// assert_eq!(memory_compact::Compact::new(memory_core::FakeProvider::default()).trigger_ratio(), 0.6);
    /// ```
    pub fn trigger_ratio(&self) -> f32 {
        self.settings.trigger_ratio()
    }

    /// The files listed in the last summary this strategy made (empty before
    /// the first).
    ///
    /// ```
    /// assert!(memory_compact::Compact::new(memory_core::FakeProvider::default()).file_ops().is_empty());
    /// ```
    pub fn file_ops(&self) -> FileOps {
        self.state.summary_state().files()
    }

    /// Where the background summary stands.
    ///
    /// ```
    /// use memory_compact::{BackgroundStatus, Compact};
    /// assert_eq!(Compact::new(memory_core::FakeProvider::default()).background_status(), BackgroundStatus::Idle);
    /// ```
    pub fn background_status(&self) -> BackgroundStatus {
        self.state.background_summary().status()
    }

    /// Compacts `history` now, whatever its size, adding `instructions` to
    /// the standing ones, and waits for the summary (in background mode
    /// too). The newest turns are kept as usual.
    ///
    /// Returns the compacted history, materializing (`replace: true`), to be
    /// written back as a [`Memory`](memory_core::Memory) does; or, when there
    /// is nothing to summarize, a hook declines, or the summary fails or is
    /// rejected, the history unchanged (`replace: false`, and an event says
    /// why). No budget applies: trim the result to fit one.
    ///
    /// # Errors
    ///
    /// Counting the summary failed.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use memory_compact::Compact;
    /// use memory_core::{summary, CharTokenCounter, FakeProvider, FakeReply, History, Message};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let model = Arc::new(FakeProvider::new([FakeReply::Text("## Goals\nA CSV parser.".into())]));
    /// let compact = Compact::new(model.clone()).with_keep_verbatim(1);
    /// let messages = [
    ///     Message::user("Write a CSV parser."),
    ///     Message::assistant("Done: src/csv.rs."),
    ///     Message::user("Add tests."),
    ///     Message::assistant("Added tests/csv.rs."),
    ///     Message::user("Add quoting."),
    /// ];
    /// // Keeping one turn: the question and the round before it.
    /// let counts = [50, 50, 3, 5, 3];
    /// let history = History::new(&messages, &counts).unwrap();
    /// let result = compact
    ///     .compact_now(&history, &CharTokenCounter, Some("Name every file."))
    ///     .await
    ///     .unwrap();
    /// assert!(result.replace);
    /// // The task stays verbatim; the summary takes its reply's place.
    /// assert_eq!(result.messages[0], messages[0]);
    /// assert!(summary::is_summary(&result.messages[1]));
    /// assert_eq!(result.messages[2..], messages[2..]);
    /// assert!(model.requests()[0].messages[1].text().contains("Name every file."));
    /// # });
    /// ```
    pub async fn compact_now(
        &self,
        history: &History<'_>,
        counter: &dyn TokenCounter,
        instructions: Option<&str>,
    ) -> Result<TrimResult, MemoryError> {
        Foreground::new(&self.settings, self.state.summary_state())
            .compact_now(history, counter, instructions)
            .await
    }
}

#[async_trait::async_trait]
impl TrimStrategy for Compact {
    fn name(&self) -> &str {
        "compact"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let mut result = match self.settings.mode() {
            Mode::Foreground => {
                Foreground::new(&self.settings, self.state.summary_state())
                    .trim(history, budget, counter)
                    .await?
            }
            Mode::Background => {
                Background::new(&self.settings, &self.state)
                    .trim(history, budget, counter)
                    .await?
            }
        };
        // What the summaries stand for stays within reach, up to the horizon.
        let horizon = covered::horizon(budget);
        result.covered = result.covered.within(horizon);
        if let Some(stored) = result.write_back.as_mut() {
            stored.covered = stored.covered.within(horizon);
        }
        // What happened since the previous trim (summaries started, landed
        // in the background, failed), for whoever runs the trim.
        result
            .diagnostics
            .push("compact", CompactEvents(self.settings.take_events()));
        Ok(result)
    }
}
