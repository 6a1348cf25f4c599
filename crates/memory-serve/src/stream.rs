//! Streaming answers: the upstream's events pass through to the client as
//! they come, and the reply they spell is recorded once complete.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::sync::{OwnedMutexGuard, mpsc};

use memory_core::Message;
use memory_core::recall::RECALL_TOOL;

use crate::protocol::assemble::Assembled;
use crate::protocol::event::Event;
use crate::protocol::rewriter::Rewriter;
use crate::protocol::{StreamDecoder, StreamEncoder};
use crate::recall::{MAX_RECALL_ROUNDS, RecallMode};
use crate::sessions::OpenSession;
use crate::state::AppState;
use crate::upstream::{Call, next_piece, send};

/// Events held between the upstream and a slow client.
const BUFFERED_EVENTS: usize = 32;

/// A streamed call as it was sent upstream, kept to ask the upstream again
/// with: under `--recall server`, a stream that opens with a `recall` call
/// is answered by the server and the call sent again, the client seeing
/// only the last stream.
pub(crate) struct StreamedCall {
    /// The checked request.
    pub(crate) call: Arc<Call>,
    /// The fitted context it was sent with.
    pub(crate) context: Vec<Message>,
    /// The recall exchange the client does not see: each `recall` call
    /// and its answers.
    pub(crate) hidden: Vec<Message>,
    /// The recall rounds answered so far.
    pub(crate) round: usize,
}

/// Passes the upstream's event stream back to the client while a task
/// reads it; the session stays locked until the stream ends. The reply is
/// recorded when the stream completes (before its `[DONE]` reaches the
/// client); a client that goes away, or an upstream that breaks off,
/// leaves the session with the request's messages and no reply.
pub(crate) fn stream_to_client(
    state: Arc<AppState>,
    session: OwnedMutexGuard<OpenSession>,
    upstream: reqwest::Response,
    mut headers: HeaderMap,
    streamed: StreamedCall,
) -> Response {
    let status = StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::OK);
    headers.extend(crate::server::passed_headers(upstream.headers()));
    let (events, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(BUFFERED_EVENTS);
    let abandoned = Arc::new(AtomicBool::new(false));
    let tx = ClientSender {
        events,
        abandoned: abandoned.clone(),
    };
    tokio::spawn(relay_rounds(state, session, upstream, tx, streamed));
    // A stream given up on ends in an error, so that the connection is
    // cut rather than the response ended as if it were whole.
    let events = futures::stream::unfold(Some(rx), move |rx| {
        let abandoned = abandoned.clone();
        async move {
            let mut rx = rx?;
            match rx.recv().await {
                Some(item) => Some((item, Some(rx))),
                None if abandoned.load(Ordering::Relaxed) => {
                    let why = "the client took nothing for the idle timeout";
                    Some((Err(std::io::Error::other(why)), None))
                }
                None => None,
            }
        }
    });
    (status, headers, Body::from_stream(events)).into_response()
}

/// How one upstream stream ended.
enum StreamEnd {
    /// Passed to the client (or given up on).
    Done,
    /// It called `recall`, held back from the client: the reply.
    Recall(Message),
}

/// Relays the upstream's streams, one per recall round, until one is
/// passed to the client.
async fn relay_rounds(
    state: Arc<AppState>,
    mut session: OwnedMutexGuard<OpenSession>,
    mut upstream: reqwest::Response,
    tx: ClientSender,
    mut streamed: StreamedCall,
) {
    loop {
        let may_recall =
            state.config.recall == RecallMode::Server && streamed.round < MAX_RECALL_ROUNDS;
        let StreamEnd::Recall(reply) =
            relay_stream(&state, &mut session, upstream, &tx, may_recall, &streamed).await
        else {
            break;
        };
        let history = match state.sessions.history(&mut session).await {
            Ok(h) => h,
            Err(e) => {
                let e = std::io::Error::other(e.to_string());
                tx.deliver(Err(e), state.config.idle_timeout).await;
                break;
            }
        };
        let results =
            crate::recall::answers(&history, &reply, &*state.config.counter, &state.metrics).await;
        streamed.hidden.push(reply);
        streamed.hidden.extend(results);
        streamed.round += 1;
        upstream = match send(&state, &streamed.call, &streamed.context, &streamed.hidden).await {
            Ok(u) if u.status().is_success() => u,
            Ok(u) => {
                let why = format!("the upstream answered {} after a recall", u.status());
                let e = std::io::Error::other(why);
                tx.deliver(Err(e), state.config.idle_timeout).await;
                break;
            }
            Err(e) => {
                let e = std::io::Error::other(e);
                tx.deliver(Err(e), state.config.idle_timeout).await;
                break;
            }
        };
    }
    state.sessions.finish(&mut session).await;
}

