//! The model calls a history records, the span of them a replay looks at,
//! and the append of one call's new messages to the context shown before.
//!
//! Settled turns: each turn's context is the previous turn's plus what
//! came since, for as long as that fits and no new question reaches back.
//!
//! In an agent loop the question stays the same while steps pile up, and
//! the model is called once per step; a text-only agent gets its
//! observations back as user messages, and a chat goes on turn by turn. A projection recomputed from the
//! whole history on every call would move its cuts a little with every
//! step and rewrite the prompt's prefix each time, which defeats the
//! provider's prefix cache. So Thrift defines the context shown at each
//! call from the one shown at the call before: that context with the new
//! messages appended, when the sum fits the budget (with the new step's
//! long tool outputs cut, when that is what makes it fit); when it does
//! not fit, the history is shed afresh, down to the low watermark, which
//! leaves room for the next steps to append again; and when a new user
//! message [reaches back](crate::reach) to turns the context dropped, the
//! context is chosen afresh for it.
//!
//! This stays a function of the history alone (it replays the calls), so
//! the same history always gives the same context. To bound that replay,
//! it starts afresh every [`REPLAY_SPAN`] calls.

use std::ops::Range;

use memory_core::{History, MemoryError, Message, TokenCounter, TrimResult, structure};

use crate::output_cut;
use crate::trace::Shed;

/// The replay starts afresh at every multiple of this many calls. Why: it
/// bounds a trim's replay to this many calls (each an append or a shed)
/// while a long round still sheds rarely: a shed every 32nd call is one
/// cache break in 32 at most. Figure (chars counter, anthropic pricing):
/// at 64 a chat of 16,106 messages at 8,000 tokens costs 3,132 a call
/// against 3,183 (3,202 cache breaks against 3,257), and SWE-smith at
/// 8,000 tokens 2,131 against 2,175 with support recall 0.918 against
/// 0.930 (at 4,000 1,202.8 against 1,203.3); at 128 the chat 3,099 and
/// SWE-smith as at 64; every other figure of the data set is the same. A
/// trim without what the last call kept (a session opened again, a clone)
/// replays up to that many calls, each an append or a reach test.
pub(crate) const REPLAY_SPAN: usize = 32;

/// The model calls the history records, as the lengths of the history
/// each one saw: before each assistant message, and now (the whole
/// history). Empty when the history has no user message.
pub(crate) fn call_points(messages: &[Message]) -> Vec<usize> {
    if structure::current_question(messages).is_none() {
        return Vec::new();
    }
    let mut points: Vec<usize> = messages
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, m)| matches!(m, Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect();
    points.push(messages.len());
    points.dedup();
    points
}

/// The model calls a replay looks at: of the calls the history records
/// (see [`call_points`]), those from the replay's start on (see
/// [`replay_start`]), each as the length of the history it saw, indexed
/// by its place among all the calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Points {
    /// The first call listed: the replay's start.
    start: usize,
    /// The calls from `start` on.
    tail: Vec<usize>,
}

impl Points {
    /// The calls of the replay ending at the last of `calls` calls in all,
    /// the first `calls - 1` of which are `earlier` (the last one is now,
    /// the whole history of `len` messages).
    pub fn new(earlier: &[usize], len: usize) -> Self {
        let start = replay_start(earlier.len());
        let mut tail = Vec::with_capacity(earlier.len() + 1 - start);
        tail.extend_from_slice(&earlier[start..]);
        tail.push(len);
        Self { start, tail }
    }

    /// The replay's start (see [`replay_start`]).
    pub fn start(&self) -> usize {
        self.start
    }

    /// The number of calls in all.
    pub fn len(&self) -> usize {
        self.start + self.tail.len()
    }

    /// Call `k`, when it is one of those listed.
    pub fn get(&self, k: usize) -> Option<usize> {
        k.checked_sub(self.start)
            .and_then(|at| self.tail.get(at))
            .copied()
    }
}

impl std::ops::Index<usize> for Points {
    type Output = usize;

    /// Call `k`, one of those listed.
    fn index(&self, k: usize) -> &usize {
        &self.tail[k - self.start]
    }
}

/// The calls of `messages` (see [`call_points`]) a replay looks at; `None`
/// when there are none.
pub(crate) fn replay_points(messages: &[Message]) -> Option<Points> {
    let all = call_points(messages);
    let (_, earlier) = all.split_last()?;
    Some(Points::new(earlier, messages.len()))
}

