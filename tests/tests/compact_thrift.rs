//! Compact upstream, thrift downstream: the pipeline's view fits the
//! budget and keeps the summary, and what is stored is Compact's compacted
//! history, not thrift's projection.
//!
//! Sizes under `CharTokenCounter`: each round is a request (80 characters,
//! 20 tokens), a `read_file` call (3 + 7 tokens), its output (1,600
//! characters, 400 tokens) and a reply (20 tokens): 450 tokens. Eight rounds
//! and the question: about 3,650 tokens, of which rounds 1-6 (2,700) are
//! older than the two kept turns, past Compact's threshold of 500. The
//! compacted history (about 1,000 tokens) is still over the budget of 600,
//! which thrift meets by shedding the older tool outputs.

use std::sync::Arc;

use memory_compact::Compact;
use memory_core::{
    Budget, CharTokenCounter, FakeProvider, FakeReply, History, Memory, Message, Pipeline,
    ToolCall, TrimStrategy, count_messages, summary, validate,
};
use memory_session::WindowMemory;
use memory_thrift::Thrift;

const BUDGET: usize = 600;
const SUMMARY: &str = "## Goals\nPort every module to the new API.\n## State\nModules 1-6 ported.";

fn padded(prefix: &str, chars: usize) -> String {
    let mut text = prefix.to_string();
    while text.len() < chars {
        text.push_str(" lorem");
    }
    text.truncate(chars);
    text
}

fn round(i: usize) -> Vec<Message> {
    let id = format!("call_{i}");
    vec![
        Message::user(padded(&format!("Port module {i} to the new API"), 80)),
        Message::assistant_with_tools(
            "",
            vec![ToolCall::new(
                &id,
                "read_file",
                format!(r#"{{"path":"src/mod_{i}.rs"}}"#),
            )],
        ),
        Message::tool_result(&id, padded(&format!("// src/mod_{i}.rs"), 1_600)),
        Message::assistant(padded(&format!("Module {i} is ported; its tests pass"), 80)),
    ]
}

fn session() -> Vec<Message> {
    let mut m = vec![Message::system("You are a coding agent.")];
    for i in 1..=8 {
        m.extend(round(i));
    }
    m.push(Message::user(padded("Now port module 9", 80)));
    m
}

fn compact(model: Arc<FakeProvider>) -> Compact {
    Compact::new(model).with_summarize_at_tokens(500)
}

fn model() -> Arc<FakeProvider> {
    Arc::new(FakeProvider::new([FakeReply::Text(SUMMARY.into())]))
}

#[tokio::test]
async fn the_view_fits_keeps_the_summary_and_the_compacted_history_is_stored() {
    let messages = session();
    let counts = count_messages(&CharTokenCounter, &messages).await.unwrap();
    let history = History::new(&messages, &counts).unwrap().protect(&[0]);
    let budget = Budget::tokens(BUDGET);

    let pipeline = Pipeline::new().then(compact(model())).then(Thrift::new());
    let result = pipeline
        .trim_with_counts(&history, &budget, &CharTokenCounter)
        .await
        .unwrap();

    // The view: within the budget, valid, with the summary.
    assert!(
        result.fits && result.tokens() <= BUDGET,
        "{}",
        result.tokens()
    );
    assert!(validate(&result.messages).is_empty());
    let summaries: Vec<&Message> = result
        .messages
        .iter()
        .filter(|m| summary::is_summary(m))
        .collect();
    assert_eq!(summaries.len(), 1);
    assert!(summaries[0].text().contains("Modules 1-6 ported."));
    assert_eq!(result.messages[0], messages[0]);
    assert_eq!(result.messages.last(), messages.last());

    // Storage: Compact's output, not thrift's projection.
    assert!(!result.replace);
    let stored = result.to_store().expect("the compacted history is stored");
    assert!(stored.replace);
    let alone = compact(model())
        .trim_with_counts(&history, &Budget::tokens(100_000), &CharTokenCounter)
        .await
        .unwrap();
    assert_eq!(stored.messages, alone.messages);
    // The prompt, the task (round 1's request) verbatim, the summary, the
    // newest rounds.
    assert_eq!(stored.messages[..2], messages[..2]);
    assert_eq!(&stored.messages[2], summaries[0]);
    assert_eq!(stored.messages[3..], messages[25..]);
    assert_eq!(result.messages[1], messages[1], "the view keeps the task");
    assert!(stored.tokens() > BUDGET);
}

#[tokio::test]
async fn in_a_memory_the_next_turns_build_on_the_stored_summary() {
    let model = model();
    let pipeline = Pipeline::new()
        .then(compact(model.clone()))
        .then(Thrift::new());
    // Without the index: the test follows the stored summary's size.
    let mut memory = WindowMemory::new(BUDGET)
        .with_strategy(pipeline)
        .with_index(None);
    let messages = session();
    memory.record_protected(messages[0].clone()).await.unwrap();
    for m in &messages[1..] {
        memory.record(m.clone()).await.unwrap();
    }
    let context = memory.context().await.unwrap();
    let shown: usize = count_messages(&CharTokenCounter, &context)
        .await
        .unwrap()
        .iter()
        .sum();
    assert!(shown <= BUDGET);
    assert!(context.iter().any(summary::is_summary));
    // Stored: the system prompt, the task, the summary, rounds 7 and 8, the
    // question.
    assert_eq!(memory.len(), 1 + 1 + 1 + 8 + 1);
    // Nothing is deleted: the full history stays readable.
    assert_eq!(memory.history().await.unwrap(), messages);

    // The next turn: the answer to the question, a new question, and no new
    // summary (round 7 is older than the kept turns now, 450 tokens, below
    // the threshold); the view still fits.
    for m in round(9).into_iter().skip(1) {
        memory.record(m).await.unwrap();
    }
    memory
        .record(Message::user(padded("Now port module 10", 80)))
        .await
        .unwrap();
    let next = memory.context().await.unwrap();
    assert_eq!(model.requests().len(), 1);
    let shown: usize = count_messages(&CharTokenCounter, &next)
        .await
        .unwrap()
        .iter()
        .sum();
    assert!(shown <= BUDGET);
    assert!(next.iter().any(summary::is_summary));
    assert!(validate(&next).is_empty());
}

/// Recorded into SQLite through `compact,thrift`: the summary names the
/// turns it stands for, and after the store is closed and opened again one
/// recall of its handle returns exactly those originals (rounds 1-6 but
/// the task, kept verbatim: messages 2 to 24).
#[tokio::test]
async fn the_summary_names_its_originals_and_they_come_back_after_a_restart() {
    use memory_core::recall::RecallRequest;
    use memory_sqlite::SqliteStore;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("summary.db");
    let messages = session();
    let handle = {
        let pipeline = Pipeline::new().then(compact(model())).then(Thrift::new());
        let store = Arc::new(SqliteStore::open(&path).unwrap());
        let mut memory = WindowMemory::new(BUDGET)
            .with_strategy(pipeline)
            .with_store(store, "s");
        memory.record_protected(messages[0].clone()).await.unwrap();
        for m in &messages[1..] {
            memory.record(m.clone()).await.unwrap();
        }
        let context = memory.context().await.unwrap();
        let shown = context.iter().find(|m| summary::is_summary(m)).unwrap();
        summary::stands_for(shown).expect("the summary names its originals")
    };
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let memory = WindowMemory::new(BUDGET).with_store(store, "s");
    let back = memory
        .recall(&RecallRequest::new(handle.to_string()))
        .await
        .unwrap();
    assert_eq!(back.messages, messages[2..25]);
}
