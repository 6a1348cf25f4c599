//! The routes: [`router`] builds them, [`serve`] runs them on a listener.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use memory_core::Message;
use memory_core::identity::message_key;
use memory_openai::wire;
use serde_json::json;
use tokio::net::TcpListener;

use crate::auth::Caller;
use crate::protocol::Reply;
use crate::recall::{MAX_RECALL_ROUNDS, RecallMode};
use crate::sessions::{Admitted, OpenSession, Scope, Sessions};
use crate::state::AppState;
use crate::upstream::{Call, Failure, send, within};
use crate::{ApiError, CallReport, Metrics, Protocol, ServeConfig, auth, stream};

/// The header a client names its session with.
pub const SESSION_HEADER: &str = "x-memory-session";

/// The server's routes over `config`: `POST /v1/chat/completions`,
/// `POST /v1/messages` and `/v1/messages/count_tokens`, `POST
/// /v1/responses` and `/v1/responses/compact`, `GET /v1/responses/{id}`,
/// `GET /v1/models`, `GET` and `DELETE /v1/memory/sessions/{id}`, `POST
/// /v1/memory/sessions/{id}/recall`, `GET /healthz` and `GET /metrics`.
///
/// # Errors
///
/// The HTTP client for the upstream cannot be built (no TLS roots).
///
/// ```
/// use std::sync::Arc;
/// use memory_core::{InMemoryStore, TrimStrategy};
/// let config = memory_serve::ServeConfig::new(
///     "http://127.0.0.1:8080/v1",
///     Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
///     Arc::new(InMemoryStore::new()),
/// );
/// let app = memory_serve::router(config).unwrap();
/// # let _ = app;
/// ```
pub fn router(config: ServeConfig) -> Result<Router, ApiError> {
    crate::check_upstream(&config.upstream).map_err(ApiError::internal)?;
    let http = reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .build()
        .map_err(|e| ApiError::internal(format!("cannot build the upstream client: {e}")))?;
    let state = Arc::new(AppState {
        sessions: Sessions::new(&config),
        metrics: Metrics::new(config.summarizer_stats.clone()),
        http,
        config,
        rate: crate::limits::RateLimiter::default(),
    });
    if let Some(ttl) = state.config.session_ttl {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(crate::sessions::expire(state.clone(), ttl))),
            Err(_) => tracing::warn!("no tokio runtime: sessions will not expire"),
        }
    }
    Ok(Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/responses", post(responses))
        .route("/v1/responses/compact", post(compact))
        .route("/v1/responses/{id}", get(stored_response))
        .route("/v1/models", get(models))
        .route(
            "/v1/memory/sessions/{id}",
            get(session).delete(delete_session),
        )
        .route("/v1/memory/sessions/{id}/recall", post(recall_in))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::guard::guard,
        ))
        .layer(DefaultBodyLimit::disable())
        // A body sent compressed (`Content-Encoding: gzip` or `zstd`) is
        // read as it was before; the size limit holds for what it unpacks
        // to (`read_body`).
        .layer(tower_http::decompression::RequestDecompressionLayer::new())
        .with_state(state))
}

