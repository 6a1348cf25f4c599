//! The protocols the server speaks, each a codec to and from
//! [`Message`]s: a *front* is the client's protocol, an *upstream* the
//! model's, and any front goes over any upstream.
//!
//! | module | what it is |
//! |---|---|
//! | [`chat`] | OpenAI Chat Completions: requests, replies, stream events |
//! | [`messages`] | Anthropic Messages: requests, replies, stream events |
//! | [`responses`] | OpenAI Responses: requests, replies, stream events |
//! | [`event`] | a streamed reply's steps, in no protocol's shape |
//! | [`assemble`] | the reply a stream's events spell |
//! | [`options`] | a request's options, for translating it |
//! | [`originals`] | the messages as the client wrote them, for same-protocol round trips |
//! | [`pending`] | a streamed reply's tool calls, gathered whole before they are written |
//! | [`rewriter`] | a same-protocol stream passed on as it came, with what the server adds |
//!
//! A request is decoded into [`Decoded`]: its messages, their
//! [`originals`], and every other field as sent. Encoded for an upstream
//! of the same protocol, it keeps every field and every message the
//! pipeline kept as it came; for another, its [`options::Options`] are
//! translated and its messages encoded afresh.

pub(crate) mod assemble;
pub(crate) mod chat;
pub(crate) mod event;
pub(crate) mod messages;
pub(crate) mod options;
pub(crate) mod originals;
pub(crate) mod pending;
pub(crate) mod responses;
pub(crate) mod rewriter;

use memory_core::Message;
use serde_json::{Map, Value};

use crate::ApiError;
use event::{Event, StopReason, Usage};
use options::ToolSpec;
use originals::Originals;

/// A protocol the server speaks, to its clients or to its upstream.
///
/// ```
/// use memory_serve::Protocol;
/// assert_eq!("messages".parse::<Protocol>().unwrap(), Protocol::Messages);
/// assert_eq!("responses".parse::<Protocol>().unwrap(), Protocol::Responses);
/// assert_eq!(Protocol::default(), Protocol::Chat);
/// assert!("soap".parse::<Protocol>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Protocol {
    /// OpenAI Chat Completions (`POST /chat/completions`).
    #[default]
    Chat,
    /// Anthropic Messages (`POST /messages`).
    Messages,
    /// OpenAI Responses (`POST /responses`), as Codex speaks it.
    Responses,
}

impl std::str::FromStr for Protocol {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "chat" => Ok(Protocol::Chat),
            "messages" => Ok(Protocol::Messages),
            "responses" => Ok(Protocol::Responses),
            other => Err(format!("`{other}`: expected chat, messages or responses")),
        }
    }
}

/// A request decoded from a front.
#[derive(Debug, Clone)]
pub(crate) struct Decoded {
    /// The protocol it came in.
    pub(crate) front: Protocol,
    /// Its messages.
    pub(crate) messages: Vec<Message>,
    /// Their wire forms, where the messages do not hold them whole.
    pub(crate) originals: Originals,
    /// Every other field, as sent.
    pub(crate) rest: Map<String, Value>,
    /// Whether the client asked for a stream.
    pub(crate) stream: bool,
    /// The most tokens the reply may take, when the client said.
    pub(crate) max_tokens: Option<usize>,
    /// The originals a named session kept from earlier calls, by digest.
    pub(crate) stored: Vec<([u8; 32], originals::Original)>,
    /// What a Responses request asks of the server itself.
    pub(crate) asks: responses::request::Asks,
}

/// A whole reply, decoded from an upstream's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    pub(crate) id: String,
    pub(crate) model: String,
    pub(crate) message: Message,
    pub(crate) stop: StopReason,
    pub(crate) usage: Usage,
}

/// A request body for an upstream: a Chat Completions body written
/// directly (see [`chat::body`]), or another protocol's as a value.
pub(crate) enum RequestBody<'a> {
    Chat(chat::body::Body<'a>),
    Other(Value),
}

