//! [`ScriptedUpstream`]: a real chat-completions server on loopback whose
//! model is a script, for tests and benchmarks of the server (feature
//! `test-util`).
//!
//! The script plays an agent that works through a task in steps: a user
//! message that says "in N steps" gets a call to the `step` tool for step
//! 1; a tool result that starts "step K of N" gets the call for step K+1
//! (two parallel calls every fifth step), and after step N a closing
//! answer. A user message that holds a recall handle gets a `recall` call
//! for it, and the recall's result an answer that quotes it. Any other
//! user message is echoed. Replies queued with
//! [`ScriptedUpstream::queue`] come first, in order (a recorded
//! transcript's assistant messages, say). A request whose `model` is
//! `fail-429` gets a 429 with a body of its own (and `Retry-After: 3`,
//! an `x-request-id` and a rate-limit header), and one whose `model` is
//! `stall` a stream that opens and then says nothing; `break` a stream
//! that breaks off mid-reply (the connection cut), and, on `/v1/messages`,
//! `novel` a reply holding a content block and an event of kinds no
//! protocol has yet. The script answers Chat Completions on
//! `/v1/chat/completions`, Anthropic Messages on `/v1/messages` and OpenAI
//! Responses on `/v1/responses` (a request ending in a
//! `compaction_trigger`, and `/v1/responses/compact`, with a compaction of
//! its own, as a provider that compacts natively). Every request body and
//! its headers are kept for the test to look at.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header::AUTHORIZATION, header::CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use memory_core::{Message, ToolCall};
use memory_openai::wire;
use serde_json::{Value, json};

/// Starts the server with `config` on a free loopback port, serving until
/// the runtime ends; its root URL (`http://127.0.0.1:PORT`).
///
/// # Panics
///
/// No loopback port could be bound.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// let config = memory_serve::ServeConfig::new(
///     "http://127.0.0.1:9/v1",
///     Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>),
///     Arc::new(memory_core::InMemoryStore::new()),
/// );
/// let root = memory_serve::test_util::spawn_server(config).await;
/// assert!(root.starts_with("http://127.0.0.1:"));
/// # });
/// ```
pub async fn spawn_server(config: crate::ServeConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(crate::serve(listener, config, std::future::pending()));
    format!("http://{addr}")
}

/// The part of `store` where a server over it keeps the sessions of a
/// client that sends `credential` for the upstream (`None`: none), when
/// the server takes no keys.
///
/// # Panics
///
/// The store cannot give the server's secret.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// let store: Arc<dyn memory_core::Store> = Arc::new(memory_core::InMemoryStore::new());
/// let anyone = memory_serve::test_util::principal_store(&store, None).await;
/// assert!(anyone.load("s").await.unwrap().messages.is_empty());
/// # });
/// ```
pub async fn principal_store(
    store: &Arc<dyn memory_core::Store>,
    credential: Option<&str>,
) -> Arc<dyn memory_core::Store> {
    let secret = crate::ledger::Ledger::new(store.clone())
        .secret()
        .await
        .expect("the server's secret");
    let principal = crate::Principal::of_credential(&secret, credential);
    store.for_tenant(principal.tenant())
}

/// What `GET /metrics` of the server at `root` answers.
///
/// # Panics
///
/// The metrics could not be read.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// let config = memory_serve::ServeConfig::new(
///     "http://127.0.0.1:9/v1",
///     Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>),
///     Arc::new(memory_core::InMemoryStore::new()),
/// );
/// let root = memory_serve::test_util::spawn_server(config).await;
/// assert!(memory_serve::test_util::metrics(&root).await.contains("memory_serve_tokens_sent_total 0"));
/// # });
/// ```
pub async fn metrics(root: &str) -> String {
    reqwest::get(format!("{root}/metrics"))
        .await
        .expect("the metrics answer")
        .text()
        .await
        .expect("the metrics' text")
}

/// A request the upstream received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The body.
    pub body: Value,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// Every header.
    pub headers: HeaderMap,
}

impl Script {
    /// Keeps a request for the test to look at.
    fn keep(&self, body: &Value, headers: &HeaderMap) {
        if !self.keeps {
            return;
        }
        let authorization = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        self.received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Received {
                body: body.clone(),
                authorization,
                headers: headers.clone(),
            });
    }
}

