//! A real client through the server: the `openai` Python package (from
//! PyPI, in the virtual environment the client tests share) runs a 40-step
//! tool-calling agent loop, streamed and not, through `memory serve` with
//! `compact,thrift` over SQLite, to a scripted upstream on loopback that
//! keeps every request it gets.
//!
//! A second test has two clients with their own keys share one server:
//! neither sees, continues or recalls the other's session.
//!
//! Without Python or PyPI the test says so and passes; under CI (the `CI`
//! variable set) it fails instead.

use crate::venv;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use memory_compact::Compact;
use memory_core::{
    CharTokenCounter, Message, Pipeline, Store, TrimStrategy, count_messages, summary, validate,
};
use memory_openai::wire;
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, ServeConfig};
use memory_sqlite::SqliteStore;
use memory_summarize::ExtractiveSummarizer;
use memory_thrift::Thrift;

const BUDGET: usize = 2_000;
const STEPS: usize = 40;

async fn start(config: ServeConfig) -> String {
    memory_serve::test_util::spawn_server(config).await + "/v1"
}

/// Runs the agent loop; the client's conversation and the session of each
/// call.
async fn agent_loop(
    python: &Path,
    base_url: &str,
    out: &Path,
    stream: bool,
) -> (Vec<Message>, Vec<String>) {
    let mut args = vec![base_url.to_string(), STEPS.to_string()];
    if stream {
        args.push("--stream".into());
    }
    let result = venv::run_script(python, "agent_loop.py", args, out).await;
    let messages = wire::from_value(&result["messages"]).unwrap();
    let sessions = result["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap_or_default().to_string())
        .collect();
    (messages, sessions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_package_runs_an_agent_loop_through_the_server() {
    let Some(python) = venv::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("serve.db")).unwrap());
    let pipeline = || {
        Arc::new(
            Pipeline::new()
                .then(Compact::new(ExtractiveSummarizer::new()))
                .then(Thrift::new()),
        ) as Arc<dyn TrimStrategy>
    };
    let config = ServeConfig::new(upstream.url(), Arc::new(pipeline), store.clone())
        .with_budget(BudgetMode::Tokens(BUDGET))
        .with_counter(Arc::new(CharTokenCounter));
    let server = start(config).await;

    for stream in [false, true] {
        let before = upstream.received().len();
        let out = dir.path().join(format!("loop-{stream}.json"));
        let (messages, sessions) = agent_loop(&python, &server, &out, stream).await;
        assert!(
            messages
                .last()
                .unwrap()
                .text()
                .contains(&format!("All {STEPS} steps"))
        );
        // One session for the whole loop.
        assert!(
            sessions.iter().all(|s| !s.is_empty() && *s == sessions[0]),
            "{sessions:?}"
        );
        let received = upstream.received()[before..].to_vec();
        assert_eq!(received.len(), sessions.len());
        check_requests(&received, &messages[1]).await;
        // Every message the client sent, and every reply, once.
        assert_eq!(
            memory_serve::test_util::principal_store(&store, Some("Bearer sk-test"))
                .await
                .history(&sessions[0])
                .await
                .unwrap(),
            messages,
            "stream: {stream}"
        );
    }
}

/// Each request within the budget by the server's counter, tool pairs
/// intact, the task there, and a summary in every request once
/// compaction ran.
async fn check_requests(received: &[memory_serve::test_util::Received], task: &Message) {
    let mut summarized = false;
    for (i, got) in received.iter().enumerate() {
        let sent = wire::from_value(&got.body["messages"]).unwrap();
        let tokens: usize = count_messages(&CharTokenCounter, &sent)
            .await
            .unwrap()
            .iter()
            .sum();
        assert!(tokens <= BUDGET, "request {i}: {tokens} tokens");
        assert!(
            validate(&sent).is_empty(),
            "request {i}: {:?}",
            validate(&sent)
        );
        assert!(sent.contains(task), "request {i} lost the task");
        let has_summary = sent.iter().any(summary::is_summary);
        assert!(has_summary || !summarized, "request {i} lost the summary");
        summarized |= has_summary;
        assert_eq!(got.body["tools"][0]["function"]["name"], "step");
    }
    assert!(summarized, "no request carried a summary");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_keys_through_the_openai_package_see_only_their_own() {
    let Some(python) = venv::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("team.db")).unwrap());
    let pipeline = || Arc::new(Thrift::new()) as Arc<dyn TrimStrategy>;
    let keys = memory_serve::Keys::parse("alice sk-alice\nbob sk-bob").unwrap();
    let config = ServeConfig::new(upstream.url(), Arc::new(pipeline), store.clone())
        .with_budget(BudgetMode::Tokens(BUDGET))
        .with_counter(Arc::new(CharTokenCounter))
        .with_keys(keys);
    let server = start(config).await;
    let out = dir.path().join("two-keys.json");
    let args = vec![server.clone(), "sk-alice".into(), "sk-bob".into()];
    let r = venv::run_script(&python, "two_keys.py", args, &out).await;
    let alices = r["alice"]["session"].as_str().unwrap();
    // Bob naming Alice's session gets a session of his own by that name;
    // her history and her opening start sessions of his own.
    assert_eq!(r["bob_named"]["session"], alices);
    assert_eq!(r["bob_history"]["admission"], "new");
    assert_eq!(r["bob_opening"]["admission"], "new");
    assert_ne!(r["bob_history"]["session"], alices);
    // Alice goes on in hers, untouched.
    assert_eq!(r["alice_again"]["admission"], "continued");
    assert_eq!(r["alice_again"]["session"], alices);
    // No request of Bob's carried a word of Alice's that he did not send.
    let received = upstream.received();
    assert_eq!(received.len(), 6);
    for (i, bobs) in received[1..4].iter().enumerate() {
        let sent = bobs.body["messages"].to_string();
        let sent_alpha = i > 0; // his history and opening hold her words as he sent them
        assert_eq!(sent.contains("alpha secret"), sent_alpha, "{sent}");
        assert!(!sent.contains("beta 1") || i == 0, "{sent}");
    }
    // To Bob, Alice's session is one that does not exist; the one he named
    // is his own.
    assert_eq!(r["bob_inspects"]["status"], 404);
    assert_eq!(r["bob_inspects"], r["bob_inspects_missing"]);
    let named = r["bob_inspects_named"]["body"].as_str().unwrap();
    assert!(
        named.contains("beta 1") && !named.contains("alpha"),
        "{named}"
    );
    assert_eq!(r["alice_inspects"]["status"], 200);
    assert!(
        r["alice_inspects"]["body"]
            .as_str()
            .unwrap()
            .contains("alpha secret")
    );
    assert!(
        !r["alice_inspects"]["body"]
            .as_str()
            .unwrap()
            .contains("beta 1")
    );
    // In the store, each session is under its principal.
    let alice_store = store.for_tenant("key-alice");
    assert_eq!(alice_store.history(alices).await.unwrap().len(), 5);
    assert_eq!(
        store
            .for_tenant("key-bob")
            .history(alices)
            .await
            .unwrap()
            .len(),
        2
    );
}
