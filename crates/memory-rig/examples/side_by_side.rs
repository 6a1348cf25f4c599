//! The same 60-turn, tool-using conversation of a real Rig agent, against an
//! OpenAI-compatible server on loopback, with four memories: `rig-memory`'s
//! `TokenWindowMemory` and `CompactingMemory` (its model-free
//! `TemplateCompactor`), and `memory-rig` with `window` and with
//! `compact,thrift` (summaries from the same server). Every request the
//! server receives is counted with cl100k.
//!
//! ```sh
//! cargo run -p memory-rig --example side_by_side -- [TURNS] [BUDGET]
//! ```

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use memory_compact::Compact;
use memory_core::{Message, Pipeline, Violation, count_messages, validate};
use memory_openai::OpenAiProvider;
use memory_openai::wire;
use memory_rig::RigMemory;
use memory_thrift::Thrift;
use memory_tokenizers::Cl100k;
use rig_agent::prelude::*;
use rig_core::completion::Message as RigMessage;
use rig_core::id::ConversationId;
use rig_core::memory::{Compactor, ConversationMemory, MemoryError};
use rig_core::providers::openai::OpenAIConfig;
use rig_core::wasm_compat::WasmBoxedFuture;
use rig_memory::{
    CompactingMemory, HeuristicTokenCounter, InMemoryConversationMemory, IntoFilter,
    TemplateCompactor, TokenWindowMemory,
};
use support::{ChatServer, ReadFile, is_summary_request, prompt, text_of};

const PREAMBLE: &str = "You are a coding assistant. Use the tools.";

/// A compactor that counts its calls.
struct Counted<C> {
    inner: C,
    calls: Arc<AtomicUsize>,
}

impl<C: Compactor> Compactor for Counted<C> {
    type Artifact = C::Artifact;

    fn compact<'a>(
        &'a self,
        id: &'a ConversationId,
        evicted: &'a [RigMessage],
        carry_over: Option<&'a Self::Artifact>,
    ) -> WasmBoxedFuture<'a, Result<Self::Artifact, MemoryError>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.compact(id, evicted, carry_over)
    }
}

/// What one memory did over the conversation.
#[derive(Debug, Default)]
struct Row {
    requests: usize,
    tokens: Vec<usize>,
    loaded: Vec<usize>,
    over_budget: usize,
    orphans: usize,
    summary_calls: usize,
}

async fn run(
    memory: impl ConversationMemory + 'static,
    server: &ChatServer,
    turns: usize,
    budget: usize,
) -> Row {
    let model = OpenAIConfig::new("none")
        .with_base_url(server.base_url())
        .client()
        .chat("test-model");
    let agent = AgentBuilder::new(model)
        .preamble(PREAMBLE)
        .tool(ReadFile)
        .memory(memory)
        .default_max_turns(4)
        .build();
    let prompts: Vec<String> = (0..turns).map(prompt).collect();
    for p in &prompts {
        if let Err(e) = agent.prompt(p.as_str()).conversation("c").await {
            println!("  turn failed: {e}");
        }
    }
    let mut row = Row::default();
    for body in server.received() {
        if is_summary_request(&body) {
            row.summary_calls += 1;
            continue;
        }
        row.requests += 1;
        let messages = wire::from_value(&body["messages"]).unwrap_or_default();
        row.tokens.push(tokens(&messages).await);
        row.orphans += validate(&messages)
            .iter()
            .filter(|v| matches!(v, Violation::OrphanResult { .. }))
            .count();
        let last = body["messages"].as_array().and_then(|m| m.last().cloned());
        let opens =
            last.is_some_and(|l| l["role"] == "user" && prompts.contains(&text_of(&l["content"])));
        if opens {
            // The history the memory loaded: less the preamble and the prompt.
            let start = usize::from(messages.first() == Some(&Message::system(PREAMBLE)));
            let loaded = tokens(&messages[start..messages.len() - 1]).await;
            row.over_budget += usize::from(loaded > budget);
            row.loaded.push(loaded);
        }
    }
    row
}

async fn tokens(messages: &[Message]) -> usize {
    count_messages(&Cl100k, messages)
        .await
        .unwrap_or_default()
        .iter()
        .sum()
}

fn mean(values: &[usize]) -> usize {
    values.iter().sum::<usize>() / values.len().max(1)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let turns = args.next().and_then(Result::ok).unwrap_or(60);
    let budget = args.next().and_then(Result::ok).unwrap_or(1_500);
    println!(
        "{turns} turns, budget {budget} tokens (memory-rig counts with cl100k; rig-memory with its heuristic)\n"
    );

    let mut rows = Vec::new();
    let server = ChatServer::start().await;
    let memory = InMemoryConversationMemory::new().with_filter(
        TokenWindowMemory::new(budget, HeuristicTokenCounter::default()).into_filter(),
    );
    rows.push((
        "rig-memory TokenWindowMemory",
        run(memory, &server, turns, budget).await,
    ));

    let server = ChatServer::start().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let memory = CompactingMemory::new(
        InMemoryConversationMemory::new(),
        TokenWindowMemory::new(budget, HeuristicTokenCounter::default()),
        Counted {
            inner: TemplateCompactor::new(),
            calls: calls.clone(),
        },
    );
    let mut row = run(memory, &server, turns, budget).await;
    row.summary_calls = calls.load(Ordering::Relaxed);
    rows.push(("rig-memory CompactingMemory (template)", row));

    let server = ChatServer::start().await;
    let memory = RigMemory::new(budget).with_token_counter(Cl100k);
    rows.push((
        "memory-rig window",
        run(memory, &server, turns, budget).await,
    ));

    let server = ChatServer::start().await;
    let pipeline = Pipeline::new()
        .then(Compact::new(OpenAiProvider::new(
            server.base_url(),
            "test-model",
        )))
        .then(Thrift::new());
    let memory = RigMemory::new(budget)
        .with_strategy(pipeline)
        .with_token_counter(Cl100k);
    rows.push((
        "memory-rig compact,thrift",
        run(memory, &server, turns, budget).await,
    ));

    println!(
        "| memory | requests | tokens/request mean | max | loaded history mean | max | over budget | orphaned results | summary calls |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, r) in &rows {
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} of {} | {} | {} |",
            r.requests,
            mean(&r.tokens),
            r.tokens.iter().max().unwrap_or(&0),
            mean(&r.loaded),
            r.loaded.iter().max().unwrap_or(&0),
            r.over_budget,
            r.loaded.len(),
            r.orphans,
            r.summary_calls
        );
    }
}
