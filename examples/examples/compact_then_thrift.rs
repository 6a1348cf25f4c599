//! Compact upstream, thrift downstream: older turns are folded into one
//! rolling summary by a model, now and then; thrift fits every turn's view
//! into the budget without a call, and keeps the summary.
//!
//! The summarizer here is a small deterministic stand-in for a model (it
//! lists the user's requests it is shown); swap in any `Provider`, such as
//! an OpenAI-compatible one, for real summaries.
//!
//! `cargo run -p memory-examples --example compact_then_thrift`

use std::sync::Arc;

use memory_compact::{Compact, EventLog};
use memory_core::{
    ChatRequest, ChatResponse, Memory, MemoryError, Message, Pipeline, Provider, ProviderError,
    StopReason, ToolCall, Usage, count_messages, summary,
};
use memory_session::WindowMemory;
use memory_thrift::Thrift;

/// Writes a "summary" listing every user request it sees, the previous
/// summary's list included: deterministic, and enough to show the flow.
struct ListRequests;

#[async_trait::async_trait]
impl Provider for ListRequests {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let prompt = request
            .messages
            .last()
            .map(Message::text)
            .unwrap_or_default();
        let mut text = String::from("## Goals");
        let previous = prompt
            .split("<previous-summary>\n")
            .nth(1)
            .and_then(|rest| rest.split("\n</previous-summary>").next())
            .unwrap_or("");
        for line in previous.lines().filter(|l| l.starts_with("- ")) {
            text.push('\n');
            text.push_str(line);
        }
        for asked in prompt.lines().filter_map(|l| l.strip_prefix("user: ")) {
            text.push_str("\n- ");
            text.push_str(asked);
        }
        Ok(ChatResponse {
            usage: Usage {
                input_tokens: prompt.len().div_ceil(4) as u64,
                output_tokens: text.len().div_ceil(4) as u64,
            },
            message: Message::assistant(text),
            stop_reason: StopReason::Stop,
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), MemoryError> {
    const BUDGET: usize = 1_500;
    let log = Arc::new(EventLog::new());
    let compact = Compact::new(ListRequests)
        .with_summarize_at_tokens(1_000)
        .with_observer(log.clone());
    let pipeline = Pipeline::new().then(compact).then(Thrift::new());
    let mut memory = WindowMemory::new(BUDGET).with_strategy(pipeline);
    memory
        .record_protected(Message::system("You are a coding agent."))
        .await?;

    println!("turn  shown  stored  summary  calls");
    let mut context = Vec::new();
    for turn in 1..=16 {
        memory
            .record(Message::user(format!(
                "Task {turn}: rename the handler in src/handlers/h{turn}.rs"
            )))
            .await?;
        // Where the agent would call its model: the context it would send.
        context = memory.context().await?;
        let shown: usize = count_messages(&memory_core::CharTokenCounter, &context)
            .await?
            .iter()
            .sum();
        assert!(shown <= BUDGET);
        println!(
            "{turn:>4}  {shown:>5}  {:>6}  {:>7}  {:>5}",
            memory.total_tokens(),
            context.iter().any(summary::is_summary),
            log.cost().calls
        );
        // The agent's step: read the file, then answer.
        let id = format!("read_{turn}");
        memory
            .record(Message::assistant_with_tools(
                "",
                vec![ToolCall::new(
                    &id,
                    "read_file",
                    format!(r#"{{"path":"src/handlers/h{turn}.rs"}}"#),
                )],
            ))
            .await?;
        memory
            .record(Message::tool_result(
                &id,
                format!("pub fn handler_{turn}() {{}}\n").repeat(40),
            ))
            .await?;
        memory
            .record(Message::assistant(format!("Renamed handler_{turn}.")))
            .await?;
    }

    let cost = log.cost();
    println!(
        "\n{} summarizer calls, {} input and {} output tokens",
        cost.calls, cost.input_tokens, cost.output_tokens
    );
    if let Some(found) = context.iter().find(|m| summary::is_summary(m)) {
        println!("\nthe summary the model saw last:\n{}", found.text());
    }
    Ok(())
}