/// Serves [`router`] on `listener` until `shutdown` completes.
///
/// # Errors
///
/// The router cannot be built, or the listener fails.
pub async fn serve(
    listener: TcpListener,
    config: ServeConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut config = config;
    config.listening = config.listening.or(listener.local_addr().ok());
    let app = router(config).map_err(|e| std::io::Error::other(e.to_string()))?;
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn healthz() -> Response {
    ([(CONTENT_TYPE, "application/json")], r#"{"status":"ok"}"#).into_response()
}

async fn metrics(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Err(e) = caller(&state, &headers).await {
        return e.into_response();
    }
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        state.metrics.render(),
    )
        .into_response()
}

async fn models(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let response = match forward_models(&state, &headers).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    state
        .metrics
        .count_request("models", response.status().as_u16());
    response
}

/// The request's caller and its part of the store.
///
/// # Errors
///
/// 401 when the server takes keys and none is presented; the store
/// failing to give the server's secret.
async fn caller(state: &AppState, headers: &HeaderMap) -> Result<(Caller, Scope), ApiError> {
    // The secret is read only where credentials are hashed into principals.
    let secret = if auth::takes_keys(&state.config) {
        [0; 32]
    } else {
        state.sessions.secret().await?
    };
    let caller = auth::identify(&state.config, headers, &secret)?;
    if let Some(per_minute) = state.config.limits.requests_per_minute {
        state.rate.take(&caller.principal, per_minute)?;
    }
    let scope = state.sessions.scope(&caller.principal);
    Ok((caller, scope))
}

async fn forward_models(state: &AppState, headers: &HeaderMap) -> Result<Response, ApiError> {
    let credential = caller(state, headers).await?.0.upstream;
    let request = state.http.get(format!("{}/models", state.config.upstream));
    relay(state, request, credential).await
}

/// Sends `request` to the upstream with the caller's `credential` (and
/// the API version a Messages upstream asks for); its answer as it came.
async fn relay(
    state: &AppState,
    mut request: reqwest::RequestBuilder,
    credential: Option<crate::auth::Credential>,
) -> Result<Response, ApiError> {
    if let Some(c) = credential {
        let (name, value) = c.for_upstream(state.config.upstream_api);
        request = request.header(name, value);
    }
    if state.config.upstream_api == Protocol::Messages {
        request = request.header("anthropic-version", crate::upstream::ANTHROPIC_VERSION);
    }
    let upstream = within(state.config.first_byte_timeout, "answer", request.send())
        .await
        .map_err(|e| unreachable_upstream(state, &e))?;
    let answer = Answer::read(upstream, state.config.idle_timeout)
        .await
        .map_err(|e| unreachable_upstream(state, &e))?;
    Ok(passed_through(answer, HeaderMap::new()))
}

async fn session(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let response = match inspect(&state, &id, &headers).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    state
        .metrics
        .count_request("session", response.status().as_u16());
    response
}

/// `DELETE /v1/memory/sessions/{id}`: the session erased; a session of
/// another principal, or none, is a 404.
async fn delete_session(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let erased = async {
        let (_, scope) = caller(&state, &headers).await?;
        if !state.sessions.delete(&scope, &id).await? {
            return Err(ApiError::no_session(&id));
        }
        let body = json!({"session": id, "deleted": true});
        Ok(([(CONTENT_TYPE, "application/json")], body.to_string()).into_response())
    };
    let response = erased.await.unwrap_or_else(ApiError::into_response);
    state
        .metrics
        .count_request("delete", response.status().as_u16());
    response
}

/// `POST /v1/memory/sessions/{id}/recall` with a `recall` call's
/// arguments: what the handle brings back from the session.
async fn recall_in(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let response = match answer_recall(&state, &id, &headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    state
        .metrics
        .count_request("recall", response.status().as_u16());
    response
}

async fn answer_recall(
    state: &AppState,
    id: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (_, scope) = caller(state, headers).await?;
    let bytes = read_body(headers, body, state.config.max_body_bytes).await?;
    let text = String::from_utf8_lossy(&bytes);
    let request = memory_core::recall::RecallRequest::from_arguments(&text)
        .map_err(|e| ApiError::bad_request(e.to_string(), None))?;
    let Some(history) = state.sessions.stored_history(&scope, id).await? else {
        return Err(ApiError::no_session(id));
    };
    let recalled = memory_core::recall::resolve(&history, &request, &*state.config.counter)
        .await
        .map_err(|e| ApiError::bad_request(e.to_string(), Some("handle")))?;
    let body = json!({
        "text": recalled.text,
        "tokens": recalled.tokens,
        "whole": recalled.whole,
        "messages": wire::to_value(&recalled.messages),
    });
    Ok(([(CONTENT_TYPE, "application/json")], body.to_string()).into_response())
}

async fn inspect(state: &AppState, id: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    let (_, scope) = caller(state, headers).await?;
    let Some(stored) = state.sessions.inspect(&scope, id).await? else {
        return inspect_group(state, &scope, id).await;
    };
    let view: Vec<_> = stored
        .view
        .iter()
        .map(|s| {
            json!({
                "message": wire::message_to_value(&s.message),
                "tokens": s.tokens,
                "protected": s.protected,
            })
        })
        .collect();
    let body = json!({
        "session": id,
        "history_length": stored.length,
        "history_tokens": stored.history_tokens,
        "view_length": view.len(),
        "view": view,
        "last_call": stored.last_call,
    });
    Ok(([(CONTENT_TYPE, "application/json")], body.to_string()).into_response())
}

/// The sessions a client grouped under `group` (the forks of one Claude
/// Code conversation): each one's id, when it was made, its history's
/// length and tokens and its last call; 404 when there are none.
async fn inspect_group(state: &AppState, scope: &Scope, group: &str) -> Result<Response, ApiError> {
    let sessions = state.sessions.group(scope, group).await?;
    if sessions.is_empty() {
        return Err(ApiError::no_session(group));
    }
    let sessions: Vec<_> = sessions
        .into_iter()
        .map(|(entry, stored)| {
            json!({
                "session": entry.session,
                "created": entry.created,
                "history_length": stored.length,
                "history_tokens": stored.history_tokens,
                "last_call": stored.last_call,
            })
        })
        .collect();
    let body = json!({"group": group, "sessions": sessions});
    Ok(([(CONTENT_TYPE, "application/json")], body.to_string()).into_response())
}

async fn chat(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    completion(state, headers, body, Protocol::Chat, "chat").await
}

/// `POST /v1/messages`: the Anthropic Messages front.
async fn messages(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    completion(state, headers, body, Protocol::Messages, "messages").await
}

/// `POST /v1/responses`: the OpenAI Responses front.
async fn responses(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    completion(state, headers, body, Protocol::Responses, "responses").await
}

/// `POST /v1/responses/compact`: one compaction item for the history
/// sent, made by the server, or by a Responses upstream that compacts
/// (`--compaction native`).
async fn compact(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    if state.config.compaction_mode() == crate::Compaction::Native {
        let response = forward_compact(&state, &headers, body)
            .await
            .unwrap_or_else(|e| e.respond(Protocol::Responses));
        state
            .metrics
            .count_request("compact", response.status().as_u16());
        return response;
    }
    completion(state, headers, body, Protocol::Responses, "compact").await
}

/// `GET /v1/responses/{id}`: a response the server kept.
async fn stored_response(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let found = async {
        let (_, scope) = caller(&state, &headers).await?;
        match crate::stored_responses::load(&*scope.store(), &id).await? {
            Some(record) => Ok((
                [(CONTENT_TYPE, "application/json")],
                record.body.to_string(),
            )
                .into_response()),
            None => Err(ApiError::no_response(&id)),
        }
    };
    found
        .await
        .unwrap_or_else(|e| e.respond(Protocol::Responses))
}

/// A compaction asked of a Responses upstream that compacts: the body
/// passed as it came, the answer as it came.
async fn forward_compact(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let credential = caller(state, headers).await?.0.upstream;
    let bytes = read_body(headers, body, state.config.max_body_bytes).await?;
    let request = state
        .http
        .post(format!("{}/responses/compact", state.config.upstream))
        .header(CONTENT_TYPE, "application/json")
        .body(bytes);
    relay(state, request, credential).await
}

/// One completion call through `front`, counted under `route`.
async fn completion(
    state: Arc<AppState>,
    headers: HeaderMap,
    body: Body,
    front: Protocol,
    route: &'static str,
) -> Response {
    let response = match admit_call(state.clone(), headers, body, front, route).await {
        Ok(r) => r,
        Err(e) => e.respond(front),
    };
    state
        .metrics
        .count_request(route, response.status().as_u16());
    response
}

/// Reads and checks the request, then runs the call as a task of its
/// own, so that a client that goes away does not cut it in half.
async fn admit_call(
    state: Arc<AppState>,
    headers: HeaderMap,
    body: Body,
    front: Protocol,
    route: &str,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let (caller, scope) = caller(&state, &headers).await?;
    let bytes = read_body(&headers, body, state.config.max_body_bytes).await?;
    let mut request = front.decode_request(&bytes, state.config.upstream_api)?;
    if let Some(limit) = state.config.limits.messages_per_request
        && request.messages.len() > limit
    {
        return Err(crate::limits::too_many_messages(
            request.messages.len(),
            limit,
        ));
    }
    let group = client_group(&headers, front);
    if front == Protocol::Responses {
        prepare_responses(&state, &scope, &mut request, group.as_deref(), route).await?;
    }
    let messages =
        crate::transcript::prepare(std::mem::take(&mut request.messages), state.config.strict)?;
    let named = session_header(&headers)?;
    let call = Call {
        request,
        messages,
        named,
        group,
        credential: caller.upstream,
        anthropic: anthropic_headers(&headers),
        scope,
        started,
        edits: None,
        compaction: None,
    };
    tokio::spawn(exchange(state, call))
        .await
        .map_err(|e| ApiError::internal(format!("the call failed: {e}")))?
}

/// What a Responses request asks of the server itself, made ready: the
/// messages of the response it continues and of the compactions it holds
/// put in, and what the upstream does not answer taken out.
async fn prepare_responses(
    state: &AppState,
    scope: &Scope,
    request: &mut crate::protocol::Decoded,
    group: Option<&str>,
    route: &str,
) -> Result<(), ApiError> {
    let native = state.config.compaction_mode() == crate::Compaction::Native;
    request.asks.native = native;
    if route == "compact" {
        request.asks.trigger = true;
        request.asks.compact_endpoint = true;
    }
    if !native {
        request.rest.remove("context_management");
    }
    crate::stored_responses::resolve(scope, request).await?;
    crate::compaction::expand(state, scope, request, group).await?;
    crate::stored_responses::continue_from(state, scope, request).await
}

/// The client's `anthropic-version` and `anthropic-beta` headers.
fn anthropic_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for name in ["anthropic-version", "anthropic-beta"] {
        for value in headers.get_all(name) {
            out.append(HeaderName::from_static(name), value.clone());
        }
    }
    out
}

/// `POST /v1/messages/count_tokens`: the tokens of the context the server
/// would send for this request, as Anthropic answers it.
async fn count_tokens(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let counted = async {
        let (_, scope) = caller(&state, &headers).await?;
        let bytes = read_body(&headers, body, state.config.max_body_bytes).await?;
        let mut request = Protocol::Messages.decode_request(&bytes, Protocol::Chat)?;
        let messages =
            crate::transcript::prepare(std::mem::take(&mut request.messages), state.config.strict)?;
        let budget = state.config.budget.for_call(request.max_tokens);
        let tokens = state.sessions.count(&scope, &messages, budget).await?;
        let body = json!({"input_tokens": tokens});
        Ok::<_, ApiError>(([(CONTENT_TYPE, "application/json")], body.to_string()).into_response())
    };
    let response = counted
        .await
        .unwrap_or_else(|e| e.respond(Protocol::Messages));
    state
        .metrics
        .count_request("count_tokens", response.status().as_u16());
    response
}

/// Records the request in its session, fits the session, sends it
/// upstream (answering the model's recalls itself under `--recall
/// server`) and records the reply.
async fn exchange(state: Arc<AppState>, mut call: Call) -> Result<Response, ApiError> {
    let admitted = admit(&state, &mut call).await?;
    let (mut session, mut report, context) = fit(&state, admitted, &call).await?;
    let headers = memory_headers(&session, &report);
    let asks = &call.request.asks;
    if asks.trigger && !asks.native {
        return compacted(&state, session, report, headers, &call).await;
    }
    call.compaction = past_threshold(&state, &mut session, &report, &call).await?;
    call.edits = crate::protocol::applied_edits(&call, &context, &report);
    let front = call.request.front;
    let mut own = call.started.elapsed();
    let mut hidden: Vec<Message> = Vec::new();
    for round in 0.. {
        let upstream = match send(&state, &call, &context, &hidden).await {
            Ok(u) => u,
            Err(e) => {
                close(&state, &mut session, report, own).await;
                return Ok(failed(&state, &e, headers, front));
            }
        };
        report.upstream_status = Some(upstream.status().as_u16());
        if call.request.stream && upstream.status().is_success() && is_event_stream(&upstream) {
            session.last_call = Some(report);
            state.metrics.observe_own(own);
            let streamed = stream::StreamedCall {
                call: Arc::new(call),
                context,
                hidden,
                round,
            };
            return Ok(stream::stream_to_client(
                state.clone(),
                session,
                upstream,
                headers,
                streamed,
            ));
        }
        let answer = match Answer::read(upstream, state.config.idle_timeout).await {
            Ok(a) => a,
            Err(e) => {
                close(&state, &mut session, report, own).await;
                return Ok(failed(&state, &e, headers, front));
            }
        };
        let after = Instant::now();
        match recall_round(&state, &mut session, &answer, round).await? {
            Some(exchange) => hidden.extend(exchange),
            None => return finish(&state, session, report, answer, headers, own, &call).await,
        }
        own += after.elapsed();
    }
    unreachable!("the loop returns")
}

/// The 502 of an upstream that gave no answer, with the call's headers.
fn failed(state: &AppState, e: &Failure, headers: HeaderMap, front: Protocol) -> Response {
    error_response(unreachable_upstream(state, e), headers, front)
}

/// The compaction a Responses reply opens with when the history is past
/// the threshold its `context_management` names (the call's budget when
/// it names none), and the server answers compaction: it stands for the
/// history before the reply. A request that continues a kept response
/// holds no history to shorten, and gets none.
async fn past_threshold(
    state: &AppState,
    session: &mut OpenSession,
    report: &CallReport,
    call: &Call,
) -> Result<Option<serde_json::Value>, ApiError> {
    let asks = &call.request.asks;
    let threshold = match asks.threshold {
        Some(given) if !asks.native && asks.previous.is_none() => {
            given.unwrap_or(report.budget as u64)
        }
        _ => return Ok(None),
    };
    if report.history_tokens as u64 <= threshold {
        return Ok(None);
    }
    let (item, _) = crate::compaction::make(state, session, call).await?;
    Ok(Some(item))
}

/// A request to compact, answered by the server with no model call of
/// its own: one compaction item standing for the session's history.
async fn compacted(
    state: &AppState,
    mut session: tokio::sync::OwnedMutexGuard<OpenSession>,
    report: CallReport,
    mut headers: HeaderMap,
    call: &Call,
) -> Result<Response, ApiError> {
    use crate::protocol::responses::{reply, stream};
    let (item, tokens) = crate::compaction::make(state, &mut session, call).await?;
    let usage = crate::protocol::event::Usage {
        input: Some(tokens as u64),
        output: Some(0),
    };
    close(state, &mut session, report, call.started.elapsed()).await;
    let model = call.request.rest.get("model").and_then(|m| m.as_str());
    let model = model.unwrap_or_default();
    let mut body = reply::response(
        &reply::new_id("resp"),
        model,
        "completed",
        vec![item],
        usage,
    );
    reply::echo(&mut body, &call.request);
    if call.request.asks.compact_endpoint {
        body = json!({"id": reply::new_id("cmp"), "object": "response.compaction",
            "created_at": body["created_at"], "output": body["output"], "usage": body["usage"]});
    } else if call.request.stream {
        let events = stream::whole(&body);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        return Ok((StatusCode::OK, headers, events).into_response());
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok((StatusCode::OK, headers, body.to_string()).into_response())
}

/// The call's session: the one it names (with the originals it kept
/// from earlier calls, for an upstream of the client's protocol), or the
/// one its history continues.
async fn admit(state: &AppState, call: &mut Call) -> Result<Admitted, ApiError> {
    let sessions = &state.sessions;
    match &call.named {
        Some(id) => {
            let admitted = sessions
                .admit_named(&call.scope, id, &call.messages, &call.request.originals)
                .await?;
            if call.request.front == state.config.upstream_api {
                call.request.stored = sessions.kept_originals(&call.scope, id).await?;
            }
            Ok(admitted)
        }
        None => {
            let group = call.group.as_deref();
            let hint = call.request.asks.session.as_deref();
            sessions
                .admit_history(&call.scope, &call.messages, group, hint)
                .await
        }
    }
}

/// The model's reply when it calls `recall` under `--recall server` and
/// rounds are left: the reply and the answers to its calls, to send back.
async fn recall_round(
    state: &AppState,
    session: &mut OpenSession,
    answer: &Answer,
    round: usize,
) -> Result<Option<Vec<Message>>, ApiError> {
    if state.config.recall != RecallMode::Server
        || round >= MAX_RECALL_ROUNDS
        || !answer.status.is_success()
    {
        return Ok(None);
    }
    let reply = state.config.upstream_api.decode_reply(&answer.body);
    let Some(reply) = reply.map(|r| r.message).filter(crate::recall::wants_recall) else {
        return Ok(None);
    };
    let history = state.sessions.history(session).await?;
    let results =
        crate::recall::answers(&history, &reply, &*state.config.counter, &state.metrics).await;
    let mut exchange = vec![reply];
    exchange.extend(results);
    Ok(Some(exchange))
}

/// A non-streamed answer, read whole.
pub(crate) struct Answer {
    pub(crate) status: reqwest::StatusCode,
    /// The headers passed back to the client: its content type, and what
    /// a client's retries and logs read ([`passed_headers`]).
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Answer {
    /// Reads the body, pausing at most `idle` between its pieces.
    async fn read(upstream: reqwest::Response, idle: Duration) -> Result<Answer, Failure> {
        let status = upstream.status();
        let headers = passed_headers(upstream.headers());
        let mut body = Vec::new();
        let mut pieces = std::pin::pin!(upstream.bytes_stream());
        while let Some(piece) = crate::upstream::next_piece(&mut pieces, idle).await? {
            body.extend_from_slice(&piece);
        }
        Ok(Answer {
            status,
            headers,
            body: Bytes::from(body),
        })
    }
}

/// The upstream's headers a client is owed: the content type, when to
/// retry (`Retry-After`, `x-ratelimit-*`, `retry-after-ms`) and the
/// request's id, by which a provider's support finds it.
pub(crate) fn passed_headers(upstream: &reqwest::header::HeaderMap) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in upstream {
        let n = name.as_str();
        let passed = n == "content-type"
            || n == "retry-after"
            || n == "retry-after-ms"
            || n == "x-request-id"
            || n == "request-id"
            || n.starts_with("x-ratelimit-")
            || n.starts_with("anthropic-ratelimit-");
        if passed
            && let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_str().as_bytes()),
                HeaderValue::from_bytes(value.as_bytes()),
            )
        {
            headers.append(name, value);
        }
    }
    headers
}

