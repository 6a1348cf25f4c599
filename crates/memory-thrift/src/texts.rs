//! The texts a message shows the model, as relevance reads them.

use memory_core::{ContentBlock, Message};

use crate::placeholder;

/// Every text `message` sends to the model, but a placeholder's (its words
/// are Thrift's, not the conversation's), appended to `out`.
pub(crate) fn texts_of<'m>(message: &'m Message, out: &mut Vec<&'m str>) {
    each_text(message, out, |reasoning, out| {
        if !placeholder::is_placeholder(reasoning) {
            out.push(reasoning);
        }
    });
}

/// The texts of `message` that [`texts_of`] gives, but its reasoning,
/// appended to `out`; its reasoning (a placeholder too) is returned apart.
pub(crate) fn texts_and_reasoning<'m>(
    message: &'m Message,
    out: &mut Vec<&'m str>,
) -> Option<&'m str> {
    let mut thought = None;
    each_text(message, out, |reasoning, _| thought = Some(reasoning));
    thought
}

/// The texts of `message` but a tool result's placeholder, appended to
/// `out` in the order it sends them; its reasoning, where it has one, is
/// handed to `reasoning` in its place (after the content, before the tool
/// calls).
fn each_text<'m>(
    message: &'m Message,
    out: &mut Vec<&'m str>,
    reasoning: impl FnOnce(&'m str, &mut Vec<&'m str>),
) {
    match message {
        Message::System(text) => out.push(text),
        Message::User(blocks) => out.extend(blocks.iter().filter_map(ContentBlock::as_text)),
        Message::Assistant {
            content,
            reasoning: thought,
            tool_calls,
        } => {
            out.push(content);
            if let Some(thought) = thought.as_deref() {
                reasoning(thought, out);
            }
            for call in tool_calls {
                out.push(&call.name);
                out.push(&call.arguments);
            }
        }
        Message::ToolResult { content, .. } if placeholder::is_placeholder(content) => {}
        Message::ToolResult { content, .. } => out.push(content),
    }
}
