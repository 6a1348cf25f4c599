//! A Responses reply (`"object": "response"`), read and written.

use memory_core::Message;
use serde_json::{Value, json};

use super::items;
use crate::protocol::Reply;
use crate::protocol::event::{StopReason, Usage};

/// The reply of a response body, when it is one.
pub(crate) fn decode(body: &[u8]) -> Option<Reply> {
    let value: Value = serde_json::from_slice(body).ok()?;
    if value["object"] != "response" {
        return None;
    }
    let output = value["output"].as_array()?;
    let message = items::assistant(output, "output", 0).ok()?;
    Some(Reply {
        id: value["id"].as_str().unwrap_or_default().to_string(),
        model: value["model"].as_str().unwrap_or_default().to_string(),
        stop: stop(&value, &message),
        message,
        usage: usage(&value["usage"]),
    })
}

/// Why a response ended: its calls, or why it is incomplete.
pub(crate) fn stop(response: &Value, message: &Message) -> StopReason {
    if response["status"] == "incomplete" {
        return match response["incomplete_details"]["reason"].as_str() {
            Some("max_output_tokens") | None => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Other("refusal".into()),
            Some(other) => StopReason::Other(other.into()),
        };
    }
    match message {
        Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

/// The usage of a response.
pub(crate) fn usage(value: &Value) -> Usage {
    Usage {
        input: value["input_tokens"].as_u64(),
        output: value["output_tokens"].as_u64(),
    }
}

/// A response id as this protocol's clients expect one: a Responses
/// upstream's own, or `fresh`.
pub(crate) fn response_id(id: &str, fresh: &str) -> String {
    if id.starts_with("resp_") {
        id.to_string()
    } else {
        fresh.to_string()
    }
}

/// A new id with `prefix` (`resp`, `msg`, `fc`, `rs`, `cmp`).
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// A response body: `id`, `model`, `status` and what the response holds,
/// with every field the specification requires (those a request sets
/// are [`echo`]ed from it).
pub(crate) fn response(
    id: &str,
    model: &str,
    status: &str,
    output: Vec<Value>,
    usage: Usage,
) -> Value {
    let (input, output_tokens) = (usage.input.unwrap_or(0), usage.output.unwrap_or(0));
    let now = crate::registry::now();
    let mut body = json!({
        "id": id, "object": "response", "created_at": now,
        "completed_at": (status == "completed").then_some(now),
        "status": status, "incomplete_details": null, "model": model,
        "previous_response_id": null, "instructions": null, "output": output,
        "error": null, "tools": [], "tool_choice": "auto", "truncation": "disabled",
        "parallel_tool_calls": true, "text": {"format": {"type": "text"}},
        "top_p": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
        "top_logprobs": 0, "temperature": 1.0, "reasoning": null, "user": null,
        "usage": {"input_tokens": input, "output_tokens": output_tokens,
            "total_tokens": input + output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}},
        "max_output_tokens": null, "max_tool_calls": null, "store": false,
        "background": false, "service_tier": "default", "metadata": {},
        "safety_identifier": null, "prompt_cache_key": null,
    });
    if status == "incomplete" {
        body["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    body
}

/// The fields of a response that say what its request asked, as it asked.
const ECHOED: [&str; 17] = [
    "previous_response_id",
    "tools",
    "tool_choice",
    "truncation",
    "parallel_tool_calls",
    "text",
    "top_p",
    "temperature",
    "reasoning",
    "user",
    "max_output_tokens",
    "max_tool_calls",
    "store",
    "metadata",
    "safety_identifier",
    "prompt_cache_key",
    "service_tier",
];

/// Sets in `body` what `request`'s fields asked (and its instructions),
/// and writes its calls of the request's custom tools as such.
pub(crate) fn echo(body: &mut Value, request: &crate::protocol::Decoded) {
    for field in ECHOED {
        if let Some(v) = request.rest.get(field).filter(|v| !v.is_null()) {
            body[field] = v.clone();
        }
    }
    if let Some(text) = &request.asks.instructions {
        body["instructions"] = json!(text);
    }
    body["store"] = json!(request.asks.store);
    // A call of a custom tool, which another protocol's model made as a
    // function call, goes back as the custom tool call the client offered.
    let custom = &request.asks.custom_tools;
    let output = body.get_mut("output").and_then(Value::as_array_mut);
    for item in output.into_iter().flatten() {
        let name = item["name"].as_str().unwrap_or_default();
        if item["type"] == "function_call" && custom.iter().any(|c| c == name) {
            let call = items::custom_call(
                item["call_id"].as_str().unwrap_or_default(),
                name,
                item["arguments"].as_str().unwrap_or_default(),
            );
            let id = item["id"].clone();
            *item = call;
            item["id"] = id;
        }
    }
}

/// The output items of `reply`, each with a new id.
pub(crate) fn output(reply: &Message) -> Vec<Value> {
    items::of_assistant(reply, true, Some(&mut new_id), &[])
}

/// A response body holding `reply`, under `id` when the upstream gave
/// none of this protocol's.
pub(crate) fn encode(reply: &Reply, id: &str) -> Value {
    let status = match reply.stop {
        StopReason::MaxTokens => "incomplete",
        _ => "completed",
    };
    response(
        &response_id(&reply.id, id),
        &reply.model,
        status,
        output(&reply.message),
        reply.usage,
    )
}

/// Puts `item` (the server's compaction) first in a response's output,
/// when `response` has one; whether it did.
pub(crate) fn put_first(response: &mut Value, item: &Value) -> bool {
    let output = response.get_mut("output").and_then(Value::as_array_mut);
    output.map(|o| o.insert(0, item.clone())).is_some()
}

/// A Responses upstream's answer with `item` at the start of its output;
/// an answer that is not a response stays as it came.
pub(crate) fn with_item(mut answer: crate::server::Answer, item: &Value) -> crate::server::Answer {
    let Ok(mut body) = serde_json::from_slice::<Value>(&answer.body) else {
        return answer;
    };
    if put_first(&mut body, item) {
        answer.body = bytes::Bytes::from(body.to_string());
    }
    answer
}

/// The reply as a Responses client sends it back: its items (calls of
/// the request's `custom` tools as custom tool calls) read again.
pub(crate) fn as_client_holds(reply: Message, custom: &[String]) -> Message {
    let items = items::of_assistant(&reply, true, None, custom);
    items::assistant(&items, "output", 0).unwrap_or(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ToolCall;

    #[test]
    fn a_reply_written_reads_back_the_same() {
        let message = Message::Assistant {
            content: "ok".into(),
            reasoning: Some("hm".into()),
            tool_calls: vec![ToolCall::new("c1", "ls", "{\"p\":1}")],
        };
        let reply = Reply {
            id: "chatcmpl-1".into(),
            model: "m".into(),
            message: message.clone(),
            stop: StopReason::ToolUse,
            usage: Usage {
                input: Some(10),
                output: Some(2),
            },
        };
        let body = encode(&reply, "resp_x");
        assert_eq!(body["id"], "resp_x");
        assert_eq!(body["output"][0]["type"], "reasoning");
        let back = decode(body.to_string().as_bytes()).unwrap();
        assert_eq!(back.message, message);
        assert_eq!(back.stop, StopReason::ToolUse);
        assert_eq!(back.usage, reply.usage);
        assert_eq!(as_client_holds(message.clone(), &[]), message);
    }
}
