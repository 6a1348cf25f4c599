//! The real Claude Code CLI (`@anthropic-ai/claude-code`, pinned at
//! [`cli::VERSION`]) through `memory serve`'s Anthropic Messages front,
//! once over a Chat Completions upstream (fitted by Thrift) and once over
//! a Messages one (fitted by the window), both over SQLite.
//!
//! The CLI runs `claude -p` in a workspace of twenty files of 5 to 28 KB;
//! the scripted model (`claude_code/upstream.rs`) reads them one a turn
//! (`cat` through `Bash`, every fifth with `Read`), writes `summary.txt`
//! and answers `ALL READ: 20`. The history grows to about six times the
//! budget, so the server fits nearly every call. Between the CLI and the
//! server sits a recording proxy (`claude_code/proxy.rs`), so the test
//! holds, for each call, what the CLI sent, what the server answered it
//! (its `x-memory-*` headers) and what reached the upstream.
//!
//! What is checked:
//!
//! - the CLI exits 0 with the scripted answer, after 21 tool calls, and
//!   wrote the file; every answer the server gave it was a 200 with no
//!   `error` event;
//! - the whole run is one session: the first call is `new`, every later
//!   one `continued`, and the principal's registry (the keyed hash of the
//!   CLI's key, `test_util::principal_store`) holds that session only;
//! - every request that reached the upstream is within the budget by the
//!   server's own counter, and its size is the `x-memory-tokens` the
//!   server reported for that call. Over Chat the received messages are
//!   decoded with `memory_openai::wire` and counted with
//!   `CharTokenCounter`. Over Messages there is no public decoder of
//!   Anthropic's form, and a decoder written here could count otherwise
//!   than the server; so the received body is given to a second server
//!   with an unbounded budget, whose `count_tokens` decodes and counts it
//!   exactly as the server did, and fits nothing away;
//! - tool pairs are intact (`memory_core::validate` over Chat; over
//!   Messages, each `tool_use` answered in the next user turn and each
//!   `tool_result` answering the turn before it), and the task (the CLI's
//!   prompt) is in every request;
//! - nothing is invented. Over Messages, the strongest form: every
//!   message the upstream received is JSON-equal (`cache_control`
//!   included) to a message of the request the CLI sent for that call, in
//!   the CLI's order, the newest turn always among them; the only
//!   addition is the server's index (a text block starting with
//!   `memory_core::index::PREFIX`); every other field of the request
//!   (`system`, `tools`, `thinking`, `metadata`, ...) is as the CLI sent
//!   it. (Comparing turns across requests would not do: Claude Code
//!   moves `cache_control` to its newest turn and rewrites its
//!   environment turn between requests.) Over Chat, where Thrift shortens
//!   messages, every received message is a stored one or a shrunk form of
//!   it (`memory_core::shrunk`), in order;
//! - the stored session holds the whole conversation: every call and
//!   every tool result of the CLI's last request, whole, in order, and
//!   the final answer.
//!
//! Without npm, or where the install fails, the test says so and passes;
//! under CI (the `CI` variable set) it fails instead. The CLI is
//! installed once into `$HOME/.cache/memory-serve-tests/`.

use crate::agent_cli;
#[path = "claude_code/cli.rs"]
mod cli;
use crate::npm;
use crate::proxy;
#[path = "claude_code/upstream.rs"]
mod upstream;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use memory_core::{
    CharTokenCounter, InMemoryStore, Message, Store, TrimStrategy, count_messages, index, shrunk,
    summary, validate,
};
use memory_openai::wire;
use memory_serve::{BudgetMode, PipelineFactory, Protocol, ServeConfig};
use memory_sqlite::SqliteStore;
use proxy::Exchange;
use serde_json::{Value, json};
use upstream::{ANSWER, FILES, READ_EVERY, Step, Upstream, WRITTEN, WRITTEN_TEXT, marker};

