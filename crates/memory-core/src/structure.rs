//! Steps, rounds, the head and the floor: the units every strategy cuts by.
//!
//! - A **step** is an assistant message together with the tool results that
//!   follow it (all of them, parallel calls included); every other message is
//!   a step by itself. A tool result that does not follow an assistant
//!   message with tool calls (an orphan) is a step by itself too.
//! - A **round** is a user message and the steps after it, up to the next
//!   user message.
//! - The **head** is what comes before the first user message.
//! - The **floor** is what a strategy may never shed: protected messages and
//!   summaries (with their steps), the current question (the newest user
//!   message) and the newest step.
//!
//! ```
//! use memory_core::{structure, Message, ToolCall};
//!
//! let m = vec![
//!     Message::system("rules"),
//!     Message::user("fix the bug"),
//!     Message::assistant_with_tools("", vec![
//!         ToolCall::new("a", "read", "{}"),
//!         ToolCall::new("b", "read", "{}"),
//!     ]),
//!     Message::tool_result("a", "..."),
//!     Message::tool_result("b", "..."),
//!     Message::assistant("fixed"),
//! ];
//! let steps: Vec<_> = structure::steps(&m).collect();
//! assert_eq!(steps, vec![0..1, 1..2, 2..5, 5..6]);
//! let rounds = structure::rounds(&m);
//! assert_eq!(rounds.head, 0..1);
//! assert_eq!(rounds.rounds, vec![1..6]);
//! ```

use std::ops::Range;

use crate::{History, Message};

/// Whether the tool result at `index` belongs to the step of an earlier
/// assistant message (rather than standing alone as an orphan).
fn attached(messages: &[Message], index: usize) -> bool {
    let mut j = index;
    while j > 0 && messages[j - 1].is_tool_result() {
        j -= 1;
    }
    j > 0 && !messages[j - 1].tool_calls().is_empty()
}

/// End (exclusive) of the step that starts at `start`.
///
/// ```
/// use memory_core::{structure, Message, ToolCall};
/// let m = [
///     Message::assistant_with_tools("", vec![ToolCall::new("a", "t", "{}")]),
///     Message::tool_result("a", "r"),
///     Message::user("next"),
/// ];
/// assert_eq!(structure::step_end(&m, 0), 2);
/// assert_eq!(structure::step_end(&m, 2), 3);
/// ```
pub fn step_end(messages: &[Message], start: usize) -> usize {
    let mut end = start + 1;
    if start < messages.len() && !messages[start].tool_calls().is_empty() {
        while end < messages.len() && messages[end].is_tool_result() {
            end += 1;
        }
    }
    end.min(messages.len().max(start + 1))
}

/// Start of the step whose last message is at `end - 1`. `end` must be at
/// least 1.
///
/// ```
/// use memory_core::{structure, Message, ToolCall};
/// let m = [
///     Message::user("go"),
///     Message::assistant_with_tools("", vec![ToolCall::new("a", "t", "{}")]),
///     Message::tool_result("a", "r"),
/// ];
/// assert_eq!(structure::step_start(&m, 3), 1);
/// assert_eq!(structure::step_start(&m, 1), 0);
/// ```
pub fn step_start(messages: &[Message], end: usize) -> usize {
    let last = end - 1;
    if !messages[last].is_tool_result() {
        return last;
    }
    let mut j = last;
    while j > 0 && messages[j - 1].is_tool_result() {
        j -= 1;
    }
    if j > 0 && !messages[j - 1].tool_calls().is_empty() {
        j - 1
    } else {
        last
    }
}

/// The step that contains message `index`.
///
/// ```
/// use memory_core::{structure, Message, ToolCall};
/// let m = [
///     Message::assistant_with_tools("", vec![ToolCall::new("a", "t", "{}")]),
///     Message::tool_result("a", "r"),
/// ];
/// assert_eq!(structure::step_of(&m, 1), 0..2);
/// ```
pub fn step_of(messages: &[Message], index: usize) -> Range<usize> {
    let start = if messages[index].is_tool_result() && attached(messages, index) {
        let mut j = index;
        while messages[j].is_tool_result() {
            j -= 1;
        }
        j
    } else {
        index
    };
    start..step_end(messages, start)
}

/// The steps of `messages`, in order.
///
/// ```
/// use memory_core::{structure, Message};
/// let m = [Message::user("a"), Message::assistant("b")];
/// assert_eq!(structure::steps(&m).count(), 2);
/// ```
pub fn steps(messages: &[Message]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= messages.len() {
            return None;
        }
        let end = step_end(messages, start);
        let step = start..end;
        start = end;
        Some(step)
    })
}

