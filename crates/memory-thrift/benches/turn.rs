//! One turn of `Thrift` over a 10k-message history (chat rounds and agent
//! steps with tool output), and over one agent round of 10k messages;
//! budget 8,000 tokens, counts already known, with `WindowDrop` on the same
//! history as the baseline.
//!
//! `cargo bench -p memory-thrift --bench turn`

use criterion::{BenchmarkId, Criterion, criterion_main};
use memory_core::{
    Budget, CharTokenCounter, History, Message, ToolCall, TrimStrategy, count_messages,
};
use memory_thrift::Thrift;
use memory_window::WindowDrop;

const TOPICS: [&str; 8] = [
    "deploy", "database", "billing", "parser", "kernel", "garden", "travel", "invoice",
];

/// `n` messages: rounds of a question, a tool step and an answer, on
/// rotating topics; the last question asks about an early topic.
fn history(n: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a helpful agent.")];
    let mut i = 0;
    while messages.len() + 4 <= n {
        let topic = TOPICS[i % TOPICS.len()];
        let id = format!("call-{i}");
        messages.push(Message::user(format!(
            "round {i}: what about the {topic} settings?"
        )));
        messages.push(Message::assistant_with_tools(
            "",
            vec![ToolCall::new(
                &id,
                "search",
                format!(r#"{{"q":"{topic} {i}"}}"#),
            )],
        ));
        messages.push(Message::tool_result(
            &id,
            format!("{topic} result {i}: ").repeat(12),
        ));
        messages.push(Message::assistant(format!(
            "The {topic} settings for round {i} look fine."
        )));
        i += 1;
    }
    messages.push(Message::user(
        "What did we decide about the billing settings?",
    ));
    messages
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    compare(c, &rt, "turn-10k", &history(10_000));
    // One agent round of ~5k steps: the calls of the round since its last
    // multiple of 32 are replayed.
    compare(c, &rt, "agent-round-10k", &agent_round(10_000));
}

/// Thrift and WindowDrop over `messages` (counts known, the system prompt
/// protected), budget 8,000 tokens, in one group.
fn compare(c: &mut Criterion, rt: &tokio::runtime::Runtime, name: &str, messages: &[Message]) {
    let counts = rt
        .block_on(count_messages(&CharTokenCounter, messages))
        .expect("counting");
    let history = History::new(messages, &counts)
        .expect("history")
        .protect(&[0]);
    let budget = Budget::tokens(8_000);
    let mut group = c.benchmark_group(name);
    group.sample_size(20);
    let thrift = Thrift::new();
    group.bench_function(BenchmarkId::new("thrift", messages.len()), |b| {
        b.iter(|| {
            rt.block_on(thrift.trim_with_counts(&history, &budget, &CharTokenCounter))
                .expect("trim")
        })
    });
    group.bench_function(BenchmarkId::new("window", messages.len()), |b| {
        b.iter(|| {
            rt.block_on(WindowDrop::new().trim_with_counts(&history, &budget, &CharTokenCounter))
                .expect("trim")
        })
    });
    group.finish();
}

/// About `n` messages: one request, then agent steps (a call and its
/// result, of 40 to 1,800 tokens) until the length is reached.
fn agent_round(n: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Make the billing tests pass."),
    ];
    let mut i = 0;
    while messages.len() + 2 <= n {
        let topic = TOPICS[i % TOPICS.len()];
        let id = format!("call-{i}");
        messages.push(Message::assistant_with_tools(
            format!("Step {i}: reading the {topic} module."),
            vec![ToolCall::new(
                &id,
                "read_file",
                format!(r#"{{"path":"src/{topic}.rs"}}"#),
            )],
        ));
        let lines = 2 + (i * 37) % 180;
        messages.push(Message::tool_result(
            &id,
            format!("{topic} line of output {i}\n").repeat(lines),
        ));
        i += 1;
    }
    messages
}

mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
