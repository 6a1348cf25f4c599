//! A Chat Completions reply (`chat.completion`), read and written.

use memory_core::Message;
use memory_openai::wire;
use serde_json::{Value, json};

use crate::protocol::Reply;
use crate::protocol::event::{StopReason, Usage};

/// The reply of a completion body: its first choice's message, when it is
/// a well-formed assistant message.
pub(crate) fn decode(body: &[u8]) -> Option<Reply> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let choice = value.get("choices")?.get(0)?;
    let message = match wire::message_from_value(choice.get("message")?, 0) {
        Ok(m @ Message::Assistant { .. }) => m,
        _ => return None,
    };
    let stop = choice["finish_reason"]
        .as_str()
        .map_or(StopReason::EndTurn, StopReason::from_chat);
    Some(Reply {
        id: value["id"]
            .as_str()
            .unwrap_or("chatcmpl-memory")
            .to_string(),
        model: value["model"].as_str().unwrap_or_default().to_string(),
        message,
        stop,
        usage: usage(&value["usage"]),
    })
}

/// The usage of a completion or chunk.
pub(crate) fn usage(value: &Value) -> Usage {
    Usage {
        input: value["prompt_tokens"].as_u64(),
        output: value["completion_tokens"].as_u64(),
    }
}

/// A completion body holding `reply`.
pub(crate) fn encode(reply: &Reply) -> Value {
    let input = reply.usage.input.unwrap_or(0);
    let output = reply.usage.output.unwrap_or(0);
    json!({
        "id": reply.id,
        "object": "chat.completion",
        "created": crate::registry::now(),
        "model": reply.model,
        "choices": [{
            "index": 0,
            "message": wire::message_to_value(&reply.message),
            "finish_reason": reply.stop.as_chat(),
        }],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
    })
}
