//! [`StreamedReply`] and [`reply_of`]: the assistant's reply, from a
//! completion or from the events of a stream, to record in the session.

use memory_core::{Message, ToolCall};
use memory_openai::wire;
use serde_json::Value;

/// The reply of a non-streamed completion body: its first choice's
/// message, when it is a well-formed assistant message.
///
/// ```
/// let body = br#"{"choices": [{"index": 0, "finish_reason": "stop",
///     "message": {"role": "assistant", "content": "Done."}}]}"#;
/// assert_eq!(memory_serve::reply_of(body), Some(memory_core::Message::assistant("Done.")));
/// assert_eq!(memory_serve::reply_of(b"not json"), None);
/// ```
pub fn reply_of(body: &[u8]) -> Option<Message> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let message = value.get("choices")?.get(0)?.get("message")?;
    match wire::message_from_value(message, 0) {
        Ok(m @ Message::Assistant { .. }) => Some(m),
        _ => None,
    }
}

/// A tool call being assembled from its deltas.
#[derive(Debug, Default, Clone)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The reply of a streamed completion, assembled from its server-sent
/// events as they pass through: the first choice's content, reasoning and
/// tool calls. Complete once the stream said `[DONE]` or gave a
/// `finish_reason`.
///
/// ```
/// let mut reply = memory_serve::StreamedReply::default();
/// reply.feed(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n");
/// reply.feed(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DO");
/// assert!(!reply.is_done());
/// reply.feed(b"NE]\n\n");
/// assert!(reply.is_done());
/// assert_eq!(reply.message(), memory_core::Message::assistant("Hello"));
/// ```
#[derive(Debug, Default, Clone)]
pub struct StreamedReply {
    pending: Vec<u8>,
    content: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    finished: bool,
    done: bool,
    /// The first tool called, when a call's name came before any text.
    first_tool: Option<String>,
    /// Whether text came before any call's name.
    text_first: bool,
}

impl StreamedReply {
    /// Reads the bytes of the stream that came next (events may be split
    /// anywhere).
    ///
    /// ```
    /// let mut reply = memory_serve::StreamedReply::default();
    /// reply.feed(b": keep-alive\n\n");
    /// assert!(!reply.is_finished());
    /// ```
    pub fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            self.line(line.trim_end_matches(['\n', '\r']));
        }
    }

    fn line(&mut self, line: &str) {
        let Some(data) = line.strip_prefix("data:") else {
            return;
        };
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return;
        }
        let Ok(event) = serde_json::from_str::<Value>(data) else {
            return;
        };
        let Some(choice) = event
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| {
                c.iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            })
        else {
            return;
        };
        if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
            self.finished = true;
        }
        if let Some(delta) = choice.get("delta") {
            self.delta(delta);
        }
    }

    fn delta(&mut self, delta: &Value) {
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.content.push_str(text);
            if !text.trim().is_empty() && self.first_tool.is_none() {
                self.text_first = true;
            }
        }
        let reasoning = delta
            .get("reasoning_content")
            .or_else(|| delta.get("reasoning"))
            .and_then(Value::as_str);
        if let Some(text) = reasoning {
            self.reasoning.push_str(text);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .map_or(self.calls.len().saturating_sub(1), |i| i as usize);
            if self.calls.len() <= index {
                self.calls.resize(index + 1, PartialCall::default());
            }
            let partial = &mut self.calls[index];
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                partial.id.push_str(id);
            }
            let function = call.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                partial.name.push_str(name);
                if !self.text_first && self.first_tool.is_none() && !name.is_empty() {
                    self.first_tool = Some(name.to_string());
                }
            }
            if let Some(args) = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
            {
                partial.arguments.push_str(args);
            }
        }
    }

    /// What the reply opens with, once it is known: `Some(None)` for text,
    /// `Some(Some(name))` for a call of the tool `name`; `None` while
    /// neither came (a stream can be held until then).
    ///
    /// ```
    /// let mut reply = memory_serve::StreamedReply::default();
    /// assert_eq!(reply.opening(), None);
    /// reply.feed(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"recall\"}}]}}]}\n");
    /// assert_eq!(reply.opening(), Some(Some("recall")));
    /// ```
    pub fn opening(&self) -> Option<Option<&str>> {
        if self.text_first {
            Some(None)
        } else if let Some(name) = &self.first_tool {
            Some(Some(name))
        } else if self.is_finished() {
            Some(None)
        } else {
            None
        }
    }

    /// Whether the stream said `[DONE]`.
    ///
    /// ```
    /// assert!(!memory_serve::StreamedReply::default().is_done());
    /// ```
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether the reply is complete: `[DONE]`, or a `finish_reason`.
    ///
    /// ```
    /// assert!(!memory_serve::StreamedReply::default().is_finished());
    /// ```
    pub fn is_finished(&self) -> bool {
        self.done || self.finished
    }

    /// The reply as an assistant message.
    ///
    /// ```
    /// let mut reply = memory_serve::StreamedReply::default();
    /// reply.feed(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"p\\\"\"}}]}}]}\n");
    /// reply.feed(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]}}]}\n");
    /// let m = reply.message();
    /// assert_eq!(m.tool_calls()[0], memory_core::ToolCall::new("c1", "ls", "{\"p\":1}"));
    /// ```
    pub fn message(&self) -> Message {
        Message::Assistant {
            content: self.content.clone(),
            reasoning: (!self.reasoning.is_empty()).then(|| self.reasoning.clone()),
            tool_calls: self
                .calls
                .iter()
                .map(|c| ToolCall::new(c.id.clone(), c.name.clone(), c.arguments.clone()))
                .collect(),
        }
    }
}
