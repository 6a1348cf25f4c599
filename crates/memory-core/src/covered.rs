//! Covered originals: the messages a summary stands for, kept within reach
//! of the stages after the one that summarized them.
//!
//! A materializing compaction replaces older messages by a summary. Those
//! messages stay in the store's history, and the newest of them also travel
//! beside the view as a [`Covered`] set ([`History::covered`],
//! [`TrimResult::covered`](crate::TrimResult::covered)), so that a relevance
//! stage downstream can show again, verbatim, the covered turns the current
//! question needs. Each older turn then has two levels of detail: verbatim,
//! or folded into the summary.
//!
//! How a covered message and its summary coexist:
//!
//! - Covered messages are not part of the view. A stage that does not ask
//!   for them never shows them: every subtractive stage sheds them before
//!   anything else, so `compact,window` shows the summary and the recent
//!   turns, like classic compaction.
//! - A stage that shows covered messages takes them from [`Expanded`]: the
//!   view with the covered set placed, in its chronological order, after
//!   the view's first summary, right before the message that followed it
//!   when it was replaced ([`anchor`]; a stage that drops that message
//!   moves the set to the next one it keeps, [`after_dropping`]; not
//!   placed when none is left in view). A covered message shown
//!   sits after the summary that stands for it (so the summary stays in
//!   the cached prefix), never twice, and never written back (such a
//!   result is a projection).
//! - The set is whole steps (a tool call never without its results), newer
//!   than every message before its place and older than every message
//!   after it, and none of it is protected: every invariant holds over the
//!   expanded history as over the view.
//! - A stage that consumes the set returns a result without it; one that
//!   does not passes it on, unchanged unless it dropped the message the
//!   set stood before: `WindowDrop` then moves the set before the oldest
//!   message it keeps after it ([`after_dropping`]).
//! - The set keeps the newest covered messages within a horizon of
//!   [`HORIZON_BUDGETS`] times the token budget ([`horizon`]); older ones
//!   live only in the store's history. A stage's work on covered messages
//!   per call is bounded by that horizon, not by the session's length.
//!
//! ```
//! use memory_core::covered::{Covered, Expanded};
//! use memory_core::{summary, History, Message};
//!
//! let view = [
//!     Message::user("plan the trip"),
//!     summary::message("We chose Lisbon."),
//!     Message::user("which hotel?"),
//! ];
//! let covered = Covered::new(
//!     vec![Message::user("Lisbon or Porto?"), Message::assistant("Lisbon: the Alfama hotel.")],
//!     vec![4, 6],
//! )
//! .unwrap()
//! // They stood right before the question that followed them.
//! .before(Some(Message::user("which hotel?")));
//! let history = History::new(&view, &[3, 4, 3]).unwrap().with_covered(covered);
//! let expanded = Expanded::of(&history).unwrap();
//! let all = expanded.history();
//! assert_eq!(all.len(), 5);
//! assert!(summary::is_summary(&all.messages()[1]));
//! assert_eq!(all.messages()[2], Message::user("Lisbon or Porto?"));
//! assert_eq!(expanded.covered_range(), 2..4);
//! assert!(all.covered().is_empty());
//! ```

use std::ops::Range;

use crate::budget::Budget;
use crate::history::History;
use crate::message::Message;
use crate::summary;

pub(crate) mod set;

pub use set::Covered;

/// How many budgets' worth of tokens the covered set keeps at most.
///
/// ```
/// assert_eq!(memory_core::covered::HORIZON_BUDGETS, 32);
/// ```
pub const HORIZON_BUDGETS: usize = 32;

/// The horizon without a token limit, in tokens.
///
/// ```
/// assert_eq!(memory_core::covered::UNLIMITED_HORIZON, 262_144);
/// ```
pub const UNLIMITED_HORIZON: usize = 262_144;

