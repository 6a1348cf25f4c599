//! A bad summary never replaces or erases anything: cut off, refused,
//! failed, empty, blank, not from the assistant, asking for tools, or the
//! call itself failing. And a failure is not retried on every turn.
//!
//! Sizes as in `threshold.rs`: rounds of 50 tokens; rounds 1-6 and the
//! question u7 hold 310 tokens, of which rounds 1-4 (200) are older than
//! the two kept turns.

use crate::common;

use std::sync::Arc;

use common::{reply, said, user};
use memory_compact::{Compact, CompactEvent, EventLog, FallbackReason, FileOps, body};
use memory_core::{
    Budget, CharTokenCounter, ChatResponse, FakeProvider, FakeReply, History, Message,
    ProviderError, StopReason, ToolCall, TrimStrategy, Usage, summary,
};
use memory_window::WindowDrop;

fn response(message: Message, stop_reason: StopReason) -> FakeReply {
    FakeReply::Response(ChatResponse {
        message,
        usage: Usage {
            input_tokens: 300,
            output_tokens: 20,
        },
        stop_reason,
    })
}

fn bad_replies() -> Vec<(&'static str, FakeReply)> {
    let text = || Message::assistant("## Goals\nThe user wants");
    vec![
        ("cut off", response(text(), StopReason::Length)),
        ("refused", response(text(), StopReason::Refusal)),
        ("failed mid-way", response(text(), StopReason::Error)),
        ("empty", FakeReply::Text(String::new())),
        ("blank", FakeReply::Text(" \n\t ".into())),
        (
            "not from the assistant",
            response(Message::user("## Goals\nx"), StopReason::Stop),
        ),
        (
            "asking for tools",
            response(
                Message::assistant_with_tools("", vec![ToolCall::new("c", "search", "{}")]),
                StopReason::ToolCalls,
            ),
        ),
        (
            "a failed call",
            // (A context overflow is sent again halved: see call.rs.)
            FakeReply::Error(ProviderError::Authentication("bad key".into())),
        ),
    ]
}

fn rounds(n: usize) -> Vec<Message> {
    let mut m = Vec::new();
    for i in 1..=n {
        m.extend([user(i), reply(i)]);
    }
    m
}

