//! [`Thrift`]: fit a history into the budget without calling a model.

use memory_core::covered::{self, Covered, Expanded};
use memory_core::is_shrunk_from;
use memory_core::{
    Budget, History, MemoryError, Message, TokenCounter, TrimResult, TrimStrategy, structure,
};

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::drop_stage::{DropSettings, Scoring, drop_units};
use crate::layout::Layout;
use crate::memo::{Memo, State};
use crate::message_index::MessageIndex;
use crate::resume::{ContextLengths, KeptContext};
use crate::scoring::{Lexical, Relevance};
use crate::shortcuts::Shortcuts;
use crate::shrink_cache::ShrinkCache;
use crate::trace::ThriftTrace;
use crate::working_copy::WorkingCopy;
use crate::{horizon, observation, reach, settle, shrink_stages, sticky};

/// Default [`Thrift::with_low_watermark`]: shed down to 80% of the budget.
///
/// Why: the fifth of the budget left lets the next calls append (and the
/// prompt's prefix stay cached) before the next shed. Figure: none
/// recorded.
///
/// ```
/// assert_eq!(memory_thrift::Thrift::new().low_watermark(), memory_thrift::DEFAULT_LOW_WATERMARK);
/// ```
pub const DEFAULT_LOW_WATERMARK: f32 = 0.8;
/// Default [`Thrift::with_keep_recent_results`]: the newest 3 results of the
/// newest round stay whole.
///
/// Why: an agent's next step mostly reads its last few outputs; the
/// others go 3 at a time, one cache break per batch. Figure: none
/// recorded.
///
/// ```
/// assert_eq!(memory_thrift::DEFAULT_KEEP_RECENT_RESULTS, 3);
/// ```
pub const DEFAULT_KEEP_RECENT_RESULTS: usize = 3;
/// Default [`Thrift::with_max_tool_output_tokens`].
///
/// Why: an output's head and tail (the command's start, the error at its
/// end) say most of what a long log says. Figure: none recorded.
///
/// ```
/// assert_eq!(memory_thrift::Thrift::new().max_tool_output_tokens(), memory_thrift::DEFAULT_MAX_TOOL_OUTPUT_TOKENS);
/// ```
pub const DEFAULT_MAX_TOOL_OUTPUT_TOKENS: usize = 1024;
/// Default [`Thrift::with_recency_weight`].
///
/// Why: in a chat the question decides what is relevant; recency only
/// breaks near ties between units of close relevance. Figure: none
/// recorded.
///
/// ```
/// assert_eq!(memory_thrift::Thrift::new().recency_weight(), memory_thrift::DEFAULT_RECENCY_WEIGHT);
/// ```
pub const DEFAULT_RECENCY_WEIGHT: f32 = 0.02;

/// Default [`Thrift::with_loop_recency_weight`].
///
/// Why: a text-only agent's next step mostly needs its newest steps.
/// Figure: SWE-smith support 0.765 / 0.922 at 4,000 / 8,000 tokens
/// against 0.733 / 0.914 with the chat's 0.02; weights from 0.1 to 0.5
/// gave 0.761-0.767 / 0.914-0.922.
///
/// ```
/// assert_eq!(memory_thrift::Thrift::new().loop_recency_weight(), memory_thrift::DEFAULT_LOOP_RECENCY_WEIGHT);
/// ```
pub const DEFAULT_LOOP_RECENCY_WEIGHT: f32 = 0.2;

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
///    longer the newest. A text-only agent's earlier observations (a user
///    message of text right after a step that wrote its command in its
///    text, as a function tag or a closing fenced block of shell) are its tool
///    outputs and are cut alike;
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
#[derive(Debug, Clone)]
pub struct Thrift {
    low_watermark: f32,
    keep_recent_results: usize,
    max_tool_output_tokens: usize,
    recency_weight: f32,
    loop_recency_weight: f32,
    relevance: Arc<dyn Relevance>,
    /// What is kept from call to call (it depends on the settings above:
    /// each builder method starts a new one).
    pub(crate) memo: Memo,
    /// The work passes save without changing their results.
    pub(crate) shortcuts: Shortcuts,
}

