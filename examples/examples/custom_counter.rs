//! Writing your own `TokenCounter`: here a word counter with a per-message
//! overhead, the shape of most provider-specific counting rules.
//!
//! `cargo run -p memory-examples --example custom_counter`

use memory_core::{Memory, MemoryError, Message, TokenCounter};
use memory_session::WindowMemory;

/// About 4/3 tokens a word, plus 4 tokens of framing per message.
struct Words;

#[async_trait::async_trait]
impl TokenCounter for Words {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        Ok((text.split_whitespace().count() * 4).div_ceil(3))
    }

    async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
        // The default sums every text the message sends (reply, reasoning,
        // tool names and arguments); add the framing on top.
        let body = self.count(&message.text()).await?;
        let calls: usize = message
            .tool_calls()
            .iter()
            .map(|c| c.name.len().div_ceil(4) + c.arguments.len().div_ceil(4))
            .sum();
        Ok(4 + body + calls)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), MemoryError> {
    let mut memory = WindowMemory::new(40).with_token_counter(Words);
    for i in 1..=5 {
        memory
            .record(Message::user(format!("question number {i}")))
            .await?;
        memory
            .record(Message::assistant(format!("answer number {i}")))
            .await?;
    }
    let context = memory.context().await?;
    println!(
        "{} of {} messages fit in 40 tokens",
        context.len(),
        memory.len()
    );
    Ok(())
}