impl serde::Serialize for RequestBody<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestBody::Chat(body) => body.serialize(s),
            RequestBody::Other(value) => value.serialize(s),
        }
    }
}

impl Protocol {
    /// The path of its completion endpoint under an upstream's base URL.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Protocol::Chat => "/chat/completions",
            Protocol::Messages => "/messages",
            Protocol::Responses => "/responses",
        }
    }

    /// Decodes a request body sent to this front; the messages' originals
    /// are kept when `upstream` speaks it too.
    pub(crate) fn decode_request(
        self,
        body: &[u8],
        upstream: Protocol,
    ) -> Result<Decoded, ApiError> {
        let keep = upstream == self;
        match self {
            Protocol::Chat => chat::request::decode(body, keep),
            Protocol::Messages => messages::request::decode(body, keep),
            Protocol::Responses => responses::request::decode(body, keep),
        }
    }

    /// The body to send an upstream of this protocol: `request`'s fields
    /// (as sent when it came in this protocol, translated otherwise),
    /// `context` as its messages (those the client sent, as they came), and
    /// `extra` tools offered besides the client's.
    pub(crate) fn encode_request<'a>(
        self,
        request: &'a Decoded,
        context: &'a [Message],
        extra: &[ToolSpec],
        reply_tokens: usize,
    ) -> RequestBody<'a> {
        let same = request.front == self;
        let originals = if same {
            request.originals.of(context, &request.stored)
        } else {
            vec![None; context.len()]
        };
        let options = (!same).then(|| match request.front {
            Protocol::Chat => chat::options::read(&request.rest),
            Protocol::Messages => messages::options::read(&request.rest),
            Protocol::Responses => responses::options::read(&request.rest),
        });
        match self {
            Protocol::Chat => {
                let rest = match &options {
                    Some(o) => chat::options::write(o),
                    None => request.rest.clone(),
                };
                RequestBody::Chat(chat::request::encode(
                    rest, context, &originals, extra, !same,
                ))
            }
            Protocol::Messages => {
                let rest = match &options {
                    Some(o) => messages::options::write(o, reply_tokens),
                    None => request.rest.clone(),
                };
                RequestBody::Other(messages::request::encode(rest, context, &originals, extra))
            }
            Protocol::Responses => {
                let rest = match &options {
                    Some(o) => responses::options::write(o),
                    None => request.rest.clone(),
                };
                let custom = &request.asks.custom_tools;
                let mut body = responses::request::encode(rest, context, &originals, extra, custom);
                if request.asks.trigger
                    && request.asks.native
                    && let Some(input) = body["input"].as_array_mut()
                {
                    input.push(serde_json::json!({"type": "compaction_trigger"}));
                }
                RequestBody::Other(body)
            }
        }
    }

    /// The reply in a non-streamed answer of this upstream.
    pub(crate) fn decode_reply(self, body: &[u8]) -> Option<Reply> {
        match self {
            Protocol::Chat => chat::reply::decode(body),
            Protocol::Messages => messages::reply::decode(body),
            Protocol::Responses => responses::reply::decode(body),
        }
    }

    /// A non-streamed answer of this front holding `reply`.
    pub(crate) fn encode_reply(self, reply: &Reply) -> Value {
        match self {
            Protocol::Chat => chat::reply::encode(reply),
            Protocol::Messages => messages::reply::encode(reply),
            Protocol::Responses => {
                responses::reply::encode(reply, &responses::reply::new_id("resp"))
            }
        }
    }

    /// The reply as a client of this front holds it once it has read it:
    /// what it will send back in its next request (tool arguments as
    /// this protocol writes them, say). The session records this.
    pub(crate) fn as_client_holds(self, reply: Message, request: &Decoded) -> Message {
        match self {
            Protocol::Chat => reply,
            Protocol::Messages => messages::reply::as_client_holds(reply),
            Protocol::Responses => {
                responses::reply::as_client_holds(reply, &request.asks.custom_tools)
            }
        }
    }

    /// A reader of this upstream's stream events.
    pub(crate) fn stream_decoder(self) -> StreamDecoder {
        match self {
            Protocol::Chat => StreamDecoder::Chat(chat::stream::Decoder::default()),
            Protocol::Messages => StreamDecoder::Messages(messages::stream::Decoder::default()),
            Protocol::Responses => StreamDecoder::Responses(responses::stream::Decoder::default()),
        }
    }

    /// A writer of this front's stream events for `call`: a Messages
    /// stream reports its edits on its `message_delta`, a Responses stream
    /// opens its output with its compaction and repeats what it asked.
    pub(crate) fn stream_encoder(self, call: Option<&crate::upstream::Call>) -> StreamEncoder {
        match self {
            Protocol::Chat => StreamEncoder::Chat(chat::stream::Encoder::default()),
            Protocol::Messages => StreamEncoder::Messages(messages::stream::Encoder::reporting(
                call.and_then(|c| c.edits.clone()),
            )),
            Protocol::Responses => {
                let leading = call.and_then(|c| c.compaction.clone());
                let encoder = responses::stream::Encoder::new(
                    responses::reply::new_id("resp"),
                    leading.into_iter().collect(),
                );
                StreamEncoder::Responses(Box::new(match call {
                    Some(call) => encoder.echoing(&call.request),
                    None => encoder,
                }))
            }
        }
    }

    /// An error's body in this front's shape.
    pub(crate) fn error_body(self, e: &ApiError) -> Value {
        match self {
            Protocol::Chat => e.body(),
            Protocol::Messages => e.anthropic_body(),
            Protocol::Responses => e.body(),
        }
    }
}