/// The budget, in the server's (character) tokens. Every request carries
/// about 4,300 tokens the window cannot drop (Claude Code's system prompt
/// and the task turn) and a newest turn of up to 7,000 (a 28 KB file);
/// the whole history grows to about 92,000, so from the fourth call on
/// every call is fitted.
const BUDGET: usize = 16_000;

/// The CLI's prompt: the task.
const TASK: &str = "Read each of the files f01.txt to f20.txt in this folder, one at a time \
                    and in order, then write summary.txt and say how many you read.";

/// The key the CLI sends; its principal's part of the store holds the
/// session.
const KEY: &str = "sk-test";

/// The workspace's files: `fNN.txt`, from 5 KB to 28 KB (under the
/// 30,000 characters of a command's output the CLI shows whole), each
/// starting with its [`marker`].
fn write_files(dir: &Path) {
    let words = [
        "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
    ];
    agent_cli::write_files(dir, FILES, 24, &words, 7, marker);
}

/// One run of the CLI through the server, and all it left.
struct Run {
    api: Protocol,
    stdout: String,
    elapsed: Duration,
    /// The CLI's completion calls, in order.
    calls: Vec<Exchange>,
    /// Its `count_tokens` calls (the `Read` tool sizes a file with one).
    counts: Vec<Exchange>,
    received: Vec<upstream::Received>,
    store: Arc<dyn Store>,
    server: String,
    workspace: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn pipeline(api: Protocol) -> PipelineFactory {
    match api {
        Protocol::Chat => {
            Arc::new(|| Arc::new(memory_thrift::Thrift::new()) as Arc<dyn TrimStrategy>)
        }
        _ => Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
    }
}

/// Runs the CLI on the task through a server over an upstream of `api`;
/// `None` where the CLI is not available.
async fn run(api: Protocol) -> Option<Run> {
    let claude = cli::claude()?;
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    write_files(&workspace);
    let upstream = Upstream::start(api, workspace.clone()).await;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("serve.db")).unwrap());
    let mut config = ServeConfig::new(upstream.url(), pipeline(api), store.clone())
        .with_budget(BudgetMode::Tokens(BUDGET))
        .with_counter(Arc::new(CharTokenCounter));
    config.upstream_api = api;
    let server = memory_serve::test_util::spawn_server(config).await;
    let proxy = proxy::Proxy::start(&server).await;
    let (url, ws) = (proxy.url().to_string(), workspace.clone());
    let tools = ["Bash(cat:*)", "Read", "Write"];
    let done =
        tokio::task::spawn_blocking(move || cli::run(&claude, &url, &ws, &home, TASK, &tools))
            .await
            .unwrap();
    let exchanges = proxy.exchanges();
    let is_count = |e: &Exchange| e.path.starts_with("/v1/messages/count_tokens");
    Some(Run {
        api,
        stdout: done.stdout,
        elapsed: done.elapsed,
        counts: exchanges.iter().filter(|e| is_count(e)).cloned().collect(),
        calls: exchanges.into_iter().filter(|e| !is_count(e)).collect(),
        received: upstream.received(),
        store,
        server,
        workspace,
        _dir: dir,
    })
}

fn header_number(e: &Exchange, name: &str) -> usize {
    e.header(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} on {}", e.path))
}