/// Fits the admitted session to the call's budget and measures it.
async fn fit(
    state: &AppState,
    admitted: Admitted,
    call: &Call,
) -> Result<
    (
        tokio::sync::OwnedMutexGuard<OpenSession>,
        CallReport,
        Vec<Message>,
    ),
    ApiError,
> {
    let Admitted {
        mut session,
        admission,
        new_messages,
    } = admitted;
    let budget = state.config.budget.for_call(call.request.max_tokens);
    let mut result = state.sessions.fit(&mut session, budget).await?;
    crate::transcript::keep_echoed_reasoning(&mut result.messages, &call.messages);
    let (tokens_in, messages_in) = state.sessions.view_size(&mut session);
    let keys: Vec<u64> = result.messages.iter().map(message_key).collect();
    let mut report = CallReport::measure(&result, &keys, &session.last_context);
    report.turn = session.length;
    report.admission = Some(admission);
    report.new_messages = new_messages;
    report.history_tokens = session.history_tokens;
    report.tokens_in = tokens_in;
    report.messages_in = messages_in;
    report.budget = budget;
    report.tokens_saved = session.history_tokens.saturating_sub(report.tokens_out);
    report.latency_us = call.started.elapsed().as_micros() as u64;
    state.metrics.count_call(&report);
    session.last_context = keys;
    Ok((session, report, result.messages))
}

