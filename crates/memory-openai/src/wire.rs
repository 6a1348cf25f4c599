//! The OpenAI chat-completions wire format of a [`Message`]: import and
//! export of the JSON messages that OpenAI-compatible endpoints, agent
//! frameworks and transcript files exchange.
//!
//! Roles `system`, `developer`, `user`, `assistant` and `tool`; content as a
//! string or an array of parts; `tool_calls[{id, function{name, arguments}}]`
//! and `tool_call_id`. Unknown fields are ignored. Malformed input is an
//! [`ImportError`] naming the message's position and the field. An
//! `image_url` part with a base64 `data:` URL is an image
//! ([`ContentBlock::Image`], its `detail` kept); an image by `http(s)` URL,
//! and any part that would not be written back as it came, is a
//! pass-through block ([`ContentBlock::Wire`]), sent on unchanged.
//!
//! ```
//! use memory_core::{Message, ToolCall};
//! use memory_openai::wire;
//!
//! let json = r#"[
//!   {"role": "system", "content": "be brief"},
//!   {"role": "user", "content": [{"type": "text", "text": "list src"}]},
//!   {"role": "assistant", "content": null,
//!    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
//!   {"role": "tool", "tool_call_id": "c1", "content": "lib.rs"}
//! ]"#;
//! let messages = wire::from_json_str(json).unwrap();
//! assert_eq!(messages[2].tool_calls(), &[ToolCall::new("c1", "ls", "{}")]);
//! let back = wire::to_value(&messages);
//! assert_eq!(wire::from_value(&back).unwrap(), messages);
//! ```

mod image_part;
mod written;
pub use written::Written;

use std::fmt;

use serde_json::{Map, Value};

use memory_core::{ContentBlock, Message, ToolCall};

/// Why a message could not be imported.
///
/// ```
/// let err = memory_openai::wire::from_json_str(r#"[{"role": "user"}, {"content": "x"}]"#).unwrap_err();
/// assert_eq!(err.to_string(), "message 1: field `role`: is missing");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    /// Position of the message, when the error concerns one.
    pub index: Option<usize>,
    /// The field at fault (`role`, `content[2].text`, ...), or empty.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.index, self.field.is_empty()) {
            (Some(i), false) => write!(f, "message {i}: field `{}`: {}", self.field, self.problem),
            (Some(i), true) => write!(f, "message {i}: {}", self.problem),
            (None, false) => write!(f, "field `{}`: {}", self.field, self.problem),
            (None, true) => write!(f, "{}", self.problem),
        }
    }
}

impl std::error::Error for ImportError {}

impl ImportError {
    fn at(index: usize, field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            index: Some(index),
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// The same error, for a message at another position (used when the
    /// messages are nested in a larger document).
    ///
    /// ```
    /// let e = memory_openai::wire::from_json_str(r#"[{"role": 1}]"#).unwrap_err().shifted("trajectory 2, ");
    /// assert!(e.to_string().starts_with("trajectory 2, message 0"));
    /// ```
    pub fn shifted(mut self, context: &str) -> Self {
        self.problem = self.problem.clone();
        if let Some(i) = self.index {
            self.field = self.field.clone();
            self.index = None;
            let field = if self.field.is_empty() {
                String::new()
            } else {
                format!(": field `{}`", self.field)
            };
            self.problem = format!("{context}message {i}{field}: {}", self.problem);
            self.field.clear();
        } else {
            self.problem = format!("{context}{}", self.problem);
        }
        self
    }
}

/// Parses a JSON array of chat messages.
///
/// # Errors
///
/// Invalid JSON (with line and column), a non-array document, or a malformed
/// message.
///
/// ```
/// assert!(memory_openai::wire::from_json_str("[").is_err());
/// ```
pub fn from_json_str(text: &str) -> Result<Vec<Message>, ImportError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ImportError {
        index: None,
        field: String::new(),
        problem: format!(
            "invalid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        ),
    })?;
    from_value(&value)
}

