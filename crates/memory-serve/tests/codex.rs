//! The real Codex CLI (`@openai/codex`, pinned at [`cli::VERSION`])
//! through `memory serve`'s Responses front: once over a Chat Completions
//! upstream (fitted by Thrift) with an auto-compaction limit low enough
//! that Codex compacts several times, and once over a Responses upstream
//! (fitted by the window), both over SQLite.
//!
//! `codex exec` runs in a workspace of twenty files of 5 to 30 KB; the
//! scripted model (`codex/upstream.rs`) has it read them one a turn with
//! its real shell tool (`exec_command`, `cat`), then answers. The history
//! grows to several times the budget. A recording proxy
//! (`support/proxy.rs`) between the CLI and the server keeps what the CLI
//! sent and what the server answered.
//!
//! What is checked:
//!
//! - the CLI exits 0 with the scripted answer, after one tool call a file;
//!   every answer the server gave it was a 200 whose stream completed;
//! - every request that reached the upstream is within the budget (the
//!   server's `x-memory-tokens`, and over Chat the received messages
//!   counted again), its tool pairs intact, the task in it;
//! - each compaction Codex asked for (a `compaction_trigger`) was answered
//!   by the server with exactly one `compaction` item and no model call,
//!   and the request after it holds that item;
//! - over Responses, every item that reached the upstream is JSON-equal to
//!   an item the CLI sent (in that call or, for one a compaction stands
//!   for, an earlier one), but for the server's index;
//! - the last stored session holds what the CLI sent in its last request
//!   (its compaction put back as the context it stands for) and the
//!   final answer.
//!
//! Without npm, or where the install fails, the test says so and passes;
//! under CI (the `CI` variable set) it fails instead.

use crate::agent_cli;
#[path = "codex/cli.rs"]
mod cli;
use crate::npm;
use crate::proxy;
#[path = "codex/upstream.rs"]
mod upstream;

use std::path::Path;
use std::sync::Arc;

use memory_core::{
    CharTokenCounter, Message, Store, TrimStrategy, count_messages, index, validate,
};
use memory_openai::wire;
use memory_serve::{BudgetMode, PipelineFactory, Protocol, ServeConfig};
use memory_sqlite::SqliteStore;
use proxy::Exchange;
use serde_json::Value;
use upstream::{ANSWER, FILES, Upstream, marker};

/// The budget, in the server's (character) tokens. Codex's instructions
/// and environment come to about 6,000 tokens that are never shed, and
/// a file's output to up to 7,500; the history grows past 100,000.
const BUDGET: usize = 16_000;

/// Codex's auto-compaction limit in the compacting run: below the budget,
/// so that Codex compacts once the fitted context passes it; a compaction
/// fits the context into half the budget, under the limit.
const COMPACT_LIMIT: usize = 12_000;

/// The CLI's prompt.
const TASK: &str = "Read each of the files f01.txt to f20.txt in this folder with cat, one \
                    at a time and in order, then say how many you read.";

/// The workspace's files: `fNN.txt`, from 5 KB to 30 KB, each starting
/// with its [`marker`].
fn write_files(dir: &Path) {
    let words = [
        "north", "south", "east", "west", "up", "down", "left", "right",
    ];
    agent_cli::write_files(dir, FILES, 26, &words, 11, marker);
}

/// One run of the CLI through the server, and all it left.
struct Run {
    api: Protocol,
    /// Whether the upstream answered the compactions (`--compaction
    /// native`), not the server.
    native: bool,
    stdout: String,
    /// The CLI's calls, in order.
    calls: Vec<Exchange>,
    received: Vec<upstream::Received>,
    store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
}

impl Run {
    /// The calls that asked for a compaction.
    fn compactions(&self) -> impl Iterator<Item = &Exchange> {
        self.calls.iter().filter(|e| is_trigger(e))
    }
}

fn is_trigger(e: &Exchange) -> bool {
    e.request["input"]
        .as_array()
        .and_then(|i| i.last())
        .is_some_and(|i| i["type"] == "compaction_trigger")
}

fn pipeline(api: Protocol) -> PipelineFactory {
    match api {
        Protocol::Chat => {
            Arc::new(|| Arc::new(memory_thrift::Thrift::new()) as Arc<dyn TrimStrategy>)
        }
        _ => Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
    }
}