impl Default for Thrift {
    fn default() -> Self {
        Self {
            low_watermark: DEFAULT_LOW_WATERMARK,
            keep_recent_results: DEFAULT_KEEP_RECENT_RESULTS,
            max_tool_output_tokens: DEFAULT_MAX_TOOL_OUTPUT_TOKENS,
            recency_weight: DEFAULT_RECENCY_WEIGHT,
            loop_recency_weight: DEFAULT_LOOP_RECENCY_WEIGHT,
            relevance: Arc::new(Lexical),
            memo: Memo::default(),
            shortcuts: Shortcuts::default(),
        }
    }
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
        self.low_watermark = if share.is_nan() {
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
        self.keep_recent_results = count;
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
        self.max_tool_output_tokens = tokens;
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
        self.recency_weight = weight_or(weight, DEFAULT_RECENCY_WEIGHT);
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
        self.loop_recency_weight = weight_or(weight, DEFAULT_LOOP_RECENCY_WEIGHT);
        self.memo = Memo::default();
        self
    }

    /// How older units are scored against the current question (default
    /// [`Lexical`]: no model, no network).
    ///
    /// ```
    /// use memory_thrift::{Lexical, Thrift};
    /// assert_eq!(Thrift::new().with_relevance(Lexical).relevance().name(), "lexical");
    /// ```
    pub fn with_relevance(mut self, relevance: impl Relevance + 'static) -> Self {
        self.relevance = Arc::new(relevance);
        self.memo = Memo::default();
        self
    }

    /// The relevance scorer.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().relevance().name(), "lexical");
    /// ```
    pub fn relevance(&self) -> &dyn Relevance {
        &*self.relevance
    }

    /// The low watermark, a share of the budget.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().low_watermark(), memory_thrift::DEFAULT_LOW_WATERMARK);
    /// ```
    pub fn low_watermark(&self) -> f32 {
        self.low_watermark
    }

    /// How many of the newest round's results are never replaced.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().with_keep_recent_results(0).keep_recent_results(), 0);
    /// ```
    pub fn keep_recent_results(&self) -> usize {
        self.keep_recent_results
    }

    /// The length above which earlier tool outputs are cut, in tokens.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().max_tool_output_tokens(), 1024);
    /// ```
    pub fn max_tool_output_tokens(&self) -> usize {
        self.max_tool_output_tokens
    }

    /// The weight of recency beside relevance.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().recency_weight(), 0.02);
    /// ```
    pub fn recency_weight(&self) -> f32 {
        self.recency_weight
    }

