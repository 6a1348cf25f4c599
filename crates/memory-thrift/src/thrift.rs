//! [`Thrift`]: fit a history into the budget without calling a model.

use memory_core::covered::{self, Covered, Expanded};
use memory_core::is_shrunk_from;
use memory_core::{
    Budget, History, MemoryError, Message, TokenCounter, TrimResult, TrimStrategy, structure,
};

use std::sync::Arc;

use crate::memo::{Memo, State};
use crate::replay::KeptState;
use crate::scoring::Relevance;
use crate::settings::{
    DEFAULT_LOOP_RECENCY_WEIGHT, DEFAULT_LOW_WATERMARK, DEFAULT_RECENCY_WEIGHT, Settings,
};
use crate::shed::ShedTarget;
use crate::shrink_cache::ShrinkCache;
use crate::trace::ThriftTrace;
use crate::{calls, observation, reach};

/// Sheds the lowest-signal content first until the history fits, and never
/// calls a model. A projection: storage keeps everything.
///
/// A history within the budget is returned unchanged, byte for byte.
/// Otherwise these stages run in order, each only while the total is still
/// over the token limit, each oldest first:
///
/// 1. the **reasoning** of earlier steps is removed (the newest step's
///    stays);
/// 2. **long tool outputs** (over
///    [`max_tool_output_tokens`](Thrift::with_max_tool_output_tokens)) are
///    cut to their head and tail around a marker line
///    (see [`cut`](crate::cut)); the newest step's last, and to the same
///    length as the earlier ones, so that it reads the same once it is no
///    longer the newest. A text-only agent's observations (a user
///    message of text right after a step that wrote its command in its
///    text, as a function tag or a closing fenced block of shell) are its tool
///    outputs and are cut alike, the newest last;
/// 3. **earlier tool results** are replaced by a short
///    [placeholder](crate::placeholder) that keeps their `tool_call_id`:
///    all of earlier rounds, and of the newest round all but the newest
///    [`keep_recent_results`](Thrift::with_keep_recent_results) or more:
///    the boundary moves back `keep_recent_results` results at a time, and
///    the newest round's results are replaced in batches of that many
///    (counted from the round's start), so that an agent loop rewrites its
///    prompt's prefix once per batch rather than once per turn (the newest
///    result is never replaced);
/// 4. **image and pass-through blocks** of earlier user messages are
///    replaced by text placeholders, where the counter prices them higher;
/// 5. **rounds and steps are dropped**, whole: the candidates are the
///    earlier rounds, the steps of the newest round before its newest step
///    and the steps before the first user message. The tokens left beside
///    the floor go first to the steps of the newest round, newest first,
///    as long as they fit (so only its oldest steps are dropped, and what
///    is dropped only grows as the round does); then to the candidates
///    most [relevant](crate::relevance) to the current question (plus a
///    recency bonus, [larger](Thrift::with_loop_recency_weight) in a
///    text-only agent's loop; the least relevant and then the oldest go
///    first). A question that names a month ("in January 2022") also
///    finds the turns said in it, when the chat is dated by time markers
///    (short system messages naming a month and year, such as
///    "Session 3: 8 May, 2023"), whatever their words.
///    What is kept keeps its original order. An earlier round too large
///    to keep whole keeps its request and its newest steps that fit, when
///    any do. A rounds limit is honoured here.
/// 6. As a last resort, the **floor's tool outputs** (the newest step's,
///    and those of a protected message's step) are cut, head and tail, to
///    the longest length that fits.
///
/// The floor is never shed: protected messages and summaries (never even
/// changed; the [task](memory_core::structure::task) among them unless the
/// history forgot it), the current question and the newest step. When it does not
/// fit even after the last resort, the result is as small as Thrift can
/// make it and says `fits: false`.
///
/// Counts of changed messages are recounted with the counter given.
///
/// Cuts are sticky, so that the provider's prefix cache survives. Inside
/// the newest round (an agent loop working on one question), the context
/// shown at each call is the one shown at the call before with the new
/// step appended, as long as that fits (with the new step's long outputs
/// cut, if that is what makes it fit; see [`trace`](ThriftTrace::appended));
/// when it does not, the history is shed afresh down to the
/// [low watermark](Thrift::with_low_watermark), leaving room for the next
/// steps to append. This is replayed from the history itself, so the same
/// history always gives the same context; to bound that work on very long
/// rounds, the replay starts afresh (and sheds) at every 32nd call of a
/// round. A new question is answered with
/// a fresh choice for it, shed down to a level that moves in fixed steps
/// of the budget's share above the watermark (down to the budget itself
/// when the question reaches into a summary's covered span, whose covered
/// turns compete for every token). A tool-calling agent's steps after a
/// summary see the covered turns like their other older turns: kept by
/// relevance and recency, appended to while the new steps fit, shed to the
/// low watermark when they do not; a chat's remarks and a text-only
/// agent's observations go on from the summary. Every stage, the drop
/// stage included, aims at the one target.
///
/// A newest round far longer than the budget (an agent loop of thousands
/// of steps) is not shrunk step by step only to be dropped: its older
/// steps that no shed can keep (those before the newest steps that hold
/// more than the budget, each as small as the stages can make it) are left
/// out before the stages run, so that a shed costs about what it keeps.
/// The result is the one a pass over every step gives (that pass is made
/// whenever skipping could change it); the trace counts the skipped steps
/// as steps dropped, at their tokens as they were, and not in the stages
/// that would have shrunk them first.
///
/// ```
/// use memory_core::{Budget, CharTokenCounter, Message, ToolCall, TrimStrategy};
/// use memory_thrift::Thrift;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let history = vec![
///     Message::system("You are a coding agent."),
///     Message::user("Why does the build fail?"),
///     Message::assistant_with_tools("", vec![ToolCall::new("c1", "shell", r#"{"cmd":"cargo build"}"#)]),
///     Message::tool_result("c1", "Compiling...\n".repeat(300)),
///     Message::assistant_with_tools("", vec![ToolCall::new("c2", "read", r#"{"path":"lib.rs"}"#)]),
///     Message::tool_result("c2", "pub fn parse() {}"),
/// ];
/// let thrift = Thrift::new().with_keep_recent_results(1);
/// let result = thrift.trim(&history, &Budget::tokens(100), &CharTokenCounter).await.unwrap();
/// assert!(result.fits && !result.replace);
/// assert_eq!(result.messages.len(), history.len()); // nothing dropped...
/// assert!(result.messages[3].text().starts_with("[earlier tool result omitted")); // ...one result replaced
/// assert!(memory_core::validate(&result.messages).is_empty());
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct Thrift {
    /// What it is set to.
    pub(crate) settings: Settings,
    /// What is kept from call to call (it depends on the settings: each
    /// builder method starts a new one).
    pub(crate) memo: Memo,
}

