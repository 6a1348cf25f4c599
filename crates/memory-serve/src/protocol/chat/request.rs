//! A Chat Completions request: decoded from a client, encoded for an
//! upstream.

use std::borrow::Cow;

use memory_core::{ContentBlock, Message};
use memory_openai::wire;
use serde_json::{Map, Value, json};

use crate::protocol::chat::body::{Body, Item};
use crate::protocol::options::{ToolSpec, left_out};
use crate::protocol::originals::{Original, Originals};
use crate::protocol::{Decoded, Protocol};
use crate::{ApiError, ChatCall};

/// Decodes a request body; a message that would not encode back as it
/// came is kept whole among the originals.
pub(crate) fn decode(body: &[u8], keep: bool) -> Result<Decoded, ApiError> {
    let (call, values) = ChatCall::decode_keeping(body)?;
    let mut originals = Originals::new(keep);
    if keep {
        for (message, value) in call.messages.iter().zip(values) {
            let differs = !plain(&value) && wire::message_to_value(message) != value;
            originals.push(
                message,
                differs.then(|| Original {
                    blocks: vec![value],
                    string: false,
                    fields: Map::new(),
                    opens: true,
                    in_system: false,
                }),
            );
        }
    }
    Ok(Decoded {
        front: Protocol::Chat,
        messages: call.messages,
        originals,
        rest: call.rest,
        stream: call.stream,
        max_tokens: call.max_tokens,
        stored: Vec::new(),
        asks: Default::default(),
    })
}

/// Whether a wire message is one the neutral form holds whole, seen from
/// its fields alone (no encoding to compare): strings only, and only the
/// fields its role's encoding writes. Most of an agent's history is such
/// (tool results, plain turns); anything else is compared.
fn plain(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    if !object.values().all(Value::is_string) {
        return false;
    }
    let has = |k: &str| object.contains_key(k);
    let fields = match object["role"].as_str() {
        Some("system" | "user") => 2,
        Some("assistant") => 2 + usize::from(has("reasoning_content")),
        Some("tool") => 3 + usize::from(has("name")),
        _ => return false,
    };
    object.len() == fields && has("content") && (object["role"] != "tool" || has("tool_call_id"))
}

/// The body for a Chat Completions upstream: `rest`, `context` as its
/// messages (each as it came where it has an original; `translated`, from
/// another protocol, with its pass-through blocks made Chat Completions
/// parts), and `extra` tools besides the client's.
pub(crate) fn encode<'a>(
    mut rest: Map<String, Value>,
    context: &'a [Message],
    originals: &[Option<&'a Original>],
    extra: &[ToolSpec],
    translated: bool,
) -> Body<'a> {
    let messages: Vec<Item<'a>> = context
        .iter()
        .zip(originals)
        .map(|(m, o)| match o.as_ref().and_then(|o| o.blocks.first()) {
            Some(value) => Item::Sent(value),
            None if translated => Item::Message(Cow::Owned(chat_parts(m))),
            None => Item::Message(Cow::Borrowed(m)),
        })
        .collect();
    for spec in extra {
        offer(&mut rest, spec);
    }
    Body::new(rest, messages)
}

/// A message of another protocol with its pass-through blocks as Chat
/// Completions parts: an image by URL as an `image_url` (one that is one
/// already as it is); any other (a document, a search result) left out,
/// as no Chat Completions model takes it.
fn chat_parts(message: &Message) -> Message {
    let Message::User(blocks) = message else {
        return message.clone();
    };
    let blocks = blocks
        .iter()
        .filter_map(|b| match b {
            // The neutral form of an image by URL is Chat Completions' own.
            ContentBlock::Wire(part) if part["type"] == "image_url" => Some(b.clone()),
            ContentBlock::Wire(part) => match part["source"]["url"].as_str() {
                Some(url) if part["type"] == "image" => Some(ContentBlock::Wire(
                    json!({"type": "image_url", "image_url": {"url": url}}),
                )),
                _ => {
                    let kind = part["type"].as_str().unwrap_or("?");
                    left_out(&format!("a `{kind}` content block"));
                    None
                }
            },
            other => Some(other.clone()),
        })
        .collect();
    Message::User(blocks)
}

/// A function tool in Chat Completions' shape.
pub(crate) fn tool(spec: &ToolSpec) -> Value {
    let mut function = json!({"name": spec.name, "parameters": spec.schema});
    if let Some(d) = &spec.description {
        function["description"] = json!(d);
    }
    json!({"type": "function", "function": function})
}

/// Adds `spec` to the body's tools, unless a tool of its name is there.
fn offer(rest: &mut Map<String, Value>, spec: &ToolSpec) {
    let tools = rest
        .entry("tools")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(tools) = tools.as_array_mut() else {
        return;
    };
    let named = |t: &Value| t["function"]["name"].as_str() == Some(&spec.name);
    if !tools.iter().any(named) {
        tools.push(tool(spec));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_message_encodes_back_as_it_came() {
        let cases = [
            json!({"role": "system", "content": "s"}),
            json!({"role": "user", "content": ""}),
            json!({"role": "assistant", "content": "a", "reasoning_content": "r"}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "out", "name": "ls"}),
        ];
        for value in cases {
            assert!(plain(&value), "{value}");
            let message = wire::message_from_value(&value, 0).unwrap();
            assert_eq!(wire::message_to_value(&message), value);
        }
        for value in [
            json!({"role": "developer", "content": "d"}),
            json!({"role": "assistant", "content": "a", "reasoning": "r"}),
            json!({"role": "user", "content": "u", "name": "bob"}),
            json!({"role": "tool", "content": "out", "name": "ls", "x": "y"}),
        ] {
            assert!(!plain(&value), "{value}");
        }
    }

    #[test]
    fn what_the_neutral_message_drops_goes_back_as_sent() {
        let body = br#"{"model": "m", "messages": [
            {"role": "developer", "content": "rules"},
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
            {"role": "user", "content": "plain"}]}"#;
        let decoded = decode(body, true).unwrap();
        let sent: Value = serde_json::from_slice(body).unwrap();
        let originals = decoded.originals.of(&decoded.messages, &[]);
        assert!(originals[0].is_some() && originals[1].is_some() && originals[2].is_none());
        let out = encode(
            decoded.rest.clone(),
            &decoded.messages,
            &originals,
            &[],
            false,
        )
        .to_value();
        assert_eq!(out["messages"], sent["messages"]);
    }
}
