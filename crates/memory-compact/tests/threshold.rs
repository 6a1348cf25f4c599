//! When Compact summarizes, what it keeps, and how often it calls: the
//! threshold, `keep_verbatim`, aged-out turns, the rolling merge.
//!
//! Sizes under `CharTokenCounter`: a user message is 40 characters (10
//! tokens), a reply 160 (40 tokens), a round 50 tokens. The context is
//! taken as an agent would, after recording the question and before the
//! reply, so at turn `i` the history is rounds 1..i-1 and the question u_i.
//! The memories have no index of what their contexts leave out
//! (`WindowMemory::with_index`): what a summary covers is the point here.

use crate::common;

use std::sync::Arc;

use common::{reply, said, sent, text, user};
use memory_compact::{Compact, CompactEvent, DEFAULT_SUMMARIZE_AT_TOKENS, EventLog, body};
use memory_core::{FakeProvider, FakeReply, Memory, Message, summary};
use memory_session::WindowMemory;

/// Records question `i`, takes the context, records reply `i`.
async fn turn(memory: &mut WindowMemory, i: usize) -> Vec<Message> {
    memory.record(user(i)).await.unwrap();
    let context = memory.context().await.unwrap();
    memory.record(reply(i)).await.unwrap();
    context
}

fn summaries(context: &[Message]) -> Vec<&Message> {
    context.iter().filter(|m| summary::is_summary(m)).collect()
}

#[tokio::test]
async fn summarizes_only_past_the_threshold_and_keeps_the_newest_turns() {
    let fake = Arc::new(FakeProvider::new([
        FakeReply::Text(said("## State\nsummary one")),
        FakeReply::Text(said("## State\nsummary two")),
    ]));
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(100);
    // The task off: round 1 is summarized like the others.
    let mut memory = WindowMemory::new(100_000)
        .with_index(None)
        .with_strategy(compact)
        .with_task(false);

    // Turn i: the tail is u_i and rounds i-1 and i-2; older are rounds
    // 1..=i-3, 50 (i-3) tokens. Turn 5: 100 tokens, not past 100.
    for i in 1..=5 {
        let context = turn(&mut memory, i).await;
        assert_eq!(context.len(), 2 * i - 1, "turn {i}: nothing summarized");
    }
    assert!(fake.requests().is_empty());

    // Turn 6: 150 > 100. Rounds 1-3 are folded; rounds 4 and 5 and the
    // question stay verbatim.
    let context = turn(&mut memory, 6).await;
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(
        context[1..],
        [user(4), reply(4), user(5), reply(5), user(6)]
    );
    assert!(body::text(&context[0]).unwrap().contains("summary one"));
    let request = sent(&fake, 0);
    for i in 1..=3 {
        assert!(request.contains(&user(i).text()) && request.contains(&reply(i).text()));
    }
    assert!(
        !request.contains(&user(4).text()),
        "kept turns are not sent"
    );
}

#[tokio::test]
async fn aged_out_turns_stay_verbatim_until_a_summary_covers_them_and_the_summary_rolls() {
    let fake = Arc::new(FakeProvider::new([
        FakeReply::Text(said("## State\nsummary one")),
        FakeReply::Text(said("## State\nsummary two")),
    ]));
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(100);
    // The task off: round 1 is summarized like the others.
    let mut memory = WindowMemory::new(100_000)
        .with_index(None)
        .with_strategy(compact)
        .with_task(false);
    for i in 1..=6 {
        turn(&mut memory, i).await;
    }
    // Stored now: S1, rounds 4 and 5, u6 a6. Turn 7 ages round 4 out (50
    // tokens uncovered), turn 8 round 5 (100): no call, both stay.
    for i in 7..=8 {
        let context = turn(&mut memory, i).await;
        assert_eq!(
            fake.requests().len(),
            1,
            "turn {i}: no call below the threshold"
        );
        assert!(context.contains(&user(4)) && context.contains(&reply(4)));
        assert_eq!(summaries(&context).len(), 1);
    }
    // Turn 9: rounds 4-6 uncovered, 150 > 100: one call, with the first
    // summary to merge and only the new rounds.
    let context = turn(&mut memory, 9).await;
    assert_eq!(fake.requests().len(), 2);
    let request = sent(&fake, 1);
    assert!(request.contains(&format!(
        "<previous-summary>\n{}\n</previous-summary>",
        said("## State\nsummary one")
    )));
    for i in 4..=6 {
        assert!(request.contains(&user(i).text()));
    }
    assert!(
        !request.contains(&user(3).text()),
        "covered turns are not sent again"
    );
    // One summary, the merged one, in place of the first.
    let found = summaries(&context);
    assert_eq!(found.len(), 1);
    let merged = body::text(found[0]).unwrap();
    assert!(merged.contains("summary two") && !merged.contains("summary one"));
    assert_eq!(
        context[1..],
        [user(7), reply(7), user(8), reply(8), user(9)]
    );
}

