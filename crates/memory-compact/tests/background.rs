//! Background mode: the request starts past the trigger and never holds up
//! a turn; it is spliced when the budget is crossed, onto the messages it
//! summarized only; timeouts and retries are bounded; the status is idle
//! again whatever happens to the task; dropping the strategy cancels it; without
//! a runtime, or while it is pending, the turn is fitted by dropping.
//!
//! Budget 500 tokens, trigger 0.6 (300). Rounds of 50 tokens; at turn `i`
//! the history (rounds 1..i-1 and the question u_i) holds 50 (i - 1) + 10
//! tokens: 260 at turn 6, 310 at turn 7 (past the trigger, rounds 1-4
//! older than the kept turns: 200 tokens, at least min(2,500, 500 / 4)),
//! 510 at turn 11 (over the budget). Time is tokio's paused clock.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Act, Scripted, reply, said, text, user};
use memory_compact::{BackgroundStatus, Compact, CompactEvent, EventLog, Failure, FallbackReason};
use memory_core::{
    Budget, CharTokenCounter, FakeProvider, FakeReply, History, Message, TrimResult, TrimStrategy,
    summary,
};
use memory_window::WindowDrop;
use tokio::time::{Instant, sleep};

const BUDGET: usize = 500;

/// The threshold these tests set: a request once the older rounds hold
/// more (without it, one waits for as much as the foreground folds, three
/// quarters of the budget; see `by_default_a_request_waits_for_as_much_as_the_foreground_folds`).
const THRESHOLD: usize = 125;

/// The history at turn `i`: rounds 1..i-1 and the question u_i.
fn at_turn(i: usize) -> Vec<Message> {
    let mut m = Vec::new();
    for j in 1..i {
        m.extend([user(j), reply(j)]);
    }
    m.push(user(i));
    m
}

/// Trims `messages` with the task off: these tests are about timing, and
/// the sizes above count round 1 with the others.
async fn trim(compact: &Compact, messages: &[Message]) -> TrimResult {
    let counts = common::counted(messages).await;
    let history = History::new(messages, &counts).unwrap().forget_task();
    compact
        .trim_with_counts(&history, &Budget::tokens(BUDGET), &CharTokenCounter)
        .await
        .unwrap()
}

/// `WindowDrop`'s projection of `messages` at the budget, the task off.
async fn window_view(messages: &[Message]) -> Vec<Message> {
    let counts = common::counted(messages).await;
    let history = History::new(messages, &counts).unwrap().forget_task();
    WindowDrop::new()
        .window(&history, &Budget::tokens(BUDGET))
        .messages
}

fn background(provider: Arc<Scripted>, log: &Arc<EventLog>) -> Compact {
    Compact::background(provider)
        .with_summarize_at_tokens(THRESHOLD)
        .with_observer(log.clone())
}

/// Turns 1 to `last`: each shown as it is, no request started.
async fn idle_through(compact: &Compact, last: usize) {
    for i in 1..=last {
        let messages = at_turn(i);
        assert_eq!(trim(compact, &messages).await.messages, messages);
        assert_eq!(
            compact.background_status(),
            BackgroundStatus::Idle,
            "turn {i}"
        );
    }
}

fn answer(after_secs: u64, text: &str) -> Act {
    Act::Answer(Duration::from_secs(after_secs), said(text))
}

