//! The rounds past reach: the earlier rounds that end more than the
//! [horizon](memory_core::covered::horizon) (32 budgets of tokens) before
//! the current question. A shed drops them before any stage looks at
//! them, and no question reaches back to them.
//!
//! Choosing the earlier rounds by relevance costs a pass over every one
//! of them on each fresh choice, so without a bound a chat's calls grow
//! slower with its length for as long as it goes on. The horizon is the
//! one the covered turns a summary stands for are kept within
//! ([`memory_core::covered`]): the turns a stage may show again verbatim
//! reach that far back, whatever made them older turns. A round past it
//! stays in the history, and in the index of what a context leaves out
//! (where a model recalls it by its handle); only Thrift's choice no
//! longer weighs it.
//!
//! The steps before the first user message (the head) stay within reach
//! whatever their age: they set the task up.

use std::ops::Range;

use memory_core::{Budget, covered};

use crate::layout::Layout;
use crate::trace::Tally;
use crate::working_copy::WorkingCopy;

/// Leaves the earlier rounds past reach of the current question out of
/// `layout` and `work` before any stage runs: their messages outside the
/// floor are dropped. Their number and tokens (counted as the drop stage
/// counts the rounds it drops).
pub(crate) fn leave_out(
    layout: &mut Layout<'_>,
    work: &mut WorkingCopy<'_, '_>,
    budget: &Budget,
) -> Tally {
    let history = work.history();
    let Some(question) = layout.question else {
        return Tally::default();
    };
    let starts = layout.round_starts(history.messages());
    let (gone, past) = past(&starts, history.counts(), question, budget);
    // A round all of whose messages lie in the floor is no candidate.
    let count = (0..gone)
        .filter(|&k| {
            !layout
                .in_floor_of(starts[k]..starts[k + 1])
                .iter()
                .all(|&f| f)
        })
        .count();
    let mut tally = Tally { count, tokens: 0 };
    // The floor's ranges are sorted and disjoint: what lies between them
    // goes.
    let mut from = past.start;
    let end = past.end..past.end;
    for kept in layout.floor.ranges.iter().chain([&end]) {
        let to = kept.start.clamp(from, past.end);
        tally.tokens += history.tokens(from..to);
        work.exclude(from..to);
        from = from.max(kept.end).min(past.end);
    }
    layout.leave_past(past);
    tally
}

/// Where the history within reach of the current question at `question`
/// starts: the first position of the messages before it whose tokens
/// (`counts`, as the history has them) total at most the horizon of
/// `budget`.
pub(crate) fn reach_start(counts: &[usize], question: usize, budget: &Budget) -> usize {
    let horizon = covered::horizon(budget);
    let mut total = 0usize;
    for (i, &count) in counts[..question].iter().enumerate().rev() {
        total = total.saturating_add(count);
        if total > horizon {
            return i + 1;
        }
    }
    0
}

/// The earlier rounds past reach of the question at `question`: of the
/// rounds that start at `starts` (ascending, the question's own round
/// last), those that end at or before [`reach_start`], as their number
/// and the messages they span (empty when none is).
pub(crate) fn past(
    starts: &[usize],
    counts: &[usize],
    question: usize,
    budget: &Budget,
) -> (usize, Range<usize>) {
    let start = reach_start(counts, question, budget);
    // Each round ends where the next starts.
    let gone = starts
        .get(1..)
        .map_or(0, |ends| ends.partition_point(|&end| end <= start));
    match gone {
        0 => (0, 0..0),
        gone => (gone, starts[0]..starts[gone]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reach_starts_where_the_horizon_ends() {
        let budget = Budget::tokens(10);
        // Horizon: 320 tokens.
        assert_eq!(reach_start(&[300, 200, 100, 5], 3, &budget), 1);
        assert_eq!(reach_start(&[100, 100, 100, 5], 3, &budget), 0);
        assert_eq!(reach_start(&[400, 5], 1, &budget), 1);
        assert_eq!(reach_start(&[5], 0, &budget), 0);
    }

    #[test]
    fn only_whole_rounds_before_the_reach_are_past_it() {
        let budget = Budget::tokens(10);
        let counts = [1, 200, 200, 100, 100, 100, 5];
        // Head 0..1; rounds 1..3, 3..5, 5..6; question at 6. Reach
        // starts at 3 (100 + 100 + 100 <= 320 < 500).
        assert_eq!(past(&[1, 3, 5, 6], &counts, 6, &budget), (1, 1..3));
        // A round that straddles the start stays within reach.
        assert_eq!(past(&[1, 2, 4, 6], &counts, 6, &budget), (1, 1..2));
        assert_eq!(past(&[6], &counts, 6, &budget), (0, 0..0));
        assert_eq!(past(&[], &counts, 6, &budget), (0, 0..0));
        let wide = Budget::tokens(1_000);
        assert_eq!(past(&[1, 2, 4, 6], &counts, 6, &wide), (0, 0..0));
    }
}