/// Runs the CLI on the task through a server over an upstream of `api`,
/// compactions answered by the server, or by the upstream when `native`;
/// `None` where the CLI is not available.
async fn run(api: Protocol, compact_limit: Option<usize>, native: bool) -> Option<Run> {
    let codex = cli::codex()?;
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    write_files(&workspace);
    let upstream = Upstream::start(api).await;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("serve.db")).unwrap());
    let mut config = ServeConfig::new(upstream.url(), pipeline(api), store.clone())
        .with_budget(BudgetMode::Tokens(BUDGET))
        .with_counter(Arc::new(CharTokenCounter));
    config.upstream_api = api;
    config.compaction = Some(if native {
        memory_serve::Compaction::Native
    } else {
        memory_serve::Compaction::Ours
    });
    let server = memory_serve::test_util::spawn_server(config).await;
    let proxy = proxy::Proxy::start(&server).await;
    let settings = cli::config(&format!("{}/v1", proxy.url()), compact_limit);
    let ws = workspace.clone();
    let done = tokio::task::spawn_blocking(move || cli::run(&codex, &settings, &ws, &home, TASK))
        .await
        .unwrap();
    eprintln!("{api:?}: the CLI ran {:?}", done.elapsed);
    Some(Run {
        api,
        native,
        stdout: done.stdout,
        calls: proxy.exchanges(),
        received: upstream.received(),
        store,
        _dir: dir,
    })
}

fn header_number(e: &Exchange, name: &str) -> usize {
    e.header(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} on {}", e.path))
}

/// The CLI's side: its answer, one read a file, every answer a completed
/// stream, and one upstream call for each call that was not a compaction.
fn check_the_cli(run: &Run) {
    assert!(run.stdout.contains(ANSWER), "stdout: {}", run.stdout);
    for (i, e) in run.calls.iter().enumerate() {
        let events = String::from_utf8_lossy(&e.response);
        assert_eq!(e.status, 200, "call {i}: {events}");
        assert!(!events.contains("response.failed"), "call {i}: {events}");
        assert!(events.contains("event: response.completed\n"), "call {i}");
    }
    let reads: Vec<String> = run
        .calls
        .iter()
        .filter(|e| !is_trigger(e))
        .filter_map(|e| {
            let events = String::from_utf8_lossy(&e.response).to_string();
            let at = events.find("cat f")?;
            Some(events[at + 4..at + 7].to_string())
        })
        .collect();
    let expected: Vec<String> = (1..=FILES).map(|n| format!("f{n:02}")).collect();
    assert_eq!(reads, expected, "one call a file, in order");
    let asked = run
        .calls
        .iter()
        .filter(|e| run.native || !is_trigger(e))
        .count();
    assert_eq!(
        run.received.len(),
        asked,
        "a model call for each call but ours"
    );
}

/// Every compaction asked was answered with one item, and the request
/// after it holds that item.
fn check_compactions(run: &Run) -> usize {
    let mut answered = 0;
    for (i, e) in run.calls.iter().enumerate().filter(|(_, e)| is_trigger(e)) {
        let events = String::from_utf8_lossy(&e.response);
        let items: Vec<Value> = events
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter(|v| v["type"] == "response.output_item.done")
            .map(|v| v["item"].clone())
            .collect();
        assert_eq!(items.len(), 1, "call {i}: {events}");
        assert_eq!(items[0]["type"], "compaction");
        let handle = items[0]["encrypted_content"].as_str().unwrap();
        let next = &run.calls[i + 1].request.to_string();
        assert!(
            next.contains(handle),
            "call {}: holds the compaction",
            i + 1
        );
        answered += 1;
    }
    answered
}

/// The upstream's side: within the budget, pairs intact, the task kept.
async fn check_the_upstream(run: &Run) -> usize {
    let calls: Vec<&Exchange> = run
        .calls
        .iter()
        .filter(|e| run.native || !is_trigger(e))
        .collect();
    let mut largest = 0;
    for (i, (e, got)) in calls.iter().zip(&run.received).enumerate() {
        let tokens = header_number(e, "x-memory-tokens");
        assert!(tokens <= BUDGET, "call {i}: {tokens} tokens");
        largest = largest.max(tokens);
        assert!(got.body.to_string().contains(TASK), "call {i}: the task");
        let key = got
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        assert_eq!(key, Some("Bearer sk-test"), "call {i}: the CLI's key");
        match run.api {
            Protocol::Chat => {
                let messages = wire::from_value(&got.body["messages"]).unwrap();
                assert!(validate(&messages).is_empty(), "call {i}: pairs");
                let counted: usize = count_messages(&CharTokenCounter, &messages)
                    .await
                    .unwrap()
                    .iter()
                    .sum();
                assert_eq!(counted, tokens, "call {i}: the size reported");
            }
            _ => check_items_pairs(&got.body["input"], i),
        }
    }
    largest
}

