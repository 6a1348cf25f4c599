//! [`ThriftTrace`]: what one trim shed, stage by stage.

use serde::{Deserialize, Serialize};

/// How many items of one kind there were and how many tokens their
/// messages held.
///
/// ```
/// let tally = memory_thrift::Tally { count: 2, tokens: 40 };
/// assert_eq!(tally, memory_thrift::Tally { count: 2, tokens: 40 });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tally {
    /// Items of the kind (reasoning blocks, tool outputs, rounds, ...).
    pub count: usize,
    /// Tokens of the messages holding them (of the dropped units, for
    /// rounds and steps).
    pub tokens: usize,
}

/// One stage of the shedding order, before and after it ran.
///
/// `before` counts the items the stage could shed when it started (the
/// tokens of the messages holding them); `after` counts those it left as
/// they were, plus what remains of those it shrank (a dropped unit leaves
/// nothing). `before.tokens - after.tokens` is what the stage saved.
///
/// ```
/// use memory_thrift::{Shed, Tally};
/// let shed = Shed {
///     before: Tally { count: 3, tokens: 300 },
///     after: Tally { count: 1, tokens: 120 },
/// };
/// assert_eq!(shed.shed(), 2);
/// assert_eq!(shed.saved(), 180);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shed {
    /// When the stage started.
    pub before: Tally,
    /// When it ended.
    pub after: Tally,
}

impl Shed {
    /// Items the stage shed.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Shed::default().shed(), 0);
    /// ```
    pub fn shed(&self) -> usize {
        self.before.count.saturating_sub(self.after.count)
    }

    /// Tokens the stage saved.
    ///
    /// ```
    /// assert_eq!(memory_thrift::Shed::default().saved(), 0);
    /// ```
    pub fn saved(&self) -> usize {
        self.before.tokens.saturating_sub(self.after.tokens)
    }

    /// Whether the stage changed anything.
    ///
    /// ```
    /// assert!(!memory_thrift::Shed::default().changed());
    /// ```
    pub fn changed(&self) -> bool {
        self.before != self.after
    }
}

/// What [`Thrift::trim_traced`](crate::Thrift::trim_traced) shed, per kind,
/// in the order the stages run, with the totals around them.
///
/// The stages' savings add up: `tokens_before - tokens_after` is the sum of
/// [`Shed::saved`] over [`stages`](ThriftTrace::stages). It serializes with
/// serde, for reports.
///
/// ```
/// use memory_core::{Budget, CharTokenCounter, Message, ToolCall, TrimStrategy};
/// use memory_thrift::Thrift;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let history = vec![
///     Message::user("list the files"),
///     Message::assistant_with_tools("", vec![ToolCall::new("c1", "ls", "{}")]),
///     Message::tool_result("c1", "a.rs ".repeat(200)),
///     Message::assistant("There are many files."),
///     Message::user("thanks"),
/// ];
/// let counts = memory_core::count_messages(&CharTokenCounter, &history).await.unwrap();
/// let h = memory_core::History::new(&history, &counts).unwrap();
/// let (result, trace) = Thrift::new()
///     .trim_traced(&h, &Budget::tokens(60), &CharTokenCounter)
///     .await
///     .unwrap();
/// assert!(result.fits);
/// assert_eq!(trace.tool_results_replaced.shed(), 1);
/// assert_eq!(trace.tokens_before - trace.tokens_after, trace.saved());
/// let json = serde_json::to_string(&trace).unwrap();
/// assert!(json.contains("tool_results_replaced"));
/// # });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThriftTrace {
    /// The token limit trimmed to, if any.
    pub budget: Option<usize>,
    /// The most rounds allowed, if limited.
    pub max_rounds: Option<usize>,
    /// Where shedding aimed once it had to: the budget less the watermark's
    /// margin, on the grid that keeps cuts sticky (see
    /// [`Thrift::with_low_watermark`](crate::Thrift::with_low_watermark)).
    /// `None` when nothing had to be shed.
    pub target: Option<usize>,
    /// Tokens of the input.
    pub tokens_before: usize,
    /// Tokens of the output.
    pub tokens_after: usize,
    /// Messages of the input.
    pub messages_before: usize,
    /// Messages of the output.
    pub messages_after: usize,
    /// Tokens of the input's floor (what may never be dropped).
    pub floor_tokens: usize,
    /// Whether the output is within the token limit.
    pub fits: bool,
    /// Reasoning of earlier steps, removed.
    pub reasoning: Shed,
    /// Long tool outputs, cut to head and tail.
    pub tool_outputs_cut: Shed,
    /// Earlier tool results, replaced by a placeholder.
    pub tool_results_replaced: Shed,
    /// Image and pass-through blocks, replaced by a placeholder.
    pub media_replaced: Shed,
    /// Earlier rounds, dropped (their protected messages stay). A round
    /// kept in part (its request and newest steps) counts as kept, and the
    /// steps it lost as saved.
    pub rounds_dropped: Shed,
    /// Steps dropped: of the newest round, and before the first user
    /// message. The older steps of a very long newest round, which no
    /// shed can keep, count here at their tokens as they were, and in no
    /// stage before (see [`Thrift`](crate::Thrift)).
    pub steps_dropped: Shed,
    /// The floor's tool outputs (the newest step's, and those of a
    /// protected message's step), cut as a last resort.
    pub newest_outputs_cut: Shed,
    /// Appends of what came since the call before (steps, or a reply and a
    /// new user message), as they are or with their long
    /// outputs cut, to the context shown at the call before, since the
    /// history was last shed (count), and their tokens as shown. While
    /// this grows, the prompt's prefix stays the same.
    #[serde(default)]
    pub appended: Tally,
    /// Whether the context was last chosen afresh because a new user
    /// message reached back to turns it no longer
    /// showed (rather than because the budget was crossed).
    #[serde(default)]
    pub reached_back: bool,
    /// Covered messages (originals a summary stands for, see
    /// [`memory_core::covered`]) shown again, as they are or shrunk.
    #[serde(default)]
    pub covered_shown: usize,
}