/// A non-streamed answer: recorded, then passed back (in the client's
/// protocol).
async fn finish(
    state: &AppState,
    mut session: tokio::sync::OwnedMutexGuard<OpenSession>,
    report: CallReport,
    answer: Answer,
    mut headers: HeaderMap,
    own: Duration,
    call: &Call,
) -> Result<Response, ApiError> {
    let front = call.request.front;
    let after = Instant::now();
    // The state the reply's commit writes holds this call's report.
    session.last_call = Some(report.clone());
    let api = state.config.upstream_api;
    let reply = answer
        .status
        .is_success()
        .then(|| api.decode_reply(&answer.body))
        .flatten();
    match &reply {
        Some(reply) => {
            let held = front.as_client_holds(reply.message.clone(), &call.request);
            if let Err(e) = state.sessions.record_reply(&mut session, held).await {
                tracing::warn!(session = %session.id, error = %e, "cannot record the reply; the next request records it");
            }
        }
        None if answer.status.is_success() => {
            tracing::warn!(session = %session.id, "the upstream's answer has no assistant message to record")
        }
        None => {}
    }
    let (id, length) = (session.id.clone(), session.length);
    close(state, &mut session, report, own + after.elapsed()).await;
    // The time after the upstream, counted once: recording the reply and
    // closing the call.
    let own = own + after.elapsed();
    if let Ok(v) = HeaderValue::from_str(&own.as_micros().to_string()) {
        headers.insert(HeaderName::from_static("x-memory-overhead-us"), v);
    }
    Ok(to_client(state, call, answer, reply, headers, (&id, length)).await)
}