/// The CLI's side: its answer, the calls the script made, the file it
/// wrote, and every answer the server gave it.
fn check_the_cli(run: &Run) {
    assert_eq!(run.stdout.trim(), format!("{ANSWER} {FILES}"), "stdout");
    let names: Vec<&str> = run
        .received
        .iter()
        .filter_map(|r| match &r.step {
            Step::Call { name, .. } => Some(name.as_str()),
            Step::Answer(_) => None,
        })
        .collect();
    let mut expected: Vec<&str> = (1..=FILES)
        .map(|n| if n % READ_EVERY == 0 { "Read" } else { "Bash" })
        .collect();
    expected.push("Write");
    assert_eq!(names, expected, "the calls made");
    assert_eq!(
        std::fs::read_to_string(run.workspace.join(WRITTEN)).unwrap(),
        WRITTEN_TEXT
    );
    assert_eq!(
        run.calls.len(),
        run.received.len(),
        "one upstream call per call"
    );
    for (i, e) in run.calls.iter().enumerate() {
        assert_eq!(
            e.status,
            200,
            "call {i}: {}",
            String::from_utf8_lossy(&e.response)
        );
        let events = String::from_utf8_lossy(&e.response);
        assert!(!events.contains("event: error"), "call {i}: {events}");
        assert!(events.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    }
    for e in &run.counts {
        let counted: Value = serde_json::from_slice(&e.response).unwrap();
        assert!(
            e.status == 200 && counted["input_tokens"].is_u64(),
            "{counted}"
        );
    }
}

/// One session for the whole run, and the only one its principal holds.
async fn check_one_session(run: &Run) -> String {
    let id = run.calls[0].header("x-memory-session").unwrap().to_string();
    for (i, e) in run.calls.iter().enumerate() {
        assert_eq!(e.header("x-memory-session"), Some(id.as_str()), "call {i}");
        let admission = if i == 0 { "new" } else { "continued" };
        assert_eq!(e.header("x-memory-admission"), Some(admission), "call {i}");
    }
    let mine = memory_serve::test_util::principal_store(&run.store, Some(KEY)).await;
    let registry = mine
        .load(&format!("{}sessions", memory_serve::RESERVED_PREFIX))
        .await
        .unwrap();
    let registered: Vec<String> = registry
        .messages
        .iter()
        .filter_map(|s| serde_json::from_str::<Value>(&s.message.text()).ok())
        .filter_map(|v| v["session"].as_str().map(str::to_string))
        .collect();
    assert_eq!(registered, std::slice::from_ref(&id));
    id
}

/// The size of `messages` (Chat Completions) by the server's counter.
async fn chat_tokens(messages: &[Message]) -> usize {
    count_messages(&CharTokenCounter, messages)
        .await
        .unwrap()
        .iter()
        .sum()
}

/// The size of a Messages request's context by the server's own decoder
/// and counter: `count_tokens` of a server that fits nothing away.
async fn messages_tokens(counter: &str, body: &Value) -> usize {
    let answer: Value = reqwest::Client::new()
        .post(format!("{counter}/v1/messages/count_tokens"))
        .header("x-api-key", "sk-counter")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["input_tokens"].as_u64().unwrap() as usize
}

/// A server that counts: its budget holds any history whole.
async fn counting_server() -> String {
    let mut config = ServeConfig::new(
        "http://127.0.0.1:9/v1",
        pipeline(Protocol::Messages),
        Arc::new(InMemoryStore::new()),
    )
    .with_budget(BudgetMode::Tokens(1_000_000_000))
    .with_counter(Arc::new(CharTokenCounter));
    config.upstream_api = Protocol::Messages;
    memory_serve::test_util::spawn_server(config).await
}

/// The text of a Messages content: a string, or its text blocks joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// Every block of type `kind` in a Messages turn.
fn blocks<'a>(turn: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    turn["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |b| b["type"] == kind)
}

