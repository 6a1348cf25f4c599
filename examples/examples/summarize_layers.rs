//! A summarizer behind provider layers: each request metered and limited in
//! time, failed ones retried (honouring `Retry-After`), stacked in one
//! line; `SummarizeStrategy` adds its circuit breaker, temperature 0 and
//! splitting after a context overflow.
//!
//! Offline (the extractive summarizer) by default; set
//! `MEMORY_SUMMARIZER_URL` (e.g. `http://127.0.0.1:8080/v1`) and
//! `MEMORY_SUMMARIZER_MODEL` to summarize with an OpenAI-compatible server.
//!
//! `cargo run -p memory-examples --example summarize_layers`

use std::sync::Arc;
use std::time::Duration;

use memory_core::{Memory, Message, Provider, summary};
use memory_layer::{ProviderExt, RetryPolicy};
use memory_openai::OpenAiProvider;
use memory_session::WindowMemory;
use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), memory_core::MemoryError> {
    let backend: Arc<dyn Provider> = match (
        std::env::var("MEMORY_SUMMARIZER_URL"),
        std::env::var("MEMORY_SUMMARIZER_MODEL"),
    ) {
        (Ok(url), Ok(model)) => Arc::new(OpenAiProvider::new(url, model)),
        _ => Arc::new(ExtractiveSummarizer::new()),
    };
    // Innermost first: count every request sent, limit each attempt, retry.
    let metered = backend.metered();
    let meter = metered.meter();
    let summarizer = metered
        .with_timeout(Duration::from_secs(60))
        .with_retry(RetryPolicy::default());

    let strategy = SummarizeStrategy::new(summarizer)
        .with_summary_max_tokens(200)
        .unwrap()
        .with_max_input_tokens(6_000);
    let mut memory = WindowMemory::new(400).with_strategy(strategy);
    memory
        .record_protected(Message::system("You are a coding agent."))
        .await?;
    for i in 1..=12 {
        memory
            .record(Message::user(format!(
                "Step {i}: rename field_{i} in src/model.rs and run the tests"
            )))
            .await?;
        memory
            .record(Message::assistant(format!(
                "Renamed field_{i} to value_{i} in src/model.rs; cargo test passes ({} tests).",
                100 + i
            )))
            .await?;
    }
    let context = memory.context().await?;
    let summarized = context.iter().any(summary::is_summary);
    let stats = meter.snapshot();
    println!(
        "{} messages in context (summary: {summarized}); summarizer: {} requests, {} tokens in, {} out, failures: {}",
        context.len(),
        stats.calls,
        stats.input_tokens,
        stats.output_tokens,
        stats.by_class,
    );
    Ok(())
}
