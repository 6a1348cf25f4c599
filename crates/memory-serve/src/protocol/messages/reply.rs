//! A Messages reply (`"type": "message"`), read and written.

use memory_core::Message;
use serde_json::{Value, json};

use super::blocks;
use crate::protocol::Reply;
use crate::protocol::event::{StopReason, Usage};

/// The reply of a message body, when it is one.
pub(crate) fn decode(body: &[u8]) -> Option<Reply> {
    let value: Value = serde_json::from_slice(body).ok()?;
    if value["type"] != "message" {
        return None;
    }
    let content = value["content"].as_array()?;
    let message = blocks::assistant(content, "content").ok()?;
    Some(Reply {
        id: value["id"].as_str().unwrap_or_default().to_string(),
        model: value["model"].as_str().unwrap_or_default().to_string(),
        message,
        stop: value["stop_reason"]
            .as_str()
            .map_or(StopReason::EndTurn, StopReason::from_messages),
        usage: usage(&value["usage"]),
    })
}

/// The usage of a message or event.
pub(crate) fn usage(value: &Value) -> Usage {
    Usage {
        input: value["input_tokens"].as_u64(),
        output: value["output_tokens"].as_u64(),
    }
}

/// A message body holding `reply`.
pub(crate) fn encode(reply: &Reply) -> Value {
    json!({
        "id": message_id(&reply.id),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": blocks::of_assistant(&reply.message, true),
        "stop_reason": reply.stop.as_messages(),
        "stop_sequence": null,
        "usage": {"input_tokens": reply.usage.input.unwrap_or(0),
                  "output_tokens": reply.usage.output.unwrap_or(0)},
    })
}

/// A message id as Anthropic's clients expect one: a Messages upstream's
/// own, or a new one. Claude Code takes blocks of one id for one turn, and
/// another protocol's ids need not be unique (some servers draw them from
/// a small range), so they are never reused.
pub(crate) fn message_id(id: &str) -> String {
    if id.starts_with("msg_") {
        id.to_string()
    } else {
        format!("msg_{}", uuid::Uuid::new_v4().simple())
    }
}

/// A Messages upstream's answer with the server's `edits` reported in
/// its `context_management` (the provider's own edits, if any, kept
/// beside them); an answer that is not a message stays as it came.
pub(crate) fn with_edits(
    mut answer: crate::server::Answer,
    edits: &Value,
) -> crate::server::Answer {
    let Ok(mut body) = serde_json::from_slice::<Value>(&answer.body) else {
        return answer;
    };
    if body["type"] != "message" {
        return answer;
    }
    let ours = edits["applied_edits"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let field = &mut body["context_management"];
    match field["applied_edits"].as_array_mut() {
        Some(theirs) => theirs.extend(ours),
        None => *field = edits.clone(),
    }
    answer.body = bytes::Bytes::from(body.to_string());
    answer
}

/// The reply as a Messages client sends it back: its blocks read again
/// (each call's arguments as the object the client parsed).
pub(crate) fn as_client_holds(reply: Message) -> Message {
    blocks::assistant(&blocks::of_assistant(&reply, true), "content").unwrap_or(reply)
}