#[tokio::test]
async fn keep_verbatim_counts_rounds_before_the_question() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text(said("s"))]));
    // Keeping 4 turns: at turn 8, older are rounds 1-3 (150 > 100).
    let compact = Compact::new(fake.clone())
        .with_summarize_at_tokens(100)
        .with_keep_verbatim(4);
    // The task off: round 1 is summarized like the others.
    let mut memory = WindowMemory::new(100_000)
        .with_index(None)
        .with_strategy(compact)
        .with_task(false);
    for i in 1..=7 {
        turn(&mut memory, i).await;
    }
    assert!(fake.requests().is_empty());
    let context = turn(&mut memory, 8).await;
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(context.len(), 1 + 4 * 2 + 1);
    assert_eq!(context[1], user(4));
}

#[tokio::test]
async fn a_forty_turn_run_makes_a_handful_of_calls_and_loses_nothing_between_them() {
    // Rounds of 250 tokens (user 200 characters, reply 800), the default
    // threshold of 2,500 chosen (far within the budget, an unchosen one
    // waits for a cut): the first call when 11 rounds are older (turn 14),
    // then every 11 rounds (turns 25 and 36). Three calls, not one a turn.
    let fake =
        Arc::new(FakeProvider::new((1..=10).map(|k| {
            FakeReply::Text(said(&format!("## State\nsummary {k}")))
        })));
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(fake.clone())
        .with_summarize_at_tokens(DEFAULT_SUMMARIZE_AT_TOKENS)
        .with_observer(log.clone());
    let mut memory = WindowMemory::new(100_000)
        .with_index(None)
        .with_strategy(compact);
    let question = |i: usize| Message::user(text(&format!("q{i}"), 200));
    let answer = |i: usize| Message::assistant(text(&format!("r{i}"), 800));
    let mut calls_at = Vec::new();
    for i in 1..=40 {
        memory.record(question(i)).await.unwrap();
        let before = fake.requests().len();
        let context = memory.context().await.unwrap();
        if fake.requests().len() > before {
            calls_at.push(i);
        }
        // Every earlier round is in the context verbatim, or was sent to
        // the summarizer.
        let sent_so_far: String = (0..fake.requests().len()).map(|k| sent(&fake, k)).collect();
        for j in 1..i {
            assert!(
                context.contains(&question(j)) || sent_so_far.contains(&question(j).text()),
                "turn {i}: round {j} fell out of context uncovered"
            );
        }
        memory.record(answer(i)).await.unwrap();
    }
    assert_eq!(calls_at, vec![14, 25, 36]);
    // No round is summarized twice.
    for k in 1..fake.requests().len() {
        let earlier = sent(&fake, k - 1);
        let later = sent(&fake, k);
        for j in 1..=40 {
            assert!(
                !(earlier.contains(&question(j).text()) && later.contains(&question(j).text())),
                "round {j} sent in requests {} and {k}",
                k - 1
            );
        }
    }
    let completed = log
        .events()
        .iter()
        .filter(|e| matches!(e, CompactEvent::Completed { .. }))
        .count();
    assert_eq!(completed, 3);
    assert_eq!(log.cost().calls, 3);
}

#[tokio::test]
async fn a_summary_not_written_back_is_reapplied_instead_of_paid_for_again() {
    // A caller that shows the result but does not store it: the next
    // history starts with the same messages, so the summary is reused.
    use memory_core::{Budget, CharTokenCounter, TrimStrategy};
    let fake = Arc::new(FakeProvider::new([FakeReply::Text(said("## State\nonce"))]));
    let compact = Compact::new(fake.clone()).with_summarize_at_tokens(100);
    let mut history = Vec::new();
    for i in 1..=5 {
        history.extend([user(i), reply(i)]);
    }
    history.push(user(6));
    let budget = Budget::tokens(100_000);
    let first = compact
        .trim(&history, &budget, &CharTokenCounter)
        .await
        .unwrap();
    assert!(first.replace);
    history.extend([reply(6), user(7)]);
    let second = compact
        .trim(&history, &budget, &CharTokenCounter)
        .await
        .unwrap();
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(second.messages[..first.messages.len()], first.messages[..]);
    assert_eq!(second.messages.len(), first.messages.len() + 2);
}
