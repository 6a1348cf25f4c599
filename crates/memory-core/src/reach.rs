//! What one recall from a context brings back whole: the pieces its
//! handles name that fit within a share of the budget.

use std::collections::HashMap;
use std::ops::Range;

use crate::budget::Budget;
use crate::handle::{Handle, key, part_text};
use crate::message::Message;

/// The share of the budget a recalled piece may hold and still count as
/// within reach: a quarter, so that the model can bring a piece back and
/// still have room for the rest of its context and its answer.
pub const REACHABLE_BUDGET_DIVISOR: usize = 4;

/// The most tokens a piece may hold to be within reach of one recall under
/// `budget` ([`REACHABLE_BUDGET_DIVISOR`]); no bound without a token limit.
///
/// ```
/// use memory_core::{recall::max_reachable_tokens, Budget};
/// assert_eq!(max_reachable_tokens(&Budget::tokens(2_000)), 500);
/// assert_eq!(max_reachable_tokens(&Budget::rounds(3)), usize::MAX);
/// ```
pub fn max_reachable_tokens(budget: &Budget) -> usize {
    budget
        .max_tokens
        .map_or(usize::MAX, |t| t / REACHABLE_BUDGET_DIVISOR)
}

/// A piece of the history one recall brings back whole: a stretch of
/// messages, or parts of one message's text.
///
/// ```
/// use memory_core::{recall::Reached, Message};
/// let history = [Message::user("abcdef")];
/// assert_eq!(Reached { messages: 0..1, chars: Some(2..4) }.text(&history), "cd");
/// assert_eq!(Reached { messages: 0..1, chars: None }.text(&history), "abcdef");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// The messages: the one whose text the parts are of, for parts.
    pub messages: Range<usize>,
    /// The characters of that message's [`part_text`], for parts.
    pub chars: Option<Range<usize>>,
}

impl Reached {
    /// Whether the piece holds its messages whole.
    ///
    /// ```
    /// assert!(memory_core::recall::Reached { messages: 0..2, chars: None }.is_whole());
    /// ```
    pub fn is_whole(&self) -> bool {
        self.chars.is_none()
    }

    /// The piece's text: its messages' texts, one per line, or the
    /// characters of the one message's.
    pub fn text(&self, history: &[Message]) -> String {
        let messages = history.get(self.messages.clone()).unwrap_or_default();
        match &self.chars {
            None => messages
                .iter()
                .map(Message::text)
                .collect::<Vec<_>>()
                .join("\n"),
            Some(chars) => messages.first().map_or_else(String::new, |m| {
                part_text(m)
                    .chars()
                    .skip(chars.start)
                    .take(chars.len())
                    .collect()
            }),
        }
    }
}

/// The pieces of `history` that one recall from `context` brings back
/// whole: those named by a handle written in the context that hold at most
/// `max_tokens` (`counts` are the history's counts; a part of a message
/// is taken to hold its share of the message's tokens by characters). A
/// handle of parts counts part by part. A handle to a larger stretch
/// ("everything before turn 40") makes nothing in it reachable: its
/// recall comes back cut. In order of the handles' first appearance,
/// each once.
///
/// ```
/// use memory_core::{recall::{reachable, Handle}, Message};
/// let history = [Message::user("a"), Message::assistant("b"), Message::user("c")];
/// let context = [Message::user(format!("[left out: {}]", Handle::of(&history[..2]))), history[2].clone()];
/// assert_eq!(reachable(&history, &[5, 5, 5], &context, 10)[0].messages, 0..2);
/// assert!(reachable(&history, &[5, 5, 5], &context, 9).is_empty());
/// ```
pub fn reachable(
    history: &[Message],
    counts: &[usize],
    context: &[Message],
    max_tokens: usize,
) -> Vec<Reached> {
    FirstKeys::default().reachable(history, counts, context, max_tokens)
}

/// Where each message of a history that only grows first stands, by the
/// key a handle names it by: what [`reachable`] looks handles up in, kept
/// from call to call so that each message is read once (a replay asks
/// after every call what its context reaches).
///
/// ```
/// use memory_core::{recall::{FirstKeys, Handle}, Message};
/// let mut history = vec![Message::user("a"), Message::assistant("b")];
/// let mut keys = FirstKeys::default();
/// let context = [Message::user(format!("[left out: {}]", Handle::of(&history[..1])))];
/// assert_eq!(keys.reachable(&history, &[5, 5], &context, 10)[0].messages, 0..1);
/// history.push(Message::user("c")); // the next call reads only "c"
/// assert_eq!(keys.reachable(&history, &[5, 5, 5], &context, 10)[0].messages, 0..1);
/// ```
#[derive(Debug, Clone, Default)]
pub struct FirstKeys {
    first: HashMap<u64, usize>,
    /// Messages read.
    len: usize,
}

