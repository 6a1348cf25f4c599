//! [`Settings`]: what a [`Thrift`](crate::Thrift) is set to, as the
//! stages and the replay read it, with the public defaults.

use std::sync::Arc;

use crate::scoring::{Lexical, Relevance};
use crate::shortcuts::Shortcuts;

/// Default [`Thrift::with_low_watermark`](crate::Thrift::with_low_watermark): shed down to 80% of the budget.
///
/// Why: the fifth of the budget left lets the next calls append (and the
/// prompt's prefix stay cached) before the next shed. Figure (chars
/// counter, anthropic pricing; thrift's cost per call and support recall
/// on the data set's trajectory files at 2,000 / 4,000 / 8,000 tokens):
/// SWE-Gym 714 / 1,127 / 1,500 and 0.734 / 0.905 / 1.000, SWE-smith at
/// 4,000 and 8,000 1,203 / 2,175 and 0.807 / 0.930, LoCoMo at 2,000
/// tokens evidence 0.796 and answer recall 0.566, a chat of 16,106
/// messages at 8,000 tokens 3,183 a call. At 0.7 every cost falls
/// (SWE-Gym 682 / 1,041 / 1,460, SWE-smith 1,049 / 1,916, the chat
/// 2,960) and so does what is kept (SWE-Gym 0.719 / 0.901, SWE-smith
/// 0.795 / 0.908, LoCoMo 0.787 and 0.550); at 0.9 every cost rises
/// (SWE-Gym 774 / 1,333 / 1,637, SWE-smith 1,562 / 2,675, the chat 3,573)
/// for support that rises on SWE-Gym at 2,000 (0.744) and SWE-smith at
/// 4,000 (0.822) and falls on SWE-smith at 8,000 (0.897).
///
/// ```
/// assert_eq!(memory_thrift::Thrift::new().low_watermark(), memory_thrift::DEFAULT_LOW_WATERMARK);
/// ```
pub const DEFAULT_LOW_WATERMARK: f32 = 0.8;
/// Default [`Thrift::with_keep_recent_results`](crate::Thrift::with_keep_recent_results): the newest 3 results of the
/// newest round stay whole.
///
/// Why: an agent's next step mostly reads its last few outputs; the
/// others go 3 at a time, one cache break per batch (@nhtio/adk's
/// thrift keeps the newest 3 of a turn's results too). Figure (SWE-Gym,
/// the data set's only file of tool calls, 5 trajectories; chars counter,
/// anthropic pricing; at 2,000 / 4,000 / 8,000 tokens): support recall
/// 0.734 / 0.905 / 1.000 at a cost per call of 714 / 1,127 / 1,500.
/// With 1: 0.763 / 0.939 / 1.000 at 723 / 1,085 / 1,495, and
/// compact,thrift at 801 / 1,242 / 1,944 against 798 / 1,342 / 1,860.
/// With 5: 0.734 / 0.886 / 0.981, thrift's costs within 0.3%. Kept at 3
/// although 1 scores higher: support recall counts the names the next
/// step writes, not the output it reads, and with 1 the two outputs
/// before the newest (a file read, then a test run on it) are
/// placeholders while the step may still be reading them; the gain is
/// one file's.
///
/// ```
/// assert_eq!(memory_thrift::DEFAULT_KEEP_RECENT_RESULTS, 3);
/// ```
pub const DEFAULT_KEEP_RECENT_RESULTS: usize = 3;
/// Default [`Thrift::with_max_tool_output_tokens`](crate::Thrift::with_max_tool_output_tokens).
///
/// Why: an output's head and tail (the command's start, the error at its
/// end) say most of what a long log says. Figure (chars counter,
/// anthropic pricing; thrift at 2,000 / 4,000 / 8,000 tokens): SWE-Gym
/// 714 / 1,127 / 1,500 a call with support recall 0.734 / 0.905 / 1.000,
/// SWE-smith at 4,000 / 8,000 1,203 / 2,175 with 0.807 / 0.930. At 2,048
/// every cost rises (SWE-Gym 720 / 1,207 / 1,690, SWE-smith 1,303 /
/// 2,311) and support falls at 4,000 (0.862, 0.766); at 512 costs fall
/// on SWE-Gym (663 / 1,113 / 1,491) and at SWE-smith's 4,000 (1,172) and
/// support moves both ways (SWE-Gym 0.724 / 0.905 / 0.993, SWE-smith
/// 0.831 / 0.923).
///
/// ```
/// assert_eq!(memory_thrift::Thrift::new().max_tool_output_tokens(), memory_thrift::DEFAULT_MAX_TOOL_OUTPUT_TOKENS);
/// ```
pub const DEFAULT_MAX_TOOL_OUTPUT_TOKENS: usize = 1024;
/// Default [`Thrift::with_recency_weight`](crate::Thrift::with_recency_weight).
///
/// Why: in a chat the question decides what is relevant; recency only
/// breaks near ties between units of close relevance. Figure (LoCoMo,
/// chars counter, evidence and answer recall at 1,000 / 2,000 tokens):
/// 0.742 / 0.796 and 0.502 / 0.566; with no weight 0.741 / 0.800 and
/// 0.497 / 0.569, with 0.1 0.730 / 0.790 and 0.490 / 0.567 (and a chat of
/// 16,106 messages at 8,000 tokens 3,214 a call against 3,183). The
/// trajectory files do not move: a text-only agent's loop has its own
/// weight, and a tool-calling agent's one round has no earlier rounds.
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