impl Thrift {
    /// Thrift with the defaults: watermark 0.8, the newest 3 results kept,
    /// tool outputs over 1,024 tokens cut, recency weight 0.02 (0.2 in a
    /// text-only agent's loop).
    ///
    /// ```
    /// let thrift = memory_thrift::Thrift::new();
    /// assert_eq!(thrift.low_watermark(), 0.8);
    /// assert_eq!(thrift.keep_recent_results(), 3);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Once Thrift has to shed, it sheds down to about `share` of the token
    /// budget (0 to 1; default 0.8), so that the next turns only append
    /// until the budget is crossed again: inside a round down to the
    /// watermark itself, for a new question to a level that moves in steps
    /// of the budget's share above it. 1 sheds exactly what each turn's
    /// excess demands (the cut then moves on every turn).
    ///
    /// ```
    /// let thrift = memory_thrift::Thrift::new().with_low_watermark(0.6);
    /// assert_eq!(thrift.low_watermark(), 0.6);
    /// assert_eq!(memory_thrift::Thrift::new().with_low_watermark(3.0).low_watermark(), 1.0);
    /// ```
    pub fn with_low_watermark(mut self, share: f32) -> Self {
        self.settings.low_watermark = if share.is_nan() {
            DEFAULT_LOW_WATERMARK
        } else {
            share.clamp(0.0, 1.0)
        };
        self.memo = Memo::default();
        self
    }