/// Over Responses: each call's output in the same request as the call,
/// after it, and each call answered.
fn check_items_pairs(input: &Value, call: usize) {
    let items = input.as_array().unwrap();
    let ids = |kind: &str| -> Vec<(usize, String)> {
        items
            .iter()
            .enumerate()
            .filter(|(_, i)| i["type"] == kind)
            .map(|(k, i)| (k, i["call_id"].as_str().unwrap().to_string()))
            .collect()
    };
    let (calls, outputs) = (ids("function_call"), ids("function_call_output"));
    for (k, id) in &outputs {
        assert!(
            calls.iter().any(|(c, cid)| cid == id && c < k),
            "call {call}: output {id} without its call"
        );
    }
    for (_, id) in &calls {
        assert!(
            outputs.iter().any(|(_, oid)| oid == id),
            "call {call}: call {id} unanswered"
        );
    }
}

/// Over Responses: nothing invented; every item the upstream got is one
/// the CLI sent, as it sent it, but for the server's index.
fn check_items_as_sent(run: &Run) {
    let mut sent: Vec<&Value> = Vec::new();
    let calls: Vec<&Exchange> = run
        .calls
        .iter()
        .filter(|e| run.native || !is_trigger(e))
        .collect();
    let mut checked = 0;
    for (i, e) in run.calls.iter().enumerate() {
        sent.extend(e.request["input"].as_array().into_iter().flatten());
        let Some(k) = calls.iter().position(|c| std::ptr::eq(*c, e)) else {
            continue;
        };
        for item in run.received[k].body["input"].as_array().unwrap() {
            let text = item["content"][0]["text"].as_str().unwrap_or_default();
            if item["role"] == "system" && text.starts_with(index::PREFIX) {
                continue;
            }
            assert!(
                sent.contains(&item),
                "call {i}: an item the CLI never sent: {item}"
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
}

/// The session of the last call holds the CLI's last request (as the
/// server reads it) and the final answer.
async fn check_the_session(run: &Run) -> usize {
    let last = run.calls.last().unwrap();
    let id = last.header("x-memory-session").unwrap();
    let mine = memory_serve::test_util::principal_store(&run.store, Some("sk-test")).await;
    let history = mine.history(id).await.unwrap();
    assert_eq!(history.last().map(Message::text).as_deref(), Some(ANSWER));
    let outputs: Vec<&Value> = last.request["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .collect();
    for output in &outputs {
        let held = history.iter().any(|m| {
            matches!(m, Message::ToolResult { tool_call_id, content, .. }
                if tool_call_id == output["call_id"].as_str().unwrap()
                    && content == output["output"].as_str().unwrap())
        });
        assert!(held, "the stored session holds {}", output["call_id"]);
    }
    history.len()
}

async fn check(run: Run) {
    check_the_cli(&run);
    let compactions = check_compactions(&run);
    let largest = check_the_upstream(&run).await;
    if run.api == Protocol::Responses {
        check_items_as_sent(&run);
    }
    let stored = check_the_session(&run).await;
    let history = run
        .calls
        .iter()
        .map(|e| header_number(e, "x-memory-history-tokens"))
        .max()
        .unwrap_or(0);
    eprintln!(
        "{:?}: {} calls, {} to the upstream, {} compactions asked and {compactions} answered; \
         largest request {largest} tokens (budget {BUDGET}) against a history of up to \
         {history}; the last session holds {stored} messages",
        run.api,
        run.calls.len(),
        run.received.len(),
        run.compactions().count(),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_over_a_chat_upstream_compacts_through_the_server() {
    let Some(run) = run(Protocol::Chat, Some(COMPACT_LIMIT), false).await else {
        return;
    };
    assert!(
        run.compactions().count() >= 2,
        "Codex compacted at least twice"
    );
    check(run).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_over_a_responses_upstream_sends_its_items_as_they_came() {
    let Some(run) = run(Protocol::Responses, None, false).await else {
        return;
    };
    check(run).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_over_a_responses_upstream_compacts_natively_through_the_server() {
    let Some(run) = run(Protocol::Responses, Some(COMPACT_LIMIT), true).await else {
        return;
    };
    assert!(
        run.compactions().count() >= 2,
        "Codex compacted at least twice"
    );
    check(run).await;
}