/// The upstream's answer for the client: as it came when it speaks the
/// client's protocol (with the server's report and compaction added),
/// written in the client's otherwise; a Responses reply kept when asked,
/// as closing the first `closes.1` messages of session `closes.0`.
async fn to_client(
    state: &AppState,
    call: &Call,
    answer: Answer,
    reply: Option<Reply>,
    headers: HeaderMap,
    closes: (&str, usize),
) -> Response {
    let (front, edits) = (call.request.front, call.edits.as_ref());
    if front == state.config.upstream_api {
        let mut answer = match edits {
            Some(edits) => crate::protocol::messages::reply::with_edits(answer, edits),
            None => answer,
        };
        if let Some(item) = &call.compaction {
            answer = crate::protocol::responses::reply::with_item(answer, item);
        }
        if answer.status.is_success() {
            keep_response(call, closes, &answer.body).await;
        }
        return passed_through(answer, headers);
    }
    let body = reply.map(|reply| {
        let mut body = front.encode_reply(&reply);
        if front == Protocol::Responses {
            crate::protocol::responses::reply::echo(&mut body, &call.request);
        }
        if let Some(edits) = edits {
            body["context_management"] = edits.clone();
        }
        if let Some(item) = &call.compaction {
            crate::protocol::responses::reply::put_first(&mut body, item);
        }
        body
    });
    if let Some(body) = &body {
        keep_response(call, closes, body.to_string().as_bytes()).await;
    }
    translated(answer, body, headers, front)
}

