//! The short texts that stand in for shed content: an earlier tool result,
//! an earlier step's reasoning, an image, a pass-through block.
//!
//! Each says what was there, how large it was and the
//! [recall handle](memory_core::recall::Handle) of the message it stood in,
//! so the model knows that something was omitted and can bring it back
//! with one `recall` call rather than seeing it vanish. The handle depends
//! only on the original message, so a placeholder reads the same in every
//! call.
//!
//! ```
//! use memory_core::{recall::Handle, Message};
//! use memory_thrift::placeholder;
//!
//! let original = Message::tool_result("c1", "total 48\ndrwxr-xr-x ...");
//! let handle = Handle::of(std::slice::from_ref(&original));
//! let text = placeholder::tool_result(&original.text(), handle);
//! assert!(placeholder::is_placeholder(&text));
//! assert_eq!(Handle::all_in(&text), vec![handle]);
//! ```

use memory_core::recall::Handle;
use memory_core::{ImageContent, Message};

const TOOL_RESULT: &str = "[earlier tool result omitted: ";
const IMAGE: &str = "[image omitted: ";
const REASONING: &str = "[reasoning omitted: ";
const ATTACHMENT: &str = "[attachment omitted";

/// A pass-through block's `type` longer than this many bytes is not named
/// in its placeholder. Why: a type is a short name ("input_audio"); a long
/// one is data the placeholder would carry back in. Figure: none needed
/// (a bound, not a tuning).
const MAX_TYPE_BYTES: usize = 64;

/// The placeholder for an earlier tool result whose text was `original`
/// and whose message has `handle`; the length it states is that of the
/// text before any [cut](crate::cut::cut_middle).
///
/// ```
/// use memory_core::{recall::Handle, Message};
/// let original = Message::tool_result("c1", "0123456789");
/// let handle = Handle::of(std::slice::from_ref(&original));
/// assert_eq!(
///     memory_thrift::placeholder::tool_result("0123456789", handle),
///     format!("[earlier tool result omitted: 10 characters; recall {handle}]")
/// );
/// ```
pub fn tool_result(original: &str, handle: Handle) -> String {
    let mut text = String::new();
    write_tool_result(original, handle, &mut text);
    text
}

/// [`tool_result`]'s text, written into `out` (cleared first).
pub(crate) fn write_tool_result(original: &str, handle: Handle, out: &mut String) {
    use std::fmt::Write;
    out.clear();
    let chars = crate::cut::original_len(original);
    let _ = write!(
        out,
        "{TOOL_RESULT}{chars} characters; recall {}]",
        handle.covering(0..chars, chars)
    );
}

/// The placeholder message for tool result `message` (as it stands, cut
/// or not) of the original with `handle`, keeping its call id and name
/// (any other message as it is).
pub(crate) fn tool_result_message(message: &Message, handle: Handle) -> Message {
    match message {
        Message::ToolResult {
            tool_call_id,
            content,
            name,
        } => Message::ToolResult {
            tool_call_id: tool_call_id.clone(),
            content: tool_result(content, handle),
            name: name.clone(),
        },
        other => other.clone(),
    }
}

/// The placeholder for the reasoning of assistant message `message` (the
/// history's, with its reasoning): how long the reasoning was and the
/// handle that brings it back (the parts of the message's
/// [`part_text`](memory_core::recall::part_text) that hold it, when the
/// message is too long for one recall); `None` for a message without
/// reasoning.
///
/// ```
/// use memory_core::{recall::Handle, Message};
/// let step = Message::Assistant {
///     content: "Running the tests.".into(),
///     reasoning: Some("The parser fails on quoted commas.".into()),
///     tool_calls: vec![],
/// };
/// let handle = Handle::of(std::slice::from_ref(&step));
/// assert_eq!(
///     memory_thrift::placeholder::reasoning(&step),
///     Some(format!("[reasoning omitted: 34 characters; recall {handle}]"))
/// );
/// assert_eq!(memory_thrift::placeholder::reasoning(&Message::assistant("ok")), None);
/// ```
pub fn reasoning(message: &Message) -> Option<String> {
    let (span, total) = memory_core::recall::reasoning_span(message)?;
    let chars = span.len();
    let handle = Handle::for_span(message, span, total);
    Some(format!("{REASONING}{chars} characters; recall {handle}]"))
}

/// The reasoning of `message` that still stands: not empty, and not a
/// [placeholder](reasoning) already.
pub(crate) fn thought(message: &Message) -> Option<&str> {
    match message {
        Message::Assistant {
            reasoning: Some(r), ..
        } if !r.is_empty() && !is_placeholder(r) => Some(r),
        _ => None,
    }
}

/// The placeholder for an image block of the message with `handle`.
///
/// ```
/// use memory_core::{recall::Handle, ImageContent, Message};
/// let image = ImageContent::new("image/png", vec![0; 2048]);
/// let handle = Handle::of(&[Message::user("look")]);
/// assert_eq!(
///     memory_thrift::placeholder::image(&image, handle),
///     format!("[image omitted: image/png, 2048 bytes; recall {handle}]")
/// );
/// ```
pub fn image(image: &ImageContent, handle: Handle) -> String {
    format!(
        "{IMAGE}{}, {} bytes; recall {handle}]",
        image.mime_type,
        image.data.len()
    )
}

/// The placeholder for a pass-through (wire) block of the message with
/// `handle`: names its `type` when it has one.
///
/// ```
/// use serde_json::json;
/// use memory_core::{recall::Handle, Message};
/// use memory_thrift::placeholder::wire;
/// let handle = Handle::of(&[Message::user("listen")]);
/// assert_eq!(
///     wire(&json!({"type": "input_audio", "input_audio": {}}), handle),
///     format!("[attachment omitted: input_audio; recall {handle}]")
/// );
/// assert_eq!(wire(&json!(42), handle), format!("[attachment omitted; recall {handle}]"));
/// ```
pub fn wire(block: &serde_json::Value, handle: Handle) -> String {
    match block.get("type").and_then(serde_json::Value::as_str) {
        Some(kind) if kind.len() <= MAX_TYPE_BYTES => {
            format!("{ATTACHMENT}: {kind}; recall {handle}]")
        }
        _ => format!("{ATTACHMENT}; recall {handle}]"),
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
            || text.starts_with(REASONING)
            || text.starts_with(ATTACHMENT))
}