async fn trim(compact: &Compact, messages: &[Message], budget: usize) -> memory_core::TrimResult {
    compact
        .trim(messages, &Budget::tokens(budget), &CharTokenCounter)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_bad_reply_replaces_nothing_within_the_budget_or_over_it() {
    let mut messages = rounds(6);
    messages.push(user(7));
    let counts = common::counted(&messages).await;
    let history = History::new(&messages, &counts).unwrap();
    for (kind, bad) in bad_replies() {
        let log = Arc::new(EventLog::new());
        let compact = Compact::new(FakeProvider::new([bad.clone()]))
            .with_summarize_at_tokens(100)
            .with_observer(log.clone());

        // Within the budget: the history as it is.
        let result = trim(&compact, &messages, 10_000).await;
        assert_eq!(result.messages, messages, "{kind}");
        assert!(!result.replace && result.to_store().is_none(), "{kind}");
        assert!(
            matches!(log.events().last(), Some(CompactEvent::Failed { .. })),
            "{kind}: {:?}",
            log.events()
        );
        assert!(log.cost().calls == 1, "{kind}: the call is reported");

        // Over it: WindowDrop's projection, storage untouched.
        let compact = Compact::new(FakeProvider::new([bad]))
            .with_summarize_at_tokens(100)
            .with_observer(log.clone());
        let result = trim(&compact, &messages, 120).await;
        let expected = WindowDrop::new().window(&history, &Budget::tokens(120));
        assert_eq!(result.messages, expected.messages, "{kind}");
        assert!(result.fits && result.to_store().is_none(), "{kind}");
        assert!(matches!(
            log.events().last(),
            Some(CompactEvent::Fallback {
                reason: FallbackReason::Failed,
                ..
            })
        ));
    }
}

#[tokio::test]
async fn a_bad_reply_never_erases_the_previous_summary() {
    let previous = body::message("## State\nThe parser is done.", &FileOps::new());
    let mut messages = vec![Message::system("rules"), previous.clone()];
    messages.extend(rounds(6));
    messages.push(user(7));
    for (kind, bad) in bad_replies() {
        let compact = Compact::new(FakeProvider::new([bad.clone()])).with_summarize_at_tokens(100);
        let result = trim(&compact, &messages, 10_000).await;
        assert_eq!(result.messages, messages, "{kind}");
        // Over the budget, with a fresh strategy (so the call is made again).
        let compact = Compact::new(FakeProvider::new([bad])).with_summarize_at_tokens(100);
        let result = trim(&compact, &messages, 150).await;
        assert!(result.messages.contains(&previous), "{kind}");
        assert!(result.fits && result.to_store().is_none(), "{kind}");
    }
}

#[tokio::test]
async fn after_a_failure_the_next_attempt_waits_for_the_threshold_again() {
    let fake = Arc::new(FakeProvider::new([
        FakeReply::Text(String::new()),
        FakeReply::Text(said("## State\nok")),
    ]));
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(100);
    let mut messages = rounds(5);
    // Turn 6: rounds 1-3 older (150 > 100): the call fails.
    messages.push(user(6));
    trim(&compact, &messages, 10_000).await;
    assert_eq!(fake.requests().len(), 1);
    // Turn 7: 200 older, below 150 + 100: no call.
    messages.extend([reply(6), user(7)]);
    let result = trim(&compact, &messages, 10_000).await;
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(result.messages, messages);
    // Turn 8: 250: tried again, and it works.
    messages.extend([reply(7), user(8)]);
    let result = trim(&compact, &messages, 10_000).await;
    assert_eq!(fake.requests().len(), 2);
    assert!(result.replace);
    // The task (u1) stays verbatim before the summary.
    assert_eq!(result.messages[0], user(1));
    assert!(summary::is_summary(&result.messages[1]));
    assert_eq!(
        result.messages[2..],
        [user(6), reply(6), user(7), reply(7), user(8)]
    );
}

#[tokio::test]
async fn a_summary_no_shorter_than_what_it_covers_replaces_nothing() {
    // Rounds 1-4 (200 tokens) are due; the reply is longer than they are.
    let mut messages = rounds(6);
    messages.push(user(7));
    let long = said(&format!(
        "## State\n{}",
        "Every detail, restated. ".repeat(60)
    ));
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(FakeProvider::new([FakeReply::Text(long)]))
        .with_summarize_at_tokens(100)
        .with_observer(log.clone());
    let result = trim(&compact, &messages, 10_000).await;
    assert_eq!(result.messages, messages);
    assert!(!result.replace && result.to_store().is_none());
    assert!(
        log.events().iter().any(|e| matches!(
            e,
            CompactEvent::Failed {
                failure: memory_compact::Failure::NotSmaller { before, after },
                ..
            } if after >= before
        )),
        "{:?}",
        log.events()
    );
    // Not asked again until the threshold is passed again.
    let again = trim(&compact, &messages, 10_000).await;
    assert_eq!(again.messages, messages);
    assert_eq!(log.cost().calls, 1);
}

#[tokio::test]
async fn the_view_shown_after_a_failure_trims_to_itself() {
    // Over the budget (310 > 300) the call fails and WindowDrop shows the
    // task, rounds 2-6 and u7 (270). Trimmed again, that view still holds
    // rounds 2-4 (150) past the threshold: it waits like the history it
    // was shown for. A history that goes on from it waits until the
    // threshold has been appended, however much the view left out.
    let fake = Arc::new(FakeProvider::new([
        FakeReply::Text(String::new()),
        FakeReply::Text(said("## State\nok")),
    ]));
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(100);
    let mut messages = rounds(6);
    messages.push(user(7));
    let shown = trim(&compact, &messages, 300).await;
    assert_eq!(fake.requests().len(), 1);
    assert!(shown.fits && !shown.replace);
    assert_eq!(shown.messages[0], user(1));
    assert_eq!(shown.messages[1], user(2));
    let again = trim(&compact, &shown.messages, 300).await;
    assert_eq!(again.messages, shown.messages);
    assert_eq!(fake.requests().len(), 1);
    // One more round (50 tokens), shown within a budget it fits: it waits,
    // and so does its view trimmed again.
    let mut grown = shown.messages.clone();
    grown.extend([reply(7), user(8)]);
    let view = trim(&compact, &grown, 10_000).await;
    assert_eq!(view.messages, grown);
    assert_eq!(trim(&compact, &view.messages, 10_000).await.messages, grown);
    assert_eq!(fake.requests().len(), 1);
    // Two more (100 in all since the failure): tried again, and it works.
    grown.extend([reply(8), user(9)]);
    let result = trim(&compact, &grown, 10_000).await;
    assert_eq!(fake.requests().len(), 2);
    assert!(result.replace);
}