/// Where the events for the client go: the response body's channel, and
/// whether the relay gave up on a client that took nothing.
struct ClientSender {
    events: mpsc::Sender<Result<Bytes, std::io::Error>>,
    abandoned: Arc<AtomicBool>,
}

impl ClientSender {
    /// Hands `item` to the client's body; false when the client is gone
    /// or has taken nothing for `idle` (a client that stops reading
    /// releases its session then, as one that left).
    async fn deliver(&self, item: Result<Bytes, std::io::Error>, idle: Duration) -> bool {
        match tokio::time::timeout(idle, self.events.send(item)).await {
            Ok(sent) => sent.is_ok(),
            Err(_) => {
                self.abandoned.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    /// Whether the client is gone.
    fn is_closed(&self) -> bool {
        self.events.is_closed()
    }
}

/// Reads one upstream stream to its end, or until the client is gone;
/// when `may_recall`, holds its events until it shows whether it opens
/// with a `recall` call, and keeps such a stream from the client. Events
/// pass as they came when the client speaks the upstream's protocol, and
/// are written afresh in the client's otherwise.
async fn relay_stream(
    state: &AppState,
    session: &mut OpenSession,
    upstream: reqwest::Response,
    tx: &ClientSender,
    may_recall: bool,
    streamed: &StreamedCall,
) -> StreamEnd {
    let api = state.config.upstream_api;
    let front = streamed.call.request.front;
    let mut progress = StreamProgress {
        decoder: api.stream_decoder(),
        rewriter: (front == api)
            .then(|| Rewriter::of(front, &streamed.call))
            .flatten(),
        encoder: (front != api).then(|| front.stream_encoder(Some(&streamed.call))),
        front,
        call: streamed.call.clone(),
        reply: Assembled::default(),
        held: Vec::new(),
        holding: may_recall,
        recalling: false,
        recorded: false,
    };
    let idle = state.config.idle_timeout;
    let mut events = std::pin::pin!(upstream.bytes_stream());
    loop {
        let bytes = match next_piece(&mut events, idle).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(session = %session.id, error = %e, "the upstream broke off its stream; the reply is not recorded");
                progress.broken(tx, idle, e.to_string()).await;
                return StreamEnd::Done;
            }
        };
        if !progress.on_bytes(state, session, tx, bytes).await {
            return StreamEnd::Done;
        }
    }
    progress.on_end(state, session, tx).await
}

/// How far one upstream stream has been read, and what of it is held
/// from the client.
struct StreamProgress {
    /// Reads the upstream's events.
    decoder: StreamDecoder,
    /// Writes them in the client's protocol, when it is another.
    encoder: Option<StreamEncoder>,
    /// Adds what the server adds to a stream passed as it came.
    rewriter: Option<Rewriter>,
    /// The client's protocol.
    front: crate::Protocol,
    /// The call the stream answers.
    call: Arc<Call>,
    /// The reply the events spell so far.
    reply: Assembled,
    /// Events held while it is not known how the reply opens.
    held: Vec<Bytes>,
    /// Whether events are held until the reply shows how it opens.
    holding: bool,
    /// Whether it opened with a `recall` call (kept from the client).
    recalling: bool,
    /// Whether the reply was recorded.
    recorded: bool,
}

impl StreamProgress {
    /// The final response object of a Responses stream, as the client got
    /// it: the one written afresh, or the upstream's (with the server's
    /// compaction first in its output, as it was put in the stream).
    fn response_shown(&self) -> Option<serde_json::Value> {
        if let Some(StreamEncoder::Responses(e)) = &self.encoder {
            return e.written().cloned();
        }
        let StreamDecoder::Responses(d) = &self.decoder else {
            return None;
        };
        let mut body = d.completed()?.clone();
        if let Some(item) = &self.call.compaction {
            crate::protocol::responses::reply::put_first(&mut body, item);
        }
        Some(body)
    }