    /// Of the newest round's tool results, the newest `count` are never
    /// replaced by placeholders (default 3; the newest one never is, even
    /// with 0).
    ///
    /// ```
    /// let thrift = memory_thrift::Thrift::new().with_keep_recent_results(5);
    /// assert_eq!(thrift.keep_recent_results(), 5);
    /// ```
    pub fn with_keep_recent_results(mut self, count: usize) -> Self {
        self.settings.keep_recent_results = count;
        self.memo = Memo::default();
        self
    }

    /// Earlier tool outputs longer than `tokens` are cut to about that many
    /// tokens, head and tail (default 1,024).
    ///
    /// ```
    /// let thrift = memory_thrift::Thrift::new().with_max_tool_output_tokens(256);
    /// assert_eq!(thrift.max_tool_output_tokens(), 256);
    /// ```
    pub fn with_max_tool_output_tokens(mut self, tokens: usize) -> Self {
        self.settings.max_tool_output_tokens = tokens;
        self.memo = Memo::default();
        self
    }

    /// How much recency counts beside relevance when choosing the rounds
    /// and steps to keep: the newest candidate gets `weight` added to its
    /// relevance score (in 0 to 1), older ones proportionally less
    /// (default 0.02; 0 lets recency only break ties).
    ///
    /// ```
    /// let thrift = memory_thrift::Thrift::new().with_recency_weight(0.0);
    /// assert_eq!(thrift.recency_weight(), 0.0);
    /// ```
    pub fn with_recency_weight(mut self, weight: f32) -> Self {
        self.settings.recency_weight = weight_or(weight, DEFAULT_RECENCY_WEIGHT);
        self.memo = Memo::default();
        self
    }

    /// How much recency counts in a text-only agent's loop, in place of
    /// [`recency_weight`](Thrift::with_recency_weight), when the current
    /// question is such an agent's observation (a user message right
    /// after a step that wrote its command in its text): its earlier steps
    /// are then the candidates, and what the next step needs is mostly in
    /// the newest of them (default 0.2).
    ///
    /// ```
    /// let thrift = memory_thrift::Thrift::new().with_loop_recency_weight(0.5);
    /// assert_eq!(thrift.loop_recency_weight(), 0.5);
    /// ```
    pub fn with_loop_recency_weight(mut self, weight: f32) -> Self {
        self.settings.loop_recency_weight = weight_or(weight, DEFAULT_LOOP_RECENCY_WEIGHT);
        self.memo = Memo::default();
        self
    }

    /// How older units are scored against the current question (default
    /// [`Lexical`](crate::Lexical): no model, no network).
    ///
    /// ```
    /// use memory_thrift::{Lexical, Thrift};
    /// assert_eq!(Thrift::new().with_relevance(Lexical).relevance().name(), "lexical");
    /// ```
    pub fn with_relevance(mut self, relevance: impl Relevance + 'static) -> Self {
        self.settings.relevance = Arc::new(relevance);
        self.memo = Memo::default();
        self
    }

    /// The relevance scorer.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().relevance().name(), "lexical");
    /// ```
    pub fn relevance(&self) -> &dyn Relevance {
        &*self.settings.relevance
    }

    /// The low watermark, a share of the budget.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().low_watermark(), memory_thrift::DEFAULT_LOW_WATERMARK);
    /// ```
    pub fn low_watermark(&self) -> f32 {
        self.settings.low_watermark
    }

    /// How many of the newest round's results are never replaced.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().with_keep_recent_results(0).keep_recent_results(), 0);
    /// ```
    pub fn keep_recent_results(&self) -> usize {
        self.settings.keep_recent_results
    }

    /// The length above which earlier tool outputs are cut, in tokens.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().max_tool_output_tokens(), 1024);
    /// ```
    pub fn max_tool_output_tokens(&self) -> usize {
        self.settings.max_tool_output_tokens
    }

    /// The weight of recency beside relevance.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().recency_weight(), 0.02);
    /// ```
    pub fn recency_weight(&self) -> f32 {
        self.settings.recency_weight
    }

    /// The weight of recency in a text-only agent's loop.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().loop_recency_weight(), 0.2);
    /// ```
    pub fn loop_recency_weight(&self) -> f32 {
        self.settings.loop_recency_weight
    }

