//! [`StreamedReply`] and [`reply_of`]: the assistant's reply, from a
//! completion or from the events of a stream, to record in the session.

use memory_core::Message;

use crate::protocol::assemble::Assembled;
use crate::protocol::chat;

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
    crate::protocol::chat::reply::decode(body).map(|r| r.message)
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
    decoder: chat::stream::Decoder,
    assembled: Assembled,
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
        for event in self.decoder.feed(bytes) {
            self.assembled.take(&event);
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
        self.assembled.opening()
    }

    /// Whether the stream said `[DONE]`.
    ///
    /// ```
    /// assert!(!memory_serve::StreamedReply::default().is_done());
    /// ```
    pub fn is_done(&self) -> bool {
        self.assembled.is_done()
    }

    /// Whether the reply is complete: `[DONE]`, or a `finish_reason`.
    ///
    /// ```
    /// assert!(!memory_serve::StreamedReply::default().is_finished());
    /// ```
    pub fn is_finished(&self) -> bool {
        self.assembled.is_finished()
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
        self.assembled.message()
    }
}
