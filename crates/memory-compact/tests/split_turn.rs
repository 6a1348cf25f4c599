//! A round larger than what may be kept (one long agent task) is
//! summarized in two parts, the history before it and its own older
//! steps, and custom instructions reach both requests.
//!
//! Sizes: the protected system prompt; round 1 (u1 10 tokens, a1 40); the
//! current request q and six tool steps of 14 tokens each (`run_tests` 3,
//! `{}` 1, the result 10). Two turns kept: q and steps 5 and 6.

use crate::common;

use std::sync::Arc;

use common::{reply, said, sent, tool_step, user};
use memory_compact::{Compact, CompactEvent, EventLog, HookDecision, Preparation, body};
use memory_core::{
    Budget, CharTokenCounter, FakeProvider, FakeReply, History, Message, TrimStrategy, summary,
    validate,
};

fn long_task() -> Vec<Message> {
    let mut m = vec![
        Message::system("You are a coding agent."),
        user(1),
        reply(1),
        Message::user("Make every test in the crate pass."),
    ];
    for k in 1..=6 {
        m.extend(tool_step(&format!("s{k}"), "run_tests", "{}"));
    }
    m
}

fn split_provider() -> Arc<FakeProvider> {
    Arc::new(FakeProvider::new([
        FakeReply::Text(said("## Goals\nhistory part")),
        FakeReply::Text(said("## State\nturn part")),
    ]))
}

#[tokio::test]
async fn the_history_and_the_turns_older_steps_are_summarized_apart() {
    let fake = split_provider();
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(fake.clone())
        .with_summarize_at_tokens(20)
        .with_instructions("Name every failing test.")
        .with_observer(log.clone());
    let messages = long_task();
    let counts = common::counted(&messages).await;
    // The task (u1) forgotten: round 1 is the history summarized first.
    let history = History::new(&messages, &counts)
        .unwrap()
        .forget_task()
        .protect(&[0]);
    let result = compact
        .trim_with_counts(&history, &Budget::tokens(10_000), &CharTokenCounter)
        .await
        .unwrap();

    assert_eq!(fake.requests().len(), 2);
    let (first, second) = (sent(&fake, 0), sent(&fake, 1));
    assert!(first.contains(&user(1).text()) && !first.contains("s1"));
    assert!(!first.contains("<current-request>"));
    assert!(
        second
            .contains("<current-request>\nMake every test in the crate pass.\n</current-request>")
    );
    for k in 1..=4 {
        assert!(second.contains(&format!("result s{k}")));
    }
    assert!(!second.contains("result s5") && !second.contains(&user(1).text()));
    for request in [&first, &second] {
        assert!(request.contains("Additional instructions: Name every failing test."));
    }

    // The system prompt, one summary of both parts, the request, the two
    // newest steps: tool pairs intact.
    assert!(result.replace);
    assert_eq!(result.messages[0], messages[0]);
    assert!(summary::is_summary(&result.messages[1]));
    let text = body::text(&result.messages[1]).unwrap();
    assert!(text.starts_with("## Goals\nhistory part"));
    assert!(text.ends_with(&said(
        "## Earlier steps of the current request\n## State\nturn part"
    )));
    assert_eq!(
        result.messages[2..],
        messages[3..4]
            .iter()
            .chain(&messages[12..])
            .cloned()
            .collect::<Vec<_>>()[..]
    );
    assert!(validate(&result.messages).is_empty());
    assert!(matches!(
        log.events()[0],
        CompactEvent::Started {
            split: true,
            messages: 10,
            ..
        }
    ));
    assert!(matches!(log.events()[1], CompactEvent::Completed { cost, .. } if cost.calls == 2));
}

#[tokio::test]
async fn manual_instructions_and_the_hook_see_both_parts() {
    let fake = split_provider();
    let seen: Arc<std::sync::Mutex<Option<Preparation>>> = Arc::default();
    let keep = seen.clone();
    let compact = Compact::new(fake.clone())
        .with_instructions("Name every failing test.")
        .with_before_compaction(move |p: &Preparation| {
            *keep.lock().unwrap() = Some(p.clone());
            HookDecision::Proceed
        });
    let messages = long_task();
    let counts = common::counted(&messages).await;
    // The task (u1) forgotten: round 1 is the history summarized first.
    let history = History::new(&messages, &counts).unwrap().forget_task();
    // Below the default threshold: only a manual compaction summarizes.
    let result = compact
        .compact_now(&history, &CharTokenCounter, Some("List flaky tests apart."))
        .await
        .unwrap();
    assert!(result.replace);
    assert_eq!(fake.requests().len(), 2);
    for k in 0..2 {
        let request = sent(&fake, k);
        assert!(
            request.contains(
                "Additional instructions: Name every failing test.\nList flaky tests apart."
            ),
            "request {k}: {request}"
        );
    }
    let preparation = seen.lock().unwrap().clone().unwrap();
    assert!(preparation.manual);
    assert_eq!(preparation.messages, messages[1..3]);
    assert_eq!(preparation.turn_prefix, messages[4..12]);
    assert_eq!(
        preparation.instructions.as_deref(),
        Some("Name every failing test.\nList flaky tests apart.")
    );
}

#[tokio::test]
async fn a_failure_in_either_part_replaces_nothing() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text(said(
        "## Goals\nhistory part",
    ))]));
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(20);
    let messages = long_task();
    let result = compact
        .trim(&messages, &Budget::tokens(10_000), &CharTokenCounter)
        .await
        .unwrap();
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(result.messages, messages);
    assert!(result.to_store().is_none());
}

#[tokio::test]
async fn without_earlier_history_the_older_steps_are_one_request() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text(said(
        "## State\nsteps",
    ))]));
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(20);
    let mut messages = long_task();
    messages.drain(1..3);
    let result = compact
        .trim(&messages, &Budget::tokens(10_000), &CharTokenCounter)
        .await
        .unwrap();
    assert_eq!(fake.requests().len(), 1);
    assert!(sent(&fake, 0).contains("<current-request>"));
    // The summary follows the request it belongs to.
    assert_eq!(result.messages[..2], messages[..2]);
    assert!(summary::is_summary(&result.messages[2]));
    assert_eq!(result.messages[3..], messages[10..]);
}