    /// Trims `history` like [`trim_with_counts`](TrimStrategy::trim_with_counts)
    /// and says what each stage shed.
    ///
    /// # Errors
    ///
    /// Counting errors of `counter` (it counts the messages Thrift changes).
    ///
    /// ```
    /// use memory_core::{count_messages, Budget, CharTokenCounter, History, Message};
    /// use memory_thrift::Thrift;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let messages: Vec<Message> = (0..10)
    ///     .flat_map(|i| [Message::user(format!("question {i}")), Message::assistant(format!("answer {i}"))])
    ///     .collect();
    /// let counts = count_messages(&CharTokenCounter, &messages).await.unwrap();
    /// let history = History::new(&messages, &counts).unwrap();
    /// let (result, trace) = Thrift::new()
    ///     .trim_traced(&history, &Budget::tokens(20), &CharTokenCounter)
    ///     .await
    ///     .unwrap();
    /// assert!(result.tokens() <= 20);
    /// assert!(trace.rounds_dropped.shed() > 0);
    /// assert_eq!(trace.tokens_after, result.tokens());
    /// # });
    /// ```
    pub async fn trim_traced(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<(TrimResult, ThriftTrace), MemoryError> {
        // Covered messages compete for the budget like any older turn,
        // where they stand: after the summary that stands for them, when a
        // question asked since the summary may need them, and while a
        // tool-calling agent's steps go on after it: see `unfolding`. Under
        // a rounds limit, which keeps the newest rounds, they stay folded.
        let aim = match budget.round_limit() {
            Some(_) => None,
            None => unfolding(history),
        };
        let expanded = aim.and_then(|_| Expanded::of_reusing(history, self.memo.take_expanded()));
        let (Some(aim), Some(expanded)) = (aim, expanded) else {
            let (mut result, trace) = self
                .trim_view(history, budget, ShedTarget::StickyLevel, counter)
                .await?;
            // A covered set without a summary to stand beside: none shown.
            result.covered = Covered::default();
            return Ok((result, trace));
        };
        let whole = expanded.history();
        // A question that reaches into the covered span is answered from
        // the whole budget: the covered turns it needs compete with the
        // summary and the recent turns for every token there is. A round's
        // steps are appended while they fit and shed to the low watermark
        // when they do not, like any round's steps.
        let (result, mut trace) = self.trim_view(&whole, budget, aim, counter).await?;
        trace.covered_shown = covered_shown(&expanded, &result);
        self.memo.keep_expanded(expanded);
        Ok((result, trace))
    }

    /// [`trim_traced`](Thrift::trim_traced) of a history whose covered
    /// messages, if any, are in place; a new question's fresh choice aims
    /// at `fresh`.
    async fn trim_view(
        &self,
        history: &History<'_>,
        budget: &Budget,
        fresh: ShedTarget,
        counter: &dyn TokenCounter,
    ) -> Result<(TrimResult, ThriftTrace), MemoryError> {
        // What earlier calls kept of this history's messages, brought up
        // to date (see `Memo`).
        let mut lent = self.memo.lend();
        let mut own = ShrinkCache::kept();
        let (seen, shrunk, resume) = match lent.state() {
            Some(state) => {
                state.sync(history, counter);
                let State {
                    seen,
                    resume,
                    shrunk,
                } = state;
                (Some(seen), shrunk, Some(resume))
            }
            None => (None, &mut own, None),
        };
        if budget.max_tokens.is_none() || budget.admits_tokens(history.total()) {
            return self
                .settings
                .shed(history, budget, fresh, counter, shrunk, seen)
                .await;
        }
        // Nothing to settle before the first call.
        let points = match seen.as_deref() {
            Some(seen) => seen.replay_points(history.len()),
            None => calls::replay_points(history.messages()),
        };
        let Some(points) = points.filter(|points| points.len() >= 2) else {
            return self
                .settings
                .shed(history, budget, fresh, counter, shrunk, seen)
                .await;
        };
        let kept = KeptState {
            seen,
            shrunk,
            resume,
        };
        self.settings
            .replay(history, budget, fresh, counter, &points, kept)
            .await
    }
}

/// `weight`, at least 0; `default` for NaN.
fn weight_or(weight: f32, default: f32) -> f32 {
    if weight.is_nan() {
        default
    } else {
        weight.max(0.0)
    }
}

/// Whether the covered messages of `history`'s summary are unfolded, and
/// where the choice among them then aims: the whole budget for a question
/// asked since the summary ([`asks_anew`]), the low watermark for a
/// tool-calling agent's step (the view ends with a tool result); none
/// without a summary's covered set.
///
/// A tool-calling agent's steps unfold them, whichever round they belong
/// to: its next step may need a file read or an output from before the
/// summary. A round begun after the summary by a request that does not
/// ask anew (a long instruction) is shown folded at that request and
/// unfolded from its first step, one cache break more; on the
/// SWE-Gym trajectories unfolding there too costs less overall (at 4,000
/// tokens 2,079 per call and 0.900 support recall, against 2,174 and 0.881
/// with such rounds folded). A text-only agent's observations stay
/// folded: a long one would fold what a short one unfolded, a cache break
/// each time.
fn unfolding(history: &History<'_>) -> Option<ShedTarget> {
    let anchor = covered::anchor(history)?;
    let messages = history.messages();
    if asks_anew(history, anchor, structure::current_question(messages)) {
        return Some(ShedTarget::WholeBudget);
    }
    matches!(messages.last(), Some(Message::ToolResult { .. })).then_some(ShedTarget::LowWatermark)
}

/// Whether the view's current question (`question`) came after its
/// summary's covered set (standing before `anchor`) and may ask about it:
/// a user message short enough (at most [`reach::MAX_QUESTION_TOKENS`])
/// not to be a pasted file or a long output, and not a text-only agent's
/// observation (the output of the command its step wrote, however short),
/// which goes on from the summary like a tool-calling agent's results.
/// Unlike a reach-back, it needs no question mark: in a chat every such
/// message is answered from the expanded view, so that the calls in a row
/// see the same view (on LoCoMo at 2,000 tokens, requiring the mark here
/// left `compact,thrift` 0.042 evidence recall instead of 0.798).
fn asks_anew(history: &History<'_>, anchor: usize, question: Option<usize>) -> bool {
    let messages = history.messages();
    question.is_some_and(|q| {
        q >= anchor
            && history.counts()[q] <= reach::MAX_QUESTION_TOKENS
            && !observation::is_observation(messages, q)
    })
}

/// Covered messages shown in `result` (as they are, or shrunk): its
/// messages between those from before the covered set (the view's head, up
/// to the summary and the protected messages after it) and those from after
/// it. The choice keeps the expanded history's order, so the covered ones
/// stand together there; the messages after them are matched from the end
/// against the view's messages after the set, each as it is or shrunk.
/// Both ends are short (the head, and the turns a compaction keeps), so the
/// count costs no walk through the covered set, which grows with the
/// session: matching each shown message forward through the covered set
/// walked all of it on every call (the first message after the set is
/// looked for to its end), a quarter of the time of a `compact,thrift` call
/// late in a chat of 16,106 messages.
fn covered_shown(expanded: &Expanded, result: &TrimResult) -> usize {
    let whole = expanded.history();
    let range = expanded.covered_range();
    let before = &whole.messages()[..range.start];
    let after = &whole.messages()[range.end..];
    let shown = &result.messages;
    let head = shown.iter().take_while(|m| before.contains(m)).count();
    let mut rest = after.len();
    let mut tail = 0;
    for m in shown[head..].iter().rev() {
        match after[..rest]
            .iter()
            .rposition(|a| m == a || is_shrunk_from(a, m))
        {
            Some(k) => {
                rest = k;
                tail += 1;
            }
            None => break,
        }
    }
    shown.len() - head - tail
}

#[async_trait::async_trait]
impl TrimStrategy for Thrift {
    fn name(&self) -> &str {
        "thrift"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let (mut result, trace) = self.trim_traced(history, budget, counter).await?;
        // The trace travels with the result, for whoever runs the trim.
        result.diagnostics.push("thrift", trace);
        Ok(result)
    }
}
