//! Composing strategies: a `Pipeline` is itself a `TrimStrategy`, and a
//! custom stage sits beside the library's own.
//!
//! `cargo run -p memory-examples --example pipeline`

use memory_core::{
    Budget, History, Memory, MemoryError, Pipeline, Selection, TokenCounter, TrimResult,
    TrimStrategy,
};
use memory_session::WindowMemory;
use memory_window::WindowDrop;

/// Drops empty assistant acknowledgements ("ok") from the view.
struct DropAcks;

#[async_trait::async_trait]
impl TrimStrategy for DropAcks {
    fn name(&self) -> &str {
        "drop-acks"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        _counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let mut selection = Selection::new(history);
        for (i, m) in history.messages().iter().enumerate() {
            let ack = m.is_assistant() && m.tool_calls().is_empty() && m.text() == "ok";
            if !ack || history.is_protected(i) {
                selection.keep(i..i + 1);
            }
        }
        let mut result = selection.finish(false, true);
        result.fits = budget.admits_tokens(result.tokens());
        Ok(result)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), MemoryError> {
    let pipeline = Pipeline::new().then(DropAcks).then(WindowDrop::new());
    let mut memory = WindowMemory::new(12).with_strategy(pipeline);
    for i in 1..=6 {
        memory
            .record(memory_core::Message::user(format!("step {i}")))
            .await?;
        memory.record(memory_core::Message::assistant("ok")).await?;
    }
    for m in memory.context().await? {
        println!("{}: {}", m.role(), m.text());
    }
    Ok(())
}