#[tokio::test(start_paused = true)]
async fn starts_past_the_trigger_never_waits_and_splices_when_the_budget_is_crossed() {
    let provider = Scripted::new(vec![answer(30, "## State\nbackground summary")]);
    let log = Arc::new(EventLog::new());
    let compact = background(provider.clone(), &log);
    idle_through(&compact, 6).await;

    // Turn 7: past the trigger. The request starts; the turn does not wait.
    let started = Instant::now();
    let messages = at_turn(7);
    let result = trim(&compact, &messages).await;
    assert_eq!(Instant::now(), started, "trim waited");
    assert_eq!(result.messages, messages);
    assert_eq!(compact.background_status(), BackgroundStatus::InFlight);
    assert!(matches!(
        log.events()[..],
        [CompactEvent::Started {
            background: true,
            messages: 8,
            tokens: 200,
            ..
        }]
    ));

    sleep(Duration::from_secs(31)).await;
    assert_eq!(compact.background_status(), BackgroundStatus::Ready);
    assert_eq!(provider.calls(), 1);

    // Within the budget the ready summary waits.
    for i in 8..=10 {
        let messages = at_turn(i);
        assert_eq!(trim(&compact, &messages).await.messages, messages);
    }
    assert_eq!(compact.background_status(), BackgroundStatus::Ready);

    // Turn 11 crosses it: rounds 1-4 (what was summarized at turn 7) are
    // replaced; rounds 5-10 and the question stay.
    let messages = at_turn(11);
    let result = trim(&compact, &messages).await;
    assert!(result.replace && result.fits);
    assert!(summary::is_summary(&result.messages[0]));
    assert_eq!(result.messages[1..], messages[8..]);
    let completed = log
        .events()
        .into_iter()
        .find(|e| matches!(e, CompactEvent::Completed { .. }))
        .unwrap();
    assert!(matches!(
        completed,
        CompactEvent::Completed { tokens_before: 510, messages: 8, cost, .. }
            if cost.calls == 1 && cost.input_tokens == 100 && cost.output_tokens == 10
    ));
    // The compacted history (about 340 tokens) is past the trigger with
    // rounds 5-8 older: the next summary starts at once.
    assert_eq!(compact.background_status(), BackgroundStatus::InFlight);
}