/// Over Messages: each `tool_use` answered in the next turn, each
/// `tool_result` answering the turn before it.
fn check_messages_pairs(turns: &[Value], call: usize) {
    for (i, turn) in turns.iter().enumerate() {
        let ids = |t: Option<&Value>, kind: &str, key: &str| -> Vec<String> {
            t.map(|t| {
                blocks(t, kind)
                    .map(|b| b[key].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
        };
        let uses = ids(Some(turn), "tool_use", "id");
        let answered = ids(turns.get(i + 1), "tool_result", "tool_use_id");
        assert_eq!(uses, answered, "call {call}: turn {i}'s calls");
        let results = ids(Some(turn), "tool_result", "tool_use_id");
        let asked = ids(i.checked_sub(1).map(|p| &turns[p]), "tool_use", "id");
        assert!(
            results.is_empty() || results == asked,
            "call {call}: turn {i}'s results"
        );
    }
}

/// Over Messages: what reached the upstream is what the CLI sent, less
/// what was fitted away, plus the index; every other field as sent.
fn check_messages_faithful(sent: &Value, received: &Value, call: usize) -> usize {
    let mut sent_rest = sent.as_object().unwrap().clone();
    let mut received_rest = received.as_object().unwrap().clone();
    let sent_turns = sent_rest.remove("messages").unwrap();
    let received_turns = received_rest.remove("messages").unwrap();
    assert_eq!(sent_rest, received_rest, "call {call}: the other fields");
    let sent_turns = sent_turns.as_array().unwrap();
    let received_turns = received_turns.as_array().unwrap();
    let mut indexes = 0;
    let mut at = 0;
    for (k, turn) in received_turns.iter().enumerate() {
        // The index: text blocks the server adds, starting with its prefix.
        let mut own = turn.clone();
        if let Some(content) = own["content"].as_array_mut() {
            let before = content.len();
            content.retain(|b| {
                !b["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(index::PREFIX))
            });
            indexes += before - content.len();
            if content.is_empty() {
                continue;
            }
        }
        let found = sent_turns[at..].iter().position(|s| *s == own);
        let Some(found) = found else {
            panic!("call {call}: received turn {k} is no turn the CLI sent (in order): {own:#}");
        };
        at += found + 1;
    }
    assert_eq!(
        received_turns.last(),
        sent_turns.last(),
        "call {call}: the newest turn"
    );
    indexes
}

/// Over Chat: the received messages are stored ones or shrunk forms of
/// them, in order; summaries and the index are the server's.
fn check_chat_faithful(received: &[Message], stored: &[Message], call: usize) {
    let mut at = 0;
    for (k, m) in received.iter().enumerate() {
        if summary::is_summary(m) || index::is_index(m) {
            continue;
        }
        let found = stored[at..]
            .iter()
            .position(|s| s == m || shrunk::is_shrunk_from(s, m));
        let Some(found) = found else {
            panic!("call {call}: received message {k} is no stored one (in order): {m:?}");
        };
        at += found + 1;
    }
}

/// What the figures of one run are.
#[derive(Debug, Default)]
struct Figures {
    largest_tokens: usize,
    largest_chars: usize,
    history_tokens: usize,
    history_chars: usize,
    trimmed: usize,
    indexes: usize,
}

/// Every request the upstream received: within the budget, its size the
/// one the server reported, pairs intact, the task there, nothing
/// invented.
async fn check_requests(run: &Run, stored: &[Message]) -> Figures {
    let counter = counting_server().await;
    let mut figures = Figures::default();
    for (i, (call, got)) in run.calls.iter().zip(&run.received).enumerate() {
        let tokens = match run.api {
            Protocol::Chat => {
                let messages = wire::from_value(&got.body["messages"]).unwrap();
                assert!(
                    validate(&messages).is_empty(),
                    "call {i}: {:?}",
                    validate(&messages)
                );
                check_chat_faithful(&messages, stored, i);
                figures.indexes += messages.iter().filter(|m| index::is_index(m)).count();
                chat_tokens(&messages).await
            }
            _ => {
                check_messages_pairs(got.body["messages"].as_array().unwrap(), i);
                figures.indexes += check_messages_faithful(&call.request, &got.body, i);
                messages_tokens(&counter, &got.body).await
            }
        };
        assert!(tokens <= BUDGET, "call {i}: {tokens} tokens");
        assert_eq!(tokens, header_number(call, "x-memory-tokens"), "call {i}");
        assert!(
            got.body["messages"].to_string().contains(TASK),
            "call {i} lost the task"
        );
        let history = header_number(call, "x-memory-history-tokens");
        figures.trimmed += usize::from(history > tokens);
        figures.history_tokens = history;
        figures.history_chars = call.request["messages"].to_string().len();
        if tokens > figures.largest_tokens {
            figures.largest_tokens = tokens;
            figures.largest_chars = got.body["messages"].to_string().len();
        }
    }
    figures
}

/// The stored session: the whole conversation, as the CLI last sent it
/// and the final answer, once the server has recorded it.
async fn stored_session(run: &Run, id: &str) -> Vec<Message> {
    let mine = memory_serve::test_util::principal_store(&run.store, Some(KEY)).await;
    let answer = format!("{ANSWER} {FILES}");
    let mut history = Vec::new();
    // The reply is recorded as its stream ends, which may be a moment
    // after the CLI has read it.
    for _ in 0..100 {
        history = mine.history(id).await.unwrap();
        if history.last().is_some_and(|m| m.text() == answer) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(history.last().map(Message::text), Some(answer));
    assert!(
        history
            .iter()
            .any(|m| m.is_user() && m.text().contains(TASK))
    );
    let turns = run.calls.last().unwrap().request["messages"]
        .as_array()
        .unwrap();
    check_stored_calls(&history, turns);
    check_stored_results(&history, turns);
    // The session as the server shows it.
    let shown: Value = reqwest::Client::new()
        .get(format!("{}/v1/memory/sessions/{id}", run.server))
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["history_length"], json!(history.len()));
    history
}

/// Every call of the CLI's last request is stored, in order, as sent.
fn check_stored_calls(history: &[Message], turns: &[Value]) {
    let calls: Vec<_> = history.iter().flat_map(Message::tool_calls).collect();
    let uses: Vec<&Value> = turns.iter().flat_map(|t| blocks(t, "tool_use")).collect();
    assert_eq!(calls.len(), uses.len());
    assert_eq!(uses.len(), FILES + 1);
    for (call, sent) in calls.iter().zip(&uses) {
        assert_eq!(call.id, sent["id"].as_str().unwrap());
        assert_eq!(call.name, sent["name"].as_str().unwrap());
        let arguments: Value = serde_json::from_str(&call.arguments).unwrap();
        assert_eq!(arguments, sent["input"]);
    }
}

/// Every tool result of the CLI's last request is stored, in order,
/// whole; each file's among them.
fn check_stored_results(history: &[Message], turns: &[Value]) {
    let results: Vec<(&str, &str)> = history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult {
                tool_call_id,
                content,
                ..
            } => Some((tool_call_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    let sent: Vec<(String, String)> = turns
        .iter()
        .flat_map(|t| blocks(t, "tool_result"))
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap().to_string(),
                content_text(&b["content"]),
            )
        })
        .collect();
    assert_eq!(results.len(), sent.len());
    for (k, ((id, content), (sent_id, sent_content))) in results.iter().zip(&sent).enumerate() {
        assert_eq!(id, sent_id, "result {k}");
        assert_eq!(content, sent_content, "result {k}");
    }
    for n in 1..=FILES {
        assert!(
            results.iter().any(|(_, c)| c.contains(&marker(n))),
            "f{n:02}"
        );
    }
}

async fn claude_code_through(api: Protocol) {
    let Some(run) = run(api).await else {
        return;
    };
    check_the_cli(&run);
    let id = check_one_session(&run).await;
    let stored = stored_session(&run, &id).await;
    let f = check_requests(&run, &stored).await;
    let turns = run
        .received
        .iter()
        .filter(|r| matches!(r.step, Step::Call { .. }))
        .count();
    eprintln!(
        "Claude Code {} over {api:?} upstream ({:.1} s): {turns} tool calls, {} requests \
         (+{} count_tokens), {} trimmed, {} with an index; largest request {} tokens \
         ({} chars of messages) for a budget of {BUDGET}; history {} tokens ({} chars), \
         {} messages stored",
        cli::VERSION,
        run.elapsed.as_secs_f64(),
        run.received.len(),
        run.counts.len(),
        f.trimmed,
        f.indexes,
        f.largest_tokens,
        f.largest_chars,
        f.history_tokens,
        f.history_chars,
        stored.len(),
    );
    assert!(turns > FILES);
    assert!(
        f.trimmed >= FILES / 2,
        "the history outgrew the budget many times"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_code_over_a_chat_upstream() {
    claude_code_through(Protocol::Chat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claude_code_over_a_messages_upstream() {
    claude_code_through(Protocol::Messages).await;
}
