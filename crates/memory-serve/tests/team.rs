//! A server a team shares, over real HTTP on loopback: every session is
//! its principal's alone (named, guessed, shared and trapped sessions,
//! inspection and recall across principals, the admission header), what
//! a client did not send is not sent for it, and browsers and foreign
//! hosts are refused. The upstream is a real chat-completions server whose
//! model is a script.

use std::sync::Arc;
use std::time::Duration;

use memory_core::{InMemoryStore, Message, Store, TrimStrategy};
use memory_openai::wire as openai_wire;
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, Keys, ServeConfig};
use serde_json::{Value, json};

const ALICE: &str = "sk-alice-0123";
const BOB: &str = "sk-bob-4567";

fn config(upstream: &str, store: Arc<dyn Store>) -> ServeConfig {
    ServeConfig::new(
        upstream,
        Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
        store,
    )
    .with_budget(BudgetMode::Tokens(10_000))
    .with_keys(Keys::parse(&format!("alice {ALICE}\nbob {}\n", Keys::hash(BOB))).unwrap())
}

/// A server with keys for alice and bob, its store, and its upstream.
async fn team() -> (String, Arc<dyn Store>, ScriptedUpstream) {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = memory_serve::test_util::spawn_server(config(upstream.url(), store.clone())).await;
    (server, store, upstream)
}

