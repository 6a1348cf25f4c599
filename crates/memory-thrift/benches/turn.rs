//! One model call of `Thrift` as a session grows, with `WindowDrop` on the
//! same histories as the baseline (one group each); budget 8,000 tokens,
//! counts already known, the system prompt protected.
//!
//! Each iteration trims the history up to the next model call (before the
//! next assistant message), so that it extends the one trimmed before by a
//! step or a reply: what a `Memory` hands its strategy on every turn. A
//! strategy that keeps what it learnt from earlier calls is measured on
//! what it must add, not on a history it has seen already. The calls go
//! from 10k messages on (to 12k), and start again from 10k when they run
//! out.
//!
//! - `turn-10k`: short rounds (a question, a tool step, an answer) on
//!   rotating topics; every fourth question asks about an early topic.
//! - `agent-round-10k`: one request, then agent steps (a call and its
//!   result, of 40 to 1,800 tokens): one round of 5k steps and more.
//!
//! `cargo bench -p memory-thrift --bench turn`

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_main};
use memory_core::{
    Budget, CharTokenCounter, History, Message, ToolCall, TrimStrategy, count_messages,
};
use memory_thrift::Thrift;
use memory_window::WindowDrop;

const TOPICS: [&str; 8] = [
    "deploy", "database", "billing", "parser", "kernel", "garden", "travel", "invoice",
];

/// Messages of the history each group starts from.
const START: usize = 10_000;
/// Messages of the longest history trimmed.
const END: usize = 12_000;

/// About `n` messages: rounds of a question, a tool step and an answer, on
/// rotating topics; every fourth question asks about an early topic.
fn rounds(n: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a helpful agent.")];
    let mut i = 0;
    while messages.len() + 4 <= n {
        let topic = TOPICS[i % TOPICS.len()];
        let id = format!("call-{i}");
        let question = if i % 4 == 3 {
            format!(
                "What did we decide about the {topic} settings in round {}?",
                i / 7
            )
        } else {
            format!("round {i}: what about the {topic} settings?")
        };
        messages.push(Message::user(question));
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
    messages
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

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    compare(c, &rt, "turn-10k", &rounds(END));
    compare(c, &rt, "agent-round-10k", &agent_round(END));
}

/// The session `messages` with its counts, and the model calls from
/// [`START`] messages on, as the length of the history each one sees.
struct Session {
    messages: Vec<Message>,
    counts: Vec<usize>,
    /// Tokens of the first `k` messages, at `k`.
    totals: Vec<usize>,
    calls: Vec<usize>,
}

impl Session {
    fn new(rt: &tokio::runtime::Runtime, messages: &[Message]) -> Self {
        let counts = rt
            .block_on(count_messages(&CharTokenCounter, messages))
            .expect("counting");
        let totals = std::iter::once(0)
            .chain(counts.iter().scan(0, |sum, c| {
                *sum += c;
                Some(*sum)
            }))
            .collect();
        let calls = (START..messages.len())
            .filter(|&k| messages[k].is_assistant())
            .collect();
        Self {
            messages: messages.to_vec(),
            counts,
            totals,
            calls,
        }
    }

    /// The history of call `k` (cycling through the calls), as a `Memory`
    /// hands it over: counts and protected messages already known.
    fn history(&self, k: usize) -> History<'_> {
        let end = self.calls[k % self.calls.len()];
        History::from_parts(
            &self.messages[..end],
            &self.counts[..end],
            &[0],
            self.totals[end],
        )
        .expect("history")
    }
}

/// Thrift and WindowDrop over the calls of `messages`, in one group.
fn compare(c: &mut Criterion, rt: &tokio::runtime::Runtime, name: &str, messages: &[Message]) {
    let session = Session::new(rt, messages);
    let budget = Budget::tokens(8_000);
    let mut group = c.benchmark_group(name);
    group.sample_size(20);
    let strategies: [(&str, Box<dyn TrimStrategy>); 2] = [
        ("thrift", Box::new(Thrift::new())),
        ("window", Box::new(WindowDrop::new())),
    ];
    for (label, strategy) in &strategies {
        // The call each iteration trims next, carried across samples.
        let mut next = 0;
        group.bench_function(BenchmarkId::new(*label, START), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    let history = session.history(next);
                    next += 1;
                    let started = Instant::now();
                    let result = rt
                        .block_on(strategy.trim_with_counts(&history, &budget, &CharTokenCounter))
                        .expect("trim");
                    spent += started.elapsed();
                    std::hint::black_box(result);
                }
                spent
            })
        });
    }
    group.finish();
}

mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
