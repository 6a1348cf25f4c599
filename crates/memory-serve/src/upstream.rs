//! [`Call`]: a checked chat request, and [`send`]ing it upstream.

use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue};
use memory_core::Message;

use crate::auth::Credential;
use crate::protocol::{Decoded, Protocol};
use crate::state::AppState;

/// The version of the Messages API asked for when the client names none.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A checked request, on its way upstream.
pub(crate) struct Call {
    /// The request as decoded, its messages taken out.
    pub(crate) request: Decoded,
    /// The request's messages, checked (repaired unless `--strict`).
    pub(crate) messages: Vec<Message>,
    /// The session the client names, if it does.
    pub(crate) named: Option<String>,
    /// The client's own name for its conversation, grouping its forks.
    pub(crate) group: Option<String>,
    /// The credential sent upstream, if any.
    pub(crate) credential: Option<Credential>,
    /// The client's `anthropic-version` and `anthropic-beta`, passed to a
    /// Messages upstream unchanged.
    pub(crate) anthropic: HeaderMap,
    /// The caller's part of the store.
    pub(crate) scope: crate::sessions::Scope,
    /// What the pipeline changed, reported to a Messages client as
    /// `context_management` (set once the session is fitted).
    pub(crate) edits: Option<serde_json::Value>,
    /// A compaction item the server puts first in a Responses reply's
    /// output (`context_management` past its threshold), set once fitted.
    pub(crate) compaction: Option<serde_json::Value>,
    /// When the request came in.
    pub(crate) started: Instant,
}

/// Why the upstream gave no answer, or broke one off.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The HTTP exchange failed (connect, read, write).
    Http(reqwest::Error),
    /// The upstream said nothing for `waited`: before its answer began
    /// (`what` is `"answer"`) or between two pieces of it (`"stream"`).
    Silent {
        waited: Duration,
        what: &'static str,
    },
}

impl Failure {
    /// What went wrong, in a few words, for the client's 502.
    pub(crate) fn what(&self) -> &'static str {
        match self {
            Failure::Http(e) if e.is_timeout() => "timed out",
            Failure::Http(e) if e.is_connect() => "cannot be reached",
            Failure::Http(_) => "broke off",
            Failure::Silent { .. } => "timed out",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Http(e) => write!(f, "{}", crate::server::error_chain(e)),
            Failure::Silent { waited, what } => write!(
                f,
                "no {what} for {} s (--{} sets the limit)",
                waited.as_secs_f64(),
                if *what == "answer" {
                    "first-byte-timeout"
                } else {
                    "idle-timeout"
                }
            ),
        }
    }
}

impl std::error::Error for Failure {}

/// The next piece of an upstream's body, waiting at most `idle` for it;
/// `None` at its end.
pub(crate) async fn next_piece(
    pieces: &mut (impl futures::Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Unpin),
    idle: Duration,
) -> Result<Option<bytes::Bytes>, Failure> {
    use futures::StreamExt as _;
    match tokio::time::timeout(idle, pieces.next()).await {
        Ok(None) => Ok(None),
        Ok(Some(piece)) => piece.map(Some).map_err(|e| Failure::Http(e.without_url())),
        Err(_) => Err(Failure::Silent {
            waited: idle,
            what: "stream",
        }),
    }
}

/// Waits at most `limit` for `future`; `what` names the wait in the
/// failure.
pub(crate) async fn within<T>(
    limit: Duration,
    what: &'static str,
    future: impl std::future::Future<Output = Result<T, reqwest::Error>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(limit, future).await {
        // The URL is named by the server (without its credentials).
        Ok(result) => result.map_err(|e| Failure::Http(e.without_url())),
        Err(_) => Err(Failure::Silent {
            waited: limit,
            what,
        }),
    }
}

/// Sends the context (and the exchange the client does not see) upstream;
/// waits for the answer to begin at most the first-byte timeout.
pub(crate) async fn send(
    state: &AppState,
    call: &Call,
    context: &[Message],
    hidden: &[Message],
) -> Result<reqwest::Response, Failure> {
    let api = state.config.upstream_api;
    let all;
    let messages = if hidden.is_empty() {
        context
    } else {
        all = [context, hidden].concat();
        &all
    };
    let extra = crate::recall::offered(state.config.recall);
    let reply_tokens = call
        .request
        .max_tokens
        .unwrap_or(crate::DEFAULT_REPLY_TOKENS);
    let body = api.encode_request(&call.request, messages, &extra, reply_tokens);
    let mut request = state
        .http
        .post(format!("{}{}", state.config.upstream, api.path()))
        .json(&body);
    if let Some(credential) = &call.credential {
        let (name, value) = credential.for_upstream(api);
        request = request.header(name, value);
    }
    if api == Protocol::Messages {
        request = request.headers(call.anthropic.clone());
        if !call.anthropic.contains_key("anthropic-version") {
            request = request.header(
                "anthropic-version",
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
    }
    let sent = Instant::now();
    let upstream = within(state.config.first_byte_timeout, "answer", request.send()).await;
    state.metrics.observe_upstream(sent.elapsed());
    upstream
}
