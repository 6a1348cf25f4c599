//! `SummarizeStrategy` against endpoints that misbehave: one that is down
//! (a circuit breaker stops calling it on every turn, and lets a probe
//! through later), one whose context window is smaller than the requests
//! (the strategy remembers the overflow and splits from then on), and the
//! temperature summaries are asked at.
//!
//! With `CharTokenCounter`, "Question from round N" is 6 tokens and "Answer
//! from round N" 5: 11 a round.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memory_core::{
    CharTokenCounter, ChatRequest, ChatResponse, FakeProvider, FakeReply, Memory, Message,
    ModelOptions, Provider, ProviderError, count_messages, summary, validate,
};
use memory_layer::BreakerPolicy;
use memory_session::WindowMemory;
use memory_summarize::SummarizeStrategy;

async fn record_round(memory: &mut WindowMemory, i: usize) {
    memory
        .record(Message::user(format!("Question from round {i}")))
        .await
        .unwrap();
    memory
        .record(Message::assistant(format!("Answer from round {i}")))
        .await
        .unwrap();
}

/// A summarizer that fails every call while it is down, and counts them.
#[derive(Default)]
struct Flaky {
    up: AtomicBool,
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl Provider for Flaky {
    async fn chat(&self, _: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.up.load(Ordering::Relaxed) {
            Ok(ChatResponse::text("Back."))
        } else {
            Err(ProviderError::Network("connection refused".into()))
        }
    }
}

#[tokio::test]
async fn a_dead_summarizer_is_called_a_handful_of_times_in_60_rounds() {
    let down = Arc::new(Flaky::default());
    let mut memory = WindowMemory::new(30).with_strategy(SummarizeStrategy::new(down.clone()));
    for i in 1..=60 {
        record_round(&mut memory, i).await;
        let context = memory.context().await.unwrap();
        assert!(validate(&context).is_empty());
        let counts = count_messages(&CharTokenCounter, &context).await.unwrap();
        assert!(counts.iter().sum::<usize>() <= 30);
        assert!(!context.iter().any(summary::is_summary));
    }
    let calls = down.calls.load(Ordering::Relaxed);
    assert!(
        calls <= 5,
        "{calls} calls to a dead summarizer in 60 rounds"
    );
    assert_eq!(memory.len(), 120, "history is never lost");
}

#[tokio::test]
async fn after_the_cool_down_a_probe_finds_the_summarizer_back() {
    let flaky = Arc::new(Flaky::default());
    let strategy = SummarizeStrategy::new(flaky.clone())
        .with_circuit_breaker(BreakerPolicy::new(2, Duration::from_millis(100)));
    // The task off: the summary comes first.
    let mut memory = WindowMemory::new(30)
        .with_strategy(strategy)
        .with_task(false);
    for i in 1..=8 {
        record_round(&mut memory, i).await;
        memory.context().await.unwrap();
    }
    assert_eq!(flaky.calls.load(Ordering::Relaxed), 2, "open after two");

    flaky.up.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let context = memory.context().await.unwrap();
    // The summary as stored: with the handle of the originals it folds.
    assert!(summary::is_summary(&context[0]), "{:?}", context[0]);
    assert!(context[0].text().ends_with("\nBack."), "{:?}", context[0]);
    assert_eq!(flaky.calls.load(Ordering::Relaxed), 3);
}

/// A summarizer whose context holds `limit` tokens of input: larger
/// requests are refused with a context overflow, as llama.cpp does.
struct SmallContext {
    limit: usize,
    sizes: Mutex<Vec<usize>>,
}

#[async_trait::async_trait]
impl Provider for SmallContext {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let size = request
            .messages
            .iter()
            .map(|m| CharTokenCounter::estimate(&m.text()))
            .sum();
        self.sizes.lock().unwrap().push(size);
        if size > self.limit {
            Err(ProviderError::ContextOverflow(format!(
                "request ({size} tokens) exceeds the available context size ({} tokens)",
                self.limit
            )))
        } else {
            Ok(ChatResponse::text("Gist."))
        }
    }
}

#[tokio::test]
async fn after_a_context_overflow_later_requests_are_split_from_the_start() {
    let endpoint = Arc::new(SmallContext {
        limit: 20,
        sizes: Mutex::default(),
    });
    let strategy = SummarizeStrategy::new(endpoint.clone())
        .with_prompt("Summarize.")
        .with_summary_max_tokens(12)
        .unwrap();
    // The task off: the summary comes first.
    let mut memory = WindowMemory::new(30)
        .with_strategy(strategy)
        .with_task(false);
    for i in 1..=4 {
        record_round(&mut memory, i).await;
    }
    let context = memory.context().await.unwrap();
    assert_eq!(context[0], summary::message("Gist."), "a summary landed");
    let first_turn = endpoint.sizes.lock().unwrap().len();
    let refused = |sizes: &[usize]| sizes.iter().filter(|&&s| s > 20).count();
    assert!(refused(&endpoint.sizes.lock().unwrap()) > 0);

    for i in 5..=12 {
        record_round(&mut memory, i).await;
        let context = memory.context().await.unwrap();
        assert_eq!(context[0], summary::message("Gist."), "round {i}");
    }
    let sizes = endpoint.sizes.lock().unwrap().clone();
    assert!(sizes.len() > first_turn, "later summaries were made");
    assert_eq!(
        refused(&sizes[first_turn..]),
        0,
        "a refused size was sent again: {sizes:?}"
    );
}

#[tokio::test]
async fn summaries_are_asked_at_temperature_zero_unless_configured() {
    let ask = |strategy: SummarizeStrategy, model: Arc<FakeProvider>| async move {
        let mut memory = WindowMemory::new(30).with_strategy(strategy);
        for i in 1..=4 {
            record_round(&mut memory, i).await;
        }
        memory.context().await.unwrap();
        model.requests()[0].options.temperature
    };
    let model = Arc::new(FakeProvider::new([FakeReply::Text("Gist.".into())]));
    let strategy = SummarizeStrategy::new(model.clone());
    assert_eq!(ask(strategy, model).await, Some(0.0));

    // Options without a temperature keep 0; a configured one is sent.
    let model = Arc::new(FakeProvider::new([FakeReply::Text("Gist.".into())]));
    let strategy = SummarizeStrategy::new(model.clone()).with_options(ModelOptions::default());
    assert_eq!(ask(strategy, model).await, Some(0.0));
    let model = Arc::new(FakeProvider::new([FakeReply::Text("Gist.".into())]));
    let strategy = SummarizeStrategy::new(model.clone()).with_temperature(0.7);
    assert_eq!(ask(strategy, model).await, Some(0.7));
}
