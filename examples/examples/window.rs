//! An agent loop's memory: a protected system prompt, a long tool-calling
//! task, and a context that always fits the model's budget (and says so).
//!
//! `cargo run -p memory-examples --example window`

use memory_core::{Memory, Message, ToolCall, validate};
use memory_session::WindowMemory;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), memory_core::MemoryError> {
    let mut memory = WindowMemory::new(200);
    memory
        .record_protected(Message::system("You are a coding agent. Be precise."))
        .await?;
    memory
        .record(Message::user("Find why the build fails."))
        .await?;
    for step in 0..20 {
        let id = format!("call-{step}");
        memory
            .record(Message::assistant_with_tools(
                "",
                vec![ToolCall::new(&id, "shell", r#"{"cmd":"cargo build"}"#)],
            ))
            .await?;
        memory
            .record(Message::tool_result(
                &id,
                format!("error[E0{step:03}]: ..."),
            ))
            .await?;
    }
    let context = memory.fitted().await?;
    println!(
        "{} messages recorded, {} sent ({} tokens, fits: {}); tool pairing intact: {}",
        memory.history().await?.len(),
        context.messages.len(),
        context.tokens,
        context.fits,
        validate(&context.messages).is_empty()
    );
    Ok(())
}
