//! [`Call`]: a checked chat request, and [`send`]ing it upstream.

use std::time::Instant;

use axum::http::HeaderValue;
use axum::http::header::AUTHORIZATION;
use memory_core::Message;

use crate::ChatCall;
use crate::state::AppState;

/// A checked request, on its way upstream.
pub(crate) struct Call {
    /// The request as decoded, its messages taken out.
    pub(crate) call: ChatCall,
    /// The request's messages, checked (repaired unless `--strict`).
    pub(crate) messages: Vec<Message>,
    /// The session the client names, if it does.
    pub(crate) named: Option<String>,
    /// The `Authorization` header sent upstream, if any.
    pub(crate) authorization: Option<HeaderValue>,
    /// When the request came in.
    pub(crate) started: Instant,
}

/// Sends the context (and the exchange the client does not see) upstream.
pub(crate) async fn send(
    state: &AppState,
    call: &Call,
    context: &[Message],
    hidden: &[Message],
) -> Result<reqwest::Response, reqwest::Error> {
    let body = crate::recall::upstream_body(&call.call, context, hidden, state.config.recall);
    let mut request = state
        .http
        .post(format!("{}/chat/completions", state.config.upstream))
        .json(&body);
    if let Some(a) = &call.authorization {
        request = request.header(AUTHORIZATION, a.clone());
    }
    let sent = Instant::now();
    let upstream = request.send().await;
    state.metrics.observe_upstream(sent.elapsed());
    upstream
}
