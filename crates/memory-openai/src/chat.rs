//! The Chat Completions JSON: the request body out, the reply in.

use memory_core::{ChatRequest, ChatResponse, ProviderError, StopReason, Usage};
use serde_json::{Map, Value, json};

use crate::wire;

/// The JSON body for `request` to `model`; `max_tokens_field` names the
/// field that carries the reply cap.
///
/// ```
/// use memory_core::{ChatRequest, Message};
/// let mut request = ChatRequest::new(vec![Message::user("hi")]);
/// request.options.max_tokens = Some(64);
/// request.options.extra.insert("seed".into(), serde_json::json!(7));
/// let body = memory_openai::request_body("gpt-4o-mini", &request, "max_tokens");
/// assert_eq!(body["model"], "gpt-4o-mini");
/// assert_eq!(body["messages"][0]["content"], "hi");
/// assert_eq!(body["max_tokens"], 64);
/// assert_eq!(body["seed"], 7);
/// ```
pub fn request_body(model: &str, request: &ChatRequest, max_tokens_field: &str) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), wire::to_value(&request.messages));
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(request.tools.clone()));
    }
    if let Some(t) = request.options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(m) = request.options.max_tokens {
        body.insert(max_tokens_field.into(), json!(m));
    }
    for (key, value) in &request.options.extra {
        body.insert(key.clone(), value.clone());
    }
    body.insert("stream".into(), json!(false));
    Value::Object(body)
}

/// The stop reason for a `finish_reason`: `stop` (and the `eos`,
/// `end_turn`, `stop_sequence` of some servers, or none at all) is
/// [`StopReason::Stop`], `length` is [`StopReason::Length`],
/// `content_filter` is [`StopReason::Refusal`], `tool_calls` and
/// `function_call` are [`StopReason::ToolCalls`]; anything else is
/// [`StopReason::Error`].
///
/// ```
/// use memory_core::StopReason;
/// use memory_openai::stop_reason;
/// assert_eq!(stop_reason(Some("length")), StopReason::Length);
/// assert_eq!(stop_reason(Some("content_filter")), StopReason::Refusal);
/// assert_eq!(stop_reason(None), StopReason::Stop);
/// ```
pub fn stop_reason(finish_reason: Option<&str>) -> StopReason {
    match finish_reason {
        None | Some("stop" | "eos" | "end_turn" | "stop_sequence") => StopReason::Stop,
        Some("length" | "max_tokens" | "model_length") => StopReason::Length,
        Some("content_filter" | "refusal") => StopReason::Refusal,
        Some("tool_calls" | "function_call") => StopReason::ToolCalls,
        Some(_) => StopReason::Error,
    }
}

/// The [`ChatResponse`] in a successful reply's body: the first choice's
/// message, its `finish_reason` (see [`stop_reason`]; a non-empty `refusal`
/// field is a refusal too) and `usage` (`prompt_tokens`,
/// `completion_tokens`; zero when absent).
///
/// # Errors
///
/// [`ProviderError::MalformedReply`] when the body is not JSON, has no
/// choice, or its message cannot be read.
///
/// ```
/// use memory_core::{Message, StopReason};
/// let body = r#"{"choices": [{"message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
///               "usage": {"prompt_tokens": 9, "completion_tokens": 1}}"#;
/// let reply = memory_openai::parse_reply(body).unwrap();
/// assert_eq!(reply.message, Message::assistant("Hi"));
/// assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (9, 1));
/// assert_eq!(reply.stop_reason, StopReason::Stop);
/// assert!(memory_openai::parse_reply("<html>").is_err());
/// ```
pub fn parse_reply(body: &str) -> Result<ChatResponse, ProviderError> {
    let value: Value = serde_json::from_str(body).map_err(|e| {
        ProviderError::MalformedReply(format!("the body is not JSON ({e}): {}", snippet(body)))
    })?;
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| {
            ProviderError::MalformedReply(format!(
                "no `choices[0]` in the reply: {}",
                snippet(body)
            ))
        })?;
    let message_value = choice.get("message").ok_or_else(|| {
        ProviderError::MalformedReply(format!(
            "no `choices[0].message` in the reply: {}",
            snippet(body)
        ))
    })?;
    let message = wire::message_from_value(message_value, 0)
        .map_err(|e| ProviderError::MalformedReply(format!("choices[0].{e}")))?;
    let refused = message_value
        .get("refusal")
        .and_then(Value::as_str)
        .is_some_and(|r| !r.is_empty());
    let stop_reason = if refused {
        StopReason::Refusal
    } else {
        stop_reason(choice.get("finish_reason").and_then(Value::as_str))
    };
    let usage = value.get("usage");
    let tokens = |field: &str| {
        usage
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(ChatResponse {
        message,
        usage: Usage {
            input_tokens: tokens("prompt_tokens"),
            output_tokens: tokens("completion_tokens"),
        },
        stop_reason,
    })
}

/// The start of `body`, for error messages.
fn snippet(body: &str) -> String {
    let body = body.trim();
    match body.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &body[..at]),
        None => body.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{Message, ToolCall};

    #[test]
    fn tool_calls_and_refusals_are_read() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":null,
            "tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},
            "finish_reason":"tool_calls"}]}"#;
        let reply = parse_reply(body).unwrap();
        assert_eq!(
            reply.message,
            Message::assistant_with_tools("", vec![ToolCall::new("c1", "ls", "{}")])
        );
        assert_eq!(reply.stop_reason, StopReason::ToolCalls);
        assert_eq!(reply.usage, Usage::default());

        let refused = r#"{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't"},"finish_reason":"stop"}]}"#;
        assert_eq!(
            parse_reply(refused).unwrap().stop_reason,
            StopReason::Refusal
        );
    }

    #[test]
    fn malformed_bodies_say_what_is_missing() {
        for (body, says) in [
            ("not json", "not JSON"),
            (r#"{"choices":[]}"#, "choices[0]"),
            (
                r#"{"choices":[{"finish_reason":"stop"}]}"#,
                "choices[0].message",
            ),
            (r#"{"choices":[{"message":{"content":"x"}}]}"#, "role"),
        ] {
            match parse_reply(body) {
                Err(ProviderError::MalformedReply(m)) => assert!(m.contains(says), "{m}"),
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_body_carries_tools_and_no_unset_options() {
        let mut request = ChatRequest::new(vec![Message::user("hi")]);
        request.tools.push(json!({"type": "function"}));
        let body = request_body("m", &request, "max_completion_tokens");
        assert_eq!(body["tools"][0]["type"], "function");
        assert!(body.get("temperature").is_none());
        assert!(body.get("max_tokens").is_none());
        request.options.max_tokens = Some(5);
        let body = request_body("m", &request, "max_completion_tokens");
        assert_eq!(body["max_completion_tokens"], 5);
        assert_eq!(body["stream"], false);
    }
}