/// Keeps a Responses reply the client asked to be kept (`store`), under
/// the id its body holds, as closing the first `closes.1` messages of
/// session `closes.0`; a failure is logged (the reply stands).
pub(crate) async fn keep_response(call: &Call, closes: (&str, usize), body: &[u8]) {
    if call.request.front != Protocol::Responses || !call.request.asks.store {
        return;
    }
    let Ok(body) = serde_json::from_slice::<serde_json::Value>(body) else {
        return;
    };
    let (session, length) = closes;
    let record = crate::stored_responses::Record {
        session: session.to_string(),
        length,
        body,
    };
    let writes = crate::stored_responses::write(&record);
    for result in call.scope.store().write_all(writes).await {
        if let Err(e) = result {
            tracing::warn!(session, error = %e, "cannot keep the response");
        }
    }
}

/// An answer of the upstream in the client's protocol: the reply written
/// in it (`body`), or the upstream's error in its error shape.
fn translated(
    answer: Answer,
    body: Option<serde_json::Value>,
    mut headers: HeaderMap,
    front: Protocol,
) -> Response {
    headers.extend(answer.headers);
    headers.remove(CONTENT_TYPE);
    if let Some(body) = body {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return (StatusCode::OK, headers, body.to_string()).into_response();
    }
    let e = if answer.status.is_success() {
        ApiError::upstream("the upstream's answer holds no reply")
    } else {
        ApiError::relayed(answer.status.as_u16(), &answer.body)
    };
    error_response(e, headers, front)
}