    /// The weight of recency in a text-only agent's loop.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Thrift::new().loop_recency_weight(), 0.2);
    /// ```
    pub fn loop_recency_weight(&self) -> f32 {
        self.loop_recency_weight
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
                .shed(history, budget, fresh, counter, shrunk, seen)
                .await;
        }
        // Nothing to settle before the first call.
        let points = match seen.as_deref() {
            Some(seen) => seen.replay_points(history.len()),
            None => settle::replay_points(history.messages()),
        };
        let Some(points) = points.filter(|points| points.len() >= 2) else {
            return self
                .shed(history, budget, fresh, counter, shrunk, seen)
                .await;
        };
        let kept = KeptState {
            seen,
            shrunk,
            resume,
        };
        self.replay(history, budget, fresh, counter, &points, kept)
            .await
    }

    /// The calls of `history` at `points` replayed (see `settle`): each
    /// sees its history as it was until the first over the budget; from
    /// there on, each appends to the one before while that fits, and
    /// sheds afresh when it does not.
    ///
    /// Even when the newest step's floor is over the budget as it is, the
    /// replay decides: the step may fit appended with its long outputs
    /// cut, as it was shown. When nothing fits, the last call sheds the
    /// whole history afresh (and says it does not fit), and so does
    /// trimming that result again: no append can fit beside a floor over
    /// the budget.
    async fn replay(
        &self,
        history: &History<'_>,
        budget: &Budget,
        fresh: ShedTarget,
        counter: &dyn TokenCounter,
        points: &settle::Points,
        kept: KeptState<'_>,
    ) -> Result<(TrimResult, ThriftTrace), MemoryError> {
        let KeptState {
            mut seen,
            shrunk,
            mut resume,
        } = kept;
        let last = points.len() - 1;
        // The replay starts at the last multiple of its span (see
        // `settle`); the calls before it are not looked at.
        let start = points.start();
        let totals = seen_totals(seen.as_deref(), history, points, start);
        let total = |k: usize| totals[k - start];
        let from = starting_call(budget, start..last + 1, total);
        let aim = fresh.at_call(from);
        // The replay of an earlier trim of the same prefix, when there is
        // one, is taken up where it stopped.
        let resumed = resume
            .as_deref_mut()
            .and_then(|resume| resume.take(budget, start, from..last + 1, points));
        let (begin, result, trace) = match resumed {
            Some(found) => found,
            None => {
                let prefix = settle::prefix(history, points[from], total(from))?;
                let index = seen.as_deref_mut();
                let (result, trace) = self
                    .shed(&prefix, budget, aim, counter, shrunk, index)
                    .await?;
                (from, result, trace)
            }
        };
        let mut replay = Replay {
            history,
            budget,
            fresh,
            counter,
            max: budget.max_tokens.unwrap_or(usize::MAX),
            seen,
            shrunk,
            result,
            trace,
            before_last: None,
        };
        for k in begin + 1..=last {
            replay
                .call(self, points[k - 1]..points[k], k, total(k), k == last)
                .await?;
        }
        Ok(replay.close(resume, start, points, last))
    }

    /// Sheds `history` afresh, aiming at `aim`: one pass of every stage,
    /// repeated while the floor does not fit and a pass still changes
    /// something.
    async fn shed(
        &self,
        history: &History<'_>,
        budget: &Budget,
        aim: ShedTarget,
        counter: &dyn TokenCounter,
        shrunk: &mut ShrinkCache,
        index: Option<&mut MessageIndex>,
    ) -> Result<(TrimResult, ThriftTrace), MemoryError> {
        let (mut result, mut trace) = self
            .pass(history, budget, aim, counter, shrunk, index)
            .await?;
        // When even the floor does not fit, a pass over a result that lost
        // whole steps can see a different newest round (fewer results, so
        // other recent ones) and shed more. Passes repeat until one changes
        // nothing, so that trimming the result again is a no-op too. Each
        // pass only sheds, so this ends; the bound is a guard.
        for _ in 0..MAX_PASSES {
            if result.fits {
                break;
            }
            let (next, next_trace) = {
                // Another history: its indices name other messages.
                let again = result.as_history()?;
                let mut fresh = ShrinkCache::once();
                self.pass(&again, budget, aim, counter, &mut fresh, None)
                    .await?
            };
            if next.messages == result.messages {
                break;
            }
            trace.absorb(&next_trace);
            result = next;
        }
        Ok(finish(result, trace))
    }

    /// One pass of every stage: first with the older steps of a long
    /// newest round skipped (see [`horizon`](crate::horizon)), again over
    /// every step when skipping them could change what it gives.
    async fn pass(
        &self,
        history: &History<'_>,
        budget: &Budget,
        aim: ShedTarget,
        counter: &dyn TokenCounter,
        shrunk: &mut ShrinkCache,
        mut index: Option<&mut MessageIndex>,
    ) -> Result<(TrimResult, ThriftTrace), MemoryError> {
        let mut skip = self.shortcuts.skip_long_round;
        loop {
            let index = index.as_deref_mut();
            let passed = self
                .pass_once(history, budget, aim, counter, shrunk, index, skip)
                .await?;
            if let Some(passed) = passed {
                return Ok(passed);
            }
            self.shortcuts.skips.redone.fetch_add(1, Ordering::Relaxed);
            skip = false;
        }
    }

    /// One pass of every stage, skipping the older steps of a long newest
    /// round when `skip`; `None` when they were skipped and that could
    /// change what the pass gives.
    #[allow(clippy::too_many_arguments)]
    async fn pass_once(
        &self,
        history: &History<'_>,
        budget: &Budget,
        aim: ShedTarget,
        counter: &dyn TokenCounter,
        shrunk: &mut ShrinkCache,
        index: Option<&mut MessageIndex>,
        skip: bool,
    ) -> Result<Option<(TrimResult, ThriftTrace)>, MemoryError> {
        let mut trace = ThriftTrace::of(history, budget);
        if history.is_empty() || history.fits(budget) {
            let result = TrimResult::unchanged(history, budget);
            trace.floor_tokens = structure::floor(history).tokens;
            return Ok(Some(finish(result, trace)));
        }
        // The memo's parts: where each kind of message is, and the terms.
        let (kinds, terms) = match index {
            Some(seen) => (Some(&seen.kinds), Some(&mut seen.terms)),
            None => (None, None),
        };
        let mut layout = Layout::new(history, self.keep_recent_results, kinds);
        trace.floor_tokens = layout.floor.tokens;
        let mut work = WorkingCopy::new(history);
        let over = !budget.admits_tokens(work.total());
        let stop_at = self.stop_at(budget, aim, history.total(), over);
        trace.target = stop_at;
        let skipped = match (stop_at, budget.max_tokens) {
            (Some(_), Some(max)) if skip && budget.round_limit().is_none() => {
                let share = self.shortcuts.horizon_share;
                skip_steps(&mut layout, &mut work, (max, share), counter, shrunk).await?
            }
            _ => None,
        };
        let mut pass = Pass::new(budget, counter, layout, stop_at, trace);
        // Stages 1-4: every message stays, some shrink.
        self.shrink_stages(&mut pass, &mut work, shrunk).await?;
        if skipped.is_some() && !pass.over(&work) {
            // A stage stopped at its aim: the skipped steps' tokens would
            // have kept it going.
            return Ok(None);
        }
        // Stage 5: whole rounds and steps.
        let terms = terms.filter(|_| self.relevance.is_lexical());
        if !self
            .drop_stage(&mut pass, &mut work, skipped, shrunk, terms)
            .await
        {
            return Ok(None);
        }
        // Stage 6: the floor's outputs (the newest step's among them).
        let last_resort = budget.max_tokens.filter(|_| pass.over(&work));
        pass.trace.newest_outputs_cut =
            shrink_stages::floor_outputs(&mut work, &pass.layout, last_resort, counter).await?;
        let fits = !pass.over(&work);
        Ok(Some(finish(work.finish(fits, shrunk), pass.trace)))
    }

    /// The total stages 1-4 shed down to, when the history is `over` the
    /// budget: the sticky level, the low watermark, or the budget itself,
    /// as `aim` says.
    fn stop_at(&self, budget: &Budget, aim: ShedTarget, total: usize, over: bool) -> Option<usize> {
        budget.max_tokens.filter(|_| over).map(|max| match aim {
            ShedTarget::StickyLevel => {
                let granule = sticky::granule(max, self.low_watermark);
                sticky::target(total, max, granule)
            }
            ShedTarget::LowWatermark => sticky::watermark(max, self.low_watermark),
            ShedTarget::WholeBudget => max,
        })
    }

    /// Stages 1-4, each while the total is over the aim: reasoning, long
    /// tool outputs, earlier results, media.
    async fn shrink_stages(
        &self,
        pass: &mut Pass<'_, '_>,
        work: &mut WorkingCopy<'_, '_>,
        shrunk: &mut ShrinkCache,
    ) -> Result<(), MemoryError> {
        let (layout, counter) = (&pass.layout, pass.counter);
        let stage = pass.active(work);
        pass.trace.reasoning =
            shrink_stages::reasoning(work, layout, stage, counter, shrunk).await?;
        let (stage, max) = (pass.active(work), self.max_tool_output_tokens);
        pass.trace.tool_outputs_cut =
            shrink_stages::long_outputs(work, layout, max, stage, counter, shrunk).await?;
        let stage = pass.active(work);
        pass.trace.tool_results_replaced =
            shrink_stages::earlier_results(work, layout, stage, counter, shrunk).await?;
        let stage = pass.active(work);
        pass.trace.media_replaced = shrink_stages::media(work, layout, stage, counter).await?;
        Ok(())
    }

    /// Stage 5: whole rounds and steps dropped by relevance and recency;
    /// false when the older steps of the newest round were `skipped` and
    /// the run of its newest steps might have gone on among them.
    async fn drop_stage(
        &self,
        pass: &mut Pass<'_, '_>,
        work: &mut WorkingCopy<'_, '_>,
        skipped: Option<Range<usize>>,
        shrunk: &mut ShrinkCache,
        terms: Option<&mut crate::term_index::TermIndex>,
    ) -> bool {
        let history = work.history();
        let budget = pass.budget;
        let skipped_steps = match &skipped {
            Some(range) => shrunk.steps(history.messages(), range.clone()),
            None => 0,
        };
        let target = DropSettings {
            granule: budget
                .max_tokens
                .map_or(1, |max| sticky::granule(max, self.low_watermark)),
            target: pass.stop_at,
            recency_weight: f64::from(match pass.layout.question {
                Some(q) if observation::is_observation(history.messages(), q) => {
                    self.loop_recency_weight
                }
                _ => self.recency_weight,
            }),
            skipped_steps,
            stop_early: self.shortcuts.stop_early,
        };
        let run = pass.over(work) || !budget.admits_rounds(history.messages());
        let scoring = Scoring {
            relevance: &*self.relevance,
            // The index holds the messages of `history`, a prefix of the
            // history it was brought up to date with.
            terms,
        };
        let dropped = drop_units(work, &pass.layout, budget, &target, run, scoring).await;
        if skipped.is_some() && dropped.newest_all_kept {
            return false;
        }
        let trace = &mut pass.trace;
        trace.rounds_dropped = dropped.rounds;
        trace.steps_dropped = dropped.steps;
        if let Some(range) = skipped {
            self.shortcuts.skips.kept.fetch_add(1, Ordering::Relaxed);
            trace.steps_dropped.before.count += skipped_steps;
            trace.steps_dropped.before.tokens += history.tokens(range);
        }
        if dropped.target.is_some() {
            trace.target = dropped.target;
        }
        true
    }
}

