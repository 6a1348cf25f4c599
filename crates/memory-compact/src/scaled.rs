//! The summary cap and the request input limit that follow a token budget
//! when the caller set neither.
//!
//! A compaction is paid twice: its request is read at the price of fresh
//! input, and its summary is written at the price of output (several times
//! that of input with most providers), then sits in every later context.
//! Measured on agent trajectories at budgets of 4,000 and 8,000 tokens, the
//! fixed defaults (a 1,024-token summary cap, a 12,000-token request) made
//! the summarizer cost more than the model calls it served. So, under a
//! token budget, the cap is a tenth of the budget and a request at most
//! half of it, each within bounds that keep a summary useful:
//!
//! | budget | summary cap | request input |
//! |---|---|---|
//! | 2,000 | 256 | 2,000 |
//! | 4,000 | 400 | 2,000 |
//! | 8,000 | 800 | 4,000 |
//! | 32,000 and more | 1,024 | 12,000 at 24,000 and more |
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

/// The smallest cap a budget scales to.
const MIN_CAP: usize = 256;

/// The smallest request input limit a budget scales to.
const MIN_INPUT: usize = 2_000;

/// The summary cap at a budget of `max` tokens: a tenth of it, within
/// 256..=[`DEFAULT_SUMMARY_MAX_TOKENS`].
pub(crate) fn cap(max: usize) -> usize {
    (max / 10).clamp(MIN_CAP, DEFAULT_SUMMARY_MAX_TOKENS as usize)
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

/// The request input limit at a budget of `max` tokens: half of it, within
/// 2,000..=[`DEFAULT_MAX_INPUT_TOKENS`].
pub(crate) fn input(max: usize) -> usize {
    (max / 2).clamp(MIN_INPUT, DEFAULT_MAX_INPUT_TOKENS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_in_the_docs_holds() {
        let rows = [
            (2_000, 256, 2_000),
            (4_000, 400, 2_000),
            (8_000, 800, 4_000),
            (24_000, 1_024, 12_000),
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
        assert_eq!(cap_in_room(2_000, 100), 256);
        // A long prompt and task: half of the 300 tokens they leave.
        assert_eq!(cap_in_room(2_000, 1_700), 150);
        // Almost nothing left: the floor.
        assert_eq!(
            cap_in_room(2_000, 1_990),
            memory_summary_engine::cap::MIN_CAP_IN_ROOM
        );
        // Over the budget alone: no room to leave, the budget's cap.
        assert_eq!(cap_in_room(2_000, 2_000), 256);
        assert_eq!(cap_in_room(2_000, 2_143), 256);
    }
}
