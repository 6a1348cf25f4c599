//! [`Settings`]: what a [`Thrift`](crate::Thrift) is set to, as the
//! stages and the replay read it, with the public defaults.

use std::sync::Arc;

use crate::scoring::{Lexical, Relevance};
use crate::shortcuts::Shortcuts;

/// Default [`Thrift::with_low_watermark`](crate::Thrift::with_low_watermark): shed down to 80% of the budget.
///
/// Why: the fifth of the budget left lets the next calls append (and the
/// prompt's prefix stay cached) before the next shed. Figure: none
/// recorded.
///
/// ```
/// assert_eq!(memory_thrift::Thrift::new().low_watermark(), memory_thrift::DEFAULT_LOW_WATERMARK);
/// ```
pub const DEFAULT_LOW_WATERMARK: f32 = 0.8;
/// Default [`Thrift::with_keep_recent_results`](crate::Thrift::with_keep_recent_results): the newest 3 results of the
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
/// Default [`Thrift::with_max_tool_output_tokens`](crate::Thrift::with_max_tool_output_tokens).
///
/// Why: an output's head and tail (the command's start, the error at its
/// end) say most of what a long log says. Figure: none recorded.
///
/// ```
/// assert_eq!(memory_thrift::Thrift::new().max_tool_output_tokens(), memory_thrift::DEFAULT_MAX_TOOL_OUTPUT_TOKENS);
/// ```
pub const DEFAULT_MAX_TOOL_OUTPUT_TOKENS: usize = 1024;
/// Default [`Thrift::with_recency_weight`](crate::Thrift::with_recency_weight).
///
/// Why: in a chat the question decides what is relevant; recency only
/// breaks near ties between units of close relevance. Figure: none
/// recorded.
///
/// ```
/// assert_eq!(memory_thrift::Thrift::new().recency_weight(), memory_thrift::DEFAULT_RECENCY_WEIGHT);
/// ```
pub const DEFAULT_RECENCY_WEIGHT: f32 = 0.02;

/// Default [`Thrift::with_loop_recency_weight`](crate::Thrift::with_loop_recency_weight).
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

/// Thrift's settings (see the builder methods of
/// [`Thrift`](crate::Thrift)).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The share of the budget a shed within a round goes down to.
    pub low_watermark: f32,
    /// How many of the newest round's results are never replaced.
    pub keep_recent_results: usize,
    /// The length above which earlier tool outputs are cut, in tokens.
    pub max_tool_output_tokens: usize,
    /// The weight of recency beside relevance.
    pub recency_weight: f32,
    /// The weight of recency in a text-only agent's loop.
    pub loop_recency_weight: f32,
    /// How older units are scored against the current question.
    pub relevance: Arc<dyn Relevance>,
    /// The work passes save without changing their results.
    pub shortcuts: Shortcuts,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            low_watermark: DEFAULT_LOW_WATERMARK,
            keep_recent_results: DEFAULT_KEEP_RECENT_RESULTS,
            max_tool_output_tokens: DEFAULT_MAX_TOOL_OUTPUT_TOKENS,
            recency_weight: DEFAULT_RECENCY_WEIGHT,
            loop_recency_weight: DEFAULT_LOOP_RECENCY_WEIGHT,
            relevance: Arc::new(Lexical),
            shortcuts: Shortcuts::default(),
        }
    }
}
