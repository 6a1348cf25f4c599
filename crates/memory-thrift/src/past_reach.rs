//! The rounds past reach: the earlier rounds that end more than
//! [`reach`] tokens before the current question. A shed drops them before
//! any stage looks at them, and no question reaches back to them.
//!
//! Choosing the earlier rounds by relevance costs a pass over every one
//! of them on each fresh choice, so without a bound a chat's calls grow
//! slower with its length for as long as it goes on. The bound is the
//! [horizon](memory_core::covered::horizon) the covered turns a summary
//! stands for are kept within (32 budgets of tokens: the turns a stage may
//! show again verbatim reach that far back), but never less than the
//! horizon without a token limit ([`UNLIMITED_HORIZON`], 262,144 tokens):
//! a small budget does not shorten how far back a question reaches, only
//! a session longer than that is bounded. Figure (LoCoMo, chars counter,
//! budget 500, whose 32 budgets cut into the data set's longer
//! conversations): with the bound at 32 budgets alone, evidence recall
//! 0.671 -> 0.552 and answer recall 0.432 -> 0.364; with the floor, no
//! conversation of the data set reaches past it. A round past reach stays
//! in the history, and in the index of what a context leaves out (where a
//! model recalls it by its handle); only Thrift's choice no longer weighs
//! it.
//!
//! The steps before the first user message (the head) stay within reach
//! whatever their age: they set the task up.

use std::ops::Range;

use memory_core::Budget;
use memory_core::covered::{self, UNLIMITED_HORIZON};
use memory_core::seen::SeenPrefix;

use crate::layout::Layout;
use crate::trace::Tally;
use crate::working_copy::WorkingCopy;

/// Leaves the earlier rounds past reach of the current question out of
/// `layout` and `work` before any stage runs: their messages outside the
/// floor are dropped. Their number and tokens (counted as the drop stage
/// counts the rounds it drops). `totals`, when given, are the history's
/// running token totals (the tokens of its first `end` messages, as
/// [`SeenPrefix::total`](memory_core::seen::SeenPrefix::total) gives
/// them), so that nothing past reach, most of a long session, is summed
/// or looked at message by message (the working copy still marks its
/// messages dropped, a byte each).
pub(crate) fn leave_out(
    layout: &mut Layout<'_>,
    work: &mut WorkingCopy<'_, '_>,
    budget: &Budget,
    totals: Option<&SeenPrefix>,
) -> Tally {
    let history = work.history();
    let Some(question) = layout.question else {
        return Tally::default();
    };
    let starts = layout.round_starts(history.messages());
    let (gone, past) = past(&starts, history.counts(), question, reach(budget));
    // A round all of whose messages lie in the floor is no candidate.
    let count = gone
        - within_floor(
            &starts[..(gone + 1).min(starts.len())],
            &layout.floor.ranges,
        );
    let mut tally = Tally { count, tokens: 0 };
    // The floor's ranges are sorted and disjoint: what lies between them
    // goes.
    let mut from = past.start;
    let end = past.end..past.end;
    for kept in layout.floor.ranges.iter().chain([&end]) {
        let to = kept.start.clamp(from, past.end);
        // Only totals that reach that far tell the range's tokens.
        let tokens = totals
            .filter(|totals| totals.len() >= to)
            .map(|totals| totals.total(to) - totals.total(from));
        tally.tokens += work.exclude(from..to, tokens);
        from = from.max(kept.end).min(past.end);
    }
    layout.leave_past(past);
    tally
}

/// How many of the rounds that start at `starts` (ascending; each ends
/// where the next starts, the last start only ending the one before it)
/// lie wholly in one of the `floor` ranges, as
/// [`structure::merge`](memory_core::structure::merge) leaves the floor's
/// (sorted, none empty, none touching the next, so that a round in the
/// floor lies in one of them): a search per range, not a look at every
/// message.
fn within_floor(starts: &[usize], floor: &[Range<usize>]) -> usize {
    let rounds = starts.len().saturating_sub(1);
    floor
        .iter()
        .map(|range| {
            // The first round starting in the range, and the rounds that
            // end by its end (round k ends at `starts[k + 1]`).
            let first = starts.partition_point(|&s| s < range.start);
            let ended = starts
                .partition_point(|&s| s <= range.end)
                .saturating_sub(1)
                .min(rounds);
            ended.saturating_sub(first)
        })
        .sum()
}

