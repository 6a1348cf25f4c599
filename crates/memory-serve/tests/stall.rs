//! No call waits on another's, over real HTTP on loopback: a client that
//! opens a stream and stops reading holds up no other request (the same
//! opening, another principal, another session) and releases its session
//! at the idle timeout, which stays as the client left it; an upstream
//! that stalls, before its answer or inside a stream, ends its call at
//! the timeouts.
//!
//! The waits asserted here are liveness, not speed: each is a small part
//! of the timeout it is measured against.

use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_core::{InMemoryStore, Message, Store, TrimStrategy};
use memory_openai::wire as openai_wire;
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, Keys, ServeConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ALICE: &str = "sk-alice";
const BOB: &str = "sk-bob";
/// The idle timeout of these servers.
const IDLE: Duration = Duration::from_secs(4);

fn config(upstream: &str, store: Arc<dyn Store>) -> ServeConfig {
    let mut config = ServeConfig::new(
        upstream,
        Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
        store,
    )
    .with_budget(BudgetMode::Tokens(1_000_000))
    .with_keys(Keys::parse(&format!("alice {ALICE}\nbob {BOB}")).unwrap());
    config.idle_timeout = IDLE;
    config.first_byte_timeout = IDLE;
    config
}

fn body(messages: &[Message], stream: bool, model: &str) -> Value {
    json!({"model": model, "stream": stream, "messages": openai_wire::to_value(messages)})
}

/// A chat call, its answer not read yet.
async fn send(server: &str, key: &str, body: &Value, session: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .bearer_auth(key)
        .json(body);
    if let Some(s) = session {
        request = request.header("x-memory-session", s);
    }
    request.send().await.unwrap()
}

/// A chat call read to its end; its status, session and how long it took.
async fn call(
    server: &str,
    key: &str,
    body: &Value,
    session: Option<&str>,
) -> (u16, String, Duration) {
    let started = Instant::now();
    let r = send(server, key, body, session).await;
    let status = r.status().as_u16();
    let session = r.headers()["x-memory-session"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = r.bytes().await;
    (status, session, started.elapsed())
}

/// Sends a streamed call on a socket that takes little and then reads
/// nothing: a client that stopped reading.
async fn stalled_client(server: &str, key: &str, body: &Value) -> tokio::net::TcpStream {
    let addr: std::net::SocketAddr = server.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let body = body.to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_stalls_no_one() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = memory_serve::test_util::spawn_server(config(upstream.url(), store.clone())).await;
    // A reply far larger than the sockets between the server and a client
    // that takes nothing hold, in many events.
    upstream.queue(vec![Message::assistant("word ".repeat(2_000_000))]);
    let opening = vec![
        Message::system("You are the team's agent."),
        Message::user("start"),
    ];
    let mut stalled = stalled_client(&server, ALICE, &body(&opening, true, "m")).await;
    while upstream.received().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stalled_at = Instant::now();

    // The same opening (a new conversation), another principal, another
    // session: each answered while the stalled call still holds its own.
    let small = body(&opening, false, "m");
    for (key, session) in [(ALICE, None), (BOB, None), (ALICE, Some("other"))] {
        let (status, _, took) = call(&server, key, &small, session).await;
        assert_eq!(status, 200);
        assert!(took < IDLE / 2, "{key} {session:?} waited {took:?}");
    }
    assert!(stalled_at.elapsed() < IDLE);

    // Past the idle timeout the server gave up on the client: the stream
    // it gets is cut short, without its end.
    tokio::time::sleep(IDLE + Duration::from_secs(1)).await;
    let mut got = Vec::new();
    // The connection is cut: an end of file, or a reset.
    let read = tokio::time::timeout(Duration::from_secs(10), stalled.read_to_end(&mut got)).await;
    assert!(read.is_ok(), "the stalled stream was not ended");
    let got = String::from_utf8_lossy(&got);
    assert!(got.starts_with("HTTP/1.1 200"));
    assert!(!got.contains("[DONE]") && !got.ends_with("0\r\n\r\n"));
    let session = got
        .lines()
        .find_map(|l| l.strip_prefix("x-memory-session: "))
        .unwrap()
        .trim()
        .to_string();
    // The session is released and holds what the client left: the request,
    // no reply.
    let alice = store.for_tenant("key-alice");
    assert_eq!(alice.history(&session).await.unwrap(), opening);
    let (status, named, took) = call(&server, ALICE, &small, Some(&session)).await;
    assert_eq!((status, named.as_str()), (200, session.as_str()));
    assert!(
        took < IDLE / 2,
        "the released session still waited {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_the_upstream_stalls_ends_at_the_idle_timeout() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = memory_serve::test_util::spawn_server(config(upstream.url(), store)).await;
    let question = vec![Message::user("anyone there?")];
    // The stream opens, then nothing; the client's stream ends at the idle
    // timeout and the session is free again.
    let (status, session, took) = call(&server, ALICE, &body(&question, true, "stall"), None).await;
    assert_eq!(status, 200);
    assert!(took >= IDLE && took < IDLE * 3, "{took:?}");
    let (status, _, took) =
        call(&server, ALICE, &body(&question, false, "m"), Some(&session)).await;
    assert_eq!(status, 200);
    assert!(took < IDLE / 2, "{took:?}");
}

// Each timeout has its own test, so that their waits overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_upstream_stalls_is_a_502_that_says_it_timed_out() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = memory_serve::test_util::spawn_server(config(upstream.url(), store)).await;
    let question = vec![Message::user("anyone there?")];
    let r = send(&server, BOB, &body(&question, false, "stall"), None).await;
    assert_eq!(r.status(), 502);
    let e: Value = r.json().await.unwrap();
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_never_begins_is_a_502_at_the_first_byte_timeout() {
    let slow = ScriptedUpstream::start(IDLE * 10).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = memory_serve::test_util::spawn_server(config(slow.url(), store)).await;
    let question = vec![Message::user("anyone there?")];
    let started = Instant::now();
    let r = send(&server, BOB, &body(&question, false, "m"), None).await;
    assert_eq!(r.status(), 502);
    assert!(started.elapsed() < IDLE * 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_client_timeout_does_not_wait_for_the_abandoned_call() {
    const SLOW: Duration = Duration::from_millis(1500);
    let upstream = ScriptedUpstream::start(SLOW).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = memory_serve::test_util::spawn_server(config(upstream.url(), store)).await;
    let mut history = vec![Message::user("go on")];
    let first: Value = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .bearer_auth(ALICE)
        .json(&body(&history, false, "m"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    history.push(openai_wire::message_from_value(&first["choices"][0]["message"], 0).unwrap());
    history.push(Message::user("and more"));
    // The client gives up on its call; the call goes on upstream.
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let gave_up = impatient
        .post(format!("{server}/v1/chat/completions"))
        .bearer_auth(ALICE)
        .json(&body(&history, false, "m"))
        .send()
        .await;
    assert!(gave_up.is_err());
    // Its retry finds the session busy with the abandoned call and goes
    // on in a fork of it: answered after its own upstream call, not after
    // the abandoned one's too.
    let started = Instant::now();
    let retry = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .bearer_auth(ALICE)
        .json(&body(&history, false, "m"))
        .send()
        .await
        .unwrap();
    assert_eq!(retry.status(), 200);
    assert_eq!(retry.headers()["x-memory-admission"], "forked");
    let _ = retry.bytes().await;
    assert!(started.elapsed() < SLOW * 2, "{:?}", started.elapsed());
}