#[tokio::test(start_paused = true)]
async fn by_default_a_request_waits_for_as_much_as_the_foreground_folds() {
    let provider = Scripted::new(vec![answer(30, "## State\nbackground summary")]);
    let log = Arc::new(EventLog::new());
    let compact = Compact::background(provider.clone()).with_observer(log.clone());
    // Past the trigger from turn 7, but the rounds older than the kept
    // turns hold less than three quarters of the budget (375 tokens) until
    // turn 11: 200 tokens at turn 7, 350 at turn 10.
    idle_through(&compact, 10).await;
    // Turn 11 crosses the budget with 400 tokens to fold: the request
    // starts, and the turn drops from view meanwhile.
    let messages = at_turn(11);
    let result = trim(&compact, &messages).await;
    assert_eq!(result.messages, window_view(&messages).await);
    assert_eq!(compact.background_status(), BackgroundStatus::InFlight);
    assert!(matches!(
        log.events()[..],
        [
            CompactEvent::Fallback { .. },
            CompactEvent::Started {
                background: true,
                messages: 16,
                tokens: 400,
                ..
            }
        ]
    ));
    assert_eq!(provider.calls(), 0);
    sleep(Duration::from_secs(31)).await;
    assert_eq!(provider.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn by_default_a_request_waits_for_the_budget_to_be_crossed() {
    // Rounds of 25 tokens (a 10-token question, a 15-token reply): at
    // turn `i` the history holds 25 (i - 1) + 10 tokens. The rounds older
    // than the kept turns hold three quarters of the budget well within
    // it (by turn 18, 435 tokens), where the foreground would not
    // summarize; it does once the budget is crossed and its cut is due,
    // at turn 21 (510 tokens), and the background request starts there.
    let at = |i: usize| {
        let mut m = Vec::new();
        for j in 1..i {
            m.extend([user(j), Message::assistant(text(&format!("a{j}"), 60))]);
        }
        m.push(user(i));
        m
    };
    let provider = Scripted::new(vec![answer(30, "## State\nbackground summary")]);
    let log = Arc::new(EventLog::new());
    let compact = Compact::background(provider.clone()).with_observer(log.clone());
    for i in 1..=20 {
        let messages = at(i);
        assert_eq!(trim(&compact, &messages).await.messages, messages);
        assert_eq!(
            compact.background_status(),
            BackgroundStatus::Idle,
            "turn {i}"
        );
    }
    let messages = at(21);
    let result = trim(&compact, &messages).await;
    assert_eq!(result.messages, window_view(&messages).await);
    assert_eq!(compact.background_status(), BackgroundStatus::InFlight);
    sleep(Duration::from_secs(31)).await;
    assert_eq!(provider.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn while_pending_a_crossed_budget_drops_from_view_and_keeps_the_summary_valid() {
    let provider = Scripted::new(vec![answer(100, "## State\nslow summary")]);
    let log = Arc::new(EventLog::new());
    let compact = background(provider.clone(), &log);
    trim(&compact, &at_turn(7)).await;
    assert_eq!(compact.background_status(), BackgroundStatus::InFlight);

    let messages = at_turn(11);
    let result = trim(&compact, &messages).await;
    assert_eq!(result.messages, window_view(&messages).await);
    assert!(result.fits && result.to_store().is_none());
    assert!(matches!(
        log.events().last(),
        Some(CompactEvent::Fallback {
            reason: FallbackReason::Pending,
            ..
        })
    ));
    assert_eq!(compact.background_status(), BackgroundStatus::InFlight);

    // Storage was not touched, so the summary still fits the history.
    sleep(Duration::from_secs(101)).await;
    let result = trim(&compact, &at_turn(12)).await;
    assert!(result.replace);
    assert!(summary::is_summary(&result.messages[0]));
}

#[tokio::test(start_paused = true)]
async fn a_summary_of_messages_that_changed_is_discarded_not_spliced() {
    let provider = Scripted::new(vec![
        answer(1, "## State\nstale summary"),
        answer(0, "## State\nmanual summary"),
        answer(1000, "## State\nlater"),
    ]);
    let log = Arc::new(EventLog::new());
    let compact = background(provider.clone(), &log);
    let messages = at_turn(7);
    trim(&compact, &messages).await;
    sleep(Duration::from_secs(2)).await;
    assert_eq!(compact.background_status(), BackgroundStatus::Ready);

    // Another materialization rewrites the history meanwhile.
    let counts = common::counted(&messages).await;
    let rewritten = compact
        .compact_now(
            &History::new(&messages, &counts).unwrap(),
            &CharTokenCounter,
            None,
        )
        .await
        .unwrap();
    assert!(rewritten.replace);
    let mut messages = rewritten.messages.clone();
    let mut i = 7;
    let result = loop {
        messages.extend([reply(i), user(i + 1)]);
        i += 1;
        let result = trim(&compact, &messages).await;
        if !result.fits || result.messages != messages {
            break result;
        }
    };
    assert!(matches!(
        log.events().iter().find(|e| matches!(e, CompactEvent::Failed { .. })),
        Some(CompactEvent::Failed { failure: Failure::Stale, cost, .. }) if cost.calls == 1
    ));
    assert!(
        !result
            .messages
            .iter()
            .any(|m| m.text().contains("stale summary")),
        "a stale summary was spliced"
    );
    assert!(result.fits && !result.replace);
    // A fresh request for the history as it now is.
    assert_eq!(compact.background_status(), BackgroundStatus::InFlight);
}

#[tokio::test(start_paused = true)]
async fn a_hanging_request_times_out_a_bounded_number_of_times_and_the_status_is_idle_again() {
    let provider = Scripted::new(vec![Act::Hang]);
    let log = Arc::new(EventLog::new());
    let compact = background(provider.clone(), &log)
        .with_timeout(Duration::from_secs(10))
        .with_retries(2)
        .with_backoff(Duration::from_secs(1));
    trim(&compact, &at_turn(7)).await;
    // Attempts at 0 s, 11 s (after 10 s and a 1 s backoff), 23 s (after
    // 10 s and 2 s); the last times out at 33 s.
    sleep(Duration::from_millis(10_500)).await;
    assert_eq!(provider.calls(), 1);
    sleep(Duration::from_secs(1)).await;
    assert_eq!(provider.calls(), 2);
    assert_eq!(compact.background_status(), BackgroundStatus::InFlight);
    sleep(Duration::from_secs(22)).await;
    assert_eq!(provider.calls(), 3);
    assert_eq!(compact.background_status(), BackgroundStatus::Idle);
    assert!(provider.was_dropped(), "timed-out requests are dropped");
    assert!(matches!(
        log.events().last(),
        Some(CompactEvent::Failed { failure: Failure::TimedOut(t), cost, .. })
            if *t == Duration::from_secs(10) && cost.calls == 3
    ));
    sleep(Duration::from_secs(600)).await;
    assert_eq!(provider.calls(), 3, "retries are bounded");
}

#[tokio::test(start_paused = true)]
async fn after_a_panicking_request_the_status_is_idle_again() {
    let provider = Scripted::new(vec![Act::Panic, answer(0, "## State\nafter the panic")]);
    let compact = Compact::background(provider.clone()).with_summarize_at_tokens(THRESHOLD);
    trim(&compact, &at_turn(7)).await;
    sleep(Duration::from_secs(1)).await;
    assert_eq!(provider.calls(), 1);
    assert_eq!(compact.background_status(), BackgroundStatus::Idle);
    // The next turn past the trigger starts a new request.
    trim(&compact, &at_turn(8)).await;
    sleep(Duration::from_secs(1)).await;
    assert_eq!(provider.calls(), 2);
    assert_eq!(compact.background_status(), BackgroundStatus::Ready);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_strategy_cancels_the_request() {
    let provider = Scripted::new(vec![Act::Hang]);
    let compact = Compact::background(provider.clone()).with_summarize_at_tokens(THRESHOLD);
    trim(&compact, &at_turn(7)).await;
    sleep(Duration::from_secs(1)).await;
    assert_eq!(provider.calls(), 1);
    assert!(!provider.was_dropped());
    drop(compact);
    sleep(Duration::from_millis(1)).await;
    assert!(
        provider.was_dropped(),
        "the provider's future outlived the strategy"
    );
}

#[test]
fn without_a_runtime_the_turn_is_fitted_by_dropping() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text("unused".into())]));
    let log = Arc::new(EventLog::new());
    let compact = Compact::background(fake.clone())
        .with_summarize_at_tokens(THRESHOLD)
        .with_observer(log.clone());
    let messages = at_turn(11);
    let result = futures::executor::block_on(trim(&compact, &messages));
    assert!(result.fits && result.to_store().is_none());
    assert!(result.messages.len() < messages.len());
    assert_eq!(result.messages.last(), messages.last());
    assert!(fake.requests().is_empty());
    assert_eq!(compact.background_status(), BackgroundStatus::Idle);
    assert!(matches!(
        log.events()[..],
        [CompactEvent::Fallback {
            reason: FallbackReason::NoRuntime,
            ..
        }]
    ));
}

#[test]
fn without_a_runtime_the_foreground_mode_still_summarizes() {
    let fake = Arc::new(FakeProvider::new([FakeReply::Text(said("## State\nok"))]));
    let compact = Compact::new(fake.clone())
        .with_summarize_at_tokens(100)
        .with_timeout(Duration::from_secs(5))
        .with_retries(2);
    let result = futures::executor::block_on(trim(&compact, &at_turn(11)));
    assert!(result.replace);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_ready_summary_no_shorter_than_what_it_covers_is_not_spliced() {
    let long = said(&format!(
        "## State\n{}",
        "Everything, restated. ".repeat(60)
    ));
    let provider = Scripted::new(vec![answer(30, &long)]);
    let log = Arc::new(EventLog::new());
    let compact = background(provider.clone(), &log);
    trim(&compact, &at_turn(7)).await;
    sleep(Duration::from_secs(31)).await;
    assert_eq!(compact.background_status(), BackgroundStatus::Ready);

    let messages = at_turn(11);
    let result = trim(&compact, &messages).await;
    assert_eq!(result.messages, window_view(&messages).await);
    assert!(result.fits && result.to_store().is_none());
    assert!(log.events().iter().any(|e| matches!(
        e,
        CompactEvent::Failed {
            failure: Failure::NotSmaller { .. },
            ..
        }
    )));
    // Not asked again at once for the same material.
    assert_eq!(compact.background_status(), BackgroundStatus::Idle);
    assert_eq!(provider.calls(), 1);
}