/// Tokens of covered messages kept within reach at `budget`:
/// [`HORIZON_BUDGETS`] times its token limit, or [`UNLIMITED_HORIZON`]
/// without one. Thrift weighs the earlier rounds as far back (but never
/// less far than [`UNLIMITED_HORIZON`]) and drops those past it
/// unweighed, so that its work per call is bounded too.
///
/// ```
/// use memory_core::{covered, Budget};
/// assert_eq!(covered::horizon(&Budget::tokens(2_000)), 64_000);
/// assert_eq!(covered::horizon(&Budget::rounds(3)), covered::UNLIMITED_HORIZON);
/// ```
pub fn horizon(budget: &Budget) -> usize {
    budget
        .max_tokens
        .map_or(UNLIMITED_HORIZON, |t| t.saturating_mul(HORIZON_BUDGETS))
}

/// The covered set of the history a summary makes of `history` when it
/// replaces the messages of `region` (sorted ranges, the summary standing
/// where the first began): the messages of the last range, standing before
/// the message that follows it, with `history`'s own set where it stood
/// in time among them, oldest first. Messages of earlier ranges stay in
/// the store's history only (kept messages lie between them and the last
/// range), and so does an old set whose place is not in the last range.
/// Summaries and indexes folded with the range are not in the set: they
/// are no turns of the store's history (a summary's own turns stand for
/// it).
/// The newest whole steps of it within `horizon` tokens are kept. Every
/// materializing strategy gives its result this set, so that the stages
/// after it may show the turns its summary stands for.
///
/// ```
/// use memory_core::{covered, summary, History, Message};
/// let m = [Message::user("task"), Message::assistant("a"), Message::user("b"), Message::assistant("c")];
/// let h = History::new(&m, &[1, 1, 1, 1]).unwrap();
/// let set = covered::after_folding(&h, &[1..3], 100);
/// assert_eq!(set.messages(), &m[1..3]);
/// assert_eq!(set.next(), Some(&m[3]));
/// assert_eq!(covered::after_folding(&h, &[1..3], 1).messages(), &m[2..3]);
/// ```
pub fn after_folding(history: &History<'_>, region: &[Range<usize>], horizon: usize) -> Covered {
    let old = history.covered();
    let Some(last) = region.last() else {
        return old.within(horizon);
    };
    let messages = history.messages();
    // A history protects its summaries.
    let turns = |range: Range<usize>| {
        range
            .filter(|&i| !history.is_protected(i) && !crate::index::is_index(&messages[i]))
            .map(|i| (messages[i].clone(), history.counts()[i]))
    };
    let set = match anchor(history) {
        // The old set stood before a message now folded, or before the
        // message after the range.
        Some(a) if last.start <= a && a <= last.end => {
            let old_set = old
                .messages()
                .iter()
                .cloned()
                .zip(old.counts().iter().copied());
            let set = turns(last.start..a)
                .chain(old_set)
                .chain(turns(a..last.end));
            Covered::default().extended(set, horizon)
        }
        _ => Covered::default().extended(turns(last.clone()), horizon),
    };
    set.before(messages.get(last.end).cloned())
}

/// Where a view's covered set stands: right before the message it
/// stood before when it was replaced ([`Covered::next`]), found after the
/// view's first summary. `None` without a summary, or without that
/// message (`WindowDrop`, which may drop it to fit the budget, moves the
/// set to the next message it keeps: see [`after_dropping`]): the set is
/// then not placed.
///
/// ```
/// use memory_core::covered::{self, Covered};
/// use memory_core::{summary, History, Message};
/// let m = [summary::message("so far"), Message::user("kept"), Message::assistant("next")];
/// let c = Covered::new(vec![Message::user("old")], vec![1]).unwrap();
/// let h = History::new(&m, &[3, 1, 1]).unwrap();
/// let placed = h.clone().with_covered(c.clone().before(Some(Message::assistant("next"))));
/// assert_eq!(covered::anchor(&placed), Some(2));
/// assert_eq!(covered::anchor(&h.with_covered(c)), None);
/// ```
pub fn anchor(history: &History<'_>) -> Option<usize> {
    anchored(history).map(|(_, at)| at)
}

