//! The shared acceptance as this strategy uses it: the grounding check
//! turned off or replaced, and a cap too small for the summary's framing
//! refused when the strategy is built.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use memory_core::{
    Budget, CharTokenCounter, FakeProvider, FakeReply, Message, TrimStrategy, summary,
};
use memory_summarize::SummarizeStrategy;
use memory_summary_engine::{NoGrounding, Rejection, SummarySettings};

/// What a template summarizer writes, whatever it is given: it shares no
/// salient term with the history below.
const TEMPLATE: &str = "Earlier turns were folded away.";

fn history() -> Vec<Message> {
    (1..=6)
        .flat_map(|i| {
            [
                Message::user(format!(
                    "Rename field_{i} in src/model_{i}.rs and rerun test_model_{i}.py"
                )),
                Message::assistant(format!(
                    "Renamed field_{i}; test_model_{i}.py passes with 1{i}3 cases."
                )),
            ]
        })
        .collect()
}

async fn trimmed(strategy: SummarizeStrategy) -> Vec<Message> {
    strategy
        .trim(&history(), &Budget::tokens(100), &CharTokenCounter)
        .await
        .unwrap()
        .messages
}

fn template() -> Arc<FakeProvider> {
    Arc::new(FakeProvider::new([FakeReply::Text(TEMPLATE.into())]))
}

#[tokio::test]
async fn a_template_summary_is_refused_as_ungrounded_by_default() {
    let messages = trimmed(SummarizeStrategy::new(template())).await;
    assert!(!messages.iter().any(summary::is_summary));
}

#[tokio::test]
async fn with_grounding_off_a_template_summary_is_accepted() {
    let settings = SummarySettings::new().with_grounding(NoGrounding);
    let strategy = SummarizeStrategy::new(template())
        .with_summary(settings)
        .unwrap();
    let messages = trimmed(strategy).await;
    assert!(messages.iter().any(|m| summary::body(m) == Some(TEMPLATE)));
}

#[tokio::test]
async fn a_custom_check_is_called_with_the_transcript_and_decides() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let check = move |source: &str, text: &str| -> Result<(), Rejection> {
        seen.fetch_add(1, Ordering::Relaxed);
        assert!(source.contains("field_1") && text == TEMPLATE);
        Ok(())
    };
    let strategy = SummarizeStrategy::new(template())
        .with_summary(SummarySettings::new().with_grounding(check))
        .unwrap();
    let messages = trimmed(strategy).await;
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    assert!(messages.iter().any(|m| summary::body(m) == Some(TEMPLATE)));
}

#[tokio::test]
async fn every_refusal_is_told_to_the_rejection_observer() {
    let refused = Arc::new(AtomicUsize::new(0));
    let count = refused.clone();
    let settings = SummarySettings::new().with_rejection_observer(move |r: &Rejection| {
        assert!(matches!(r, Rejection::Ungrounded { .. }));
        count.fetch_add(1, Ordering::Relaxed);
    });
    let strategy = SummarizeStrategy::new(template())
        .with_summary(settings)
        .unwrap();
    trimmed(strategy).await;
    assert_eq!(refused.load(Ordering::Relaxed), 1);
}

#[test]
fn a_cap_that_cannot_hold_the_framing_is_refused_when_built() {
    let model = FakeProvider::default();
    let err = SummarizeStrategy::new(model)
        .with_summary_max_tokens(7)
        .unwrap_err();
    // "Summary of prior context:\n" is 7 tokens by the character estimate.
    assert_eq!((err.cap, err.framing), (7, 7));
    let text = err.to_string();
    assert!(text.contains("cap of 7 tokens") && text.contains("framing of 7 tokens"));
    let settings = SummarySettings::new().with_summary_max_tokens(3);
    assert!(
        SummarizeStrategy::new(FakeProvider::default())
            .with_summary(settings)
            .is_err()
    );
    assert!(
        SummarizeStrategy::new(FakeProvider::default())
            .with_summary_max_tokens(8)
            .is_ok()
    );
}
