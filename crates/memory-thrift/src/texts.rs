//! The texts a message shows the model, as relevance reads them.

use memory_core::{ContentBlock, Message};

use crate::placeholder;

/// Every text `message` sends to the model, but a placeholder's (its words
/// are Thrift's, not the conversation's), appended to `out`.
pub(crate) fn texts_of<'m>(message: &'m Message, out: &mut Vec<&'m str>) {
    match message {
        Message::System(text) => out.push(text),
        Message::User(blocks) => out.extend(blocks.iter().filter_map(ContentBlock::as_text)),
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => {
            out.push(content);
            out.extend(
                reasoning
                    .as_deref()
                    .filter(|r| !placeholder::is_placeholder(r)),
            );
            for call in tool_calls {
                out.push(&call.name);
                out.push(&call.arguments);
            }
        }
        Message::ToolResult { content, .. } if placeholder::is_placeholder(content) => {}
        Message::ToolResult { content, .. } => out.push(content),
    }
}