/// The view's first summary and the set's place after it ([`anchor`]).
fn anchored(history: &History<'_>) -> Option<(usize, usize)> {
    let messages = history.messages();
    let next = history.covered().next()?;
    let first = messages.iter().position(summary::is_summary)?;
    let at = (first + 1..messages.len()).find(|&i| messages[i] == *next)?;
    Some((first, at))
}

/// The covered set of `history` as it stands in a projection of it that
/// keeps the messages `kept` (ranges, ascending and apart) and its first
/// summary: where it stands ([`anchor`]) when that message is kept; else
/// right before the first message after it that is kept (every message the
/// projection keeps after the summary and before that one is older than
/// the set, every one after it newer), and not placed when none is, or
/// when an equal message kept before it would be taken for it. So a stage
/// that drops the oldest turns after a summary (to fit a budget, as
/// `WindowDrop` does) leaves the summary's covered turns within reach of
/// the stages after it. The work is logarithmic in the number of ranges,
/// plus the messages kept between the summary and the set's new place.
///
/// ```
/// use memory_core::covered::{self, Covered};
/// use memory_core::{summary, History, Message};
/// let m = [summary::message("so far"), Message::user("a"), Message::assistant("b"), Message::user("c")];
/// let c = Covered::new(vec![Message::user("old")], vec![1]).unwrap().before(Some(Message::user("a")));
/// let h = History::new(&m, &[3, 1, 1, 1]).unwrap().with_covered(c);
/// // "a" and "b" dropped: the set now stands before "c".
/// let moved = covered::after_dropping(&h, &[0..1, 3..4]);
/// assert_eq!(moved.next(), Some(&Message::user("c")));
/// // Nothing after it kept: not placed.
/// assert_eq!(covered::after_dropping(&h, &[0..1]).next(), None);
/// ```
pub fn after_dropping(history: &History<'_>, kept: &[Range<usize>]) -> Covered {
    let set = history.covered().clone();
    let Some((first, at)) = anchored(history) else {
        return set;
    };
    // The first range that ends after `at`.
    let k = kept.partition_point(|r| r.end <= at);
    let Some(range) = kept.get(k) else {
        return set.before(None);
    };
    if range.start <= at {
        return set;
    }
    let messages = history.messages();
    let next = &messages[range.start];
    // Found by value after the first summary: an equal message kept
    // between them would stand in its place.
    let after_summary = kept.partition_point(|r| r.end <= first + 1);
    let taken = kept[after_summary.min(k)..k]
        .iter()
        .flat_map(|r| r.start.max(first + 1)..r.end)
        .any(|i| messages[i] == *next);
    if taken {
        return set.before(None);
    }
    set.before(Some(next.clone()))
}

/// How many of `history`'s covered messages, the newest, are placed at
/// `at`: all of them, unless no user message follows `at`. The view's
/// current question then stays the expanded history's (a covered user
/// message would take its place), so only the messages after the set's
/// last user message are placed: the steps that went on right before the
/// anchor. A set cut to its newest messages (at a smaller
/// [`horizon`]) places the same messages, or those of them it still holds.
fn placed(history: &History<'_>, at: usize) -> usize {
    let covered = history.covered();
    if history.messages()[at..].iter().any(Message::is_user) {
        covered.len()
    } else {
        let messages = covered.messages();
        messages
            .iter()
            .rposition(Message::is_user)
            .map_or(messages.len(), |last| messages.len() - last - 1)
    }
}

/// A view with its covered set placed back, after its first summary and
/// the protected messages that follow it ([`anchor`]): the history a stage chooses from when it may show covered
/// messages (see the [module](self) documentation).
///
/// ```
/// use memory_core::covered::{Covered, Expanded};
/// use memory_core::{History, Message};
/// // Without a summary to stand for them, covered messages have no place.
/// let m = [Message::user("hi")];
/// let c = Covered::new(vec![Message::user("old")], vec![1]).unwrap();
/// assert!(Expanded::of(&History::new(&m, &[1]).unwrap().with_covered(c)).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Expanded {
    messages: Vec<Message>,
    counts: Vec<usize>,
    protected: Vec<usize>,
    task: Option<usize>,
    total: usize,
    covered: Range<usize>,
    /// The set placed (shared, not copied), to recognize it next call.
    set: Covered,
}

