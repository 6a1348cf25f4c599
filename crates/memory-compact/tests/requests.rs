//! What a summary request carries: the summary cap less the summary's prefix and header as `max_tokens` (the
//! same setting as `memory-summarize`'s), temperature 0 unless configured,
//! and a transcript held to the input limit in tokens; and what a rejected
//! reply or a hook's blank summary is reported as.
//!
//! Sizes as in `threshold.rs`: rounds of 50 tokens; rounds 1-5 and the
//! question u6 hold 260 tokens, of which rounds 1-3 (150) are older than
//! the two kept turns.

use crate::common;

use std::sync::Arc;

use common::{reply, said, user};
use memory_compact::{Compact, CompactEvent, EventLog, Failure, HookDecision, Preparation};
use memory_core::{
    Budget, CharTokenCounter, ChatRequest, ChatResponse, FakeProvider, FakeReply, Message,
    ModelOptions, StopReason, TokenCounter, TrimStrategy, Usage,
};
use memory_summary_engine::Rejection;

fn turn_six() -> Vec<Message> {
    let mut m = Vec::new();
    for i in 1..=5 {
        m.extend([user(i), reply(i)]);
    }
    m.push(user(6));
    m
}

async fn first_request(compact: Compact, fake: &FakeProvider, messages: &[Message]) -> ChatRequest {
    compact
        .trim(messages, &Budget::tokens(10_000), &CharTokenCounter)
        .await
        .unwrap();
    fake.requests().remove(0)
}

fn answering() -> Arc<FakeProvider> {
    Arc::new(FakeProvider::new([FakeReply::Text(said("## State\nok"))]))
}

#[tokio::test]
async fn the_cap_is_max_tokens_and_the_temperature_is_zero_by_default() {
    let fake = answering();
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(100);
    let request = first_request(compact, &fake, &turn_six()).await;
    // Under a budget of 10,000 tokens the default cap is a twelfth of it,
    // and it holds the whole message: less the prefix, the line naming
    // what it stands for and the header (35 tokens of CharTokenCounter).
    assert_eq!(request.options.max_tokens, Some(833 - 35));
    assert_eq!(request.options.temperature, Some(0.0));
}

#[tokio::test]
async fn options_set_the_temperature_but_never_the_cap() {
    let fake = answering();
    let options = ModelOptions {
        temperature: Some(0.3),
        max_tokens: Some(7),
        ..ModelOptions::default()
    };
    let compact = Compact::new(fake.clone())
        .with_summarize_at_tokens(100)
        .with_summary_max_tokens(300)
        .unwrap()
        .with_options(options);
    let request = first_request(compact, &fake, &turn_six()).await;
    assert_eq!(request.options.max_tokens, Some(300 - 35));
    assert_eq!(request.options.temperature, Some(0.3));
}

#[tokio::test]
async fn the_input_limit_is_in_tokens_and_covers_the_whole_request() {
    let fake = answering();
    let mut messages = turn_six();
    // Round 1's reply grows to 4,000 characters: 1,000 tokens.
    messages[1] = Message::assistant(format!("a1 {}", "x".repeat(3_997)));
    let compact = Compact::new(fake.clone())
        .with_summarize_at_tokens(100)
        .with_max_input_tokens(600);
    let request = first_request(compact, &fake, &messages).await;
    let counter = CharTokenCounter;
    let mut tokens = 0;
    for message in &request.messages {
        tokens += counter.count(&message.text()).await.unwrap();
    }
    // Within the limit, give or take the note of what was left out.
    assert!(tokens <= 620, "{tokens}");
    assert!(request.messages[1].text().contains("characters left out"));
}

#[tokio::test]
async fn a_rejected_reply_is_reported_as_cores_rejection() {
    let cut = FakeReply::Response(ChatResponse {
        message: Message::assistant("## Goals\nThe user wants"),
        usage: Usage::default(),
        stop_reason: StopReason::Length,
    });
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(FakeProvider::new([cut]))
        .with_summarize_at_tokens(100)
        .with_observer(log.clone());
    compact
        .trim(&turn_six(), &Budget::tokens(10_000), &CharTokenCounter)
        .await
        .unwrap();
    assert!(log.events().iter().any(|e| matches!(
        e,
        CompactEvent::Failed {
            failure: Failure::Rejected(Rejection::Incomplete(StopReason::Length)),
            ..
        }
    )));
}

#[tokio::test]
async fn a_blank_summary_from_a_hook_is_reported_as_such() {
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(FakeProvider::default())
        .with_summarize_at_tokens(100)
        .with_observer(log.clone())
        .with_before_compaction(|_: &Preparation| HookDecision::Summary("  ".into()));
    let messages = turn_six();
    let result = compact
        .trim(&messages, &Budget::tokens(10_000), &CharTokenCounter)
        .await
        .unwrap();
    assert_eq!(result.messages, messages);
    assert!(log.events().iter().any(|e| matches!(
        e,
        CompactEvent::Failed {
            failure: Failure::BlankFromHook,
            ..
        }
    )));
}
