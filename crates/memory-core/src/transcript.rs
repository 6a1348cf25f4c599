//! Transcripts as plain text, for summarizers.
//!
//! One entry per message: `role: text`. Reasoning is never included (it is
//! the model's scratchpad, not the conversation). Tool calls are rendered as
//! their name and arguments, tool results by the id they answer, images and
//! pass-through blocks as placeholders, and a previous summary as such, so
//! a summarizer can merge it instead of summarizing it again.
//!
//! ```
//! use memory_core::{summary, transcript, Message, ToolCall};
//!
//! let text = transcript::to_text(&[
//!     summary::message("The user is fixing a parser."),
//!     Message::user("Run the tests."),
//!     Message::Assistant {
//!         content: String::new(),
//!         reasoning: Some("private".into()),
//!         tool_calls: vec![ToolCall::new("c1", "shell", r#"{"cmd":"cargo test"}"#)],
//!     },
//!     Message::tool_result("c1", "2 passed"),
//! ]);
//! assert_eq!(
//!     text,
//!     "previous summary: The user is fixing a parser.\n\
//!      user: Run the tests.\n\
//!      assistant called shell {\"cmd\":\"cargo test\"}\n\
//!      tool result (c1): 2 passed"
//! );
//! ```

use crate::message::{ContentBlock, Message};
use crate::summary;

/// Renders `messages` as text, one entry per message, joined by newlines.
pub fn to_text(messages: &[Message]) -> String {
    messages
        .iter()
        .map(message_to_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// What opens a previous summary's line in a transcript, before its body.
///
/// ```
/// use memory_core::{summary, transcript};
/// let line = transcript::message_to_text(&summary::message("so far"));
/// assert_eq!(line, format!("{} so far", transcript::PREVIOUS_SUMMARY));
/// ```
pub const PREVIOUS_SUMMARY: &str = "previous summary:";

/// Renders one message (see the module documentation).
///
/// ```
/// use memory_core::{transcript, Message};
/// assert_eq!(transcript::message_to_text(&Message::assistant("done")), "assistant: done");
/// ```
pub fn message_to_text(message: &Message) -> String {
    match message {
        Message::System(text) => match summary::body(message) {
            Some(body) => format!("{PREVIOUS_SUMMARY} {body}"),
            None => format!("system: {text}"),
        },
        Message::User(blocks) => {
            let parts: Vec<String> = blocks
                .iter()
                .map(|block| match block {
                    ContentBlock::Text(t) => t.clone(),
                    ContentBlock::Image(image) => format!("[image: {}]", image.mime_type),
                    ContentBlock::Wire(value) => match value.get("type").and_then(|t| t.as_str()) {
                        Some(kind) => format!("[{kind}]"),
                        None => "[attachment]".to_string(),
                    },
                })
                .collect();
            format!("user: {}", parts.join(" "))
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut lines = Vec::with_capacity(1 + tool_calls.len());
            if !content.is_empty() || tool_calls.is_empty() {
                lines.push(format!("assistant: {content}"));
            }
            for call in tool_calls {
                lines.push(format!("assistant called {} {}", call.name, call.arguments));
            }
            lines.join("\n")
        }
        Message::ToolResult {
            tool_call_id,
            content,
            ..
        } => format!("tool result ({tool_call_id}): {content}"),
    }
}