async fn chat(
    server: &str,
    key: &str,
    messages: &[Message],
    session: Option<&str>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .bearer_auth(key)
        .json(&json!({"model": "m", "messages": openai_wire::to_value(messages)}));
    if let Some(s) = session {
        request = request.header("x-memory-session", s);
    }
    request.send().await.unwrap()
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

/// The reply of a chat answer.
async fn reply(r: reqwest::Response) -> Message {
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    openai_wire::message_from_value(&body["choices"][0]["message"], 0).unwrap()
}

/// Every text the upstream was sent, in the last request.
fn last_sent(upstream: &ScriptedUpstream) -> String {
    upstream.received().last().unwrap().body["messages"].to_string()
}

#[tokio::test]
async fn a_named_session_is_each_principals_own() {
    let (server, store, upstream) = team().await;
    let a = chat(
        &server,
        ALICE,
        &[Message::user("alpha secret 111")],
        Some("shared"),
    )
    .await;
    assert_eq!(a.status(), 200);
    let b = chat(&server, BOB, &[Message::user("beta note")], Some("shared")).await;
    assert_eq!(b.status(), 200);
    assert_eq!(header(&b, "x-memory-session"), "shared");
    // Bob's call carried only Bob's message, not Alice's.
    assert!(!last_sent(&upstream).contains("alpha secret"));
    assert!(last_sent(&upstream).contains("beta note"));
    // Each sees their own, and the store holds each under its principal.
    assert_eq!(
        store
            .for_tenant("key-alice")
            .history("shared")
            .await
            .unwrap()
            .len(),
        2
    );
    let bobs = store.for_tenant("key-bob").history("shared").await.unwrap();
    assert_eq!(bobs[0], Message::user("beta note"));
    assert!(store.history("shared").await.unwrap().is_empty());
}

/// What `GET` of a session answers to `key`: status, header names, and
/// the body with the id in it replaced.
async fn inspect(server: &str, key: &str, id: &str) -> (u16, Vec<String>, String) {
    let r = reqwest::Client::new()
        .get(format!("{server}/v1/memory/sessions/{id}"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    shape(r, id).await
}

async fn recall(server: &str, key: &str, id: &str, handle: &str) -> (u16, Vec<String>, String) {
    let r = reqwest::Client::new()
        .post(format!("{server}/v1/memory/sessions/{id}/recall"))
        .bearer_auth(key)
        .json(&json!({"handle": handle}))
        .send()
        .await
        .unwrap();
    shape(r, id).await
}

async fn shape(r: reqwest::Response, id: &str) -> (u16, Vec<String>, String) {
    let status = r.status().as_u16();
    let mut names: Vec<String> = r
        .headers()
        .keys()
        .map(|k| k.as_str().to_string())
        .filter(|k| k != "date" && k != "content-length")
        .collect();
    names.sort();
    (status, names, r.text().await.unwrap().replace(id, "ID"))
}

#[tokio::test]
async fn a_foreign_session_answers_as_a_missing_one() {
    let (server, _store, _upstream) = team().await;
    let a = chat(&server, ALICE, &[Message::user("alpha secret 222")], None).await;
    let id = header(&a, "x-memory-session");
    let _ = reply(a).await;
    let (status, _, body) = inspect(&server, ALICE, &id).await;
    assert_eq!(status, 200);
    assert!(body.contains("alpha secret"));
    // To Bob, Alice's session is exactly a session that does not exist.
    let missing = "s-00000000000000000000000000000000";
    let foreign = inspect(&server, BOB, &id).await;
    assert_eq!(foreign.0, 404);
    assert_eq!(foreign, inspect(&server, BOB, missing).await);
    let handle = format!("r:{}", "0".repeat(12));
    let foreign = recall(&server, BOB, &id, &handle).await;
    assert_eq!(foreign.0, 404);
    assert_eq!(foreign, recall(&server, BOB, missing, &handle).await);
    assert!(!foreign.2.contains("alpha"));
}

#[tokio::test]
async fn a_history_sent_by_another_principal_continues_nothing() {
    let (server, store, upstream) = team().await;
    // Alice's reply comes with reasoning she never sees echoed.
    upstream.queue(vec![Message::Assistant {
        content: "Noted.".into(),
        reasoning: Some("alice's hidden thought 333".into()),
        tool_calls: vec![],
    }]);
    let opening = vec![Message::system("Be brief."), Message::user("alpha plan")];
    let a = chat(&server, ALICE, &opening, None).await;
    let alices = header(&a, "x-memory-session");
    let visible = Message::assistant(reply(a).await.text());
    let mut history = opening.clone();
    history.push(visible);
    history.push(Message::user("and then?"));

    // Bob sends Alice's visible history: a session of his own, and not a
    // word of Alice's reasoning upstream.
    let b = chat(&server, BOB, &history, None).await;
    assert_eq!(header(&b, "x-memory-admission"), "new");
    assert_ne!(header(&b, "x-memory-session"), alices);
    let _ = reply(b).await;
    assert!(!last_sent(&upstream).contains("hidden thought"));
    // Alice's session is as she left it, and she continues it.
    let alice_store = store.for_tenant("key-alice");
    assert_eq!(alice_store.history(&alices).await.unwrap().len(), 3);
    let a = chat(&server, ALICE, &history, None).await;
    assert_eq!(header(&a, "x-memory-admission"), "continued");
    assert_eq!(header(&a, "x-memory-session"), alices);
}

#[tokio::test]
async fn an_opening_set_by_another_principal_is_no_trap() {
    let (server, store, upstream) = team().await;
    let opening = vec![
        Message::system("You are the team's agent."),
        Message::user("start"),
    ];
    // Bob sends the opening he expects Alice to use, and gets his reply.
    let b = chat(&server, BOB, &opening, None).await;
    let bobs = header(&b, "x-memory-session");
    let bob_reply = reply(b).await;
    let mut bob_history = opening.clone();
    bob_history.push(bob_reply);
    // Alice starts with the same opening: a new session of her own, told
    // so as if nobody had sent it before.
    let a = chat(&server, ALICE, &opening, None).await;
    assert_eq!(header(&a, "x-memory-admission"), "new");
    let alices = header(&a, "x-memory-session");
    assert_ne!(alices, bobs);
    let mut alice_history = opening.clone();
    alice_history.push(reply(a).await);
    alice_history.push(Message::user("alpha private 444"));
    let a = chat(&server, ALICE, &alice_history, None).await;
    assert_eq!(header(&a, "x-memory-session"), alices);
    let _ = reply(a).await;
    // Bob's session never saw Alice's turns; Bob's next call neither.
    let bob_store = store.for_tenant("key-bob");
    assert_eq!(bob_store.history(&bobs).await.unwrap(), bob_history);
    bob_history.push(Message::user("what did she say?"));
    let _ = reply(chat(&server, BOB, &bob_history, None).await).await;
    assert!(!last_sent(&upstream).contains("alpha private"));
}

#[tokio::test]
async fn reasoning_goes_back_only_when_the_client_echoes_it() {
    let (server, _, upstream) = team().await;
    let thought = Message::Assistant {
        content: "Thinking done.".into(),
        reasoning: Some("the upstream's reasoning 555".into()),
        tool_calls: vec![],
    };
    upstream.queue(vec![thought.clone()]);
    let mut history = vec![Message::user("think")];
    let _ = reply(chat(&server, ALICE, &history, None).await).await;
    // The client sends the reply back without its reasoning.
    history.push(Message::assistant("Thinking done."));
    history.push(Message::user("go on"));
    let r = chat(&server, ALICE, &history, None).await;
    assert_eq!(header(&r, "x-memory-admission"), "continued");
    let _ = reply(r).await;
    assert!(!last_sent(&upstream).contains("reasoning 555"));
    // Echoed, it goes back.
    history[1] = thought;
    history.push(Message::user("once more"));
    let _ = reply(chat(&server, ALICE, &history, None).await).await;
    assert!(last_sent(&upstream).contains("reasoning 555"));
}

#[tokio::test]
async fn a_failed_first_call_leaves_nothing_to_fall_into() {
    let free = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead = format!("http://{}/v1", free.local_addr().unwrap());
    drop(free);
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = memory_serve::test_util::spawn_server(config(&dead, store.clone())).await;
    let opening = vec![Message::user("start the job")];
    let first = chat(&server, ALICE, &opening, None).await;
    assert_eq!(first.status(), 502);
    let failed = header(&first, "x-memory-session");
    // Nothing is lost: the failed call's message is kept.
    let alice_store = store.for_tenant("key-alice");
    assert_eq!(alice_store.history(&failed).await.unwrap(), opening);
    // The next request with that opening does not land in it.
    let again = chat(&server, ALICE, &opening, None).await;
    assert_eq!(header(&again, "x-memory-admission"), "new");
    assert_ne!(header(&again, "x-memory-session"), failed);
}

#[tokio::test]
async fn without_keys_each_credential_is_a_principal() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let config = config(upstream.url(), store.clone()).with_keys(Keys::default());
    let server = memory_serve::test_util::spawn_server(config).await;
    let _ = reply(
        chat(
            &server,
            "sk-one",
            &[Message::user("one's words")],
            Some("n"),
        )
        .await,
    )
    .await;
    let _ = reply(
        chat(
            &server,
            "sk-two",
            &[Message::user("two's words")],
            Some("n"),
        )
        .await,
    )
    .await;
    assert!(!last_sent(&upstream).contains("one's words"));
    // Each credential went upstream as it came, and nothing else.
    let got = upstream.received();
    assert_eq!(got[0].authorization.as_deref(), Some("Bearer sk-one"));
    assert_eq!(got[1].authorization.as_deref(), Some("Bearer sk-two"));
    let one = memory_serve::test_util::principal_store(&store, Some("Bearer sk-one")).await;
    assert_eq!(
        one.history("n").await.unwrap(),
        vec![Message::user("one's words"), got_reply(&one).await]
    );
}

/// The reply the session `n` of a principal's store ends with.
async fn got_reply(store: &Arc<dyn Store>) -> Message {
    store.history("n").await.unwrap().pop().unwrap()
}

#[tokio::test]
async fn a_cross_site_post_and_a_foreign_host_are_refused() {
    let (server, _, upstream) = team().await;
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    // A page of another site posting `text/plain` with no credentials.
    let r = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .header("origin", "https://evil.test")
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // The same without an Origin: refused for its type.
    let r = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .bearer_auth(ALICE)
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    // A name that rebinds to the server's address.
    let r = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .bearer_auth(ALICE)
        .header("host", "evil.test")
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(upstream.received().is_empty());
}

async fn delete(server: &str, key: &str, id: &str) -> u16 {
    reqwest::Client::new()
        .delete(format!("{server}/v1/memory/sessions/{id}"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_session_is_deleted_by_its_principal_only() {
    let (server, store, _upstream) = team().await;
    let history = vec![Message::user("alpha to forget")];
    let a = chat(&server, ALICE, &history, None).await;
    let id = header(&a, "x-memory-session");
    let mut history = history;
    history.push(reply(a).await);
    // Bob cannot, and is told it does not exist.
    assert_eq!(delete(&server, BOB, &id).await, 404);
    let alice = store.for_tenant("key-alice");
    assert_eq!(alice.history(&id).await.unwrap().len(), 2);
    // Alice can; then it is gone everywhere.
    assert_eq!(delete(&server, ALICE, &id).await, 200);
    assert!(alice.history(&id).await.unwrap().is_empty());
    assert_eq!(inspect(&server, ALICE, &id).await.0, 404);
    assert_eq!(delete(&server, ALICE, &id).await, 404);
    // Her history sent again starts afresh.
    history.push(Message::user("and now?"));
    let again = chat(&server, ALICE, &history, None).await;
    assert_eq!(header(&again, "x-memory-admission"), "new");
    assert_ne!(header(&again, "x-memory-session"), id);
}

#[tokio::test]
async fn each_principal_is_held_to_its_limits() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let mut config = config(upstream.url(), store.clone());
    config.limits = memory_serve::Limits {
        requests_per_minute: Some(4),
        sessions: Some(2),
        messages_per_request: Some(3),
    };
    let server = memory_serve::test_util::spawn_server(config).await;
    let one = |text: &str| vec![Message::user(text)];
    // Two sessions, then a third is refused until one is deleted.
    let a = chat(&server, ALICE, &one("first"), None).await;
    let first = header(&a, "x-memory-session");
    let _ = reply(a).await;
    let _ = reply(chat(&server, ALICE, &one("second"), None).await).await;
    let third = chat(&server, ALICE, &one("third"), None).await;
    assert_eq!(third.status(), 429);
    assert_eq!(delete(&server, ALICE, &first).await, 200);
    // The rate: four requests a minute, and the fifth waits.
    let r = chat(&server, ALICE, &one("third"), None).await;
    assert_eq!(r.status(), 429);
    let wait: u64 = header(&r, "retry-after").parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    // Bob is held to his own.
    let many: Vec<Message> = (0..4).map(|i| Message::user(format!("m{i}"))).collect();
    assert_eq!(chat(&server, BOB, &many, None).await.status(), 413);
    let _ = reply(chat(&server, BOB, &one("bob"), None).await).await;
}

#[tokio::test]
async fn a_session_untouched_past_its_time_is_erased() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let mut config = config(upstream.url(), store.clone());
    config.session_ttl = Some(Duration::from_secs(2));
    let server = memory_serve::test_util::spawn_server(config).await;
    let a = chat(&server, ALICE, &[Message::user("short-lived")], None).await;
    let id = header(&a, "x-memory-session");
    let _ = reply(a).await;
    let alice = store.for_tenant("key-alice");
    assert_eq!(alice.history(&id).await.unwrap().len(), 2);
    // Within a sweep or two past its time it is gone.
    let mut gone = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if alice.history(&id).await.unwrap().is_empty() {
            gone = true;
            break;
        }
    }
    assert!(gone, "the session outlived its time");
    assert_eq!(inspect(&server, ALICE, &id).await.0, 404);
}