    /// Records the streamed reply in the session (and keeps a Responses
    /// reply the client asked to be kept); a failure is logged, and the
    /// next request records the reply.
    async fn record(&self, state: &AppState, session: &mut OpenSession) {
        let held = self
            .front
            .as_client_holds(self.reply.message(), &self.call.request);
        if let Err(e) = state.sessions.record_reply(session, held).await {
            tracing::warn!(session = %session.id, error = %e, "cannot record the streamed reply; the next request records it");
        }
        let call = &self.call;
        if self.front == crate::Protocol::Responses && call.request.asks.store {
            let Some(body) = self.response_shown() else {
                return;
            };
            let closes = (session.id.as_str(), session.length);
            crate::server::keep_response(call, closes, body.to_string().as_bytes()).await;
        }
    }

    /// Takes the next bytes: holds them, keeps them back or passes them
    /// (with what was held); false once the client is gone.
    async fn on_bytes(
        &mut self,
        state: &AppState,
        session: &mut OpenSession,
        tx: &ClientSender,
        bytes: Bytes,
    ) -> bool {
        let events = self.decoder.feed(&bytes);
        for event in &events {
            self.reply.take(event);
        }
        if self.recalling {
            return true;
        }
        self.held
            .push(match (&mut self.encoder, &mut self.rewriter) {
                (Some(encoder), _) => {
                    Bytes::from(events.iter().map(|e| encoder.encode(e)).collect::<String>())
                }
                (None, Some(rewriter)) => Bytes::from(rewriter.feed(&bytes)),
                (None, None) => bytes,
            });
        if self.holding {
            match self.reply.opening() {
                None => return true,
                Some(Some(RECALL_TOOL)) => {
                    self.recalling = true;
                    return true;
                }
                Some(_) => self.holding = false,
            }
        }
        if self.reply.is_done() && !self.recorded {
            self.record(state, session).await;
            self.recorded = true;
        }
        self.flush(tx, state.config.idle_timeout).await
    }

    /// Passes what is held to the client; false once it is gone, or has
    /// taken nothing for the idle timeout.
    async fn flush(&mut self, tx: &ClientSender, idle: Duration) -> bool {
        for bytes in self.held.drain(..) {
            if bytes.is_empty() {
                continue;
            }
            if !tx.deliver(Ok(bytes), idle).await {
                return false;
            }
        }
        true
    }

    /// The upstream broke off: a client of the same protocol has its
    /// connection cut; one of another gets an error event, never a
    /// stream that looks whole.
    async fn broken(&mut self, tx: &ClientSender, idle: Duration, why: String) {
        match &mut self.encoder {
            None => {
                tx.deliver(Err(std::io::Error::other(why)), idle).await;
            }
            Some(encoder) => {
                let error = encoder.encode(&Event::Error { message: why });
                self.held.push(Bytes::from(error));
                self.flush(tx, idle).await;
            }
        }
    }

    /// The stream ended: a recall to answer, or the reply passed on and
    /// recorded when it is complete.
    async fn on_end(
        mut self,
        state: &AppState,
        session: &mut OpenSession,
        tx: &ClientSender,
    ) -> StreamEnd {
        if self.recalling && self.reply.is_finished() {
            return StreamEnd::Recall(self.reply.message());
        }
        if let Some(rewriter) = &mut self.rewriter {
            self.held.push(Bytes::from(rewriter.rest()));
        }
        if let Some(encoder) = &mut self.encoder
            && !self.reply.is_done()
        {
            // Written afresh, a stream ends as its protocol ends one: or
            // with an error, when the reply never completed.
            let end = if self.reply.is_finished() {
                Event::Done
            } else {
                Event::Error {
                    message: "the upstream's stream ended before its reply was complete".into(),
                }
            };
            self.held.push(Bytes::from(encoder.encode(&end)));
        }
        if !self.flush(tx, state.config.idle_timeout).await {
            return StreamEnd::Done;
        }
        if !self.recorded && !tx.is_closed() && self.reply.is_finished() {
            self.record(state, session).await;
        }
        StreamEnd::Done
    }
}