#[derive(Clone)]
struct Script {
    delay: Duration,
    /// Whether each request is kept for [`ScriptedUpstream::received`].
    keeps: bool,
    received: Arc<Mutex<Vec<Received>>>,
    queued: Arc<Mutex<std::collections::VecDeque<Message>>>,
}

/// The scripted upstream, serving until dropped.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let upstream = memory_serve::test_util::ScriptedUpstream::start(std::time::Duration::ZERO).await.unwrap();
/// assert!(upstream.url().starts_with("http://127.0.0.1:"));
/// assert!(upstream.received().is_empty());
/// # });
/// ```
pub struct ScriptedUpstream {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
    queued: Arc<Mutex<std::collections::VecDeque<Message>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptedUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ScriptedUpstream {
    /// Starts on a free loopback port; each answer comes after `delay`.
    ///
    /// # Errors
    ///
    /// No loopback port could be bound.
    pub async fn start(delay: Duration) -> std::io::Result<Self> {
        Self::serve(delay, true).await
    }

    /// [`start`](Self::start), keeping no request: for a bench that sends
    /// thousands, whose kept bodies (each the whole context sent) would
    /// grow the process by hundreds of megabytes and slow the server it
    /// times. [`received`](Self::received) stays empty.
    ///
    /// # Errors
    ///
    /// No loopback port could be bound.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let upstream = memory_serve::test_util::ScriptedUpstream::start_forgetting(std::time::Duration::ZERO).await.unwrap();
    /// let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    /// let answer = reqwest::Client::new()
    ///     .post(format!("{}/chat/completions", upstream.url()))
    ///     .json(&body)
    ///     .send()
    ///     .await
    ///     .unwrap();
    /// assert!(answer.status().is_success()); // answered,
    /// assert!(upstream.received().is_empty()); // and not kept
    /// # });
    /// ```
    pub async fn start_forgetting(delay: Duration) -> std::io::Result<Self> {
        Self::serve(delay, false).await
    }

    async fn serve(delay: Duration, keeps: bool) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/v1", listener.local_addr()?);
        let received = Arc::new(Mutex::new(Vec::new()));
        let queued = Arc::new(Mutex::new(std::collections::VecDeque::new()));
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .route("/v1/messages", post(messages))
            .route("/v1/responses", post(responses))
            .route("/v1/responses/compact", post(native_compact))
            .route("/v1/models", get(models))
            .with_state(Script {
                delay,
                keeps,
                received: received.clone(),
                queued: queued.clone(),
            });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            url,
            received,
            queued,
            task,
        })
    }

    /// The base URL (`http://127.0.0.1:PORT/v1`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Answers the next requests with `replies`, in order, before the
    /// script takes over again.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let upstream = memory_serve::test_util::ScriptedUpstream::start(std::time::Duration::ZERO).await.unwrap();
    /// upstream.queue(vec![memory_core::Message::assistant("recorded")]);
    /// # });
    /// ```
    pub fn queue(&self, replies: Vec<Message>) {
        self.queued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(replies);
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

async fn models() -> Response {
    (
        [(CONTENT_TYPE, "application/json")],
        json!({"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "tests"}]})
            .to_string(),
    )
        .into_response()
}

async fn completions(State(script): State<Script>, headers: HeaderMap, body: String) -> Response {
    let Ok(body) = serde_json::from_str::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    script.keep(&body, &headers);
    if body["model"] == "fail-429" {
        return rate_limited();
    }
    if body["model"] == "stall" {
        return stalled();
    }
    if body["model"] == "break" {
        return broken(
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half\"}}]}\n\n",
        );
    }
    tokio::time::sleep(script.delay).await;
    let queued = script
        .queued
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop_front();
    let reply = queued
        .unwrap_or_else(|| next_step(&wire::from_value(&body["messages"]).unwrap_or_default()));
    if body["stream"] == true {
        streamed(&reply)
    } else {
        let message = wire::message_to_value(&reply);
        let finish = if reply.tool_calls().is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        (
            [(CONTENT_TYPE, "application/json")],
            json!({
                "id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "scripted",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })
            .to_string(),
        )
            .into_response()
    }
}

/// `POST /v1/messages`: the same script, in Anthropic's protocol.
async fn messages(State(script): State<Script>, headers: HeaderMap, body: String) -> Response {
    scripted(crate::Protocol::Messages, script, headers, body).await
}

/// `POST /v1/responses`: the same script, in OpenAI's Responses protocol.
async fn responses(State(script): State<Script>, headers: HeaderMap, body: String) -> Response {
    scripted(crate::Protocol::Responses, script, headers, body).await
}

/// `POST /v1/responses/compact`: a provider's own compaction, one item
/// whose content only it can read.
async fn native_compact(
    State(script): State<Script>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let value: Value = serde_json::from_str(&body).unwrap_or_default();
    script.keep(&value, &headers);
    let item = serde_json::json!({"type": "compaction", "id": "cmp_native",
        "encrypted_content": format!("native-{}", uuid::Uuid::new_v4().simple())});
    let body = serde_json::json!({"id": "cmp_native", "object": "response.compaction",
        "created_at": 0, "output": [item], "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}});
    ([(CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// A provider's own compaction asked with a `compaction_trigger`: one
/// item whose content only it can read.
fn native_compaction(stream: bool) -> Response {
    use crate::protocol::responses::{reply, stream as events};
    let item = serde_json::json!({"type": "compaction", "id": reply::new_id("cmp"),
        "encrypted_content": format!("native-{}", uuid::Uuid::new_v4().simple())});
    let usage = crate::protocol::event::Usage {
        input: Some(1),
        output: Some(1),
    };
    let body = reply::response(
        &reply::new_id("resp"),
        "scripted",
        "completed",
        vec![item],
        usage,
    );
    if stream {
        return ([(CONTENT_TYPE, "text/event-stream")], events::whole(&body)).into_response();
    }
    ([(CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The opening of a stream that breaks off, in `protocol`.
fn broken_opening(protocol: crate::Protocol) -> &'static str {
    match protocol {
        crate::Protocol::Responses => {
            "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_b\",\"object\":\"response\",\"model\":\"m\",\"output\":[]}}\n\nevent: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"output_index\":0,\"delta\":\"Half\"}\n\n"
        }
        _ => {
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_b\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half\"}}\n\n"
        }
    }
}

/// The script, answered in `protocol`.
async fn scripted(
    protocol: crate::Protocol,
    script: Script,
    headers: HeaderMap,
    body: String,
) -> Response {
    use crate::protocol::Protocol;
    let Ok(decoded) = protocol.decode_request(body.as_bytes(), Protocol::Chat) else {
        return (StatusCode::BAD_REQUEST, "not a request of its protocol").into_response();
    };
    let value: Value = serde_json::from_str(&body).unwrap_or_default();
    script.keep(&value, &headers);
    if value["model"] == "fail-429" {
        return rate_limited();
    }
    if value["model"] == "break" {
        return broken(broken_opening(protocol));
    }
    if decoded.asks.trigger {
        return native_compaction(value["stream"] == true);
    }
    if value["model"] == "novel" {
        return novel();
    }
    tokio::time::sleep(script.delay).await;
    let queued = script
        .queued
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop_front();
    let reply = scripted_reply(queued.unwrap_or_else(|| next_step(&decoded.messages)));
    if value["stream"] == true {
        let mut encoder = protocol.stream_encoder(None);
        let events: Vec<String> = stream_events(&reply)
            .iter()
            .map(|e| encoder.encode(e))
            .collect();
        let stream = futures::stream::iter(events.into_iter().map(Ok::<_, std::io::Error>));
        return (
            [(CONTENT_TYPE, "text/event-stream")],
            Body::from_stream(stream),
        )
            .into_response();
    }
    (
        [(CONTENT_TYPE, "application/json")],
        protocol.encode_reply(&reply).to_string(),
    )
        .into_response()
}

/// A reply of the script's, as an upstream answers it.
fn scripted_reply(message: Message) -> crate::protocol::Reply {
    use crate::protocol::event::{StopReason, Usage};
    let stop = if message.tool_calls().is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    };
    crate::protocol::Reply {
        id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
        model: "scripted".into(),
        message,
        stop,
        usage: Usage {
            input: Some(1),
            output: Some(1),
        },
    }
}

/// The events of a whole reply, as a model streams it: the text in
/// pieces, each call's arguments in two.
fn stream_events(reply: &crate::protocol::Reply) -> Vec<crate::protocol::event::Event> {
    use crate::protocol::event::Event;
    let mut events = vec![Event::Start {
        id: reply.id.clone(),
        model: reply.model.clone(),
    }];
    for piece in pieces(&reply.message.text()) {
        events.push(Event::Text(piece.to_string()));
    }
    for (index, call) in reply.message.tool_calls().iter().enumerate() {
        events.push(Event::ToolStart {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        let cut = (0..=call.arguments.len() / 2)
            .rev()
            .find(|&c| call.arguments.is_char_boundary(c))
            .unwrap_or(0);
        for json in [&call.arguments[..cut], &call.arguments[cut..]] {
            events.push(Event::ToolArguments {
                index,
                json: json.to_string(),
            });
        }
    }
    events.push(Event::Usage(reply.usage));
    events.push(Event::Stop(reply.stop.clone()));
    events.push(Event::Done);
    events
}

/// The longest piece of text one streamed event carries: a long reply
/// comes as many events, as a model streams it.
const STREAMED_PIECE: usize = 16 * 1024;

/// A reply's text as it is streamed: in two pieces, or in pieces of at
/// most [`STREAMED_PIECE`] bytes when it is long.
fn pieces(text: &str) -> Vec<&str> {
    let size = (text.len() / 2 + 1).min(STREAMED_PIECE);
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[at..end]);
        at = end;
    }
    out
}

/// The reply as server-sent events: the text in pieces ([`pieces`]),
/// each call's name and arguments in two.
fn streamed(reply: &Message) -> Response {
    let mut events = Vec::new();
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "cmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    events.push(chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    ));
    for piece in pieces(&reply.text()) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (i, call) in reply.tool_calls().iter().enumerate() {
        let cut = call.arguments.len() / 2;
        let cut = (0..=cut)
            .rev()
            .find(|&c| call.arguments.is_char_boundary(c))
            .unwrap_or(0);
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": call.id, "type": "function",
                   "function": {"name": call.name, "arguments": &call.arguments[..cut]}}]}),
            Value::Null,
        ));
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "function": {"arguments": &call.arguments[cut..]}}]}),
            Value::Null,
        ));
    }
    let finish = if reply.tool_calls().is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(chunk(json!({}), json!(finish)));
    events.push("data: [DONE]\n\n".to_string());
    let stream = futures::stream::iter(events.into_iter().map(Ok::<_, std::io::Error>));
    (
        [(CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// A 429 with a body of its own, and what a client's retries read.
fn rate_limited() -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (CONTENT_TYPE, "application/json"),
            (axum::http::header::RETRY_AFTER, "3"),
            (
                axum::http::HeaderName::from_static("x-request-id"),
                "req-429",
            ),
            (
                axum::http::HeaderName::from_static("x-ratelimit-remaining-requests"),
                "0",
            ),
        ],
        r#"{"error":{"message":"slow down","type":"rate_limit"}}"#,
    )
        .into_response()
}

/// A stream that sends `opening` and then breaks off: the connection is
/// cut before the reply is whole.
fn broken(opening: &'static str) -> Response {
    let opening = futures::stream::iter([Ok::<_, std::io::Error>(opening.to_string())]);
    // The break comes once the opening has gone out.
    let break_off = futures::stream::once(async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Err(std::io::Error::other("the model server went away"))
    });
    let events = futures::StreamExt::chain(opening, break_off);
    (
        [(CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(events),
    )
        .into_response()
}

/// A Messages stream with a block and an event of kinds that do not exist
/// yet, between a text block and the end.
fn novel() -> Response {
    let events = [
        r#"{"type":"message_start","message":{"id":"msg_n","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"hologram","frames":[1,2],"signature":"sig"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"weather_report","sky":"clear"}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Seen."}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let body: String = events
        .iter()
        .map(|e| {
            let name = serde_json::from_str::<Value>(e).unwrap_or_default()["type"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            format!("event: {name}\ndata: {e}\n\n")
        })
        .collect();
    ([(CONTENT_TYPE, "text/event-stream")], body).into_response()
}

/// A stream that opens and then says nothing more, as a stalled model.
fn stalled() -> Response {
    let opening = futures::stream::iter([Ok::<_, std::io::Error>(
        "data: {\"id\":\"cmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
            .to_string(),
    )]);
    let stream = futures::StreamExt::chain(opening, futures::stream::pending());
    (
        [(CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// What the scripted agent does next, given the context it was sent.
///
/// ```
/// use memory_core::Message;
/// use memory_serve::test_util::next_step;
/// let first = next_step(&[Message::user("Do the task in 3 steps.")]);
/// assert_eq!(first.tool_calls()[0].arguments, r#"{"step":1,"of":3}"#);
/// let last = next_step(&[Message::tool_result("c", "step 3 of 3: done")]);
/// assert!(last.tool_calls().is_empty());
/// ```
pub fn next_step(messages: &[Message]) -> Message {
    let Some(last) = messages.last() else {
        return Message::assistant("Nothing to do.");
    };
    let text = last.text();
    if let Some(answer) = after_recall(last) {
        return answer;
    }
    if let Some(handle) = memory_core::recall::Handle::all_in(&text)
        .first()
        .filter(|_| last.is_user())
    {
        let args = format!(r#"{{"handle":"{handle}"}}"#);
        return Message::assistant_with_tools(
            "",
            vec![ToolCall::new(
                "recall_1",
                memory_core::recall::RECALL_TOOL,
                args,
            )],
        );
    }
    if let Some((k, n)) = step_of(&text).filter(|_| last.is_tool_result()) {
        if k >= n {
            return Message::assistant(format!("All {n} steps are done."));
        }
        return calls(k + 1, n);
    }
    if let Some(n) = steps_asked(&text) {
        return calls(1, n);
    }
    Message::assistant(format!(
        "echo: {}",
        text.chars().take(80).collect::<String>()
    ))
}

/// The answer to a recall's result: what came back, quoted.
fn after_recall(last: &Message) -> Option<Message> {
    let Message::ToolResult {
        tool_call_id,
        content,
        ..
    } = last
    else {
        return None;
    };
    tool_call_id.starts_with("recall_").then(|| {
        let quoted: String = content.chars().take(120).collect();
        Message::assistant(format!("recalled: {quoted}"))
    })
}

/// How many tool calls the scripted agent makes for a task of `steps`
/// steps: one a step, two at every fifth.
///
/// ```
/// use memory_serve::test_util::{next_step, tool_calls_for};
/// use memory_core::Message;
/// assert_eq!(tool_calls_for(12), 14);
/// let fifth = next_step(&[Message::tool_result("c", "step 4 of 12: done")]);
/// assert_eq!(fifth.tool_calls().len(), 2);
/// ```
pub fn tool_calls_for(steps: usize) -> usize {
    steps + steps / PARALLEL_EVERY
}

/// Every step this is a multiple of calls the tool twice, in parallel.
const PARALLEL_EVERY: usize = 5;

fn calls(step: usize, of: usize) -> Message {
    let args = format!(r#"{{"step":{step},"of":{of}}}"#);
    let mut calls = vec![ToolCall::new(
        format!("call_{step}_a"),
        "step",
        args.clone(),
    )];
    if step.is_multiple_of(PARALLEL_EVERY) {
        calls.push(ToolCall::new(format!("call_{step}_b"), "step", args));
    }
    Message::assistant_with_tools(format!("Working on step {step}."), calls)
}

/// "step K of N" at the start of a tool result.
fn step_of(text: &str) -> Option<(usize, usize)> {
    let rest = text.strip_prefix("step ")?;
    let (k, rest) = rest.split_once(" of ")?;
    let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((k.trim().parse().ok()?, n.parse().ok()?))
}

/// "in N steps" anywhere in a request.
fn steps_asked(text: &str) -> Option<usize> {
    let at = text.find(" steps")?;
    let digits: String = text[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

/// Decodes a body as the Messages front does (for fuzzing the decoder):
/// the number of messages it holds, or the 400's message.
///
/// ```
/// use memory_serve::test_util::decode_messages_request;
/// assert_eq!(decode_messages_request(br#"{"messages": [{"role": "user", "content": "hi"}]}"#), Ok(1));
/// assert!(decode_messages_request(b"{").unwrap_err().contains("not valid JSON"));
/// ```
pub fn decode_messages_request(body: &[u8]) -> Result<usize, String> {
    crate::Protocol::Messages
        .decode_request(body, crate::Protocol::Messages)
        .map(|d| d.messages.len())
        .map_err(|e| e.message().to_string())
}

/// Decodes a body as the Responses front does (for fuzzing the decoder):
/// the number of messages it holds, or the 400's message.
///
/// ```
/// use memory_serve::test_util::decode_responses_request;
/// assert_eq!(decode_responses_request(br#"{"input": "hi", "instructions": "be brief"}"#), Ok(2));
/// assert!(decode_responses_request(br#"{"input": 3}"#).unwrap_err().contains("`input`"));
/// ```
pub fn decode_responses_request(body: &[u8]) -> Result<usize, String> {
    crate::Protocol::Responses
        .decode_request(body, crate::Protocol::Responses)
        .map(|d| d.messages.len())
        .map_err(|e| e.message().to_string())
}
