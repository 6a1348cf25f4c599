//! The same context, asked again: at the `Memory` level (with the index on,
//! a durable store, and compaction that lands between calls), asking for
//! the context twice with nothing recorded in between, or closing the
//! session and opening it again, gives the same messages byte for byte,
//! for every pipeline. A context that changes unasked breaks the
//! provider's prefix cache and the determinism the invariants promise.

use std::sync::Arc;

use memory_compact::Compact;
use memory_core::{Memory, Message, Pipeline, Store, ToolCall, TrimStrategy};
use memory_session::WindowMemory;
use memory_sqlite::SqliteStore;
use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
use memory_tests::conversation::{agent_plans, chat_plans};
use memory_thrift::Thrift;
use memory_window::WindowDrop;
use proptest::prelude::*;

/// A small budget: compaction and the index both act within a few turns.
const BUDGET: usize = 1_500;

/// Compaction's trigger, low enough to fold every few turns at [`BUDGET`].
const SUMMARIZE_AT: usize = 400;

/// Builds a fresh pipeline: a reopened session gets a new one, as a
/// restarted process would.
type Build = fn() -> Arc<dyn TrimStrategy>;

/// Every pipeline `memory` offers, with the stateful ones twice (with and
/// without a later stage).
fn pipelines() -> Vec<(&'static str, Build)> {
    fn compact() -> Compact {
        Compact::new(ExtractiveSummarizer::new()).with_summarize_at_tokens(SUMMARIZE_AT)
    }
    vec![
        ("window", || Arc::new(WindowDrop::new())),
        ("thrift", || Arc::new(Thrift::new())),
        ("summarize", || {
            Arc::new(SummarizeStrategy::new(ExtractiveSummarizer::new()))
        }),
        ("summarize,thrift", || {
            Arc::new(
                Pipeline::new()
                    .then(SummarizeStrategy::new(ExtractiveSummarizer::new()))
                    .then(Thrift::new()),
            )
        }),
        ("compact", || Arc::new(compact())),
        ("compact,thrift", || {
            Arc::new(Pipeline::new().then(compact()).then(Thrift::new()))
        }),
        ("compact,window", || {
            Arc::new(Pipeline::new().then(compact()).then(WindowDrop::new()))
        }),
    ]
}

/// One step of a coding agent: two parallel reads and their results.
fn step(k: usize) -> Vec<Message> {
    let (a, b) = (format!("a{k}"), format!("b{k}"));
    vec![
        Message::assistant_with_tools(
            format!("Step {k}: reading two files."),
            vec![
                ToolCall::new(a.clone(), "read", format!("{{\"path\": \"src/m{k}.rs\"}}")),
                ToolCall::new(
                    b.clone(),
                    "read",
                    format!("{{\"path\": \"tests/t{k}.rs\"}}"),
                ),
            ],
        ),
        Message::tool_result(a, format!("fn f_{k}() {{}}\n").repeat(20)),
        Message::tool_result(b, format!("#[test] fn t_{k}() {{}}\n").repeat(15)),
    ]
}

fn open(store: &Arc<dyn Store>, build: Build) -> WindowMemory {
    WindowMemory::new(BUDGET)
        .with_strategy(build())
        .with_store(store.clone(), "session")
}

fn sqlite() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("memory.db")).unwrap();
    (dir, Arc::new(store))
}

/// Asks `memory` for its context twice and a reopened copy once; all three
/// must agree.
async fn check_same(
    memory: &mut WindowMemory,
    store: &Arc<dyn Store>,
    build: Build,
) -> Result<(), String> {
    let first = memory.trimmed().await.map_err(|e| e.to_string())?;
    let again = memory.trimmed().await.map_err(|e| e.to_string())?;
    if let Some(at) = first_difference(&first.messages, &again.messages) {
        return Err(format!(
            "asked again: message {at} differs: {:?} against {:?}",
            first.messages.get(at),
            again.messages.get(at)
        ));
    }
    let reopened = open(store, build)
        .trimmed()
        .await
        .map_err(|e| e.to_string())?;
    // A compaction that failed waits for more material before it is tried
    // again; that wait is kept in memory, not in the store, so a session
    // opened again tries at once. Only then may it show another context.
    if reopened.to_store().is_some() && again.to_store().is_none() {
        return Ok(());
    }
    let (first, reopened) = (first.messages, reopened.messages);
    match first_difference(&first, &reopened) {
        Some(at) => Err(format!(
            "reopened: message {at} differs: {:?} against {:?}",
            first.get(at),
            reopened.get(at)
        )),
        None => Ok(()),
    }
}