/// Ends a call: its report and the session's state written.
async fn close(state: &AppState, session: &mut OpenSession, report: CallReport, own: Duration) {
    session.last_call = Some(report);
    state.sessions.finish(session).await;
    state.metrics.observe_own(own);
}

/// The upstream's status, body and owed headers as they came, with the
/// memory headers.
fn passed_through(answer: Answer, mut headers: HeaderMap) -> Response {
    headers.extend(answer.headers);
    let status = StatusCode::from_u16(answer.status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    (status, headers, answer.body).into_response()
}

/// An error's response, with the memory headers of the call it ended.
fn error_response(e: ApiError, headers: HeaderMap, front: Protocol) -> Response {
    let mut response = e.respond(front);
    response.headers_mut().extend(headers);
    response
}

fn unreachable_upstream(state: &AppState, e: &Failure) -> ApiError {
    ApiError::upstream(format!(
        "the upstream {} {}: {e}",
        crate::config::shown_url(&state.config.upstream),
        e.what()
    ))
}

/// An error and its causes, on one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The headers every chat response carries.
fn memory_headers(session: &OpenSession, report: &CallReport) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut put = |name: &'static str, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), v);
        }
    };
    put(SESSION_HEADER, session.id.clone());
    put("x-memory-tokens", report.tokens_out.to_string());
    put("x-memory-fits", report.fits.to_string());
    put("x-memory-history-tokens", report.history_tokens.to_string());
    if let Some(a) = report.admission {
        put("x-memory-admission", a.as_str().to_string());
    }
    headers
}

