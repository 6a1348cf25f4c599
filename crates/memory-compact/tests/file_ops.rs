//! The files tool calls read and modified are listed in the summary,
//! accumulate across compactions, and survive a restart through the
//! summary's text.

use crate::common;

use std::sync::Arc;

use common::{said, text};
use memory_compact::{Compact, FileOps, HookDecision, Preparation, body};
use memory_core::{
    Budget, CharTokenCounter, FakeProvider, FakeReply, Message, ToolCall, TrimResult, TrimStrategy,
    summary,
};

/// A tool step whose result (600 characters) outweighs a summary with its
/// file lists: a summary longer than what it covers is refused.
fn step(id: &str, tool: &str, arguments: &str) -> [Message; 2] {
    [
        Message::assistant_with_tools("", vec![ToolCall::new(id, tool, arguments)]),
        Message::tool_result(id, text(&format!("result {id}"), 600)),
    ]
}

fn paths<'a>(set: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    set.into_iter().collect()
}

async fn trim(compact: &Compact, messages: &[Message]) -> TrimResult {
    compact
        .trim(messages, &Budget::tokens(10_000), &CharTokenCounter)
        .await
        .unwrap()
}

fn listed(result: &TrimResult) -> FileOps {
    let found = result
        .messages
        .iter()
        .find(|m| summary::is_summary(m))
        .expect("a summary");
    body::files(found).expect("Compact's own summary")
}

#[tokio::test]
async fn files_accumulate_across_compactions_and_survive_a_restart() {
    let fake = Arc::new(FakeProvider::new([
        // A model's own file list is replaced by the one kept by Compact.
        FakeReply::Text(said(
            "## State\none\n<modified-files>\nbogus.rs\n</modified-files>",
        )),
        FakeReply::Text(said("## State\ntwo")),
    ]));
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(20);
    let mut messages = vec![
        Message::system("agent"),
        Message::user("Refactor the crate."),
    ];
    messages.extend(step("1", "read_file", r#"{"path":"src/a.rs"}"#));
    messages.extend(step("2", "edit_file", r#"{"path":"src/b.rs"}"#));
    messages.extend(step("3", "run_tests", "{}"));
    messages.extend(step("4", "run_tests", "{}"));

    // First compaction: steps 1 and 2.
    let first = trim(&compact, &messages).await;
    assert!(first.replace);
    let files = listed(&first);
    assert_eq!(paths(files.read_only()), ["src/a.rs"]);
    assert_eq!(
        paths(files.modified.iter().map(String::as_str)),
        ["src/b.rs"]
    );
    assert_eq!(compact.file_ops(), files);

    // Written back; more steps; second compaction: the first summary and
    // steps 3 to 6. src/a.rs is modified now.
    let mut messages = first.messages.clone();
    messages.extend(step(
        "5",
        "str_replace_based_edit_tool",
        r#"{"command":"view","path":"src/c.rs"}"#,
    ));
    messages.extend(step("6", "write_file", r#"{"file_path":"src/a.rs"}"#));
    messages.extend(step("7", "run_tests", "{}"));
    messages.extend(step("8", "run_tests", "{}"));
    let second = trim(&compact, &messages).await;
    assert_eq!(fake.requests().len(), 2);
    let files = listed(&second);
    assert_eq!(paths(files.read_only()), ["src/c.rs"]);
    assert_eq!(
        paths(files.modified.iter().map(String::as_str)),
        ["src/a.rs", "src/b.rs"]
    );
    // The previous summary is sent as text, without its file lists.
    let request = common::sent(&fake, 1);
    assert!(request.contains("<previous-summary>\n## State\none\n"));
    assert!(!request.contains("bogus.rs") && !request.contains("<modified-files>"));

    // A new process: a fresh strategy over the stored history. What it
    // knows of the earlier files comes from the summary's text.
    let seen: Arc<std::sync::Mutex<Option<FileOps>>> = Arc::default();
    let keep = seen.clone();
    let restarted = Compact::new(FakeProvider::new([FakeReply::Text(said(
        "## State\nthree",
    ))]))
    .with_summarize_at_tokens(20)
    .with_before_compaction(move |p: &Preparation| {
        *keep.lock().unwrap() = Some(p.files.clone());
        HookDecision::Proceed
    });
    let mut messages = second.messages.clone();
    messages.extend(step("9", "cat", r#"{"file":"docs/d.md"}"#));
    messages.extend(step("10", "run_tests", "{}"));
    messages.extend(step("11", "run_tests", "{}"));
    let third = trim(&restarted, &messages).await;
    let files = listed(&third);
    assert_eq!(paths(files.read_only()), ["docs/d.md", "src/c.rs"]);
    assert_eq!(
        paths(files.modified.iter().map(String::as_str)),
        ["src/a.rs", "src/b.rs"]
    );
    assert_eq!(seen.lock().unwrap().clone(), Some(files));
}
