//! A message's long output cut head and tail: a tool result's, or a
//! text-only agent's observation's.

use std::borrow::Cow;

use memory_core::Message;
use memory_core::recall::Handle;

use crate::{cut, placeholder};

/// A tool result neither cut nor replaced by its placeholder.
pub(crate) fn is_uncut_result(message: &Message) -> bool {
    matches!(message, Message::ToolResult { content, .. }
        if !cut::is_cut(content) && !placeholder::is_placeholder(content))
}

/// A tool result (or an observation, a user message of one text block) of
/// `tokens` tokens cut to about `max_tokens`, estimating characters per
/// token from the message itself; `None` when the cut would change
/// nothing.
///
/// The marker names the recall handle of `message`, unless it is cut
/// already (its marker keeps the original's).
pub(crate) fn cut_result(message: &Message, tokens: usize, max_tokens: usize) -> Option<Message> {
    let handle = Handle::of(std::slice::from_ref(message));
    if let Message::User(blocks) = message
        && let [block] = blocks.as_slice()
        && let Some(text) = block.as_text()
    {
        let keep = chars_for(max_tokens, text.chars().count(), tokens);
        return match cut::cut_middle_with_handle(text, keep, handle) {
            Cow::Borrowed(_) => None,
            Cow::Owned(shorter) => Some(Message::user(shorter)),
        };
    }
    let Message::ToolResult { content, .. } = message else {
        return None;
    };
    let keep = chars_for(max_tokens, content.chars().count(), tokens);
    cut_tool_result(message, keep, handle)
}

/// Tool result `message` with its output cut to `keep` characters around a
/// marker naming `handle` (the original's); `None` for any other message
/// and when the cut would change nothing.
pub(crate) fn cut_tool_result(message: &Message, keep: usize, handle: Handle) -> Option<Message> {
    let Message::ToolResult {
        tool_call_id,
        content,
        name,
    } = message
    else {
        return None;
    };
    match cut::cut_middle_with_handle(content, keep, handle) {
        Cow::Borrowed(_) => None,
        Cow::Owned(shorter) => Some(Message::ToolResult {
            tool_call_id: tool_call_id.clone(),
            content: shorter,
            name: name.clone(),
        }),
    }
}

/// Characters that make about `tokens_wanted` tokens, for a text of `chars`
/// characters counted as `tokens` tokens.
fn chars_for(tokens_wanted: usize, chars: usize, tokens: usize) -> usize {
    if tokens == 0 {
        return chars;
    }
    let keep = (tokens_wanted as u128 * chars as u128) / tokens as u128;
    usize::try_from(keep).unwrap_or(usize::MAX)
}
