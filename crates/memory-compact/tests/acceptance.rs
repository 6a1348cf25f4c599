//! The shared acceptance as Compact uses it: the grounding check turned
//! off or replaced, and a cap too small for the summary's framing refused
//! when the strategy is built.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use memory_compact::Compact;
use memory_core::{CharTokenCounter, FakeProvider, FakeReply, History, Message, summary};
use memory_summary_engine::{NoGrounding, Rejection, SummarySettings};

/// What a template summarizer writes, whatever it is given.
const TEMPLATE: &str = "Earlier turns were folded away.";

fn messages() -> Vec<Message> {
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

/// Whether `compact` replaced the older history with a summary.
async fn summarized(compact: Compact) -> bool {
    let messages = messages();
    let counts = vec![15; messages.len()];
    let history = History::new(&messages, &counts).unwrap();
    let result = compact
        .compact_now(&history, &CharTokenCounter, None)
        .await
        .unwrap();
    result.replace && result.messages.iter().any(summary::is_summary)
}

fn template() -> Arc<FakeProvider> {
    Arc::new(FakeProvider::new([FakeReply::Text(TEMPLATE.into())]))
}

#[tokio::test]
async fn a_template_summary_is_refused_by_default_and_accepted_with_grounding_off() {
    assert!(!summarized(Compact::new(template())).await);
    let off = Compact::new(template())
        .with_summary(SummarySettings::new().with_grounding(NoGrounding))
        .unwrap();
    assert!(summarized(off).await);
}

#[tokio::test]
async fn a_custom_check_is_called_and_decides() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let check = move |source: &str, _: &str| -> Result<(), Rejection> {
        seen.fetch_add(1, Ordering::Relaxed);
        assert!(source.contains("field_1"));
        Ok(())
    };
    let compact = Compact::new(template())
        .with_summary(SummarySettings::new().with_grounding(check))
        .unwrap();
    assert!(summarized(compact).await);
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

#[test]
fn a_cap_that_cannot_hold_the_framing_is_refused_when_built() {
    // The summary prefix, the line naming the originals and Compact's
    // header: 35 tokens by the character estimate.
    let err = Compact::new(FakeProvider::default())
        .with_summary_max_tokens(35)
        .unwrap_err();
    assert_eq!((err.cap, err.framing), (35, 35));
    assert!(err.to_string().contains("cap of 35 tokens"));
    let settings = SummarySettings::new().with_summary_max_tokens(10);
    assert!(
        Compact::new(FakeProvider::default())
            .with_summary(settings)
            .is_err()
    );
    assert!(
        Compact::new(FakeProvider::default())
            .with_summary_max_tokens(37)
            .is_ok()
    );
}