impl FirstKeys {
    /// [`reachable`], `history` being the one of the call before with
    /// messages added at its end (a shorter one is read afresh).
    pub fn reachable(
        &mut self,
        history: &[Message],
        counts: &[usize],
        context: &[Message],
        max_tokens: usize,
    ) -> Vec<Reached> {
        let handles = handles_in(context);
        if handles.is_empty() {
            return Vec::new();
        }
        if history.len() < self.len {
            *self = Self::default();
        }
        // Where each key first stands (as `Handle::find` finds it), each
        // message hashed once for all the handles.
        for (i, m) in history.iter().enumerate().skip(self.len) {
            self.first.entry(key(m)).or_insert(i);
        }
        self.len = history.len();
        reached(&self.first, history, counts, handles, max_tokens)
    }
}

/// The pieces the `handles` name, looked up in `first`.
fn reached(
    first: &HashMap<u64, usize>,
    history: &[Message],
    counts: &[usize],
    handles: Vec<Handle>,
    max_tokens: usize,
) -> Vec<Reached> {
    let mut out: Vec<Reached> = Vec::new();
    for handle in handles {
        let Some(range) = first
            .get(&handle.key)
            .and_then(|&start| handle.from(history, start))
        else {
            continue;
        };
        let tokens: usize = counts
            .get(range.clone())
            .map_or(usize::MAX, |c| c.iter().sum());
        let pieces: Vec<(Option<Range<usize>>, usize)> = match handle.parts {
            None => vec![(None, tokens)],
            Some(_) => {
                // Each part holds its share of the message's tokens.
                let total = part_text(&history[range.start]).chars().count();
                handle
                    .each_part()
                    .iter()
                    .filter_map(|part| part.chars(total).filter(|p| !p.is_empty()))
                    .map(|part| {
                        let share = (tokens as u128 * part.len() as u128).div_ceil(total as u128);
                        (Some(part), usize::try_from(share).unwrap_or(usize::MAX))
                    })
                    .collect()
            }
        };
        for (chars, tokens) in pieces {
            let piece = Reached {
                messages: range.clone(),
                chars,
            };
            if tokens <= max_tokens && !out.contains(&piece) {
                out.push(piece);
            }
        }
    }
    out
}

/// Every handle written in `context` (in text, reasoning, a call's
/// arguments, tool results), in order, each once.
///
/// ```
/// use memory_core::{recall::{handles_in, Handle}, Message};
/// let h = Handle::of(&[Message::user("a")]);
/// let context = [Message::user(format!("{h} and {h}")), Message::assistant("none")];
/// assert_eq!(handles_in(&context), vec![h]);
/// ```
pub fn handles_in(context: &[Message]) -> Vec<Handle> {
    let mut out = Vec::new();
    for message in context {
        for handle in Handle::all_in(&part_text(message)) {
            if !out.contains(&handle) {
                out.push(handle);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A history growing by one message a call, the context naming an
    /// earlier stretch: the kept lookup answers as a fresh one, and a
    /// history that shrank is read afresh.
    #[test]
    fn kept_keys_answer_as_fresh_ones() {
        let history: Vec<Message> = (0..12)
            .map(|i| match i % 3 {
                0 => Message::user(format!("turn {}", i / 3)),
                _ => Message::assistant("ok"),
            })
            .collect();
        let counts = vec![4; history.len()];
        let mut keys = FirstKeys::default();
        for end in 3..=history.len() {
            let named = Handle::of(&history[end - 3..end - 1]);
            let context = [Message::user(format!("[left out: {named}]"))];
            let now = &history[..end];
            assert_eq!(
                keys.reachable(now, &counts[..end], &context, 100),
                reachable(now, &counts[..end], &context, 100),
                "{end}"
            );
        }
        let context = [Message::user(format!(
            "[left out: {}]",
            Handle::of(&history[3..5])
        ))];
        assert_eq!(
            keys.reachable(&history[..6], &counts[..6], &context, 100)[0].messages,
            3..5
        );
    }
}