/// Whether the messages `range` start a new round (hold a user message).
pub(crate) fn new_round(messages: &[Message], range: Range<usize>) -> bool {
    messages[range].iter().any(Message::is_user)
}

/// The first call of the replay that ends in `points[last]`.
pub(crate) fn replay_start(last: usize) -> usize {
    last / REPLAY_SPAN * REPLAY_SPAN
}

/// The first `end` messages of `history` as a history of their own.
pub(crate) fn prefix<'h>(
    history: &'h History<'_>,
    end: usize,
    total: usize,
) -> Result<History<'h>, MemoryError> {
    let protected = history.protected();
    let kept = protected.partition_point(|&i| i < end);
    // The prefix protects what `history` does: its task only if `history`
    // protects it (`forget_task` undoes only what `from_parts` adds).
    Ok(History::from_parts(
        &history.messages()[..end],
        &history.counts()[..end],
        &protected[..kept],
        total,
    )?
    .forget_task())
}

/// What [`append`] added.
pub(crate) struct Appended {
    /// The tool outputs it cut to make the step fit.
    pub cut: Shed,
    /// Tokens it added, as shown.
    pub tokens: usize,
}

/// Appends the messages `range` of `history` to `shown`, if the sum is
/// within `max` tokens: as they are, or else with their tool outputs over
/// `max_output` tokens cut head and tail (as the cutting stage would cut
/// them). `None`, with `shown` untouched, when neither fits.
pub(crate) async fn append(
    shown: &mut TrimResult,
    history: &History<'_>,
    range: Range<usize>,
    max: usize,
    max_output: usize,
    counter: &dyn TokenCounter,
) -> Result<Option<Appended>, MemoryError> {
    let before = shown.tokens();
    let raw = history.tokens(range.clone());
    let mut cut = Shed::default();
    let mut changed: Vec<Option<(Message, usize)>> = vec![None; range.len()];
    let mut added = raw;
    if before + raw > max {
        for (k, i) in range.clone().enumerate() {
            let tokens = history.counts()[i];
            let message = &history.messages()[i];
            if tokens <= max_output
                || history.is_protected(i)
                || !output_cut::is_uncut_result(message)
            {
                continue;
            }
            let Some(shorter) = output_cut::cut_result(message, tokens, max_output) else {
                continue;
            };
            let shorter_tokens = counter.count_message(&shorter).await?;
            if shorter_tokens < tokens {
                cut.before.count += 1;
                cut.before.tokens += tokens;
                cut.after.tokens += shorter_tokens;
                added -= tokens - shorter_tokens;
                changed[k] = Some((shorter, shorter_tokens));
            }
        }
        if before + added > max {
            return Ok(None);
        }
    }
    shown.fits = true;
    for (i, change) in range.zip(changed) {
        if history.is_protected(i) {
            shown.protected.push(shown.messages.len());
        }
        let (message, tokens) =
            change.unwrap_or_else(|| (history.messages()[i].clone(), history.counts()[i]));
        shown.messages.push(message);
        shown.counts.push(tokens);
    }
    Ok(Some(Appended { cut, tokens: added }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ToolCall;

    fn call(id: &str) -> Message {
        Message::assistant_with_tools("", vec![ToolCall::new(id, "ls", "{}")])
    }

    #[test]
    fn the_calls_are_before_each_assistant_message_and_now() {
        let m = [
            Message::system("s"),
            Message::user("old"),
            Message::assistant("a"),
            Message::user("q"),
            call("1"),
            Message::tool_result("1", "r"),
            call("2"),
            Message::tool_result("2", "r"),
        ];
        assert_eq!(call_points(&m), vec![2, 4, 6, 8]);
        assert_eq!(call_points(&m[..4]), vec![2, 4]);
        assert!(call_points(&[Message::assistant("no question")]).is_empty());
        assert!(new_round(&m, 2..4) && !new_round(&m, 4..6));
    }

    #[test]
    fn the_replay_restarts_on_a_fixed_grid() {
        assert_eq!(replay_start(0), 0);
        assert_eq!(replay_start(REPLAY_SPAN - 1), 0);
        assert_eq!(replay_start(REPLAY_SPAN), REPLAY_SPAN);
        assert_eq!(replay_start(2 * REPLAY_SPAN + 5), 2 * REPLAY_SPAN);
    }
}
