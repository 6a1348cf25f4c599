//! [`Written`]: a message written as chat-completions JSON directly,
//! without building a value; the one writer of the format
//! ([`message_to_value`](super::message_to_value) is what it writes, as a
//! value).
//!
//! A server sends its whole context upstream on every call: built as a
//! `serde_json::Value` first, each message's fields go into a map and out
//! again, a few allocations each, then are freed. Written directly, only
//! the bytes are made. The fields go in one order, by name, whatever
//! order a `serde_json` map keeps in the build (sorted, or as inserted
//! where a crate turns on its `preserve_order` feature), so a message is
//! written the same way on every call.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use memory_core::{ContentBlock, Message, ToolCall};

use super::image_part;

/// `message`, serialized as chat-completions JSON (what
/// [`message_to_value`](super::message_to_value) gives, as a value).
///
/// ```
/// use memory_core::Message;
/// use memory_openai::wire::{self, Written};
///
/// let m = Message::tool_result("c1", "ok");
/// let direct = serde_json::to_string(&Written(&m)).unwrap();
/// assert_eq!(direct, r#"{"content":"ok","role":"tool","tool_call_id":"c1"}"#);
/// let read: serde_json::Value = serde_json::from_str(&direct).unwrap();
/// assert_eq!(wire::message_from_value(&read, 0).unwrap(), m);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Written<'m>(pub &'m Message);

impl Serialize for Written<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Message::System(text) => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("content", text)?;
                map.serialize_entry("role", "system")?;
                map.end()
            }
            Message::User(blocks) => {
                let mut map = s.serialize_map(Some(2))?;
                match blocks.as_slice() {
                    [ContentBlock::Text(text)] => map.serialize_entry("content", text)?,
                    _ => map.serialize_entry("content", &Each(blocks, Part))?,
                }
                map.serialize_entry("role", "user")?;
                map.end()
            }
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                let fields =
                    2 + usize::from(reasoning.is_some()) + usize::from(!tool_calls.is_empty());
                let mut map = s.serialize_map(Some(fields))?;
                if content.is_empty() && !tool_calls.is_empty() {
                    map.serialize_entry("content", &())?;
                } else {
                    map.serialize_entry("content", content)?;
                }
                if let Some(reasoning) = reasoning {
                    map.serialize_entry("reasoning_content", reasoning)?;
                }
                map.serialize_entry("role", "assistant")?;
                if !tool_calls.is_empty() {
                    map.serialize_entry("tool_calls", &Each(tool_calls, Call::of))?;
                }
                map.end()
            }
            Message::ToolResult {
                tool_call_id,
                content,
                name,
            } => {
                let mut map = s.serialize_map(Some(3 + usize::from(name.is_some())))?;
                map.serialize_entry("content", content)?;
                if let Some(name) = name {
                    map.serialize_entry("name", name)?;
                }
                map.serialize_entry("role", "tool")?;
                map.serialize_entry("tool_call_id", tool_call_id)?;
                map.end()
            }
        }
    }
}

/// One part of a user message.
struct Part<'m>(&'m ContentBlock);

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ContentBlock::Text(text) => TextPart::of(text).serialize(s),
            ContentBlock::Image(image) => image_part::encode(image).serialize(s),
            ContentBlock::Wire(value) => value.serialize(s),
        }
    }
}

/// The items of a slice, each written as `W` writes it, as a JSON array.
struct Each<'m, T, W>(&'m [T], fn(&'m T) -> W);

impl<'m, T, W: Serialize> Serialize for Each<'m, T, W> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&(self.1)(item))?;
        }
        seq.end()
    }
}

/// A text part. Each part's fields are declared by name, as [`Written`]
/// writes a message's.
#[derive(serde::Serialize)]
struct TextPart<'m> {
    text: &'m str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'m> TextPart<'m> {
    fn of(text: &'m str) -> Self {
        Self { text, kind: "text" }
    }
}