/// What the pipeline changed in a Messages client's context, as that
/// protocol reports context edits; `None` for other fronts, or when
/// nothing was changed.
pub(crate) fn applied_edits(
    call: &crate::upstream::Call,
    context: &[Message],
    report: &crate::CallReport,
) -> Option<Value> {
    if call.request.front != Protocol::Messages {
        return None;
    }
    messages::edits::Cleared::between(&call.messages, context).field(report.tokens_saved)
}

/// Reads an upstream's stream, in its protocol, into [`Event`]s.
pub(crate) enum StreamDecoder {
    Chat(chat::stream::Decoder),
    Messages(messages::stream::Decoder),
    Responses(responses::stream::Decoder),
}

impl StreamDecoder {
    /// The events the next bytes complete (events may be split anywhere).
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        match self {
            StreamDecoder::Chat(d) => d.feed(bytes),
            StreamDecoder::Messages(d) => d.feed(bytes),
            StreamDecoder::Responses(d) => d.feed(bytes),
        }
    }
}

/// Writes [`Event`]s as a front's stream.
pub(crate) enum StreamEncoder {
    Chat(chat::stream::Encoder),
    Messages(messages::stream::Encoder),
    Responses(Box<responses::stream::Encoder>),
}

impl StreamEncoder {
    /// The bytes of `event` in the front's stream (none for an event the
    /// front has no place for).
    pub(crate) fn encode(&mut self, event: &Event) -> String {
        match self {
            StreamEncoder::Chat(e) => e.encode(event),
            StreamEncoder::Messages(e) => e.encode(event),
            StreamEncoder::Responses(e) => e.encode(event),
        }
    }
}

/// Splits server-sent-event bytes into lines as they complete, and gives
/// their `data:` fields.
#[derive(Debug, Default, Clone)]
pub(crate) struct Lines {
    pending: Vec<u8>,
}

impl Lines {
    /// The lines the next bytes complete, without their line ends.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut lines = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            lines.push(line.trim_end_matches(['\n', '\r']).to_string());
        }
        lines
    }

    /// The `data:` fields of the lines the next bytes complete, trimmed
    /// (the events' names and comments are left out).
    pub(crate) fn data(&mut self, bytes: &[u8]) -> Vec<String> {
        self.feed(bytes)
            .into_iter()
            .filter_map(|line| line.strip_prefix("data:").map(|d| d.trim().to_string()))
            .collect()
    }
}