/// Converts a JSON array of chat messages.
///
/// # Errors
///
/// A non-array value, or a malformed message.
///
/// ```
/// let v = serde_json::json!([{"role": "developer", "content": "rules"}]);
/// assert_eq!(memory_openai::wire::from_value(&v).unwrap(), vec![memory_core::Message::system("rules")]);
/// ```
pub fn from_value(value: &Value) -> Result<Vec<Message>, ImportError> {
    let Some(items) = value.as_array() else {
        return Err(ImportError {
            index: None,
            field: String::new(),
            problem: format!("expected an array of messages, found {}", kind(value)),
        });
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| message_from_value(v, i))
        .collect()
}

/// Converts one chat message; `index` is its position, for errors.
///
/// # Errors
///
/// A non-object value, a missing or unknown role, a field of the wrong type.
///
/// ```
/// use memory_openai::wire::message_from_value;
/// let e = message_from_value(&serde_json::json!("hi"), 4).unwrap_err();
/// assert_eq!(e.to_string(), "message 4: expected an object, found a string");
/// ```
pub fn message_from_value(value: &Value, index: usize) -> Result<Message, ImportError> {
    let Some(obj) = value.as_object() else {
        return Err(ImportError::at(
            index,
            "",
            format!("expected an object, found {}", kind(value)),
        ));
    };
    let role = match obj.get("role") {
        None => return Err(ImportError::at(index, "role", "is missing")),
        Some(Value::String(r)) => r.as_str(),
        Some(other) => {
            return Err(ImportError::at(
                index,
                "role",
                format!("expected a string, found {}", kind(other)),
            ));
        }
    };
    match role {
        "system" | "developer" => Ok(Message::System(text_content(obj, index)?)),
        "user" => Ok(Message::User(user_content(obj, index)?)),
        "assistant" => assistant_from(obj, index),
        "tool" => tool_result_from(obj, index),
        other => Err(ImportError::at(
            index,
            "role",
            format!("unknown role {other:?}; expected system, developer, user, assistant or tool"),
        )),
    }
}

/// An assistant message: its text, reasoning and tool calls.
fn assistant_from(obj: &Map<String, Value>, index: usize) -> Result<Message, ImportError> {
    let mut content = text_content(obj, index)?;
    // A reply that refused has its words in `refusal`, and no content.
    if content.is_empty()
        && let Some(Value::String(refusal)) = obj.get("refusal")
    {
        content = refusal.clone();
    }
    let reasoning = match obj
        .get("reasoning_content")
        .or_else(|| obj.get("reasoning"))
    {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(ImportError::at(
                index,
                "reasoning_content",
                format!("expected a string, found {}", kind(other)),
            ));
        }
    };
    let tool_calls = tool_calls(obj, index)?;
    Ok(Message::Assistant {
        content,
        reasoning,
        tool_calls,
    })
}

/// A tool result: the call it answers, its text, the tool's name if given.
fn tool_result_from(obj: &Map<String, Value>, index: usize) -> Result<Message, ImportError> {
    let tool_call_id = match obj.get("tool_call_id") {
        Some(Value::String(id)) => id.clone(),
        None | Some(Value::Null) => {
            return Err(ImportError::at(index, "tool_call_id", "is missing"));
        }
        Some(other) => {
            return Err(ImportError::at(
                index,
                "tool_call_id",
                format!("expected a string, found {}", kind(other)),
            ));
        }
    };
    let name = obj.get("name").and_then(Value::as_str).map(str::to_string);
    Ok(Message::ToolResult {
        tool_call_id,
        content: text_content(obj, index)?,
        name,
    })
}