/// The headers a client names its own conversation in (its forks are
/// shown together), by front: Claude Code's; Codex's (`session-id`, and
/// `session_id` as its earlier versions wrote it), names too common to
/// read from a client of another protocol.
fn group_headers(front: Protocol) -> &'static [&'static str] {
    match front {
        Protocol::Responses => &["session-id", "session_id"],
        _ => &["x-claude-code-session-id"],
    }
}

/// The client's own name for its conversation, when it sends one that
/// could be a session id (one that could not is ignored: it only groups).
fn client_group(headers: &HeaderMap, front: Protocol) -> Option<String> {
    let value = group_headers(front).iter().find_map(|h| headers.get(*h))?;
    let name = value.to_str().ok()?.trim();
    let fits = !name.is_empty() && name.len() <= crate::sessions::MAX_SESSION_ID;
    fits.then(|| name.to_string())
}

/// The session the client names, if it does.
fn session_header(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    match headers.get(SESSION_HEADER) {
        None => Ok(None),
        Some(v) => v.to_str().map(|s| Some(s.trim().to_string())).map_err(|_| {
            ApiError::bad_request("header `X-Memory-Session` is not visible ASCII", None)
        }),
    }
}

/// The body, refused past `limit` bytes.
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::too_large(limit));
    }
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        if error_chain(&e).contains("length limit") {
            ApiError::too_large(limit)
        } else {
            ApiError::bad_request(format!("cannot read the body: {e}"), None)
        }
    })
}
