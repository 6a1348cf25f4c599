//! The server over real HTTP on loopback: sessions found by history or by
//! name, forks, streaming, bad input and faults, auth, inspection and
//! metrics. The upstream is a real chat-completions server whose model is
//! a script.

use std::sync::Arc;
use std::time::Duration;

use memory_core::{
    ContentBlock, ImageContent, InMemoryStore, Message, Store, TrimStrategy, validate,
};
use memory_openai::wire as openai_wire;
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, ServeConfig};
use serde_json::{Value, json};

async fn start(config: ServeConfig) -> String {
    memory_serve::test_util::spawn_server(config).await
}

fn window_config(upstream: &str, store: Arc<dyn Store>, budget: usize) -> ServeConfig {
    ServeConfig::new(
        upstream,
        Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
        store,
    )
    .with_budget(BudgetMode::Tokens(budget))
}

async fn post(server: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .unwrap()
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

fn wire(messages: &[Message]) -> Value {
    openai_wire::to_value(messages)
}

#[tokio::test]
async fn a_whole_history_continues_its_session_and_an_edit_forks_it() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = start(window_config(upstream.url(), store.clone(), 10_000)).await;

    let mut history = vec![Message::system("Be brief."), Message::user("hello there")];
    let first = post(&server, &json!({"model": "m", "messages": wire(&history)})).await;
    assert_eq!(first.status(), 200);
    let session = header(&first, "x-memory-session");
    assert_eq!(header(&first, "x-memory-admission"), "new");
    assert_eq!(header(&first, "x-memory-fits"), "true");
    let body: Value = first.json().await.unwrap();
    let reply = openai_wire::message_from_value(&body["choices"][0]["message"], 0).unwrap();
    history.push(reply);
    history.push(Message::user("and again"));

    let second = post(&server, &json!({"model": "m", "messages": wire(&history)})).await;
    assert_eq!(header(&second, "x-memory-session"), session);
    assert_eq!(header(&second, "x-memory-admission"), "continued");
    let _ = second.bytes().await.unwrap();
    // Every message once, the replies included.
    let stored = memory_serve::test_util::principal_store(&store, None)
        .await
        .history(&session)
        .await
        .unwrap();
    assert_eq!(stored.len(), 5);
    assert_eq!(&stored[..4], &history[..]);
    assert!(stored[4].is_assistant());

    // An edit of the first request: a new session that keeps the old one.
    let edited = vec![Message::system("Be brief."), Message::user("hello, edited")];
    let forked = post(&server, &json!({"model": "m", "messages": wire(&edited)})).await;
    assert_ne!(header(&forked, "x-memory-session"), session);
    // A retry of the first call after its reply was recorded: a session
    // of its own (a history is found by what the replies ended).
    let retry = post(
        &server,
        &json!({"model": "m", "messages": wire(&history[..2])}),
    )
    .await;
    assert_eq!(header(&retry, "x-memory-admission"), "new");
    assert_ne!(header(&retry, "x-memory-session"), session);
    assert_eq!(
        memory_serve::test_util::principal_store(&store, None)
            .await
            .history(&session)
            .await
            .unwrap()
            .len(),
        5
    );
    // The upstream got the context, and every other field untouched.
    let got = upstream.received();
    assert_eq!(got.len(), 4);
    assert_eq!(got[1].body["messages"], wire(&history));
    assert_eq!(got[1].body["model"], "m");
}

