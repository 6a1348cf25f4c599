//! Control over compactions: a hook that declines or supplies the summary,
//! `compact_now` with instructions, the events and their cost; and what a
//! compaction must keep: protected messages in place, tool pairs whole.
//!
//! Sizes as in `threshold.rs`: rounds of 50 tokens; rounds 1-5 and the
//! question u6 hold 260 tokens, of which rounds 1-3 (150) are older than
//! the two kept turns.

use crate::common;

use std::sync::Arc;

use common::{reply, reply_with_usage, said, sent, user};
use memory_compact::{
    Compact, CompactCost, CompactEvent, EventLog, HookDecision, Preparation, body,
};
use memory_core::{
    Budget, CharTokenCounter, FakeProvider, FakeReply, History, Message, ToolCall, TrimResult,
    TrimStrategy, summary, validate,
};

fn turn_six() -> Vec<Message> {
    let mut m = Vec::new();
    for i in 1..=5 {
        m.extend([user(i), reply(i)]);
    }
    m.push(user(6));
    m
}

/// Trims `messages` with the task off: the sizes above count round 1 with
/// the others.
async fn trim(compact: &Compact, messages: &[Message], budget: usize) -> TrimResult {
    let counts = common::counted(messages).await;
    let history = History::new(messages, &counts).unwrap().forget_task();
    compact
        .trim_with_counts(&history, &Budget::tokens(budget), &CharTokenCounter)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_hook_that_declines_stops_the_call_and_the_replacement() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text("unused".into())]));
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(fake.clone())
        .with_summarize_at_tokens(100)
        .with_observer(log.clone())
        .with_before_compaction(|_: &Preparation| HookDecision::Decline);
    let messages = turn_six();
    let result = trim(&compact, &messages, 10_000).await;
    assert_eq!(result.messages, messages);
    assert!(result.to_store().is_none());
    assert!(fake.requests().is_empty());
    assert!(matches!(
        log.events()[..],
        [
            CompactEvent::Started { .. },
            CompactEvent::Declined { tokens_before: 260 }
        ]
    ));
}

#[tokio::test]
async fn a_hook_that_supplies_the_summary_is_used_without_a_call() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text("unused".into())]));
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(fake.clone())
        .with_summarize_at_tokens(100)
        .with_observer(log.clone())
        .with_before_compaction(|p: &Preparation| {
            assert_eq!(p.messages.len(), 6);
            assert_eq!(p.tokens, 150);
            HookDecision::Summary(format!(
                "## State\n{} messages, from the hook",
                p.messages.len()
            ))
        });
    let messages = turn_six();
    let result = trim(&compact, &messages, 10_000).await;
    assert!(fake.requests().is_empty());
    assert!(result.replace);
    assert_eq!(
        body::text(&result.messages[0]).unwrap(),
        "## State\n6 messages, from the hook"
    );
    assert!(matches!(
        log.events().last(),
        Some(CompactEvent::Completed { from_hook: true, cost, .. }) if *cost == CompactCost::default()
    ));
}

#[tokio::test]
async fn compact_now_forces_a_summary_with_its_instructions() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text(said("## State\nnow"))]));
    // Below the default threshold of 2,500 tokens.
    let compact = Compact::new(fake.clone());
    let messages = turn_six();
    let counts = common::counted(&messages).await;
    let history = History::new(&messages, &counts).unwrap().forget_task();
    assert_eq!(trim(&compact, &messages, 10_000).await.messages, messages);
    assert!(fake.requests().is_empty());
    let result = compact
        .compact_now(
            &history,
            &CharTokenCounter,
            Some("Keep the ticket numbers."),
        )
        .await
        .unwrap();
    assert!(result.replace && result.fits);
    assert_eq!(fake.requests().len(), 1);
    assert!(sent(&fake, 0).ends_with("Additional instructions: Keep the ticket numbers."));
    assert_eq!(result.messages[1..], messages[6..]);
    // Nothing new to summarize: unchanged, no call.
    let again = result.as_history().unwrap();
    let unchanged = compact
        .compact_now(&again, &CharTokenCounter, None)
        .await
        .unwrap();
    assert_eq!(unchanged.messages, result.messages);
    assert!(!unchanged.replace);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn compact_now_keeps_the_history_when_the_summary_is_no_shorter() {
    let long = said(&format!(
        "## State\n{}",
        "All of it, restated at length. ".repeat(80)
    ));
    let fake = Arc::new(FakeProvider::new([FakeReply::Text(long)]));
    let compact = Compact::new(fake.clone());
    let messages = turn_six();
    let counts = common::counted(&messages).await;
    let history = History::new(&messages, &counts).unwrap();
    let result = compact
        .compact_now(&history, &CharTokenCounter, None)
        .await
        .unwrap();
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(result.messages, messages);
    assert!(!result.replace);
}

#[tokio::test]
async fn events_report_tokens_before_and_after_and_the_calls_cost() {
    let fake = Arc::new(FakeProvider::new([reply_with_usage(
        "## State\nshort",
        1_234,
        56,
    )]));
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(fake)
        .with_summarize_at_tokens(100)
        .with_observer(log.clone());
    let result = trim(&compact, &turn_six(), 10_000).await;
    let events = log.events();
    assert!(matches!(
        events[0],
        CompactEvent::Started {
            tokens_before: 260,
            messages: 6,
            tokens: 150,
            split: false,
            background: false
        }
    ));
    let CompactEvent::Completed {
        tokens_before,
        tokens_after,
        messages,
        cost,
        from_hook,
    } = events[1].clone()
    else {
        panic!("{events:?}")
    };
    assert_eq!((tokens_before, messages, from_hook), (260, 6, false));
    assert_eq!(tokens_after, result.tokens());
    assert!(tokens_after < tokens_before);
    assert_eq!(
        cost,
        CompactCost {
            calls: 1,
            input_tokens: 1_234,
            output_tokens: 56
        }
    );
    assert_eq!(log.cost(), cost);
}

#[tokio::test]
async fn protected_messages_stay_in_place_and_tool_pairs_stay_whole() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text(said("## State\nok"))]));
    let compact = Compact::new(fake).with_summarize_at_tokens(20);
    let parallel = Message::assistant_with_tools(
        "",
        vec![
            ToolCall::new("a", "grep", r#"{"q":"fn main"}"#),
            ToolCall::new("b", "grep", r#"{"q":"fn run"}"#),
        ],
    );
    let messages = vec![
        Message::system("rules"),
        user(1),
        // Long enough that the summary, with the line naming what it
        // stands for, is shorter.
        Message::assistant(common::text("a1", 480)),
        Message::system("Always answer in French."), // protected, mid-history
        user(2),
        parallel,
        Message::tool_result("b", "src/run.rs:3"),
        Message::tool_result("a", "src/main.rs:1"),
        reply(2),
        user(3),
        reply(3),
        user(4),
    ];
    let result = common::trim_protected(&compact, &messages, &[3], 10_000).await;
    assert!(result.replace);
    // The task (u1) is protected too: it stays in place, the summary takes
    // the place of its reply.
    assert_eq!(
        result.messages[..4],
        [
            Message::system("rules"),
            user(1),
            result.messages[2].clone(),
            Message::system("Always answer in French.")
        ]
    );
    assert!(summary::is_summary(&result.messages[2]));
    assert_eq!(result.protected, vec![1, 2, 3]);
    assert!(validate(&result.messages).is_empty());
    // Rounds 2 (with its parallel calls) and 3 are kept whole, with u4.
    assert_eq!(result.messages[4..], messages[4..]);
}
