//! A Chat Completions request: decoded from a client, encoded for an
//! upstream.

use memory_core::Message;
use memory_openai::wire;
use serde_json::{Map, Value, json};

use crate::protocol::options::ToolSpec;
use crate::protocol::originals::{Original, Originals};
use crate::protocol::{Decoded, Protocol};
use crate::{ApiError, ChatCall};

/// Decodes a request body; a message that would not encode back as it
/// came is kept whole among the originals.
pub(crate) fn decode(body: &[u8]) -> Result<Decoded, ApiError> {
    let (call, values) = ChatCall::decode_keeping(body)?;
    let mut originals = Originals::default();
    for (message, value) in call.messages.iter().zip(values) {
        if wire::message_to_value(message) != value {
            originals.keep(
                message,
                Original {
                    blocks: vec![value],
                    string: false,
                    fields: Map::new(),
                    opens: true,
                },
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
    })
}

/// The body for a Chat Completions upstream: `rest`, `context` as its
/// messages (each as it came where it has an original), and `extra`
/// tools besides the client's.
pub(crate) fn encode(
    mut rest: Map<String, Value>,
    context: &[Message],
    originals: &[Option<Original>],
    extra: &[ToolSpec],
) -> Value {
    let messages: Vec<Value> = context
        .iter()
        .zip(originals)
        .map(|(m, o)| match o.as_ref().and_then(|o| o.blocks.first()) {
            Some(value) => value.clone(),
            None => wire::message_to_value(m),
        })
        .collect();
    rest.insert("messages".into(), Value::Array(messages));
    for spec in extra {
        offer(&mut rest, spec);
    }
    Value::Object(rest)
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
    fn what_the_neutral_message_drops_goes_back_as_sent() {
        let body = br#"{"model": "m", "messages": [
            {"role": "developer", "content": "rules"},
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
            {"role": "user", "content": "plain"}]}"#;
        let decoded = decode(body).unwrap();
        let sent: Value = serde_json::from_slice(body).unwrap();
        let originals = decoded.originals.of(&decoded.messages);
        assert!(originals[0].is_some() && originals[1].is_some() && originals[2].is_none());
        let out = encode(decoded.rest.clone(), &decoded.messages, &originals, &[]);
        assert_eq!(out["messages"], sent["messages"]);
    }
}