/// How a JSON value is named in error messages ("a string", "null", ...).
///
/// ```
/// assert_eq!(memory_openai::wire::kind(&serde_json::json!([1])), "an array");
/// ```
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `content` as text: a string, null/absent (empty), or an array of text
/// parts joined by newlines.
fn text_content(obj: &Map<String, Value>, index: usize) -> Result<String, ImportError> {
    match obj.get("content") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (k, part) in parts.iter().enumerate() {
                match part {
                    Value::String(s) => texts.push(s.clone()),
                    // A refusal part's words are the assistant's text.
                    Value::Object(p) => match p.get("text").or_else(|| p.get("refusal")) {
                        Some(Value::String(t)) => texts.push(t.clone()),
                        _ => {
                            return Err(ImportError::at(
                                index,
                                format!("content[{k}].text"),
                                "expected a text part with a string `text`",
                            ));
                        }
                    },
                    other => {
                        return Err(ImportError::at(
                            index,
                            format!("content[{k}]"),
                            format!("expected a content part, found {}", kind(other)),
                        ));
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        Some(other) => Err(ImportError::at(
            index,
            "content",
            format!(
                "expected a string or an array of parts, found {}",
                kind(other)
            ),
        )),
    }
}

fn user_content(obj: &Map<String, Value>, index: usize) -> Result<Vec<ContentBlock>, ImportError> {
    match obj.get("content") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![ContentBlock::Text(s.clone())]),
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(k, part)| user_part(part, index, k))
            .collect(),
        Some(other) => Err(ImportError::at(
            index,
            "content",
            format!(
                "expected a string or an array of parts, found {}",
                kind(other)
            ),
        )),
    }
}

fn user_part(part: &Value, index: usize, k: usize) -> Result<ContentBlock, ImportError> {
    let Some(p) = part.as_object() else {
        return match part {
            Value::String(s) => Ok(ContentBlock::Text(s.clone())),
            other => Err(ImportError::at(
                index,
                format!("content[{k}]"),
                format!("expected a content part, found {}", kind(other)),
            )),
        };
    };
    match p.get("type").and_then(Value::as_str) {
        Some("text") => match p.get("text") {
            Some(Value::String(t)) => Ok(ContentBlock::Text(t.clone())),
            _ => Err(ImportError::at(
                index,
                format!("content[{k}].text"),
                "a text part needs a string `text`",
            )),
        },
        Some("image_url") => match image_part::decode(part) {
            Some(image) => Ok(ContentBlock::Image(image)),
            None => Ok(ContentBlock::Wire(part.clone())),
        },
        _ => Ok(ContentBlock::Wire(part.clone())),
    }
}

fn tool_calls(obj: &Map<String, Value>, index: usize) -> Result<Vec<ToolCall>, ImportError> {
    let calls = match obj.get("tool_calls") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(calls)) => calls,
        Some(other) => {
            return Err(ImportError::at(
                index,
                "tool_calls",
                format!("expected an array, found {}", kind(other)),
            ));
        }
    };
    calls
        .iter()
        .enumerate()
        .map(|(k, call)| {
            let field = |name: &str| format!("tool_calls[{k}].{name}");
            let id = match call.get("id") {
                Some(Value::String(id)) => id.clone(),
                _ => return Err(ImportError::at(index, field("id"), "expected a string id")),
            };
            let Some(function) = call.get("function").and_then(Value::as_object) else {
                return Err(ImportError::at(
                    index,
                    field("function"),
                    "expected an object",
                ));
            };
            let name = match function.get("name") {
                Some(Value::String(n)) => n.clone(),
                _ => {
                    return Err(ImportError::at(
                        index,
                        field("function.name"),
                        "expected a string",
                    ));
                }
            };
            let arguments = match function.get("arguments") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(a)) => a.clone(),
                Some(other) => other.to_string(),
            };
            Ok(ToolCall {
                id,
                name,
                arguments,
            })
        })
        .collect()
}

/// Converts messages to the chat-completions JSON array.
///
/// ```
/// use memory_core::Message;
/// use memory_openai::wire;
/// let v = wire::to_value(&[Message::tool_result("c1", "ok")]);
/// assert_eq!(v[0]["role"], "tool");
/// assert_eq!(v[0]["tool_call_id"], "c1");
/// ```
pub fn to_value(messages: &[Message]) -> Value {
    Value::Array(messages.iter().map(message_to_value).collect())
}

/// Converts one message.
///
/// ```
/// let v = memory_openai::wire::message_to_value(&memory_core::Message::user("hi"));
/// assert_eq!(v["content"], "hi");
/// ```
pub fn message_to_value(message: &Message) -> Value {
    // One writer of the format: what `Written` writes, as a value. Its
    // maps have string keys, so making the value cannot fail.
    serde_json::to_value(Written(message)).unwrap_or(Value::Null)
}

#[cfg(test)]
mod refusal_tests {
    use super::*;

