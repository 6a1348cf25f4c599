//! The summary cap holds the whole summary message, file list included,
//! and a reply that says nothing about what it covers is rejected.

use std::sync::Arc;

use memory_compact::{Compact, EventLog, Failure, body};
use memory_core::{
    Budget, CharTokenCounter, FakeProvider, FakeReply, Memory, Message, TokenCounter, ToolCall,
    TrimResult, TrimStrategy, summary,
};
use memory_session::WindowMemory;
use memory_summarize::ExtractiveSummarizer;
use memory_summary_engine::Rejection;
use memory_summary_engine::sections::{CONVERSATION, CURRENT_REQUEST, PREVIOUS_SUMMARY};

/// Turn `i` of a session that writes one new file a turn.
fn turn(i: usize) -> [Message; 4] {
    let path = format!("src/generated/module_{i:03}.rs");
    let id = format!("call_{i}");
    [
        Message::user(format!(
            "Step {i}: add {path} with the parser for record type {i}."
        )),
        Message::assistant_with_tools(
            "",
            vec![ToolCall::new(
                &id,
                "write_file",
                format!(r#"{{"path":"{path}","content":"pub fn parse_{i}() {{}}"}}"#),
            )],
        ),
        Message::tool_result(&id, format!("wrote {path} (1 line)")),
        Message::assistant(format!("Added parse_{i} in {path}; cargo check passes.")),
    ]
}

#[tokio::test]
async fn three_hundred_turns_each_touching_a_new_file_stay_within_budget_and_cap() {
    let budget = 2_000;
    let cap = 600;
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(ExtractiveSummarizer::new())
        .with_summarize_at_tokens(500)
        .with_summary_max_tokens(cap)
        .unwrap()
        .with_observer(log.clone());
    let mut memory = WindowMemory::new(budget).with_strategy(compact);
    memory
        .record_protected(Message::system("You are a coding agent."))
        .await
        .unwrap();
    let mut summaries = 0;
    let mut largest_list = 0;
    for i in 1..=300 {
        for message in turn(i) {
            memory.record(message).await.unwrap();
        }
        let context = memory.context().await.unwrap();
        let tokens = memory_core::count_messages(&CharTokenCounter, &context)
            .await
            .unwrap()
            .iter()
            .sum::<usize>();
        assert!(tokens <= budget, "turn {i}: {tokens} tokens");
        for message in context.iter().filter(|m| summary::is_summary(m)) {
            let size = CharTokenCounter.count_message(message).await.unwrap();
            assert!(size <= cap as usize, "turn {i}: a summary of {size} tokens");
            // The offline summarizer repeats none of the prompt's tags.
            let text = message.text();
            for section in [CONVERSATION, PREVIOUS_SUMMARY, CURRENT_REQUEST] {
                assert!(!text.contains(section.open), "turn {i}: {text}");
                assert!(!text.contains(section.close), "turn {i}: {text}");
            }
            let files = body::files(message).expect("Compact's own summary");
            largest_list = largest_list.max(files.len());
            summaries += 1;
        }
    }
    assert!(summaries > 0, "no summary was ever shown");
    // The list was cut: 300 files never fit a 600-token summary.
    let last = memory.context().await.unwrap();
    let shown = last.iter().find(|m| summary::is_summary(m)).unwrap();
    let body = summary::body(shown).unwrap();
    assert!(body.contains("more files"), "{body}");
    // The newest files written before the summary are the ones listed.
    let listed: Vec<usize> = body::files(shown)
        .unwrap()
        .modified
        .iter()
        .filter_map(|p| {
            p.strip_prefix("src/generated/module_")?
                .strip_suffix(".rs")?
                .parse()
                .ok()
        })
        .collect();
    let (oldest, newest) = (listed.iter().min().unwrap(), listed.iter().max().unwrap());
    assert!(
        *newest >= 290 && newest - oldest + 1 == listed.len(),
        "{body}"
    );
    assert!(largest_list > 10, "{largest_list}");
    // No summary was ever refused for its size against the cap (one no
    // shorter than the few turns it covered may be, early on).
    let refused = log
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e,
                memory_compact::CompactEvent::Failed { failure, .. }
                    if !matches!(failure, Failure::NotSmaller { .. })
            )
        })
        .count();
    assert_eq!(refused, 0, "{:?}", log.events());
}

/// Six turns, and what a compaction of them comes to with a model that
/// answers `reply` and a summary cap of `cap`, its events told to `log`.
async fn compacted(reply: String, cap: u32, log: Arc<EventLog>) -> (Vec<Message>, TrimResult) {
    let compact = Compact::new(FakeProvider::new([FakeReply::Text(reply)]))
        .with_summarize_at_tokens(50)
        .with_summary_max_tokens(cap)
        .unwrap()
        .with_observer(log);
    let messages: Vec<Message> = (1..=6).flat_map(turn).collect();
    let result = compact
        .trim(&messages, &Budget::tokens(100_000), &CharTokenCounter)
        .await
        .unwrap();
    (messages, result)
}

/// The rejections a compaction of six turns reports, with a model that
/// answers `reply` and a summary cap of `cap`; asserts nothing replaced.
async fn rejections(reply: String, cap: u32) -> Vec<Rejection> {
    let log = Arc::new(EventLog::new());
    let (messages, result) = compacted(reply, cap, log.clone()).await;
    assert_eq!(result.messages, messages, "nothing replaced");
    assert!(result.to_store().is_none());
    log.events()
        .into_iter()
        .filter_map(|e| match e {
            memory_compact::CompactEvent::Failed {
                failure: Failure::Rejected(rejection),
                ..
            } => Some(rejection),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_reply_that_says_nothing_about_what_it_covers_is_rejected() {
    let chatter = "I'm ready to assist with any code you'd like me to work on.";
    let found = rejections(chatter.into(), 1_024).await;
    assert!(
        matches!(found.as_slice(), [Rejection::Ungrounded { .. }]),
        "{found:?}"
    );
}

#[tokio::test]
async fn a_summary_over_its_cap_is_rejected() {
    let long = format!(
        "## State\nAdded parse_1 to parse_6 in src/generated. {}",
        "Every module compiles and its parser is in place. ".repeat(20)
    );
    let found = rejections(long, 100).await;
    assert!(
        matches!(found.as_slice(), [Rejection::OverCap { cap: 100, .. }]),
        "{found:?}"
    );
}

#[tokio::test]
async fn a_summary_a_few_lines_over_its_cap_keeps_its_first_lines() {
    // Twelve lines of about 12 tokens each: over a cap of 100 with the
    // prefix, the originals' line and the header, within it without the
    // last lines.
    let lines: Vec<String> = (1..=12)
        .map(|i| format!("- parse_{i} added to src/generated/mod_{i}.rs"))
        .collect();
    let reply = format!("## State\n{}", lines.join("\n"));
    let (_, result) = compacted(reply.clone(), 100, Arc::new(EventLog::new())).await;
    let summary = result
        .messages
        .iter()
        .find(|m| body::is_compact_summary(m))
        .expect("the summary landed");
    assert!(CharTokenCounter.count_message(summary).await.unwrap() <= 100);
    let text = body::text(summary).unwrap();
    assert!(text.starts_with("## State\n- parse_1 added"), "{text}");
    assert!(
        reply.starts_with(&text) && text.len() < reply.len(),
        "{text}"
    );
    assert!(!text.contains("parse_12"));
}
