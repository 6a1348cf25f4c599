//! A real Anthropic client through the server: the `anthropic` Python
//! package (from PyPI, in the virtual environment the client tests share) runs a
//! 40-step tool-use loop, streamed and not, through `memory serve`'s
//! Messages front with `compact,thrift` over SQLite, to a scripted Chat
//! Completions upstream on loopback that keeps every request it gets.
//!
//! A second test runs a shorter loop over a Messages upstream with a large
//! budget: every request the upstream gets is the body the SDK sent.
//!
//! Without Python or PyPI the test says so and passes; under CI (the `CI`
//! variable set) it fails instead.

use crate::venv;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use memory_compact::Compact;
use memory_core::{
    CharTokenCounter, Message, Pipeline, Store, ToolCall, TrimStrategy, count_messages, summary,
    validate,
};
use memory_openai::wire;
use memory_serve::test_util::{Received, ScriptedUpstream};
use memory_serve::{BudgetMode, Protocol, ServeConfig};
use memory_sqlite::SqliteStore;
use memory_summarize::ExtractiveSummarizer;
use memory_thrift::Thrift;
use serde_json::{Value, json};

/// Small enough that the loop's history (48 tool results of [`PAD`]
/// characters) outgrows it a third of the way in.
const BUDGET: usize = 1_500;
const STEPS: usize = 40;
/// The characters of output each tool result carries.
const PAD: usize = 300;
/// The key the client sends; its principal's part of the store holds the
/// session.
const KEY: &str = "sk-ant-test";

/// Runs `anthropic_loop.py` against the server at `root` and reads the
/// JSON summary it writes to `out`.
async fn tool_loop(python: &Path, root: &str, steps: usize, stream: bool, out: &Path) -> Value {
    let mut args = vec![root.to_string(), steps.to_string(), PAD.to_string()];
    if stream {
        args.push("--stream".into());
    }
    venv::run_script(python, "anthropic_loop.py", args, out).await
}

/// The conversation the client holds, as the messages the server records
/// it as: the system prompt, the task, each assistant turn's text and tool
/// uses (arguments as the object's JSON), each tool result.
fn conversation(summary: &Value) -> Vec<Message> {
    let mut messages = vec![Message::system(summary["system"].as_str().unwrap())];
    for turn in summary["messages"].as_array().unwrap() {
        let blocks = turn["content"].as_array();
        match (turn["role"].as_str().unwrap(), &turn["content"]) {
            ("user", Value::String(text)) => messages.push(Message::user(text.as_str())),
            ("user", _) => {
                for b in blocks.unwrap() {
                    assert_eq!(b["type"], "tool_result", "{b}");
                    messages.push(Message::tool_result(
                        b["tool_use_id"].as_str().unwrap(),
                        b["content"].as_str().unwrap(),
                    ));
                }
            }
            ("assistant", _) => {
                let blocks = blocks.unwrap();
                let text: String = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
                let calls = blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| {
                        ToolCall::new(
                            b["id"].as_str().unwrap(),
                            b["name"].as_str().unwrap(),
                            b["input"].to_string(),
                        )
                    })
                    .collect();
                messages.push(Message::assistant_with_tools(text, calls));
            }
            (role, _) => panic!("a turn of role {role}"),
        }
    }
    messages
}