impl ThriftTrace {
    /// The trace of a pass over `history` under `budget`, before any stage.
    pub(crate) fn of(history: &memory_core::History<'_>, budget: &memory_core::Budget) -> Self {
        ThriftTrace {
            budget: budget.max_tokens,
            max_rounds: budget.round_limit(),
            tokens_before: history.total(),
            messages_before: history.len(),
            ..ThriftTrace::default()
        }
    }

    /// Folds in a further pass over this trace's result: each stage's
    /// "after" becomes that pass's.
    pub(crate) fn absorb(&mut self, next: &ThriftTrace) {
        for (mine, theirs) in [
            (&mut self.reasoning, &next.reasoning),
            (&mut self.tool_outputs_cut, &next.tool_outputs_cut),
            (&mut self.tool_results_replaced, &next.tool_results_replaced),
            (&mut self.media_replaced, &next.media_replaced),
            (&mut self.rounds_dropped, &next.rounds_dropped),
            (&mut self.steps_dropped, &next.steps_dropped),
            (&mut self.newest_outputs_cut, &next.newest_outputs_cut),
        ] {
            mine.after = theirs.after;
        }
    }

    /// Records a step appended to the previous call's context, with the
    /// tool outputs cut to make it fit.
    pub(crate) fn append(&mut self, tokens: usize, cut: Shed) {
        self.appended.count += 1;
        self.appended.tokens += tokens;
        let mine = &mut self.tool_outputs_cut;
        mine.before.count += cut.before.count;
        mine.before.tokens += cut.before.tokens;
        mine.after.count += cut.after.count;
        mine.after.tokens += cut.after.tokens;
    }

    /// The stages by name, in the order they run.
    ///
    /// ```
    /// let trace = memory_thrift::ThriftTrace::default();
    /// let names: Vec<_> = trace.stages().iter().map(|(name, _)| *name).collect();
    /// assert_eq!(names[0], "reasoning");
    /// assert_eq!(names.len(), 7);
    /// ```
    pub fn stages(&self) -> [(&'static str, Shed); 7] {
        [
            ("reasoning", self.reasoning),
            ("tool_outputs_cut", self.tool_outputs_cut),
            ("tool_results_replaced", self.tool_results_replaced),
            ("media_replaced", self.media_replaced),
            ("rounds_dropped", self.rounds_dropped),
            ("steps_dropped", self.steps_dropped),
            ("newest_outputs_cut", self.newest_outputs_cut),
        ]
    }

    /// Tokens saved by all stages together.
    ///
    /// ```
    /// assert_eq!(memory_thrift::ThriftTrace::default().saved(), 0);
    /// ```
    pub fn saved(&self) -> usize {
        self.stages().iter().map(|(_, s)| s.saved()).sum()
    }
}
