//! Steps, rounds, the head and the floor: the units every strategy cuts by.
//!
//! - A **step** is an assistant message together with the tool results that
//!   follow it (all of them, parallel calls included); every other message is
//!   a step by itself. A tool result that does not follow an assistant
//!   message with tool calls (an orphan) is a step by itself too.
//! - A **round** is a user message and the steps after it, up to the next
//!   user message.
//! - The **head** is what comes before the first user message.
//! - The **task** is the session's first user request: the first user
//!   message, unless a summary comes before it (the summary then carries it).
//!   [`History`] protects it by default, so it is kept verbatim or inside an
//!   accepted summary by every strategy; [`History::forget_task`] turns that
//!   off.
//! - The **floor** is what a strategy may never shed: protected messages and
//!   summaries (with their steps; the task among them), the current question
//!   (the newest user message) and the newest step.
//! - An **observation** is a text-only agent's tool output: the user message
//!   after a step that wrote its command in its text
//!   ([`is_observation`], [`issues_a_command`]).
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

use crate::history::History;
use crate::message::Message;

mod observation;

pub use crate::history::task;
pub use observation::{is_observation, issues_a_command};

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
    let starts = round_starts(messages);
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

/// Where the rounds of `messages` start (their user messages), ascending:
/// each round of [`rounds`] runs from one to the next.
///
/// ```
/// use memory_core::{structure, Message};
/// let m = [Message::system("s"), Message::user("a"), Message::assistant("b"), Message::user("c")];
/// assert_eq!(structure::round_starts(&m), vec![1, 3]);
/// ```
pub fn round_starts(messages: &[Message]) -> Vec<usize> {
    (0..messages.len())
        .filter(|&i| messages[i].is_user())
        .collect()
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
/// // The prompt, the task ("old"), the question and the newest step.
/// assert_eq!(floor.ranges, vec![0..2, 3..5]);
/// assert_eq!(floor.tokens, 6);
/// assert_eq!(structure::floor(&h.forget_task()).ranges, vec![0..1, 3..5]);
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

    /// User messages of the floor before `end` (the task, protected
    /// requests): they count against a rounds limit like the rounds kept.
    ///
    /// ```
    /// use memory_core::{structure::Floor, Message};
    /// let m = [Message::user("task"), Message::assistant("a"), Message::user("now")];
    /// let f = Floor { ranges: vec![0..1, 2..3], tokens: 2 };
    /// assert_eq!(f.users_before(&m, 2), 1);
    /// ```
    pub fn users_before(&self, messages: &[Message], end: usize) -> usize {
        self.ranges
            .iter()
            .flat_map(|r| r.start..r.end.min(end))
            .filter(|&i| messages[i].is_user())
            .count()
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
    floor_at(history, current_question(history.messages()))
}

/// [`floor`], with the current question known already (as
/// [`current_question`] finds it) by a caller that keeps where the user
/// messages are: linear in the number of protected messages plus the
/// length of the newest step.
///
/// ```
/// use memory_core::{structure, History, Message};
/// let m = [Message::user("task"), Message::assistant("a"), Message::user("now")];
/// let h = History::new(&m, &[1, 2, 3]).unwrap();
/// assert_eq!(structure::floor_at(&h, Some(2)), structure::floor(&h));
/// ```
pub fn floor_at(history: &History<'_>, question: Option<usize>) -> Floor {
    let messages = history.messages();
    if messages.is_empty() {
        return Floor::default();
    }
    debug_assert_eq!(question, current_question(messages));
    let mut ranges: Vec<Range<usize>> = history
        .protected()
        .iter()
        .map(|&i| step_of(messages, i))
        .collect();
    if let Some(q) = question {
        ranges.push(q..q + 1);
    }
    ranges.push(step_start(messages, messages.len())..messages.len());
    let ranges = merge(ranges);
    let tokens = ranges.iter().map(|r| history.tokens(r.clone())).sum();
    Floor { ranges, tokens }
}

/// Sorts and merges overlapping and adjacent ranges; empty ones go.
///
/// ```
/// use memory_core::structure::merge;
/// assert_eq!(merge(vec![4..6, 0..2, 1..3, 3..3, 6..7]), vec![0..3, 4..7]);
/// ```
pub fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.retain(|r| r.start < r.end);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::summary;

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    fn reply(text: &str) -> Message {
        Message::assistant(text)
    }

    fn calls(ids: &[&str]) -> Message {
        Message::assistant_with_tools(
            "",
            ids.iter().map(|id| ToolCall::new(*id, "t", "{}")).collect(),
        )
    }

    fn result(id: &str) -> Message {
        Message::tool_result(id, "r")
    }

    fn history<'a>(messages: &'a [Message], counts: &'a [usize]) -> History<'a> {
        History::new(messages, counts).unwrap()
    }

    /// The steps by their definition, written independently of the module:
    /// a tool result joins the step of the nearest message before it when
    /// only tool results lie between and that message calls tools;
    /// everything else starts a step.
    fn reference_steps(messages: &[Message]) -> Vec<Range<usize>> {
        let mut steps: Vec<Range<usize>> = Vec::new();
        let mut open = false;
        for (i, m) in messages.iter().enumerate() {
            if m.is_tool_result() && open {
                steps.last_mut().unwrap().end = i + 1;
                continue;
            }
            open = !m.tool_calls().is_empty();
            steps.push(i..i + 1);
        }
        steps
    }

    /// Checks every function of the module against the definitions.
    fn check_consistency(m: &[Message]) {
        let steps: Vec<_> = steps(m).collect();
        assert_eq!(steps, reference_steps(m), "steps of {m:?}");
        for s in &steps {
            assert_eq!(step_end(m, s.start), s.end, "step_end in {m:?}");
            assert_eq!(step_start(m, s.end), s.start, "step_start in {m:?}");
            for i in s.clone() {
                assert_eq!(step_of(m, i), s.clone(), "step_of({i}) in {m:?}");
            }
        }
        let users: Vec<usize> = (0..m.len()).filter(|&i| m[i].is_user()).collect();
        let r = rounds(m);
        assert_eq!(r.head, 0..users.first().copied().unwrap_or(m.len()));
        assert_eq!(r.rounds.len(), users.len());
        let mut next = r.head.end;
        for round in &r.rounds {
            assert_eq!(round.start, next, "rounds are contiguous in {m:?}");
            assert!(m[round.start].is_user());
            assert!(m[round.start + 1..round.end].iter().all(|x| !x.is_user()));
            next = round.end;
        }
        assert_eq!(next, m.len());
        assert_eq!(current_question(m), users.last().copied());
        for end in 1..=m.len() {
            let expected = users.iter().rev().find(|&&u| u < end).copied().unwrap_or(0);
            assert_eq!(round_start(m, end), expected);
        }
    }

    /// Checks the floor against its definition, with each message in turn
    /// protected (and none).
    fn check_floor(m: &[Message]) {
        let counts: Vec<usize> = (1..=m.len()).collect();
        let steps: Vec<_> = steps(m).collect();
        for p in (0..m.len()).map(Some).chain([None]) {
            let h = history(m, &counts).protect(p.as_slice());
            let f = floor(&h);
            let mut expected = vec![false; m.len()];
            let mut mark = |r: Range<usize>| r.for_each(|i| expected[i] = true);
            for &q in h.protected() {
                mark(step_of(m, q));
            }
            if let Some(q) = current_question(m) {
                mark(q..q + 1);
            }
            if let Some(last) = steps.last() {
                mark(last.clone());
            }
            for (i, &e) in expected.iter().enumerate() {
                assert_eq!(
                    f.contains(i),
                    e,
                    "floor {f:?} at {i} of {m:?}, protected {p:?}"
                );
            }
            let tokens: usize = (0..m.len())
                .filter(|&i| expected[i])
                .map(|i| counts[i])
                .sum();
            assert_eq!(f.tokens, tokens);
            for w in f.ranges.windows(2) {
                assert!(
                    w[0].end < w[1].start,
                    "ranges sorted, disjoint, merged: {f:?}"
                );
            }
            for r in &f.ranges {
                assert!(
                    steps.iter().any(|s| s.start == r.start),
                    "step-aligned: {f:?}"
                );
                assert!(steps.iter().any(|s| s.end == r.end), "step-aligned: {f:?}");
            }
            for r in &rounds(m).rounds {
                let within: usize = r.clone().filter(|&i| expected[i]).map(|i| counts[i]).sum();
                assert_eq!(f.tokens_within(r.clone(), &counts), within);
            }
        }
    }

    #[test]
    fn every_short_transcript_agrees_with_the_definitions() {
        // Every sequence of up to five messages over these six shapes,
        // valid or not (orphans, unanswered calls, stray results).
        let alphabet = [
            user("u"),
            reply("a"),
            calls(&["x"]),
            calls(&["y", "z"]),
            result("x"),
            Message::system("s"),
        ];
        let mut seqs: Vec<Vec<Message>> = vec![Vec::new()];
        let mut frontier = seqs.clone();
        for _ in 0..5 {
            frontier = frontier
                .iter()
                .flat_map(|s| {
                    alphabet.iter().map(move |m| {
                        let mut s = s.clone();
                        s.push(m.clone());
                        s
                    })
                })
                .collect();
            seqs.extend(frontier.iter().cloned());
        }
        assert_eq!(seqs.len(), 1 + 6 + 36 + 216 + 1296 + 7776);
        for m in &seqs {
            check_consistency(m);
            check_floor(m);
        }
    }

    #[test]
    fn nothing_has_no_steps_no_rounds_and_an_empty_floor() {
        assert_eq!(steps(&[]).count(), 0);
        let r = rounds(&[]);
        assert_eq!(r.head, 0..0);
        assert!(r.rounds.is_empty());
        assert_eq!(current_question(&[]), None);
        assert_eq!(floor(&history(&[], &[])), Floor::default());
    }

    #[test]
    fn parallel_calls_and_their_results_in_any_order_are_one_step() {
        let m = [
            user("go"),
            calls(&["a", "b", "c"]),
            result("c"),
            result("a"),
            result("b"),
            reply("done"),
        ];
        assert_eq!(steps(&m).collect::<Vec<_>>(), vec![0..1, 1..5, 5..6]);
        for i in 1..5 {
            assert_eq!(step_of(&m, i), 1..5);
        }
        assert_eq!(step_end(&m, 1), 5);
        assert_eq!(step_start(&m, 5), 1);
        // The newest step is the reply; a tool step when the transcript ends
        // with results.
        assert_eq!(step_start(&m, 6), 5);
        assert_eq!(step_start(&m[..5], 5), 1);
    }

    #[test]
    fn orphan_results_are_steps_by_themselves() {
        let m = [
            user("go"),
            result("x"),
            reply("a"),
            result("y"),
            result("z"),
            Message::system("s"),
        ];
        assert_eq!(
            steps(&m).collect::<Vec<_>>(),
            vec![0..1, 1..2, 2..3, 3..4, 4..5, 5..6]
        );
        assert_eq!(step_of(&m, 1), 1..2);
        assert_eq!(step_of(&m, 3), 3..4);
        assert_eq!(step_of(&m, 4), 4..5);
        assert_eq!(step_start(&m, 5), 4);
        assert_eq!(step_start(&m, 2), 1);
        assert_eq!(step_end(&m, 3), 4);
        // A transcript that starts with a result.
        let m = [result("x"), result("y"), user("u")];
        assert_eq!(steps(&m).collect::<Vec<_>>(), vec![0..1, 1..2, 2..3]);
        assert_eq!(step_of(&m, 1), 1..2);
        assert_eq!(step_start(&m, 2), 1);
    }

    #[test]
    fn a_result_after_an_interruption_is_an_orphan() {
        let m = [calls(&["a", "b"]), result("a"), user("?"), result("b")];
        assert_eq!(steps(&m).collect::<Vec<_>>(), vec![0..2, 2..3, 3..4]);
        assert_eq!(step_of(&m, 1), 0..2);
        assert_eq!(step_of(&m, 3), 3..4);
        assert_eq!(step_start(&m, 4), 3);
    }

    #[test]
    fn an_unanswered_call_is_a_step_by_itself() {
        let m = [user("go"), calls(&["a"]), user("hello?")];
        assert_eq!(steps(&m).collect::<Vec<_>>(), vec![0..1, 1..2, 2..3]);
        assert_eq!(step_of(&m, 1), 1..2);
        assert_eq!(step_start(&m, 2), 1);
        assert_eq!(step_end(&m, 1), 2);
    }

    #[test]
    fn consecutive_tool_steps_split_at_each_call() {
        let m = [
            calls(&["a"]),
            result("a"),
            calls(&["b", "c"]),
            result("b"),
            result("c"),
            calls(&["d"]),
            result("d"),
        ];
        assert_eq!(steps(&m).collect::<Vec<_>>(), vec![0..2, 2..5, 5..7]);
        assert_eq!(step_start(&m, 7), 5);
        assert_eq!(step_start(&m, 5), 2);
        assert_eq!(step_of(&m, 4), 2..5);
    }

    #[test]
    fn the_head_is_everything_before_the_first_user_message() {
        let m = [
            Message::system("rules"),
            summary::message("so far"),
            reply("hello"),
            user("q1"),
            reply("a1"),
            user("q2"),
        ];
        let r = rounds(&m);
        assert_eq!(r.head, 0..3);
        assert_eq!(r.rounds, vec![3..5, 5..6]);
        assert_eq!(round_start(&m, 3), 0);
        assert_eq!(round_start(&m, 5), 3);
        assert_eq!(round_start(&m, 6), 5);
        assert_eq!(current_question(&m), Some(5));
        // No user message: all head, no rounds.
        let m = [Message::system("rules"), reply("hi")];
        assert_eq!(
            rounds(&m),
            Rounds {
                head: 0..2,
                rounds: vec![]
            }
        );
        assert_eq!(current_question(&m), None);
        // A user message first: no head.
        let m = [user("q"), reply("a")];
        assert_eq!(rounds(&m).head, 0..0);
    }

    #[test]
    fn the_floor_holds_protected_steps_the_question_and_the_newest_step() {
        let m = [
            Message::system("rules"), // 0, protected
            user("q1"),               // 1, the task
            calls(&["a"]),            // 2
            result("a"),              // 3, protected: pulls in 2
            reply("a1"),              // 4
            user("q2"),               // 5, the current question
            reply("thinking"),        // 6
            calls(&["b", "c"]),       // 7, the newest step: 7..10
            result("c"),              // 8
            result("b"),              // 9
        ];
        let counts = [5, 1, 2, 3, 4, 6, 7, 8, 9, 10];
        let h = history(&m, &counts).protect(&[0, 3]);
        let f = floor(&h);
        assert_eq!(f.ranges, vec![0..4, 5..6, 7..10]);
        assert_eq!(f.tokens, 5 + 1 + 2 + 3 + 6 + 8 + 9 + 10);
        assert!(f.contains(2) && f.contains(9) && !f.contains(4) && !f.contains(6));
        assert_eq!(f.tokens_within(1..5, &counts), 6);
        assert_eq!(f.tokens_within(5..10, &counts), 6 + 27);
        // With the task forgotten, only what the caller protected.
        let f = floor(&history(&m, &counts).forget_task().protect(&[0, 3]));
        assert_eq!(f.ranges, vec![0..1, 2..4, 5..6, 7..10]);
        assert_eq!(f.tokens_within(1..5, &counts), 5);
    }

    #[test]
    fn adjacent_parts_of_the_floor_merge() {
        // The question right before the newest step, and a summary right
        // before the question.
        let m = [
            summary::message("so far"),
            user("q"),
            calls(&["a"]),
            result("a"),
        ];
        let f = floor(&history(&m, &[1, 1, 1, 1]));
        assert_eq!(f.ranges, vec![0..4]);
        assert_eq!(f.tokens, 4);
    }

    #[test]
    fn a_trailing_question_is_also_the_newest_step() {
        let m = [user("q1"), reply("a1"), user("q2")];
        let f = floor(&history(&m, &[1, 2, 3]).forget_task());
        assert_eq!(f.ranges, vec![2..3]);
        assert_eq!(f.tokens, 3);
    }

    #[test]
    fn without_a_user_message_the_floor_is_protection_and_the_newest_step() {
        let m = [summary::message("so far"), reply("a"), reply("b")];
        let f = floor(&history(&m, &[4, 5, 6]));
        assert_eq!(f.ranges, vec![0..1, 2..3]);
        assert_eq!(f.tokens, 10);
    }

    #[test]
    fn a_protected_orphan_is_kept_alone() {
        let m = [user("q"), result("x"), reply("a"), reply("b")];
        let f = floor(&history(&m, &[1, 1, 1, 1]).protect(&[1]));
        assert_eq!(f.ranges, vec![0..2, 3..4]);
    }
}