/// The loop ended with the script's closing answer, every call before it
/// asking for a tool, all in one session; that session's id.
fn check_loop(summary: &Value, steps: usize) -> String {
    let turns = summary["messages"].as_array().unwrap();
    let last = turns.last().unwrap();
    assert_eq!(last["role"], "assistant");
    let text: String = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(text, format!("All {steps} steps are done."));
    let stops: Vec<&str> = summary["stop_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(stops.len(), steps + 1, "{stops:?}");
    assert!(stops[..steps].iter().all(|s| *s == "tool_use"), "{stops:?}");
    assert_eq!(stops[steps], "end_turn");
    let sessions: Vec<&str> = summary["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap_or_default())
        .collect();
    assert!(
        sessions.iter().all(|s| !s.is_empty() && *s == sessions[0]),
        "{sessions:?}"
    );
    assert_eq!(summary["sent"].as_array().unwrap().len(), sessions.len());
    sessions[0].to_string()
}

fn pipeline() -> Arc<dyn TrimStrategy> {
    Arc::new(
        Pipeline::new()
            .then(Compact::new(ExtractiveSummarizer::new()))
            .then(Thrift::new()),
    )
}

async fn tokens(messages: &[Message]) -> usize {
    count_messages(&CharTokenCounter, messages)
        .await
        .unwrap()
        .iter()
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_package_runs_a_tool_loop_through_the_messages_front() {
    let Some(python) = venv::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("serve.db")).unwrap());
    let mut config = ServeConfig::new(upstream.url(), Arc::new(pipeline), store.clone())
        .with_budget(BudgetMode::Tokens(BUDGET))
        .with_counter(Arc::new(CharTokenCounter));
    config.upstream_api = Protocol::Chat;
    let root = memory_serve::test_util::spawn_server(config).await;

    for stream in [false, true] {
        let before = upstream.received().len();
        let out = dir.path().join(format!("loop-{stream}.json"));
        let summary = tool_loop(&python, &root, STEPS, stream, &out).await;
        let session = check_loop(&summary, STEPS);
        let messages = conversation(&summary);
        let received = upstream.received()[before..].to_vec();
        assert_eq!(received.len(), STEPS + 1);
        let sent = summary["sent"].as_array().unwrap();
        let trimmed = check_requests(&received, sent, &messages[1]).await;
        assert!(
            trimmed >= STEPS / 2,
            "{trimmed} requests trimmed (stream: {stream})"
        );
        // Every message the client sent, and every reply, once.
        let history = memory_serve::test_util::principal_store(&store, Some(KEY))
            .await
            .history(&session)
            .await
            .unwrap();
        assert_eq!(history, messages, "stream: {stream}");
        let mut largest = 0;
        for got in &received {
            largest = largest.max(tokens(&wire::from_value(&got.body["messages"]).unwrap()).await);
        }
        eprintln!(
            "stream {stream}: {} requests, {trimmed} trimmed, the largest {largest} tokens of a history of {} messages, {} tokens",
            received.len(),
            messages.len(),
            tokens(&messages).await,
        );
    }
}

/// Each request within the budget by the server's counter, tool pairs
/// intact, the task there, a summary in every request once compaction
/// ran, and the `step` tool offered; how many requests were smaller than
/// the conversation the client sent.
async fn check_requests(received: &[Received], sent: &[Value], task: &Message) -> usize {
    let mut summarized = false;
    let mut trimmed = 0;
    for (i, (got, body)) in received.iter().zip(sent).enumerate() {
        let messages = wire::from_value(&got.body["messages"]).unwrap();
        let tokens = tokens(&messages).await;
        assert!(tokens <= BUDGET, "request {i}: {tokens} tokens");
        assert!(
            validate(&messages).is_empty(),
            "request {i}: {:?}",
            validate(&messages)
        );
        assert!(messages.contains(task), "request {i} lost the task");
        let has_summary = messages.iter().any(summary::is_summary);
        assert!(has_summary || !summarized, "request {i} lost the summary");
        summarized |= has_summary;
        assert_eq!(got.body["tools"][0]["function"]["name"], "step");
        // What the client sent, as the server reads it.
        let client_sent =
            conversation(&json!({"system": body["system"], "messages": body["messages"]}));
        trimmed += usize::from(tokens < self::tokens(&client_sent).await);
    }
    assert!(summarized, "no request carried a summary");
    trimmed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_messages_upstream_the_sdks_turns_arrive_as_sent() {
    let Some(python) = venv::python() else {
        return;
    };
    const SHORT: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("serve.db")).unwrap());
    let mut config = ServeConfig::new(upstream.url(), Arc::new(pipeline), store.clone())
        .with_budget(BudgetMode::Tokens(1_000_000))
        .with_counter(Arc::new(CharTokenCounter));
    config.upstream_api = Protocol::Messages;
    let root = memory_serve::test_util::spawn_server(config).await;

    for stream in [false, true] {
        let before = upstream.received().len();
        let out = dir.path().join(format!("short-{stream}.json"));
        let summary = tool_loop(&python, &root, SHORT, stream, &out).await;
        let session = check_loop(&summary, SHORT);
        let received = upstream.received()[before..].to_vec();
        let sent = summary["sent"].as_array().unwrap();
        assert_eq!(received.len(), sent.len());
        for (i, (got, body)) in received.iter().zip(sent).enumerate() {
            // Nothing shed under a large budget: the turns as the SDK
            // wrote them, and every other field.
            assert_eq!(got.body["messages"], body["messages"], "request {i}");
            assert_eq!(&got.body, body, "request {i}");
            assert_eq!(got.headers["x-api-key"], KEY);
        }
        let history = memory_serve::test_util::principal_store(&store, Some(KEY))
            .await
            .history(&session)
            .await
            .unwrap();
        assert_eq!(history, conversation(&summary), "stream: {stream}");
    }
}