    #[test]
    fn a_refusal_is_the_assistants_text() {
        let v = serde_json::json!([
            {"role": "user", "content": "do it"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]},
            {"role": "assistant", "content": null, "refusal": "Nor that."},
        ]);
        let messages = from_value(&v).unwrap();
        assert_eq!(messages[1], Message::assistant("I can't."));
        assert_eq!(messages[2], Message::assistant("Nor that."));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ImageContent;
    use serde_json::json;

    #[test]
    fn every_shape_round_trips() {
        let messages = vec![
            Message::system("rules"),
            Message::User(vec![
                ContentBlock::Text("look".into()),
                ContentBlock::Image(ImageContent::new("image/png", vec![1, 2, 3])),
                ContentBlock::Wire(json!({"type": "input_audio", "input_audio": {"data": "AA=="}})),
            ]),
            Message::Assistant {
                content: String::new(),
                reasoning: Some("think".into()),
                tool_calls: vec![ToolCall::new("a", "read", r#"{"path":"x"}"#)],
            },
            Message::ToolResult {
                tool_call_id: "a".into(),
                content: "data".into(),
                name: Some("read".into()),
            },
            Message::assistant("done"),
        ];
        assert_eq!(from_value(&to_value(&messages)).unwrap(), messages);
    }

    #[test]
    fn an_images_detail_goes_out_as_it_came_in() {
        let sent = json!([{"role": "user", "content": [
            {"type": "text", "text": "compare"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AQID", "detail": "low"}},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,BAU=", "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "data:image/gif;base64,Bg=="}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "auto"}},
        ]}]);
        let messages = from_value(&sent).unwrap();
        let Message::User(blocks) = &messages[0] else {
            panic!("a user message");
        };
        assert_eq!(
            blocks[1],
            ContentBlock::Image(ImageContent::new("image/png", vec![1, 2, 3]).with_detail("low"))
        );
        assert_eq!(
            blocks[2],
            ContentBlock::Image(ImageContent::new("image/jpeg", vec![4, 5]).with_detail("high"))
        );
        assert_eq!(
            blocks[3],
            ContentBlock::Image(ImageContent::new("image/gif", vec![6]))
        );
        // An image by URL stays the part it was.
        assert_eq!(blocks[4], ContentBlock::Wire(sent[0]["content"][4].clone()));
        assert_eq!(to_value(&messages), sent);
    }

    #[test]
    fn unknown_fields_are_tolerated_and_arrays_joined() {
        let v = json!([
            {"role": "user", "content": "q", "name": "alice", "weird": [1, 2]},
            {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": "x", "tool_calls": [{"id": "c2", "function": {"name": "f", "arguments": {"k": 1}}}]},
        ]);
        let m = from_value(&v).unwrap();
        assert_eq!(m[0], Message::user("q"));
        assert_eq!(m[1], Message::tool_result("c", "a\nb"));
        assert_eq!(m[2].tool_calls()[0].arguments, r#"{"k":1}"#);
    }

    #[test]
    fn malformed_messages_name_position_and_field() {
        let cases = [
            (
                json!([{"role": "user", "content": 3}]),
                "message 0: field `content`: expected a string or an array of parts, found a number",
            ),
            (
                json!([{"role": "tool", "content": "x"}]),
                "message 0: field `tool_call_id`: is missing",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "robot"}]),
                "message 1: field `role`: unknown role \"robot\"; expected system, developer, user, assistant or tool",
            ),
            (
                json!([{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}]),
                "message 0: field `tool_calls[0].function.name`: expected a string",
            ),
            (
                json!([{"role": "user", "content": [{"type": "text"}]}]),
                "message 0: field `content[0].text`: a text part needs a string `text`",
            ),
            (
                json!({"role": "user"}),
                "expected an array of messages, found an object",
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(from_value(&value).unwrap_err().to_string(), expected);
        }
    }

    #[test]
    fn truncated_json_reports_line_and_column() {
        let err = from_json_str("[{\"role\": \"user\",\n \"content\": \"x").unwrap_err();
        assert!(
            err.to_string().starts_with("invalid JSON at line 2"),
            "{err}"
        );
    }
}
