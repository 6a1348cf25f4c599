//! The horizon of a long round: the older steps of the newest round that
//! no shed can keep, left out before any stage looks at them.
//!
//! A shed keeps the newest round's steps newest first, for as long as they
//! fit beside the floor (see [`drop_stage`](crate::drop_stage)). In an agent loop
//! of thousands of steps every stage would otherwise shrink every older
//! step (cut its output, replace its result by a placeholder) only for the
//! drop stage to drop it, so that each shed would cost a pass over the
//! whole round. The steps are walked back from the newest until their
//! tokens, each message counted as small as the stages can make it (a
//! result as its placeholder, a step with its reasoning's placeholder), are more
//! than the budget (by a [`HORIZON_MARGIN`]); the older ones are skipped. The drop
//! stage keeps fewer than that (it aims at most at the budget, beside the
//! floor), and the stages cannot bring them under the budget.
//!
//! What the pass gives is what a pass over the whole history gives. The
//! pass that skipped them is kept only when every stage found the total
//! still over its aim after its last message (so each shrank every message
//! it could, as it would have with the skipped steps there, whose tokens
//! only add to the total) and the drop stage's run of newest steps stopped
//! among the steps looked at (so it stops there with the skipped steps
//! there too); otherwise the pass is made again over every step. The
//! trace counts the skipped steps as steps dropped, at their tokens as
//! they were.

use std::ops::Range;

use memory_core::{History, MemoryError, TokenCounter, structure};

use crate::layout::Layout;
use crate::shrink_cache::ShrinkCache;

/// The fewest messages worth skipping: a shorter round is passed over
/// whole. Why: below it, the walk back and the check that the skipping
/// pass can be kept cost about what skipping saves. Figure: none recorded
/// (no round of the trajectory files is long enough to skip).
pub(crate) const MIN_SKIPPED: usize = 64;

/// The steps looked at hold more than the budget by this share of it.
/// Why: the drop stage's run of newest steps must stop among them, and
/// the stages must stay over their aim, or the pass is made again; the
/// bounds are exact, so an eighth is enough. Figure: on the
/// 10,000-message agent round, 74-79 us per call against 78-86 us when
/// the steps held twice the target (within the noise of single runs).
pub(crate) const HORIZON_MARGIN: f64 = 0.125;

/// The steps of the newest round of `history` (laid out as `layout`) to
/// skip in a pass under a budget of `max` tokens: from its first step up
/// to the newest ones that hold more than `share` of `max` (one and
/// [`HORIZON_MARGIN`], unless a test asks for less). `None` when there are
/// fewer than [`MIN_SKIPPED`] messages to skip, or the floor holds one of
/// them (a protected message is never dropped).
///
/// # Errors
///
/// Counting errors of `counter` (it counts placeholders, which `shrunk`
/// keeps for the stage that replaces results).
pub(crate) async fn horizon(
    history: &History<'_>,
    layout: &Layout<'_>,
    max: usize,
    share: f64,
    counter: &dyn TokenCounter,
    shrunk: &mut ShrinkCache,
) -> Result<Option<Range<usize>>, MemoryError> {
    let Some(question) = layout.question else {
        return Ok(None);
    };
    let start = question + 1;
    let end = layout.newest_step;
    if end < start + MIN_SKIPPED {
        return Ok(None);
    }
    let messages = history.messages();
    let want = (max as f64 * share) as usize;
    let mut at = end;
    let mut tokens = 0usize;
    while at > start && tokens < want {
        // Steps as the drop stage splits them: each starts at a message
        // that is not an attached tool result.
        let from = structure::step_start(messages, at);
        if from < start {
            return Ok(None);
        }
        for (i, message) in messages.iter().enumerate().take(at).skip(from) {
            let count = history.counts()[i];
            let least = if message.is_tool_result() {
                shrunk
                    .placeholder_tokens(i, message, message, counter)
                    .await?
            } else {
                shrunk.bare(i, message, counter).await?.map(|(_, c)| c)
            };
            tokens = tokens.saturating_add(least.map_or(count, |least| least.min(count)));
        }
        at = from;
    }
    if at < start + MIN_SKIPPED {
        return Ok(None);
    }
    let skipped = start..at;
    let holds_floor = layout
        .floor
        .ranges
        .iter()
        .any(|r| r.start < skipped.end && skipped.start < r.end);
    Ok((!holds_floor).then_some(skipped))
}