/// One tool call.
#[derive(serde::Serialize)]
struct Call<'m> {
    function: Function<'m>,
    id: &'m str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'m> Call<'m> {
    fn of(call: &'m ToolCall) -> Self {
        let function = Function {
            arguments: &call.arguments,
            name: &call.name,
        };
        Self {
            function,
            id: &call.id,
            kind: "function",
        }
    }
}

/// A tool call's function: its name and arguments.
#[derive(serde::Serialize)]
struct Function<'m> {
    arguments: &'m str,
    name: &'m str,
}

#[cfg(test)]
mod tests {
    use memory_core::{ContentBlock, ImageContent, Message, ToolCall};
    use serde_json::json;

    use super::Written;
    use crate::wire::message_from_value;

    /// Texts that JSON escapes, or not.
    const TEXTS: [&str; 5] = [
        "",
        "plain",
        "quote \" and \\ back",
        "line\nbreak\ttab\u{1}",
        "ünï 你好 🎉",
    ];

    fn messages() -> Vec<Message> {
        let mut out = Vec::new();
        for (k, text) in TEXTS.iter().enumerate() {
            let other = TEXTS[(k + 1) % TEXTS.len()];
            let call = ToolCall::new(format!("c{k}"), other, format!(r#"{{"q":"{other}"}}"#));
            let mut image = ImageContent::new("image/png", vec![k as u8; 9]);
            if k % 2 == 1 {
                image.detail = Some("low".into());
            }
            out.extend([
                Message::system(*text),
                Message::user(*text),
                Message::User(vec![]),
                Message::User(vec![
                    ContentBlock::Text(text.to_string()),
                    ContentBlock::Image(image),
                    ContentBlock::Wire(json!({"type": "image_url", "image_url": {"url": other}})),
                    ContentBlock::Text(other.to_string()),
                ]),
                Message::assistant(*text),
                Message::Assistant {
                    content: text.to_string(),
                    reasoning: Some(other.to_string()),
                    tool_calls: vec![call.clone(), ToolCall::new("d", "", "")],
                },
                Message::assistant_with_tools("", vec![call.clone()]),
                Message::Assistant {
                    content: String::new(),
                    reasoning: Some(String::new()),
                    tool_calls: vec![],
                },
                Message::tool_result(call.id.clone(), *text),
                Message::ToolResult {
                    tool_call_id: call.id.clone(),
                    content: text.to_string(),
                    name: Some(other.to_string()),
                },
            ]);
        }
        out
    }

    #[test]
    fn what_is_written_reads_back_as_the_message_its_fields_by_name() {
        for m in messages() {
            let direct = serde_json::to_string(&Written(&m)).unwrap();
            let read: serde_json::Value = serde_json::from_str(&direct).unwrap();
            assert_eq!(message_from_value(&read, 0).unwrap(), m, "{direct}");
            // Fields by name, whatever order a map keeps in this build.
            let mut names: Vec<&String> = read.as_object().unwrap().keys().collect();
            names.sort();
            let at = |name: &str| direct.find(&format!("\"{name}\":")).unwrap();
            assert!(names.windows(2).all(|w| at(w[0]) < at(w[1])), "{direct}");
        }
    }

    #[test]
    fn a_call_and_a_text_part_write_their_fields_by_name_too() {
        let call = Message::assistant_with_tools("", vec![ToolCall::new("c1", "f", r#"{"q":1}"#)]);
        assert_eq!(
            serde_json::to_string(&Written(&call)).unwrap(),
            r#"{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"q\":1}","name":"f"},"id":"c1","type":"function"}]}"#
        );
        let parts = Message::User(vec![
            ContentBlock::Text("a".into()),
            ContentBlock::Text("b".into()),
        ]);
        assert_eq!(
            serde_json::to_string(&Written(&parts)).unwrap(),
            r#"{"content":[{"text":"a","type":"text"},{"text":"b","type":"text"}],"role":"user"}"#
        );
    }
}