#[tokio::test]
async fn a_named_session_takes_only_the_new_messages() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = start(window_config(upstream.url(), store.clone(), 10_000)).await;
    let client = reqwest::Client::new();
    for text in ["one", "two", "three"] {
        let r = client
            .post(format!("{server}/v1/chat/completions"))
            .header("X-Memory-Session", "ticket-42")
            .json(&json!({"model": "m", "messages": [{"role": "user", "content": text}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-memory-session"), "ticket-42");
    }
    let stored = memory_serve::test_util::principal_store(&store, None)
        .await
        .history("ticket-42")
        .await
        .unwrap();
    assert_eq!(stored.len(), 6);
    assert_eq!(stored[4], Message::user("three"));
    // The upstream saw the whole session on the last call.
    assert_eq!(
        upstream.received()[2].body["messages"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    // The same whole history sent again, ten times at once: stored once,
    // with the reply of each call.
    let history =
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "again"}]);
    let calls = (0..10).map(|_| {
        client
            .post(format!("{server}/v1/chat/completions"))
            .header("X-Memory-Session", "ticket-43")
            .json(&json!({"model": "m", "messages": history}))
            .send()
    });
    for r in futures::future::join_all(calls).await {
        assert_eq!(r.unwrap().status(), 200);
    }
    let stored = memory_serve::test_util::principal_store(&store, None)
        .await
        .history("ticket-43")
        .await
        .unwrap();
    assert_eq!(stored.len(), 12, "{stored:?}");
    assert!(stored[2..].iter().all(Message::is_assistant));
    // A reserved name is refused.
    let r = client
        .post(format!("{server}/v1/chat/completions"))
        .header("X-Memory-Session", "memory-serve/head/x")
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn what_is_sent_fits_the_budget_and_the_report_says_what_was_shed() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = start(window_config(upstream.url(), store, 300)).await;
    let mut history = vec![Message::user("Work through it in 12 steps.")];
    let mut session = String::new();
    for _ in 0..14 {
        let r = post(&server, &json!({"model": "m", "messages": wire(&history)})).await;
        assert_eq!(r.status(), 200);
        session = header(&r, "x-memory-session");
        let tokens: usize = header(&r, "x-memory-tokens").parse().unwrap();
        assert!(tokens <= 300, "{tokens}");
        let body: Value = r.json().await.unwrap();
        let reply = openai_wire::message_from_value(&body["choices"][0]["message"], 0).unwrap();
        let calls = reply.tool_calls().to_vec();
        history.push(reply);
        if calls.is_empty() {
            break;
        }
        for call in calls {
            let v: Value = serde_json::from_str(&call.arguments).unwrap();
            let text = format!(
                "step {} of {}: {}",
                v["step"],
                v["of"],
                "output ".repeat(40)
            );
            history.push(Message::tool_result(call.id, text));
        }
    }
    assert!(history.last().unwrap().text().contains("All 12 steps"));
    for got in upstream.received() {
        let sent = openai_wire::from_value(&got.body["messages"]).unwrap();
        assert!(validate(&sent).is_empty());
        assert_eq!(sent[0], history[0], "the task stays");
    }
    let inspected: Value = reqwest::get(format!("{server}/v1/memory/sessions/{session}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(inspected["history_length"], history.len());
    let last = &inspected["last_call"];
    assert_eq!(last["admission"], "continued");
    assert!(last["tokens_saved"].as_u64().unwrap() > 0);
    assert!(last["messages_out"].as_u64().unwrap() < last["messages_in"].as_u64().unwrap());
    assert_eq!(last["valid"], true);
    let unknown = reqwest::get(format!("{server}/v1/memory/sessions/nope"))
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

/// An `image_url` part: a PNG of `side` x `side` pixels as its header
/// says, inline, at `detail`.
fn png_part(side: u32, detail: Option<&str>) -> Value {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend_from_slice(&side.to_be_bytes());
    png.extend_from_slice(&side.to_be_bytes());
    png.extend_from_slice(&[7; 2048]);
    let mut image = ImageContent::new("image/png", png);
    image.detail = detail.map(str::to_string);
    let message = Message::user_blocks(vec![ContentBlock::Image(image)]);
    let part = openai_wire::message_to_value(&message)["content"][0].clone();
    assert_eq!(part["type"], "image_url");
    part
}

#[tokio::test]
async fn images_are_priced_and_go_upstream_as_they_came() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = start(window_config(upstream.url(), store, 2_000)).await;
    let parts = vec![
        json!({"type": "text", "text": "What differs?"}),
        png_part(1024, Some("high")),
        png_part(4096, Some("low")),
        json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "auto"}}),
    ];
    let messages = json!([{"role": "user", "content": parts}]);
    let r = post(&server, &json!({"model": "m", "messages": messages})).await;
    assert_eq!(r.status(), 200);
    // 765 (four tiles), 85 (low), 765 (by URL, its size unknown), and the text.
    let tokens: usize = header(&r, "x-memory-tokens").parse().unwrap();
    assert!(
        (765 + 85 + 765..765 + 85 + 765 + 10).contains(&tokens),
        "{tokens}"
    );
    assert_eq!(header(&r, "x-memory-fits"), "true");
    let _ = r.bytes().await.unwrap();
    assert_eq!(upstream.received()[0].body["messages"], messages);

    // Three large pictures in the question: over the budget, and said so.
    let large = json!([{"role": "user", "content": [
        png_part(2048, None), png_part(1024, Some("auto")), png_part(800, Some("high")),
    ]}]);
    let r = post(&server, &json!({"model": "m", "messages": large})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-memory-fits"), "false");
    let tokens: usize = header(&r, "x-memory-tokens").parse().unwrap();
    assert!(tokens >= 3 * 765, "{tokens}");
}

#[tokio::test]
async fn a_streamed_reply_is_passed_through_and_recorded() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = start(window_config(upstream.url(), store.clone(), 10_000)).await;
    let history = vec![Message::user("Do it in 5 steps.")];
    let r = post(
        &server,
        &json!({"model": "m", "stream": true, "messages": wire(&history)}),
    )
    .await;
    assert_eq!(header(&r, "content-type"), "text/event-stream");
    let session = header(&r, "x-memory-session");
    let text = r.text().await.unwrap();
    assert!(text.trim_end().ends_with("data: [DONE]"));
    let mut reply = memory_serve::StreamedReply::default();
    reply.feed(text.as_bytes());
    let stored = memory_serve::test_util::principal_store(&store, None)
        .await
        .history(&session)
        .await
        .unwrap();
    assert_eq!(stored, vec![history[0].clone(), reply.message()]);
    assert_eq!(stored[1].tool_calls()[0].arguments, r#"{"step":1,"of":5}"#);
}

#[tokio::test]
async fn a_client_gone_mid_stream_leaves_its_messages_without_a_reply() {
    let upstream = ScriptedUpstream::start(Duration::from_millis(200))
        .await
        .unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = start(window_config(upstream.url(), store.clone(), 10_000)).await;
    let history = vec![Message::user("Do it in 5 steps.")];
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let gone = client
        .post(format!("{server}/v1/chat/completions"))
        .json(&json!({"model": "m", "stream": true, "messages": wire(&history)}))
        .send()
        .await;
    assert!(gone.is_err());
    tokio::time::sleep(Duration::from_millis(400)).await;
    // The retry does not fall into the abandoned call's session (it holds
    // the request, and no reply): it starts its own, with the reply.
    let r = post(&server, &json!({"model": "m", "messages": wire(&history)})).await;
    assert_eq!(header(&r, "x-memory-admission"), "new");
    let session = header(&r, "x-memory-session");
    let _ = r.bytes().await.unwrap();
    let stored = memory_serve::test_util::principal_store(&store, None)
        .await
        .history(&session)
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0], history[0]);
}