/// Leaves the older steps of a long newest round out of `layout` and
/// `work` (see [`horizon`](crate::horizon)) under a budget of `max` tokens,
/// once the newest steps hold `share` of it; which, if any.
async fn skip_steps(
    layout: &mut Layout<'_>,
    work: &mut WorkingCopy<'_, '_>,
    (max, share): (usize, f64),
    counter: &dyn TokenCounter,
    shrunk: &mut ShrinkCache,
) -> Result<Option<Range<usize>>, MemoryError> {
    let history = work.history();
    let skipped = horizon::horizon(history, layout, max, share, counter, shrunk).await?;
    if let Some(range) = &skipped {
        layout.skip(range.clone());
        work.exclude(range.clone());
    }
    Ok(skipped)
}

/// What one pass of the stages works with.
struct Pass<'p, 'h> {
    budget: &'p Budget,
    counter: &'p dyn TokenCounter,
    layout: Layout<'h>,
    /// The total stages 1-4 shed down to.
    stop_at: Option<usize>,
    trace: ThriftTrace,
}

impl<'p, 'h> Pass<'p, 'h> {
    fn new(
        budget: &'p Budget,
        counter: &'p dyn TokenCounter,
        layout: Layout<'h>,
        stop_at: Option<usize>,
        trace: ThriftTrace,
    ) -> Self {
        Self {
            budget,
            counter,
            layout,
            stop_at,
            trace,
        }
    }

