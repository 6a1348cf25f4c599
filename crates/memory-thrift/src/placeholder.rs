//! The short texts that stand in for shed content: an earlier tool result,
//! an image, a pass-through block.
//!
//! Each says what was there and how large it was, so the model knows that
//! something was omitted (and can ask for it again) rather than seeing it
//! vanish.
//!
//! ```
//! use memory_thrift::placeholder;
//!
//! let text = placeholder::tool_result("total 48\ndrwxr-xr-x ...");
//! assert!(placeholder::is_placeholder(&text));
//! ```

use memory_core::{ImageContent, Message};

const TOOL_RESULT: &str = "[earlier tool result omitted: ";
const IMAGE: &str = "[image omitted: ";
const ATTACHMENT: &str = "[attachment omitted";

/// A pass-through block's `type` longer than this many bytes is not named
/// in its placeholder. Why: a type is a short name ("input_audio"); a long
/// one is data the placeholder would carry back in. Figure: none needed
/// (a bound, not a tuning).
const MAX_TYPE_BYTES: usize = 64;

/// The placeholder for an earlier tool result whose text was `original`;
/// the length it states is that of the text before any
/// [cut](crate::cut::cut_middle).
///
/// ```
/// assert_eq!(
///     memory_thrift::placeholder::tool_result("0123456789"),
///     "[earlier tool result omitted: 10 characters]"
/// );
/// ```
pub fn tool_result(original: &str) -> String {
    let mut text = String::new();
    write_tool_result(original, &mut text);
    text
}

/// [`tool_result`]'s text, written into `out` (cleared first).
pub(crate) fn write_tool_result(original: &str, out: &mut String) {
    use std::fmt::Write;
    out.clear();
    let _ = write!(
        out,
        "{TOOL_RESULT}{} characters]",
        crate::cut::original_len(original)
    );
}

/// The placeholder message for tool result `message`, keeping its call id
/// and name (any other message as it is).
pub(crate) fn tool_result_message(message: &Message) -> Message {
    match message {
        Message::ToolResult {
            tool_call_id,
            content,
            name,
        } => Message::ToolResult {
            tool_call_id: tool_call_id.clone(),
            content: tool_result(content),
            name: name.clone(),
        },
        other => other.clone(),
    }
}

/// The placeholder for an image block.
///
/// ```
/// use memory_core::{ImageContent, Message};
/// let image = ImageContent::new("image/png", vec![0; 2048]);
/// assert_eq!(memory_thrift::placeholder::image(&image), "[image omitted: image/png, 2048 bytes]");
/// ```
pub fn image(image: &ImageContent) -> String {
    format!("{IMAGE}{}, {} bytes]", image.mime_type, image.data.len())
}

/// The placeholder for a pass-through (wire) block: names its `type` when
/// it has one.
///
/// ```
/// use serde_json::json;
/// use memory_thrift::placeholder::wire;
/// assert_eq!(wire(&json!({"type": "input_audio", "input_audio": {}})), "[attachment omitted: input_audio]");
/// assert_eq!(wire(&json!(42)), "[attachment omitted]");
/// ```
pub fn wire(block: &serde_json::Value) -> String {
    match block.get("type").and_then(serde_json::Value::as_str) {
        Some(kind) if kind.len() <= MAX_TYPE_BYTES => format!("{ATTACHMENT}: {kind}]"),
        _ => format!("{ATTACHMENT}]"),
    }
}

/// Whether `text` is one of these placeholders.
///
/// ```
/// use memory_thrift::placeholder::is_placeholder;
/// assert!(is_placeholder("[attachment omitted]"));
/// assert!(!is_placeholder("cargo test: 3 passed"));
/// ```
pub fn is_placeholder(text: &str) -> bool {
    text.ends_with(']')
        && (text.starts_with(TOOL_RESULT)
            || text.starts_with(IMAGE)
            || text.starts_with(ATTACHMENT))
}