/// The head and rounds of a transcript.
///
/// ```
/// use memory_core::{structure, Message};
/// let r = structure::rounds(&[Message::assistant("hello"), Message::user("hi")]);
/// assert_eq!(r.head, 0..1);
/// assert_eq!(r.rounds, vec![1..2]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rounds {
    /// Messages before the first user message.
    pub head: Range<usize>,
    /// Each round, from its user message up to the next one.
    pub rounds: Vec<Range<usize>>,
}

/// Splits `messages` into the head and rounds.
///
/// ```
/// use memory_core::{structure, Message};
/// let m = [Message::user("a"), Message::assistant("b"), Message::user("c")];
/// assert_eq!(structure::rounds(&m).rounds, vec![0..2, 2..3]);
/// ```
pub fn rounds(messages: &[Message]) -> Rounds {
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_user())
        .map(|(i, _)| i)
        .collect();
    let head_end = starts.first().copied().unwrap_or(messages.len());
    let rounds = starts
        .iter()
        .enumerate()
        .map(|(k, &s)| s..starts.get(k + 1).copied().unwrap_or(messages.len()))
        .collect();
    Rounds {
        head: 0..head_end,
        rounds,
    }
}

/// Start of the round (or head) holding message `end - 1`: the index of the
/// newest user message before `end`, or 0 when there is none. `end` must be
/// at least 1.
///
/// ```
/// use memory_core::{structure, Message};
/// let m = [Message::assistant("x"), Message::user("a"), Message::assistant("b")];
/// assert_eq!(structure::round_start(&m, 3), 1);
/// assert_eq!(structure::round_start(&m, 1), 0);
/// ```
pub fn round_start(messages: &[Message], end: usize) -> usize {
    messages[..end]
        .iter()
        .rposition(Message::is_user)
        .unwrap_or(0)
}

/// Index of the current question: the newest user message.
///
/// ```
/// use memory_core::{structure, Message};
/// let m = [Message::user("a"), Message::user("b"), Message::assistant("c")];
/// assert_eq!(structure::current_question(&m), Some(1));
/// ```
pub fn current_question(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(Message::is_user)
}

/// What a strategy may never shed, as sorted, disjoint step-aligned ranges.
///
/// ```
/// use memory_core::{structure, History, Message};
/// let m = [
///     Message::system("rules"),
///     Message::user("old"),
///     Message::assistant("old answer"),
///     Message::user("new"),
///     Message::assistant("new answer"),
/// ];
/// let h = History::new(&m, &[1, 1, 3, 1, 3]).unwrap().protect(&[0]);
/// let floor = structure::floor(&h);
/// assert_eq!(floor.ranges, vec![0..1, 3..5]);
/// assert_eq!(floor.tokens, 5);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Floor {
    /// Sorted, disjoint, step-aligned ranges.
    pub ranges: Vec<Range<usize>>,
    /// Tokens of those ranges.
    pub tokens: usize,
}

impl Floor {
    /// Whether `index` lies in the floor.
    ///
    /// ```
    /// let f = memory_core::structure::Floor { ranges: vec![2..4], tokens: 0 };
    /// assert!(f.contains(3) && !f.contains(4));
    /// ```
    pub fn contains(&self, index: usize) -> bool {
        let k = self.ranges.partition_point(|r| r.end <= index);
        self.ranges.get(k).is_some_and(|r| r.contains(&index))
    }

    /// Tokens of the floor that lie inside `range`. Step-aligned ranges never
    /// straddle a round boundary, so for rounds this is exact.
    ///
    /// ```
    /// let f = memory_core::structure::Floor { ranges: vec![0..1, 5..6], tokens: 2 };
    /// # let counts = [1usize; 6];
    /// assert_eq!(f.tokens_within(4..6, &counts), 1);
    /// ```
    pub fn tokens_within(&self, range: Range<usize>, counts: &[usize]) -> usize {
        let first = self.ranges.partition_point(|r| r.end <= range.start);
        self.ranges[first..]
            .iter()
            .take_while(|r| r.start < range.end)
            .map(|r| {
                counts[r.start.max(range.start)..r.end.min(range.end)]
                    .iter()
                    .sum::<usize>()
            })
            .sum()
    }
}

/// The floor of `history`: protected messages and summaries with their
/// steps, the current question and the newest step. Linear in the number of
/// protected messages plus the length of the newest round, not in the
/// history's length.
pub fn floor(history: &History<'_>) -> Floor {
    let messages = history.messages();
    if messages.is_empty() {
        return Floor::default();
    }
    let mut ranges: Vec<Range<usize>> = history
        .protected()
        .iter()
        .map(|&i| step_of(messages, i))
        .collect();
    if let Some(q) = current_question(messages) {
        ranges.push(q..q + 1);
    }
    ranges.push(step_start(messages, messages.len())..messages.len());
    let ranges = merge(ranges);
    let tokens = ranges.iter().map(|r| history.tokens(r.clone())).sum();
    Floor { ranges, tokens }
}

/// Sorts and merges overlapping and adjacent ranges.
pub(crate) fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}