impl Expanded {
    /// `history` with its covered set before its first summary; `None`
    /// when nothing is covered or the set has no place ([`anchor`]). The
    /// view's floor is the expanded history's: when no user message follows
    /// the set's place, only the covered messages after the last covered
    /// user message are placed (a covered user message would become the
    /// current question).
    ///
    /// ```
    /// use memory_core::covered::Expanded;
    /// use memory_core::{History, Message};
    /// let m = [Message::user("hi")];
    /// assert!(Expanded::of(&History::new(&m, &[1]).unwrap()).is_none());
    /// ```
    pub fn of(history: &History<'_>) -> Option<Expanded> {
        let covered = history.covered();
        if covered.is_empty() {
            return None;
        }
        let at = anchor(history)?;
        let n = placed(history, at);
        if n == 0 {
            return None;
        }
        let mut messages = Vec::with_capacity(history.len() + n);
        messages.extend_from_slice(&history.messages()[..at]);
        let from = covered.len() - n;
        messages.extend_from_slice(&covered.messages()[from..]);
        messages.extend_from_slice(&history.messages()[at..]);
        let mut counts = Vec::with_capacity(history.len() + n);
        counts.extend_from_slice(&history.counts()[..at]);
        counts.extend_from_slice(&covered.counts()[from..]);
        counts.extend_from_slice(&history.counts()[at..]);
        let mut expanded = Expanded {
            messages,
            counts,
            protected: Vec::new(),
            task: None,
            total: 0,
            covered: at..at + n,
            set: covered.clone(),
        };
        expanded.mark(history);
        Some(expanded)
    }

    /// [`of`](Expanded::of), built from `previous` (the expansion of an
    /// earlier view of the same session) where it can be: when the view
    /// places the same covered set (the same shared messages, not an
    /// equal copy) at the same place after the same messages, only the
    /// view's messages from the first one that changed are copied again.
    /// The work is then in proportion to the view, not to the covered set.
    /// The result is the one `of` gives.
    ///
    /// ```
    /// use memory_core::covered::{Covered, Expanded};
    /// use memory_core::{summary, History, Message};
    /// let c = Covered::new(vec![Message::user("first")], vec![2])
    ///     .unwrap()
    ///     .before(Some(Message::user("next")));
    /// let mut view = vec![summary::message("so far"), Message::user("next")];
    /// let e = Expanded::of(&History::new(&view, &[3, 1]).unwrap().with_covered(c.clone()));
    /// view.push(Message::assistant("reply"));
    /// let h = History::new(&view, &[3, 1, 2]).unwrap().with_covered(c);
    /// let again = Expanded::of_reusing(&h, e).unwrap();
    /// assert_eq!(again.history().messages(), Expanded::of(&h).unwrap().history().messages());
    /// ```
    pub fn of_reusing(history: &History<'_>, previous: Option<Expanded>) -> Option<Expanded> {
        let Some(mut previous) = previous else {
            return Self::of(history);
        };
        let at = previous.covered.start;
        let n = previous.covered.len();
        let view = history.messages();
        let same_place = previous.set.is_shared_with(history.covered())
            && anchor(history) == Some(at)
            && previous.messages[..at] == view[..at]
            && previous.counts[..at] == history.counts()[..at]
            && placed(history, at) == n;
        if !same_place {
            return Self::of(history);
        }
        // The view after the set: keep what is unchanged, copy the rest.
        let tail = &previous.messages[at + n..];
        let tail_counts = &previous.counts[at + n..];
        let common = tail
            .iter()
            .zip(&view[at..])
            .zip(tail_counts.iter().zip(&history.counts()[at..]))
            .take_while(|((a, b), (x, y))| a == b && x == y)
            .count();
        previous.messages.truncate(at + n + common);
        previous.counts.truncate(at + n + common);
        previous.messages.extend_from_slice(&view[at + common..]);
        previous
            .counts
            .extend_from_slice(&history.counts()[at + common..]);
        previous.mark(history);
        Some(previous)
    }