/// How many tokens back from the current question Thrift weighs the
/// earlier rounds at `budget`: the covered turns'
/// [horizon](covered::horizon), at least [`UNLIMITED_HORIZON`].
pub(crate) fn reach(budget: &Budget) -> usize {
    covered::horizon(budget).max(UNLIMITED_HORIZON)
}

/// Where the history within reach of the current question at `question`
/// starts: the first position of the messages before it whose tokens
/// (`counts`, as the history has them) total at most `reach`.
pub(crate) fn reach_start(counts: &[usize], question: usize, reach: usize) -> usize {
    let mut total = 0usize;
    for (i, &count) in counts[..question].iter().enumerate().rev() {
        total = total.saturating_add(count);
        if total > reach {
            return i + 1;
        }
    }
    0
}

/// The earlier rounds past `reach` tokens from the question at
/// `question`: of the rounds that start at `starts` (ascending, the
/// question's own round last), those that end at or before
/// [`reach_start`], as their number and the messages they span (empty
/// when none is).
pub(crate) fn past(
    starts: &[usize],
    counts: &[usize],
    question: usize,
    reach: usize,
) -> (usize, Range<usize>) {
    let start = reach_start(counts, question, reach);
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
    fn the_reach_is_the_horizon_but_never_less_than_without_a_limit() {
        assert_eq!(reach(&Budget::tokens(500)), UNLIMITED_HORIZON);
        assert_eq!(reach(&Budget::tokens(100_000)), 3_200_000);
        assert_eq!(reach(&Budget::rounds(3)), UNLIMITED_HORIZON);
    }

    #[test]
    fn the_reach_starts_where_its_tokens_end() {
        assert_eq!(reach_start(&[300, 200, 100, 5], 3, 320), 1);
        assert_eq!(reach_start(&[100, 100, 100, 5], 3, 320), 0);
        assert_eq!(reach_start(&[400, 5], 1, 320), 1);
        assert_eq!(reach_start(&[5], 0, 320), 0);
    }

    #[test]
    fn rounds_within_the_floor_are_those_of_a_look_at_each_message() {
        // Each floor as its ranges' (start, end), merged as a layout's
        // floor is.
        let floors: [&[(usize, usize)]; 6] = [
            &[],
            &[(0, 1)],
            &[(0, 3)],
            &[(0, 2), (2, 5)],
            &[(1, 4), (6, 9)],
            &[(0, 12)],
        ];
        let starts_of: [&[usize]; 4] = [&[1, 3, 5, 6, 9, 11], &[0, 2, 5, 9], &[4], &[]];
        for floor in floors {
            let floor = memory_core::structure::merge(floor.iter().map(|&(a, b)| a..b).collect());
            let in_floor = |i: usize| floor.iter().any(|r| r.contains(&i));
            for starts in starts_of {
                for gone in 0..starts.len() {
                    let each = (0..gone)
                        .filter(|&k| (starts[k]..starts[k + 1]).all(in_floor))
                        .count();
                    let searched = within_floor(&starts[..gone + 1], &floor);
                    assert_eq!(searched, each, "{floor:?} {starts:?} {gone}");
                }
            }
        }
    }

    #[test]
    fn only_whole_rounds_before_the_reach_are_past_it() {
        let counts = [1, 200, 200, 100, 100, 100, 5];
        // Head 0..1; rounds 1..3, 3..5, 5..6; question at 6. Reach
        // starts at 3 (100 + 100 + 100 <= 320 < 500).
        assert_eq!(past(&[1, 3, 5, 6], &counts, 6, 320), (1, 1..3));
        // A round that straddles the start stays within reach.
        assert_eq!(past(&[1, 2, 4, 6], &counts, 6, 320), (1, 1..2));
        assert_eq!(past(&[6], &counts, 6, 320), (0, 0..0));
        assert_eq!(past(&[], &counts, 6, 320), (0, 0..0));
        assert_eq!(past(&[1, 2, 4, 6], &counts, 6, 32_000), (0, 0..0));
    }
}
