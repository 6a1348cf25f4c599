//! A real Rig agent, with a tool, talking to an OpenAI-compatible server on
//! loopback, with `compact,thrift` over SQLite as its memory: what the
//! server receives is the trimmed context (within budget, tool calls paired,
//! the summary there once compaction ran), the store holds every message
//! Rig appended, and a restarted process goes on from the stored summary.

mod support;

use std::sync::{Arc, Mutex};

use memory_compact::Compact;
use memory_core::{Message, Pipeline, count_messages, summary, validate};
use memory_openai::OpenAiProvider;
use memory_openai::wire;
use memory_rig::RigMemory;
use memory_sqlite::SqliteStore;
use memory_thrift::Thrift;
use memory_tokenizers::Cl100k;
use rig_agent::prelude::*;
use rig_core::completion::Message as RigMessage;
use rig_core::id::ConversationId;
use rig_core::memory::{ConversationMemory, MemoryError};
use rig_core::providers::openai::OpenAIConfig;
use rig_core::wasm_compat::WasmBoxedFuture;
use support::{ChatServer, ReadFile, is_summary_request, prompt, text_of};

const BUDGET: usize = 800;
const PREAMBLE: &str = "You add numbers for the user.";

/// Passes everything to the memory and logs what Rig appended.
struct Logged {
    inner: Arc<RigMemory>,
    appended: Mutex<Vec<RigMessage>>,
}

impl ConversationMemory for Logged {
    fn load<'a>(
        &'a self,
        id: &'a ConversationId,
    ) -> WasmBoxedFuture<'a, Result<Vec<RigMessage>, MemoryError>> {
        self.inner.load(id)
    }

    fn append<'a>(
        &'a self,
        id: &'a ConversationId,
        messages: Vec<RigMessage>,
    ) -> WasmBoxedFuture<'a, Result<(), MemoryError>> {
        self.appended.lock().unwrap().extend(messages.clone());
        self.inner.append(id, messages)
    }

    fn clear<'a>(&'a self, id: &'a ConversationId) -> WasmBoxedFuture<'a, Result<(), MemoryError>> {
        self.inner.clear(id)
    }
}

fn memory(server: &ChatServer, db: &std::path::Path) -> Arc<RigMemory> {
    let summarizer = OpenAiProvider::new(server.base_url(), "test-model");
    let pipeline = Pipeline::new()
        .then(
            Compact::new(summarizer)
                .with_keep_verbatim(2)
                .with_summarize_at_tokens(300),
        )
        .then(Thrift::new());
    Arc::new(
        RigMemory::new(BUDGET)
            .with_strategy(pipeline)
            .with_token_counter(Cl100k)
            .with_store(Arc::new(SqliteStore::open(db).unwrap())),
    )
}

fn agent(server: &ChatServer, memory: Arc<Logged>) -> Agent {
    let model = OpenAIConfig::new("test-key")
        .with_base_url(server.base_url())
        .client()
        .chat("test-model");
    AgentBuilder::new(model)
        .preamble(PREAMBLE)
        .tool(ReadFile)
        .memory(memory)
        .default_max_turns(4)
        .build()
}

/// Sends `prompt` in conversation "c1"; returns the answer.
async fn ask(agent: &Agent, prompt: &str) -> String {
    agent
        .prompt(prompt)
        .conversation("c1")
        .await
        .unwrap_or_else(|e| panic!("prompt {prompt:?} failed: {e}"))
        .output()
}

/// The loaded context of the request that opened a prompt: the request's
/// messages less the preamble and the prompt itself.
fn loaded_context(body: &serde_json::Value) -> Vec<Message> {
    let mut messages = wire::from_value(&body["messages"]).unwrap();
    if messages.first() == Some(&Message::system(PREAMBLE)) {
        messages.remove(0);
    }
    messages.pop();
    messages
}

/// Checks every request that opened a prompt; returns how many carried a summary.
async fn check_requests(server: &ChatServer, prompts: &[String]) -> usize {
    let mut summaries_seen = 0;
    let mut with_summary = 0;
    for body in server.received() {
        if is_summary_request(&body) {
            summaries_seen += 1;
            continue;
        }
        let whole = wire::from_value(&body["messages"]).unwrap();
        assert!(
            validate(&whole).is_empty(),
            "pairs broken: {:?}",
            validate(&whole)
        );
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] != "user" || !prompts.contains(&text_of(&last["content"])) {
            continue; // a continuation after tool results
        }
        let context = loaded_context(&body);
        let tokens: usize = count_messages(&Cl100k, &context)
            .await
            .unwrap()
            .iter()
            .sum();
        assert!(
            tokens <= BUDGET,
            "{tokens} tokens loaded, budget {BUDGET}: {context:?}"
        );
        let summaries = context.iter().filter(|m| summary::is_summary(m)).count();
        if summaries_seen > 0 {
            assert_eq!(summaries, 1, "one summary once compaction ran: {context:?}");
            with_summary += 1;
        }
    }
    with_summary
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_is_sent_the_trimmed_context_and_goes_on_after_a_restart() {
    let server = ChatServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let prompts: Vec<String> = (0..16).map(prompt).collect();

    let first = Arc::new(Logged {
        inner: memory(&server, &db),
        appended: Mutex::new(Vec::new()),
    });
    let agent1 = agent(&server, first.clone());
    for p in &prompts[..10] {
        ask(&agent1, p).await;
    }
    let with_summary = check_requests(&server, &prompts).await;
    assert!(with_summary > 0, "compaction never ran in 10 turns");
    let appended = first.appended.lock().unwrap().clone();
    assert_eq!(first.inner.history("c1").await.unwrap(), appended);
    // Tool calls and their results reached the store.
    assert!(
        appended
            .iter()
            .any(|m| matches!(m, RigMessage::Assistant(t) if t.tool_calls().count() == 2))
    );
    drop(agent1);

    // A new process: a new memory over the same file.
    let requests_before = server.received().len();
    let second = Arc::new(Logged {
        inner: memory(&server, &db),
        appended: Mutex::new(Vec::new()),
    });
    let agent2 = agent(&server, second.clone());
    ask(&agent2, &prompts[10]).await;
    let after = server.received();
    let opened = &after[requests_before];
    assert!(
        !is_summary_request(opened),
        "the restart summarized again before the first call"
    );
    let context = loaded_context(opened);
    assert_eq!(context.iter().filter(|m| summary::is_summary(m)).count(), 1);
    for p in &prompts[11..] {
        ask(&agent2, p).await;
    }
    check_requests(&server, &prompts).await;
    let mut everything = appended;
    everything.extend(second.appended.lock().unwrap().clone());
    assert_eq!(second.inner.history("c1").await.unwrap(), everything);
}

#[tokio::test]
async fn clear_empties_the_context_and_keeps_the_history() {
    let memory = RigMemory::new(1_000);
    let id = ConversationId::from("c");
    memory
        .append(&id, vec![RigMessage::user("a"), RigMessage::assistant("b")])
        .await
        .unwrap();
    memory.clear(&id).await.unwrap();
    assert!(memory.load(&id).await.unwrap().is_empty());
    memory
        .append(&id, vec![RigMessage::user("c")])
        .await
        .unwrap();
    assert_eq!(memory.load(&id).await.unwrap(), vec![RigMessage::user("c")]);
    assert_eq!(memory.history("c").await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_conversation_id_that_names_carries_is_refused() {
    let memory = RigMemory::new(1_000);
    let err = memory.load(&"x#rig-carry".into()).await.unwrap_err();
    assert!(err.to_string().contains("choose another id"), "{err}");
}
