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

use memory_core::summary::DEFAULT_SUMMARY_MAX_TOKENS;

use crate::settings::DEFAULT_MAX_INPUT_TOKENS;

/// The smallest cap a budget scales to.
const MIN_CAP: usize = 256;

/// The smallest request input limit a budget scales to.
const MIN_INPUT: usize = 2_000;

/// The summary cap at a budget of `max` tokens: a tenth of it, within
/// 256..=[`DEFAULT_SUMMARY_MAX_TOKENS`].
pub(crate) fn cap(max: usize) -> usize {
    (max / 10).clamp(MIN_CAP, DEFAULT_SUMMARY_MAX_TOKENS as usize)
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
}
