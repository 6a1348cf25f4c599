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

use crate::StreamedReply;
use crate::server::AppState;
use crate::sessions::Slot;

/// Events held between the upstream and a slow client.
const BUFFERED_EVENTS: usize = 32;

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
) -> Response {
    let status = StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::OK);
    if let Some(t) = upstream.headers().get(CONTENT_TYPE) {
        headers.insert(CONTENT_TYPE, t.clone());
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(BUFFERED_EVENTS);
    tokio::spawn(relay(state, slot, upstream, tx));
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (status, headers, Body::from_stream(events)).into_response()
}

/// Reads the upstream's stream to its end, or until the client is gone.
async fn relay(
    state: Arc<AppState>,
    mut slot: OwnedMutexGuard<Slot>,
    upstream: reqwest::Response,
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
) {
    let mut reply = StreamedReply::default();
    let mut events = upstream.bytes_stream();
    let mut recorded = false;
    let mut gone = false;
    while let Some(chunk) = events.next().await {
        let bytes = match chunk {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(session = %slot.id, error = %e, "the upstream broke off its stream; the reply is not recorded");
                let _ = tx.send(Err(std::io::Error::other(e))).await;
                reply = StreamedReply::default();
                break;
            }
        };
        reply.feed(&bytes);
        if reply.is_done() && !recorded {
            record(&state, &mut slot, &reply).await;
            recorded = true;
        }
        if tx.send(Ok(bytes)).await.is_err() {
            gone = true;
            break;
        }
    }
    if !recorded && !gone && reply.is_finished() {
        record(&state, &mut slot, &reply).await;
    }
    state.sessions.finish(&mut slot).await;
}

async fn record(state: &AppState, slot: &mut Slot, reply: &StreamedReply) {
    if let Err(e) = state.sessions.record_reply(slot, reply.message()).await {
        tracing::warn!(session = %slot.id, error = %e, "cannot record the streamed reply; the next request records it");
    }
}