#[tokio::test]
async fn bad_input_gets_its_status_and_a_body_naming_the_problem() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let mut config = window_config(upstream.url(), store.clone(), 10_000);
    config.max_body_bytes = 4_096;
    let server = start(config.clone()).await;
    let strict = start(config.with_strict(true)).await;
    let client = reqwest::Client::new();
    let raw = |server: &str, body: String| {
        client
            .post(format!("{server}/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cases = [
        ("{\"messages\": [", 400, "not valid JSON"),
        (
            r#"{"messages": [{"role": "robot", "content": "x"}]}"#,
            400,
            "unknown role",
        ),
        (r#"{"messages": "hi"}"#, 400, "must be an array"),
        (r#"{"messages": []}"#, 400, "is empty"),
    ];
    for (body, status, says) in cases {
        let r = raw(&server, body.to_string()).await.unwrap();
        assert_eq!(r.status(), status, "{body}");
        let e: Value = r.json().await.unwrap();
        assert!(
            e["error"]["message"].as_str().unwrap().contains(says),
            "{e}"
        );
        assert_eq!(e["error"]["type"], "invalid_request_error");
    }
    let r = raw(
        &server,
        format!("{{\"messages\": \"{}\"}}", "x".repeat(5_000)),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 413);
    let orphan = json!({"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "nobody", "content": "stray"},
    ]});
    let r = raw(&strict, orphan.to_string()).await.unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has no tool call"),
        "{e}"
    );
    // Repaired by default: the stray result is not sent.
    let r = raw(&server, orphan.to_string()).await.unwrap();
    assert_eq!(r.status(), 200);
    let sent = upstream.received().last().unwrap().body["messages"].clone();
    assert_eq!(sent.as_array().unwrap().len(), 1);
    // The upstream's own status and body.
    let r = raw(
        &server,
        json!({"model": "fail-429", "messages": [{"role": "user", "content": "x"}]}).to_string(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 429);
    // With what a client's retries and logs read.
    assert_eq!(r.headers()["retry-after"], "3");
    assert_eq!(r.headers()["x-request-id"], "req-429");
    assert_eq!(r.headers()["x-ratelimit-remaining-requests"], "0");
    assert_eq!(
        r.text().await.unwrap(),
        r#"{"error":{"message":"slow down","type":"rate_limit"}}"#
    );
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_502_and_costs_no_history() {
    // A port nobody listens on.
    let free = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = format!("http://{}/v1", free.local_addr().unwrap());
    drop(free);
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = start(window_config(&dead, store.clone(), 10_000)).await;
    let r = post(
        &server,
        &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 502);
    let session = header(&r, "x-memory-session");
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["type"], "upstream_error");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot be reached"),
        "{e}"
    );
    assert_eq!(
        memory_serve::test_util::principal_store(&store, None)
            .await
            .history(&session)
            .await
            .unwrap(),
        vec![Message::user("hi")]
    );
    let models = reqwest::get(format!("{server}/v1/models")).await.unwrap();
    assert_eq!(models.status(), 502);
}

#[tokio::test]
async fn the_token_is_asked_for_and_only_the_clients_key_goes_upstream() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let mut config = window_config(upstream.url(), store, 10_000).with_token(Some("t0k3n".into()));
    config.upstream_key = Some("upstream-key".into());
    let server = start(config).await;
    let client = reqwest::Client::new();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let url = format!("{server}/v1/chat/completions");
    let r = client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = client
        .post(&url)
        .bearer_auth("t0k3n")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = client
        .post(&url)
        .bearer_auth("sk-client")
        .header("X-Memory-Token", "t0k3n")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let got = upstream.received();
    assert_eq!(got[0].authorization.as_deref(), Some("Bearer upstream-key"));
    assert_eq!(got[1].authorization.as_deref(), Some("Bearer sk-client"));
    assert_eq!(
        reqwest::get(format!("{server}/metrics"))
            .await
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        reqwest::get(format!("{server}/healthz"))
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test]
async fn models_health_and_metrics_answer() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = start(window_config(upstream.url(), store, 10_000)).await;
    let models: Value = reqwest::get(format!("{server}/v1/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "scripted");
    let health = reqwest::get(format!("{server}/healthz")).await.unwrap();
    assert_eq!(health.status(), 200);
    let _ = post(
        &server,
        &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    let metrics = memory_serve::test_util::metrics(&server).await;
    for line in [
        "memory_serve_requests_total{route=\"chat\",status=\"200\"} 1",
        "memory_serve_requests_total{route=\"models\",status=\"200\"} 1",
        "memory_serve_sessions_total{admission=\"new\"} 1",
        "memory_serve_tokens_sent_total 1",
        "memory_serve_own_seconds_count 1",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}

#[tokio::test]
async fn the_session_report_says_what_thrift_shed() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let config = ServeConfig::new(
        upstream.url(),
        Arc::new(|| Arc::new(memory_thrift::Thrift::new()) as Arc<dyn TrimStrategy>),
        store,
    )
    .with_budget(BudgetMode::Tokens(200));
    let server = start(config).await;
    let history = vec![
        Message::user("Do it in 3 steps."),
        Message::assistant_with_tools(
            "",
            vec![memory_core::ToolCall::new(
                "c1",
                "step",
                r#"{"step":1,"of":3}"#,
            )],
        ),
        Message::tool_result(
            "c1",
            format!("step 1 of 3: {}", "output line\n".repeat(200)),
        ),
    ];
    let r = post(&server, &json!({"model": "m", "messages": wire(&history)})).await;
    let session = header(&r, "x-memory-session");
    let _ = r.bytes().await.unwrap();
    let inspected: Value = reqwest::get(format!("{server}/v1/memory/sessions/{session}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let trace = &inspected["last_call"]["thrift"];
    assert!(trace.is_object(), "{inspected}");
}