    /// Sets protection, the task and the total from `history`, the view
    /// this expansion places its covered messages in.
    fn mark(&mut self, history: &History<'_>) {
        let (at, n) = (self.covered.start, self.covered.len());
        let shift = |i: usize| if i < at { i } else { i + n };
        self.protected = history.protected().iter().map(|&i| shift(i)).collect();
        self.task = history.task().map(shift);
        let covered_total = if n == self.set.len() {
            self.set.total()
        } else {
            self.counts[at..at + n].iter().sum()
        };
        self.total = history.total() + covered_total;
    }

    /// The expanded history: what the view protects stays protected
    /// (shifted past the covered messages), the covered messages are not,
    /// and the history has no covered set of its own.
    ///
    /// ```
    /// # use memory_core::covered::{Covered, Expanded};
    /// # use memory_core::{summary, History, Message};
    /// let view = [summary::message("so far"), Message::user("next")];
    /// let c = Covered::new(vec![Message::user("first")], vec![2])
    ///     .unwrap()
    ///     .before(Some(Message::user("next")));
    /// let h = History::new(&view, &[3, 1]).unwrap().with_covered(c);
    /// let e = Expanded::of(&h).unwrap();
    /// assert_eq!(e.history().protected(), &[0]);
    /// assert_eq!(e.history().messages()[1], Message::user("first"));
    /// assert_eq!(e.history().total(), 6);
    /// ```
    pub fn history(&self) -> History<'_> {
        History::expanded(
            &self.messages,
            &self.counts,
            &self.protected,
            self.total,
            self.task,
        )
    }

    /// Where the covered messages are in the expanded history.
    ///
    /// ```
    /// # use memory_core::covered::{Covered, Expanded};
    /// # use memory_core::{summary, History, Message};
    /// let view = [summary::message("so far"), Message::user("next")];
    /// let c = Covered::new(vec![Message::user("first")], vec![2])
    ///     .unwrap()
    ///     .before(Some(Message::user("next")));
    /// let h = History::new(&view, &[3, 1]).unwrap().with_covered(c);
    /// assert_eq!(Expanded::of(&h).unwrap().covered_range(), 1..2);
    /// ```
    pub fn covered_range(&self) -> Range<usize> {
        self.covered.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Audit, Rule};
    use crate::message::ToolCall;
    use crate::strategy::Selection;

    #[test]
    fn a_moved_set_is_not_placed_where_an_equal_message_would_be_found_first() {
        let set = || Covered::new(vec![Message::user("old")], vec![1]).unwrap();
        let x = Message::user("x");
        // "a" and "b" dropped: the next kept message, "x", equals one kept
        // after the summary, which `anchor` would find instead.
        let m = [
            summary::message("so far"),
            x.clone(),
            Message::user("a"),
            Message::assistant("b"),
            x.clone(),
        ];
        let before_a = set().before(Some(Message::user("a")));
        let h = History::new(&m, &[3, 1, 1, 1, 1])
            .unwrap()
            .with_covered(before_a.clone());
        assert_eq!(after_dropping(&h, &[0..2, 4..5]).next(), None);
        // Kept before the summary, it is not looked at.
        let m = [
            x.clone(),
            summary::message("so far"),
            Message::user("a"),
            x.clone(),
        ];
        let h = History::new(&m, &[1, 3, 1, 1])
            .unwrap()
            .with_covered(before_a);
        let moved = after_dropping(&h, &[0..2, 3..4]);
        assert_eq!(moved.next(), Some(&x));
        assert_eq!(anchor(&h.clone().with_covered(moved)), Some(3));
    }

    #[test]
    fn with_no_user_message_after_it_the_set_places_its_steps_after_its_last_question() {
        // The view goes on with steps only; the set holds a question and
        // the steps before and after it.
        let call =
            |id: &str| Message::assistant_with_tools("", vec![ToolCall::new(id, "read", "{}")]);
        let set = Covered::new(
            vec![
                call("a"),
                Message::tool_result("a", "one"),
                Message::user("and the tests?"),
                call("b"),
                Message::tool_result("b", "two"),
            ],
            vec![3, 2, 4, 3, 2],
        )
        .unwrap()
        .before(Some(call("c")));
        let m = [
            Message::user("task"),
            summary::message("read the files"),
            call("c"),
            Message::tool_result("c", "three"),
        ];
        let h = History::new(&m, &[1, 3, 3, 2]).unwrap();
        let e = Expanded::of(&h.clone().with_covered(set.clone())).unwrap();
        assert_eq!(e.covered_range(), 2..4);
        assert_eq!(e.history().messages()[2], call("b"));
        assert_eq!(e.history().total(), 9 + 5);
        // Cut to its newest messages (a smaller horizon), the set places
        // the same ones, and without its question, all it holds.
        for (horizon, held) in [(14, 5), (9, 3), (5, 2)] {
            let cut = set.within(horizon);
            assert_eq!(cut.len(), held);
            let e = Expanded::of(&h.clone().with_covered(cut)).unwrap();
            assert_eq!(e.covered_range(), 2..4, "horizon {horizon}");
            assert_eq!(e.history().messages()[2..4], set.messages()[3..]);
        }
    }

    fn view() -> (Vec<Message>, Covered) {
        let view = vec![
            Message::system("rules"),
            Message::user("task"),
            summary::message("read the files"),
            Message::user("now"),
        ];
        let covered = Covered::new(
            vec![
                Message::assistant_with_tools("", vec![ToolCall::new("a", "read", "{}")]),
                Message::tool_result("a", "contents"),
            ],
            vec![3, 2],
        )
        .unwrap()
        .before(Some(Message::user("now")));
        (view, covered)
    }

    /// The view, its prompt protected, with its covered set.
    fn covered_history(m: &[Message], c: Covered) -> History<'_> {
        History::new(m, &[1, 1, 4, 1])
            .unwrap()
            .protect(&[0])
            .with_covered(c)
    }

    /// Asserts that two expansions say the same in every respect.
    fn assert_same(a: &Expanded, b: &Expanded) {
        let (x, y) = (a.history(), b.history());
        assert_eq!(x.messages(), y.messages());
        assert_eq!(x.counts(), y.counts());
        assert_eq!(x.protected(), y.protected());
        assert_eq!((x.task(), x.total()), (y.task(), y.total()));
        assert_eq!(a.covered_range(), b.covered_range());
    }

    #[test]
    fn an_expansion_built_from_the_last_one_is_the_one_built_afresh() {
        let (mut m, c) = view();
        let first = Expanded::of(&covered_history(&m, c.clone()));
        // The view grows: only the new messages are copied.
        m.push(Message::assistant("done"));
        let counts = [1, 1, 4, 1, 2];
        let grown = History::new(&m, &counts)
            .unwrap()
            .protect(&[0])
            .with_covered(c.clone());
        let reused = Expanded::of_reusing(&grown, first.clone()).unwrap();
        assert_same(&reused, &Expanded::of(&grown).unwrap());
        // A changed tail, a changed count, another protection, a copy of
        // the set (equal, not shared) and a set no longer placed: each
        // gives what a fresh expansion gives.
        let mut changed = m.clone();
        changed[4] = Message::assistant("other");
        let histories = [
            History::new(&changed, &counts)
                .unwrap()
                .protect(&[0])
                .with_covered(c.clone()),
            History::new(&m, &[1, 1, 4, 1, 3])
                .unwrap()
                .protect(&[0])
                .with_covered(c.clone()),
            History::new(&m, &counts)
                .unwrap()
                .protect(&[0, 4])
                .with_covered(c.clone()),
            History::new(&m, &counts).unwrap().with_covered(c.clone()),
            History::new(&m, &counts)
                .unwrap()
                .protect(&[0])
                .with_covered(
                    Covered::new(c.messages().to_vec(), c.counts().to_vec())
                        .unwrap()
                        .before(c.next().cloned()),
                ),
        ];
        for h in &histories {
            let reused = Expanded::of_reusing(h, Some(reused.clone())).unwrap();
            assert_same(&reused, &Expanded::of(h).unwrap());
        }
        let unplaced = History::new(&m[..3], &counts[..3]).unwrap().with_covered(c);
        assert!(Expanded::of_reusing(&unplaced, Some(reused)).is_none());
        // Without a user message after the place, only the covered messages
        // after the last covered user message are placed, reused or not.
        let set = Covered::new(
            vec![
                Message::assistant("a"),
                Message::user("q"),
                Message::assistant("b"),
            ],
            vec![1, 1, 1],
        )
        .unwrap()
        .before(Some(Message::assistant("next")));
        let v = [summary::message("s"), Message::assistant("next")];
        let with_user = [
            summary::message("s"),
            Message::assistant("next"),
            Message::user("now"),
        ];
        let a = History::new(&with_user, &[2, 1, 1])
            .unwrap()
            .with_covered(set.clone());
        let b = History::new(&v, &[2, 1]).unwrap().with_covered(set);
        let ea = Expanded::of(&a).unwrap();
        assert_eq!(ea.covered_range(), 1..4);
        let eb = Expanded::of_reusing(&b, Some(ea)).unwrap();
        assert_same(&eb, &Expanded::of(&b).unwrap());
        assert_eq!(eb.covered_range(), 1..2);
        assert_eq!(eb.history().messages()[1], Message::assistant("b"));
    }

    #[test]
    fn expanded_keeps_the_view_protection_and_the_task() {
        let (m, c) = view();
        let h = covered_history(&m, c);
        let e = Expanded::of(&h).unwrap();
        let whole = e.history();
        assert_eq!(whole.protected(), &[0, 1, 2]);
        assert_eq!(whole.task(), Some(1));
        assert_eq!(whole.total(), 12);
        assert!(!whole.forget_task().is_protected(1));
    }

    #[test]
    fn a_covered_message_is_audited_where_it_stands() {
        let (m, c) = view();
        let h = covered_history(&m, c);
        let e = Expanded::of(&h).unwrap();
        let whole = e.history();
        let budget = Budget::tokens(100);
        // Before the summary: in order.
        let mut before = Selection::new(&whole);
        before.keep(0..whole.len());
        let report = Audit::new(&h, budget)
            .check(&before.finish(false, true), whole.counts())
            .unwrap();
        assert!(report.is_clean(), "{:?}", report.breaches);
        // After the newer messages: out of order.
        let mut after = Selection::new(&whole);
        after.keep(0..3);
        after.keep(5..6);
        after.keep(3..5);
        let counts = [1, 1, 4, 1, 3, 2];
        let mut result = after.finish(false, true);
        result.protected = vec![0, 1, 2];
        let report = Audit::new(&h, budget).check(&result, &counts).unwrap();
        assert!(report.breaches_of(Rule::Order).next().is_some());
    }

    #[test]
    fn extending_keeps_whole_steps_within_the_horizon() {
        let (_, c) = view();
        let more = [(Message::user("next"), 2), (Message::assistant("ok"), 1)];
        assert_eq!(c.extended(more.clone(), 100).len(), 4);
        // 8 tokens in all; within 4 the call's step goes whole.
        let cut = c.extended(more, 4);
        assert_eq!(
            cut.messages(),
            &[Message::user("next"), Message::assistant("ok")]
        );
        assert_eq!(cut.total(), 3);
        assert!(c.within(0).is_empty());
    }
}
