//! [`ChatCall`]: a chat-completions request body, decoded.

use memory_core::Message;
use memory_openai::wire;
use serde_json::{Map, Value};

use crate::ApiError;

/// A decoded `POST /v1/chat/completions` body: its messages, and every
/// other field as the client sent it (passed upstream untouched).
///
/// ```
/// let call = memory_serve::ChatCall::decode(
///     br#"{"model": "m", "stream": true, "max_tokens": 64,
///          "messages": [{"role": "user", "content": "hi"}], "top_k": 5}"#,
/// ).unwrap();
/// assert_eq!(call.messages.len(), 1);
/// assert!(call.stream);
/// assert_eq!(call.max_tokens, Some(64));
/// assert_eq!(call.rest["top_k"], 5);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ChatCall {
    /// The conversation the client sent.
    pub messages: Vec<Message>,
    /// Every field but `messages`, as sent.
    pub rest: Map<String, Value>,
    /// Whether the client asked for a stream of events.
    pub stream: bool,
    /// The most tokens the reply may take (`max_completion_tokens`, or
    /// the older `max_tokens`), when the client said.
    pub max_tokens: Option<usize>,
}

impl ChatCall {
    /// Decodes a request body.
    ///
    /// # Errors
    ///
    /// A 400 [`ApiError`] naming what is wrong and where: invalid JSON
    /// (line and column), a body that is not an object, `messages` missing
    /// or not an array, a malformed message (its position and field),
    /// `stream` or the token limits of the wrong type.
    ///
    /// ```
    /// let e = memory_serve::ChatCall::decode(br#"{"messages": [{"content": "x"}]}"#).unwrap_err();
    /// assert_eq!(e.message(), "message 0: field `role`: is missing");
    /// assert!(memory_serve::ChatCall::decode(b"{").is_err());
    /// ```
    pub fn decode(body: &[u8]) -> Result<Self, ApiError> {
        Self::decode_keeping(body).map(|(call, _)| call)
    }

    /// Decodes a request body, and gives its messages as sent too.
    pub(crate) fn decode_keeping(body: &[u8]) -> Result<(Self, Vec<Value>), ApiError> {
        let mut rest = object_body(body)?;
        let messages = match rest.remove("messages") {
            None => {
                return Err(ApiError::bad_request(
                    "field `messages` is missing",
                    Some("messages"),
                ));
            }
            Some(Value::Array(items)) => (decode_messages(&items)?, items),
            Some(other) => {
                return Err(ApiError::bad_request(
                    format!(
                        "field `messages` must be an array, found {}",
                        wire::kind(&other)
                    ),
                    Some("messages"),
                ));
            }
        };
        let stream = flag(&rest, "stream")?;
        let max_tokens = match limit(&rest, "max_completion_tokens")? {
            Some(n) => Some(n),
            None => limit(&rest, "max_tokens")?,
        };
        let (messages, values) = messages;
        let call = Self {
            messages,
            rest,
            stream,
            max_tokens,
        };
        Ok((call, values))
    }

    /// The body to send upstream: every field as the client sent it, with
    /// `messages` replaced by `context`.
    ///
    /// ```
    /// use memory_core::Message;
    /// let call = memory_serve::ChatCall::decode(br#"{"model": "m", "messages": []}"#).unwrap();
    /// let body = call.upstream_body(&[Message::user("hi")]);
    /// assert_eq!(body["model"], "m");
    /// assert_eq!(body["messages"][0]["content"], "hi");
    /// ```
    pub fn upstream_body(&self, context: &[Message]) -> Value {
        let mut body = self.rest.clone();
        body.insert("messages".into(), wire::to_value(context));
        Value::Object(body)
    }
}

fn decode_messages(items: &[Value]) -> Result<Vec<Message>, ApiError> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            wire::message_from_value(v, i).map_err(|e| {
                let param = if e.field.is_empty() {
                    format!("messages[{i}]")
                } else {
                    format!("messages[{i}].{}", e.field)
                };
                ApiError::bad_request(e.to_string(), Some(&param))
            })
        })
        .collect()
}

/// A request body's JSON object.
///
/// # Errors
///
/// 400: the body is not JSON (line and column named), or not an object.
pub(crate) fn object_body(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}"), None))?;
    match value {
        Value::Object(rest) => Ok(rest),
        other => Err(ApiError::bad_request(
            format!(
                "the body must be a JSON object, found {}",
                wire::kind(&other)
            ),
            None,
        )),
    }
}

/// A boolean field; false when absent or null.
pub(crate) fn flag(rest: &Map<String, Value>, field: &str) -> Result<bool, ApiError> {
    match rest.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(ApiError::bad_request(
            format!(
                "field `{field}` must be a boolean, found {}",
                wire::kind(other)
            ),
            Some(field),
        )),
    }
}

/// A non-negative whole number field, when present and not null.
pub(crate) fn limit(rest: &Map<String, Value>, field: &str) -> Result<Option<usize>, ApiError> {
    match rest.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                ApiError::bad_request(
                    format!(
                        "field `{field}` must be a non-negative whole number, found {}",
                        wire::kind(v)
                    ),
                    Some(field),
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_error_names_its_field() {
        let cases: &[(&[u8], &str)] = &[
            (b"[1]", "must be a JSON object"),
            (br#"{"model": "m"}"#, "`messages` is missing"),
            (br#"{"messages": {}}"#, "must be an array"),
            (
                br#"{"messages": [], "stream": "yes"}"#,
                "`stream` must be a boolean",
            ),
            (
                br#"{"messages": [], "max_tokens": -1}"#,
                "`max_tokens` must be",
            ),
            (
                br#"{"messages": [{"role": "tool", "content": "x"}]}"#,
                "message 0: field `tool_call_id`: is missing",
            ),
            (b"{\"messages\": [", "not valid JSON"),
        ];
        for (body, expected) in cases {
            let e = ChatCall::decode(body).unwrap_err();
            assert_eq!(e.status().as_u16(), 400);
            assert!(
                e.message().contains(expected),
                "{}: {}",
                String::from_utf8_lossy(body),
                e.message()
            );
        }
    }

    #[test]
    fn the_newer_limit_wins_and_other_fields_pass_through() {
        let call = ChatCall::decode(
            br#"{"messages": [], "max_tokens": 10, "max_completion_tokens": 20,
                 "tools": [{"type": "function"}], "parallel_tool_calls": true}"#,
        )
        .unwrap();
        assert_eq!(call.max_tokens, Some(20));
        let body = call.upstream_body(&[]);
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["parallel_tool_calls"], true);
        assert_eq!(body["max_tokens"], 10);
    }
}
