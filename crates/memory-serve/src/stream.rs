//! Streaming answers: the upstream's events pass through to the client as
//! they come, and the reply they spell is recorded once complete.

use std::sync::Arc;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::{OwnedMutexGuard, mpsc};

use memory_core::Message;
use memory_core::recall::RECALL_TOOL;

use crate::StreamedReply;
use crate::recall::{MAX_RECALL_ROUNDS, RecallMode};
use crate::sessions::Slot;
use crate::state::AppState;
use crate::upstream::{Call, send};

/// Events held between the upstream and a slow client.
const BUFFERED_EVENTS: usize = 32;

/// What a streamed call may have to ask the upstream again with: under
/// `--recall server`, a stream that opens with a `recall` call is answered
/// by the server and asked again, the client seeing only the last one.
pub(crate) struct Again {
    pub(crate) call: Arc<Call>,
    pub(crate) context: Vec<Message>,
    pub(crate) hidden: Vec<Message>,
    pub(crate) round: usize,
}

/// Passes the upstream's event stream back to the client while a task
/// reads it; the session stays locked until the stream ends. The reply is
/// recorded when the stream completes (before its `[DONE]` reaches the
/// client); a client that goes away, or an upstream that breaks off,
/// leaves the session with the request's messages and no reply.
pub(crate) fn back(
    state: Arc<AppState>,
    slot: OwnedMutexGuard<Slot>,
    upstream: reqwest::Response,
    mut headers: HeaderMap,
    again: Again,
) -> Response {
    let status = StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::OK);
    if let Some(t) = upstream.headers().get(CONTENT_TYPE) {
        headers.insert(CONTENT_TYPE, t.clone());
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(BUFFERED_EVENTS);
    tokio::spawn(relay(state, slot, upstream, tx, again));
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (status, headers, Body::from_stream(events)).into_response()
}

/// How one upstream stream ended.
enum Relayed {
    /// Passed to the client (or given up on).
    Done,
    /// It called `recall`, held back from the client: the reply.
    Recall(Message),
}

/// Relays the upstream's streams until one is passed to the client.
async fn relay(
    state: Arc<AppState>,
    mut slot: OwnedMutexGuard<Slot>,
    mut upstream: reqwest::Response,
    tx: Sender,
    mut again: Again,
) {
    loop {
        let gated = state.config.recall == RecallMode::Server && again.round < MAX_RECALL_ROUNDS;
        let Relayed::Recall(reply) = pass(&state, &mut slot, upstream, &tx, gated).await else {
            break;
        };
        let history = match state.sessions.history(&mut slot).await {
            Ok(h) => h,
            Err(e) => {
                let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                break;
            }
        };
        let results =
            crate::recall::answers(&history, &reply, &*state.config.counter, &state.metrics).await;
        again.hidden.push(reply);
        again.hidden.extend(results);
        again.round += 1;
        upstream = match send(&state, &again.call, &again.context, &again.hidden).await {
            Ok(u) if u.status().is_success() => u,
            Ok(u) => {
                let why = format!("the upstream answered {} after a recall", u.status());
                let _ = tx.send(Err(std::io::Error::other(why))).await;
                break;
            }
            Err(e) => {
                let _ = tx.send(Err(std::io::Error::other(e))).await;
                break;
            }
        };
    }
    state.sessions.finish(&mut slot).await;
}

type Sender = mpsc::Sender<Result<Bytes, std::io::Error>>;

/// Reads one upstream stream to its end, or until the client is gone;
/// when `gated`, holds its events until it shows whether it opens with a
/// `recall` call, and keeps such a stream from the client.
async fn pass(
    state: &AppState,
    slot: &mut Slot,
    upstream: reqwest::Response,
    tx: &Sender,
    gated: bool,
) -> Relayed {
    let mut run = Run {
        reply: StreamedReply::default(),
        held: Vec::new(),
        holding: gated,
        recalling: false,
        recorded: false,
    };
    let mut events = upstream.bytes_stream();
    while let Some(chunk) = events.next().await {
        let bytes = match chunk {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(session = %slot.id, error = %e, "the upstream broke off its stream; the reply is not recorded");
                let _ = tx.send(Err(std::io::Error::other(e))).await;
                return Relayed::Done;
            }
        };
        if !run.take(state, slot, tx, bytes).await {
            return Relayed::Done;
        }
    }
    run.end(state, slot, tx).await
}

/// One upstream stream as it is read.
struct Run {
    reply: StreamedReply,
    /// Events held while it is not known how the reply opens.
    held: Vec<Bytes>,
    holding: bool,
    /// Whether it opened with a `recall` call (kept from the client).
    recalling: bool,
    recorded: bool,
}

impl Run {
    /// Takes the next bytes: holds them, keeps them back or passes them
    /// (with what was held); false once the client is gone.
    async fn take(&mut self, state: &AppState, slot: &mut Slot, tx: &Sender, bytes: Bytes) -> bool {
        self.reply.feed(&bytes);
        if self.recalling {
            return true;
        }
        self.held.push(bytes);
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
            record(state, slot, &self.reply).await;
            self.recorded = true;
        }
        self.flush(tx).await
    }

    /// Passes what is held to the client; false once it is gone.
    async fn flush(&mut self, tx: &Sender) -> bool {
        for bytes in self.held.drain(..) {
            if tx.send(Ok(bytes)).await.is_err() {
                return false;
            }
        }
        true
    }

    /// The stream ended: a recall to answer, or the reply passed on and
    /// recorded when it is complete.
    async fn end(mut self, state: &AppState, slot: &mut Slot, tx: &Sender) -> Relayed {
        if self.recalling && self.reply.is_finished() {
            return Relayed::Recall(self.reply.message());
        }
        if !self.flush(tx).await {
            return Relayed::Done;
        }
        if !self.recorded && !tx.is_closed() && self.reply.is_finished() {
            record(state, slot, &self.reply).await;
        }
        Relayed::Done
    }
}

async fn record(state: &AppState, slot: &mut Slot, reply: &StreamedReply) {
    if let Err(e) = state.sessions.record_reply(slot, reply.message()).await {
        tracing::warn!(session = %slot.id, error = %e, "cannot record the streamed reply; the next request records it");
    }
}