    /// Whether `work` is over the budget.
    fn over(&self, work: &WorkingCopy<'_, '_>) -> bool {
        !self.budget.admits_tokens(work.total())
    }

    /// The aim of the next shrinking stage: `stop_at`, while `work` is
    /// over the budget.
    fn active(&self, work: &WorkingCopy<'_, '_>) -> Option<usize> {
        self.stop_at.filter(|_| self.over(work))
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

/// Where a fresh shed aims.
#[derive(Debug, Clone, Copy)]
enum ShedTarget {
    /// The sticky level of the whole history's total (see [`sticky`]): for
    /// a new question, whose context is chosen afresh anyway, and for a
    /// first call already over the budget.
    StickyLevel,
    /// The low watermark: for a call of a round whose new step no longer
    /// fits after the previous call's context, so that the next steps can
    /// append again, and for a tool-calling agent's steps after a summary.
    LowWatermark,
    /// The budget itself: for a new question that reaches into the span a
    /// summary covers, whose covered turns compete for every token.
    WholeBudget,
}

impl ShedTarget {
    /// Where a replay that starts at call `call` sheds first: at `self` for
    /// the history's first call, at the low watermark for a later one
    /// (the calls before it were within the budget).
    fn at_call(self, call: usize) -> Self {
        if call == 0 { self } else { Self::LowWatermark }
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

/// Covered messages shown in `result` (as they are, or shrunk), found in
/// order among the expanded history's covered messages.
fn covered_shown(expanded: &Expanded, result: &TrimResult) -> usize {
    let whole = expanded.history();
    let covered = &whole.messages()[expanded.covered_range()];
    let mut next = 0;
    let mut shown = 0;
    // They stand together, after the view's messages before the anchor.
    let before = expanded.covered_range().start;
    for m in result
        .messages
        .iter()
        .skip_while(|m| whole.messages()[..before].contains(m))
    {
        match covered[next..]
            .iter()
            .position(|c| m == c || is_shrunk_from(c, m))
        {
            Some(k) => {
                shown += 1;
                next += k + 1;
            }
            None => break,
        }
    }
    shown
}

/// Most extra passes [`Thrift::trim_traced`] makes when the floor does not
/// fit. Why: a guard only: each pass sheds, so the passes end once one
/// changes nothing. Figure: none recorded.
const MAX_PASSES: usize = 8;

fn finish(result: TrimResult, mut trace: ThriftTrace) -> (TrimResult, ThriftTrace) {
    trace.tokens_after = result.tokens();
    trace.messages_after = result.messages.len();
    trace.fits = result.fits;
    tracing::debug!(
        tokens_before = trace.tokens_before,
        tokens_after = trace.tokens_after,
        fits = trace.fits,
        "thrift trimmed"
    );
    (result, trace)
}

/// The call a replay of `calls` starts from: the last one within the
/// budget (shown as it was), or the first of the span, shed afresh.
fn starting_call(budget: &Budget, calls: Range<usize>, total: impl Fn(usize) -> usize) -> usize {
    let start = calls.start;
    let last = calls.end - 1;
    let first = (start..=last)
        .find(|&k| !budget.admits_tokens(total(k)))
        .unwrap_or(last);
    if first > start { first - 1 } else { first }
}

/// Tokens each call of the replay saw, from its start on.
fn seen_totals(
    seen: Option<&MessageIndex>,
    history: &History<'_>,
    points: &settle::Points,
    start: usize,
) -> Vec<usize> {
    let mut totals = vec![0; points.len() - start];
    let mut sum = 0;
    let mut from = 0;
    for (k, total) in (start..).zip(&mut totals) {
        let end = points[k];
        *total = match seen {
            Some(seen) => seen.total(end),
            None => {
                sum += history.tokens(from..end);
                from = end;
                sum
            }
        };
    }
    totals
}

/// What earlier calls kept of a history, lent to a trim (see `Memo`).
struct KeptState<'m> {
    seen: Option<&'m mut MessageIndex>,
    shrunk: &'m mut ShrinkCache,
    resume: Option<&'m mut crate::resume::Resume>,
}

/// The replay of a history's calls, call by call: what the last call
/// showed, and the state before the newest call (for the next trim).
struct Replay<'r, 'h> {
    history: &'r History<'h>,
    budget: &'r Budget,
    /// What a question that reaches back aims at.
    fresh: ShedTarget,
    counter: &'r dyn TokenCounter,
    max: usize,
    seen: Option<&'r mut MessageIndex>,
    shrunk: &'r mut ShrinkCache,
    result: TrimResult,
    trace: ThriftTrace,
    before_last: Option<(usize, KeptContext, ThriftTrace)>,
}

impl Replay<'_, '_> {
    /// The last call's result and trace; the state before it kept for the
    /// next trim.
    fn close(
        self,
        resume: Option<&mut crate::resume::Resume>,
        start: usize,
        points: &settle::Points,
        last: usize,
    ) -> (TrimResult, ThriftTrace) {
        let Replay {
            history,
            budget,
            seen,
            result,
            mut trace,
            before_last,
            ..
        } = self;
        if let Some(resume) = resume {
            resume.keep(
                budget,
                start,
                points,
                before_last,
                (last, result.clone(), trace.clone()),
            );
        }
        trace.tokens_before = history.total();
        trace.messages_before = history.len();
        let question = match seen.as_deref() {
            Some(seen) => seen.kinds.question(history.len()),
            None => structure::current_question(history.messages()),
        };
        trace.floor_tokens = structure::floor_at(history, question).tokens;
        finish(result, trace)
    }

    /// Call `k`, which adds `step`: a question that reaches back chooses
    /// afresh; otherwise the step is appended while it fits, and the call
    /// sheds to the watermark when it does not.
    async fn call(
        &mut self,
        thrift: &Thrift,
        step: Range<usize>,
        k: usize,
        total: usize,
        newest: bool,
    ) -> Result<(), MemoryError> {
        // The state before the newest call is kept for the next trim (see
        // `Resume`): marked here, and taken whole only when the newest call
        // does not just append to it.
        let mark = newest.then(|| (ContextLengths::of(&self.result), self.trace.clone()));
        let mut afresh = self.reach_back(thrift, step.clone(), total).await?;
        if afresh.is_none() {
            afresh = self.append(thrift, step, total).await?;
        }
        match (afresh, mark) {
            (Some((shed, shed_trace)), mark) => {
                let before = std::mem::replace(&mut self.result, shed);
                self.trace = shed_trace;
                if let Some((mark, kept_trace)) = mark {
                    self.before_last =
                        Some((k - 1, KeptContext::Whole(mark.cut(before)), kept_trace));
                }
            }
            (None, Some((mark, kept_trace))) => {
                self.before_last = Some((k - 1, KeptContext::CutFromNext(mark), kept_trace));
            }
            (None, None) => {}
        }
        Ok(())
    }

    /// The history up to the end of `step` shed afresh, when `step` opens
    /// a round whose question reaches back past what is shown.
    async fn reach_back(
        &mut self,
        thrift: &Thrift,
        step: Range<usize>,
        total: usize,
    ) -> Result<Option<(TrimResult, ThriftTrace)>, MemoryError> {
        if !settle::new_round(self.history.messages(), step.clone()) {
            return Ok(None);
        }
        let prefix = settle::prefix(self.history, step.end, total)?;
        if !reach::reaches_back(&prefix, &self.result, self.seen.as_deref_mut()) {
            return Ok(None);
        }
        let index = self.seen.as_deref_mut();
        let (shed, mut shed_trace) = thrift
            .shed(
                &prefix,
                self.budget,
                self.fresh,
                self.counter,
                self.shrunk,
                index,
            )
            .await?;
        shed_trace.reached_back = true;
        Ok(Some((shed, shed_trace)))
    }

    /// Appends `step` to the shown result when it fits (`None`), or sheds
    /// the history up to its end to the watermark.
    async fn append(
        &mut self,
        thrift: &Thrift,
        step: Range<usize>,
        total: usize,
    ) -> Result<Option<(TrimResult, ThriftTrace)>, MemoryError> {
        let end = step.end;
        let max_output = thrift.max_tool_output_tokens;
        let appended = settle::append(
            &mut self.result,
            self.history,
            step,
            self.max,
            max_output,
            self.counter,
        )
        .await?
        // A round appended may be one too many for a rounds limit.
        .filter(|_| self.budget.admits_rounds(&self.result.messages));
        if let Some(appended) = appended {
            self.trace.append(appended.tokens, appended.cut);
            return Ok(None);
        }
        let prefix = settle::prefix(self.history, end, total)?;
        let index = self.seen.as_deref_mut();
        let shed = thrift
            .shed(
                &prefix,
                self.budget,
                ShedTarget::LowWatermark,
                self.counter,
                self.shrunk,
                index,
            )
            .await?;
        Ok(Some(shed))
    }
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
