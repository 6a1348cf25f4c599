//! The task (the session's first user request) survives compaction: kept
//! verbatim in place, never sent to the summarizer, and kept by the
//! fallback when the summarizer fails, which uses the budget it has.

use crate::common;

use std::sync::Arc;

use common::{said, sent, text, tool_step};
use memory_compact::{Compact, CompactEvent, EventLog, FallbackReason};
use memory_core::{
    Budget, CharTokenCounter, FakeProvider, FakeReply, History, Message, ProviderError,
    TrimStrategy, structure, summary, validate,
};

/// A protected prompt, the task, `steps` tool steps of 14 tokens, then a
/// follow-up request that starts a new round and `after` more steps.
fn agent_session(steps: usize, after: usize) -> Vec<Message> {
    let mut m = vec![
        Message::system("You are a coding agent."),
        Message::user(text("Make every test in the crate pass", 400)),
    ];
    for k in 0..steps {
        m.extend(tool_step(&format!("s{k}"), "run_tests", "{}"));
    }
    m.push(Message::user("Please continue working on the task"));
    for k in 0..after {
        m.extend(tool_step(&format!("t{k}"), "run_tests", "{}"));
    }
    m
}

#[tokio::test]
async fn the_task_stays_verbatim_in_place_and_is_never_sent() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text(said(
        "## State\nTests run 1-20.",
    ))]));
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(100);
    let messages = agent_session(20, 2);
    let result = common::trim_protected(&compact, &messages, &[0], 10_000).await;
    assert!(result.replace);
    assert_eq!(
        result.messages[..2],
        messages[..2],
        "prompt and task in place"
    );
    assert!(summary::is_summary(&result.messages[2]));
    assert_eq!(result.protected[..3], [0, 1, 2]);
    assert!(validate(&result.messages).is_empty());
    assert!(
        !sent(&fake, 0).contains("Make every test"),
        "the task was sent"
    );
    // Compacting the result again keeps it where it is.
    let again = compact
        .trim_with_counts(
            &result.as_history().unwrap(),
            &Budget::tokens(10_000),
            &CharTokenCounter,
        )
        .await
        .unwrap();
    assert_eq!(again.messages[1], messages[1]);
}

#[tokio::test]
async fn a_failed_summarizer_falls_back_to_the_task_and_uses_the_budget() {
    // A summarizer that fails; a follow-up request has started a new round.
    let fake = Arc::new(FakeProvider::new([FakeReply::Error(
        ProviderError::Server {
            status: 500,
            message: "internal error".into(),
        },
    )]));
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(fake.clone())
        .with_summarize_at_tokens(100)
        .with_observer(log.clone());
    let messages = agent_session(40, 3);
    let counts = common::counted(&messages).await;
    let budget = 400;
    let result = common::trim_protected(&compact, &messages, &[0], budget).await;
    assert_eq!(fake.requests().len(), 1);
    assert!(matches!(
        log.events().last(),
        Some(CompactEvent::Fallback {
            reason: FallbackReason::Failed,
            ..
        })
    ));
    assert!(!result.replace && result.to_store().is_none() && result.fits);
    assert_eq!(result.messages[..2], messages[..2], "prompt and task kept");
    assert!(validate(&result.messages).is_empty());
    // The follow-up's round whole, and before it the task's round keeps its
    // newest steps: as many as the budget has room for.
    let follow_up = structure::current_question(&messages).unwrap();
    let shown_from = messages.len() - (result.messages.len() - 2);
    assert_eq!(result.messages[2..], messages[shown_from..]);
    assert!(shown_from < follow_up, "no step of the task's round kept");
    let next: usize = counts[structure::step_start(&messages, shown_from)..shown_from]
        .iter()
        .sum();
    assert!(result.tokens() <= budget && result.tokens() + next > budget);
    // Forgotten, the task is no longer protected: the older round may keep
    // it as its request, as any round does, but nothing holds it there.
    let forgotten = History::new(&messages, &counts)
        .unwrap()
        .forget_task()
        .protect(&[0]);
    let compact = Compact::new(FakeProvider::new([FakeReply::Error(
        ProviderError::Timeout(30_000),
    )]))
    .with_summarize_at_tokens(100);
    let result = compact
        .trim_with_counts(&forgotten, &Budget::tokens(budget), &CharTokenCounter)
        .await
        .unwrap();
    assert!(result.fits);
    assert!(
        result
            .protected
            .iter()
            .all(|&k| result.messages[k] != messages[1])
    );
}
