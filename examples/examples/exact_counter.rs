//! Budgeting in exact tokens: `WindowMemory` counting with OpenAI's cl100k
//! encoding, behind a cache so each message is tokenized once however many
//! turns it stays in the window.
//!
//! `cargo run -p memory-examples --example exact_counter`

use std::sync::Arc;

use memory_core::{Memory, MemoryError, Message, TokenCounter};
use memory_session::WindowMemory;
use memory_tokenizers::{CachedCounter, Cl100k};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), MemoryError> {
    // Keep a handle on the counter to read its statistics later.
    let counter = Arc::new(CachedCounter::with_capacity(Cl100k, 4_096));
    let mut memory = WindowMemory::new(200).with_token_counter(counter.clone());

    memory
        .record_protected(Message::system("You are a concise coding assistant."))
        .await?;
    for turn in 1..=12 {
        memory
            .record(Message::user(format!(
                "Step {turn}: run the test suite again and tell me which tests still fail."
            )))
            .await?;
        memory
            .record(Message::assistant(format!(
                "After step {turn}, {} tests fail: test_parse_header and test_retry_backoff.",
                13 - turn
            )))
            .await?;
        // Where an agent would call its model.
        let context = memory.context().await?;
        let mut tokens = 0;
        for message in &context {
            tokens += counter.count_message(message).await?;
        }
        println!(
            "turn {turn:>2}: {:>2} of {:>2} messages in context, {tokens:>3} cl100k tokens",
            context.len(),
            memory.len()
        );
    }

    let stats = counter.stats();
    println!(
        "cache: {} hits, {} misses ({:.0}% hit rate), {} of {} entries",
        stats.hits,
        stats.misses,
        stats.hit_rate() * 100.0,
        stats.entries,
        stats.capacity
    );
    Ok(())
}