fn first_difference(a: &[Message], b: &[Message]) -> Option<usize> {
    let at = a.iter().zip(b).position(|(x, y)| x != y);
    at.or((a.len() != b.len()).then(|| a.len().min(b.len())))
}

/// Runs `run` on every pipeline, each on a thread of its own (and a
/// runtime of its own), so that their runs overlap.
fn each_pipeline<F: Future<Output = ()>>(run: fn(&'static str, Build) -> F) {
    std::thread::scope(|scope| {
        for (name, build) in pipelines() {
            scope.spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(run(name, build));
            });
        }
    });
}

/// A long tool loop: compaction lands every few steps, the index lists what
/// the context sheds, turns drop out of what the summary covers.
#[test]
fn a_tool_loop_gives_the_same_context_asked_again_and_reopened() {
    each_pipeline(tool_loop);
}

async fn tool_loop(name: &'static str, build: Build) {
    let (_dir, store) = sqlite();
    let mut memory = open(&store, build);
    memory
        .record_protected(Message::system("You are a coding agent."))
        .await
        .unwrap();
    memory
        .record(Message::user("Fix the failing tests in the crate."))
        .await
        .unwrap();
    for k in 0..240 {
        for message in step(k) {
            memory.record(message).await.unwrap();
        }
        if let Err(e) = check_same(&mut memory, &store, build).await {
            panic!("{name}, step {k}: {e}");
        }
    }
}

/// A chat with questions: the index's question addendum must be the same
/// asked again and reopened.
#[test]
fn a_chat_gives_the_same_context_asked_again_and_reopened() {
    each_pipeline(chat);
}

async fn chat(name: &'static str, build: Build) {
    let (_dir, store) = sqlite();
    let mut memory = open(&store, build);
    for k in 0..150 {
        memory
            .record(Message::user(format!(
                "Day {k}: I walked to the harbour {k} times and saw boat number {}.",
                k * 7
            )))
            .await
            .unwrap();
        memory
            .record(Message::assistant(format!(
                "That is a lot of walking; boat {} sounds familiar.",
                k * 7
            )))
            .await
            .unwrap();
        memory
            .record(Message::user(format!(
                "Which boat did I see on day {}?",
                k / 2
            )))
            .await
            .unwrap();
        if let Err(e) = check_same(&mut memory, &store, build).await {
            panic!("{name}, round {k}: {e}");
        }
        memory
            .record(Message::assistant("Let me look."))
            .await
            .unwrap();
    }
}

proptest! {
    #![proptest_config(memory_tests::config(24))]

    /// Any chat or agent task, recorded one message at a time.
    #[test]
    fn any_conversation_gives_the_same_context(
        plan in prop_oneof![chat_plans(), agent_plans()],
        pick in 0usize..7,
    ) {
        let case = plan.build();
        let (name, build) = pipelines()[pick];
        let outcome = memory_tests::block_on(async {
            let (_dir, store) = sqlite();
            let mut memory = open(&store, build);
            for (i, message) in case.messages.iter().enumerate() {
                let recorded = if case.protected.contains(&i) {
                    memory.record_protected(message.clone()).await
                } else {
                    memory.record(message.clone()).await
                };
                recorded.map_err(|e| e.to_string())?;
                check_same(&mut memory, &store, build)
                    .await
                    .map_err(|e| format!("message {i}: {e}"))?;
            }
            Ok::<(), String>(())
        });
        prop_assert!(outcome.is_ok(), "{name}: {}", outcome.unwrap_err());
    }
}
