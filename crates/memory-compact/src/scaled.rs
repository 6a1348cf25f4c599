//! The summary cap and the request input limit that follow a token budget
//! when the caller set neither.
//!
//! A compaction is paid twice: its request is read at the price of fresh
//! input, and its summary is written at the price of output (several times
//! that of input with most providers), then sits in every later context.
//! Measured on agent trajectories at budgets of 4,000 and 8,000 tokens, the
//! fixed defaults (a 1,024-token summary cap, a 12,000-token request) made
//! the summarizer cost more than the model calls it served. So, under a
//! token budget, the cap is a twelfth of the budget ([`CAP_DIVISOR`]) and
//! a request at most a quarter of it, each within bounds that keep a
//! summary useful:
//!
//! | budget | summary cap | request input |
//! |---|---|---|
//! | 2,000 | 166 | 2,000 |
//! | 4,000 | 333 | 2,000 |
//! | 8,000 | 666 | 2,000 |
//! | 12,288 and more | 1,024 | 12,000 at 48,000 and more |
//!
//! A longer transcript is shortened to fit the request, message by message
//! (see the prompt's rendering), never dropped.
//!
//! The summary sits in every context beside the messages that may never be
//! shed (the protected ones, the task among them), so the cap is also at
//! most half the room those leave ([`cap_in_room`]): a long system prompt
//! and task under a small budget keep the other half for the newest steps
//! and the index of what is left out.

use memory_core::summary::DEFAULT_SUMMARY_MAX_TOKENS;

use crate::prompt::DEFAULT_MAX_INPUT_TOKENS;

/// The smallest cap a budget scales to (a twelfth of the budget is less
/// below 1,152 tokens). Why: a summary needs room for its header and a
/// few lines; past that, what the cap takes from a small budget the
/// stages after the compaction no longer have. Figure (LoCoMo,
/// `compact,thrift`, chars counter, extractive summarizer; answer recall
/// at 500 / 1,000 tokens, thrift alone 0.432 / 0.502):
///
/// | floor | cap at 500 | cap at 1,000 | answer recall | evidence recall at 1,000 |
/// |---|---|---|---|---|
/// | none | 41 | 83 | 0.041 / 0.509 | 0.747 |
/// | 64 | 64 | 83 | 0.298 / 0.509 | 0.747 |
/// | 96 | 96 | 96 | 0.349 / 0.510 | 0.743 |
/// | 112 | 112 | 112 | 0.353 / 0.500 | 0.743 |
/// | 128 | 128 | 128 | 0.345 / 0.499 | 0.739 |
///
/// Below 96 a summary holds a line or two, or none (at 41 tokens each of
/// the 52 summaries was cut off at the cap and refused, and the fallback
/// dropped the turns); above it, the
/// cap at 1,000 tokens takes room thrift would give to the turns a
/// question needs. No trajectory of the data set is compacted at budgets
/// this small (their protected messages fill them), and from 1,152 tokens
/// on the twelfth rules.
const MIN_CAP: usize = 96;

/// The cap is the budget over this. Measured with the
/// [timing](crate::timing) that summarizes only when a summary lasts
/// (chars counter, `anthropic` pricing, extractive summarizer; cost per
/// call against window drop's, support recall against window drop's, on
/// the SWE-Gym and SWE-smith trajectories at 4,000 and 8,000 tokens):
///
/// | divisor | `compact` cost | `compact,thrift` cost | lowest support margin |
/// |---|---|---|---|
/// | 10 | 0.88-1.01x | 0.94-1.01x | +0.011 |
/// | 12 | 0.86-0.99x | 0.86-0.99x | +0.016 |
/// | 15 | 0.84-0.99x | 0.84-1.00x | +0.002 |
/// | 20 | 0.85-0.98x | 0.86-0.99x | -0.010 |
///
/// A twelfth is the largest cap at which every pipeline with `compact`
/// costs less than window drop on every file and budget, with the widest
/// support margin; smaller caps save little more and lose support (a
/// summary is what keeps the names of the turns it folds). The request's
/// input went from half the budget to a quarter with it (at 8,000
/// tokens and a cap of 400, a 2,000-token request instead of 4,000:
/// `compact` per call SWE-Gym 2,063 -> 2,054, SWE-smith 2,219 -> 2,195,
/// support recall 0.966 -> 0.978 and 0.865 -> 0.867).
const CAP_DIVISOR: usize = 12;

/// The smallest request input limit a budget scales to.
const MIN_INPUT: usize = 2_000;

/// The summary cap at a budget of `max` tokens: a twelfth of it, within
/// [`MIN_CAP`]..=[`DEFAULT_SUMMARY_MAX_TOKENS`].
pub(crate) fn cap(max: usize) -> usize {
    (max / CAP_DIVISOR).clamp(MIN_CAP, DEFAULT_SUMMARY_MAX_TOKENS as usize)
}

/// The summary cap at a budget of `max` tokens whose protected messages
/// (the task included) hold `held`: [`cap`], and at most half the room
/// they leave ([`memory_summary_engine::cap::in_room`]). Figure (SWE-smith
/// trajectories, chars counter, 2,000 tokens, whose system prompt and task
/// hold 1,550 to 1,750 of them): compact and compact,thrift over the
/// budget on 0 calls instead of 43 (2 of them where the protected messages
/// fit), reachable support recall 0.725 -> 0.944, cost per call 1,172 ->
/// 1,006, plain support recall 0.527 -> 0.522; SWE-Gym, budgets of 4,000
/// and 8,000 and LoCoMo unchanged. Counting earlier summaries among
/// `held`: plain support 0.473.
pub(crate) fn cap_in_room(max: usize, held: usize) -> usize {
    memory_summary_engine::cap::in_room(cap(max), max, held)
}

/// The request input limit at a budget of `max` tokens: a quarter of it,
/// within 2,000..=[`DEFAULT_MAX_INPUT_TOKENS`].
pub(crate) fn input(max: usize) -> usize {
    (max / 4).clamp(MIN_INPUT, DEFAULT_MAX_INPUT_TOKENS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_in_the_docs_holds() {
        let rows = [
            (2_000, 166, 2_000),
            (4_000, 333, 2_000),
            (8_000, 666, 2_000),
            (12_288, 1_024, 3_072),
            (48_000, 1_024, 12_000),
            (1_000_000, 1_024, 12_000),
        ];
        for (max, c, i) in rows {
            assert_eq!((cap(max), input(max)), (c, i), "budget {max}");
        }
        assert_eq!((cap(0), input(0)), (MIN_CAP, MIN_INPUT));
    }

    #[test]
    fn the_cap_leaves_half_the_room_beside_what_is_protected() {
        // A small prompt: the budget's cap.
        assert_eq!(cap_in_room(4_000, 100), 333);
        // A long prompt and task: half of the 300 tokens they leave.
        assert_eq!(cap_in_room(4_000, 3_700), 150);
        // Almost nothing left: the floor.
        assert_eq!(
            cap_in_room(4_000, 3_990),
            memory_summary_engine::cap::MIN_CAP_IN_ROOM
        );
        // Over the budget alone: no room to leave, the budget's cap.
        assert_eq!(cap_in_room(4_000, 4_000), 333);
        assert_eq!(cap_in_room(4_000, 4_143), 333);
    }
}
