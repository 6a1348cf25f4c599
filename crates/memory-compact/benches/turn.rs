//! One chat turn (record a user and an assistant message, then take the
//! context) of a `WindowMemory` running `compact,thrift` (Compact with the
//! extractive summarizer, then Thrift), at 10k and 100k messages of
//! history, budget 8,000 tokens; against window drop (`WindowMemory`'s
//! default strategy) in the same run.
//!
//! Each session is grown turn by turn, taking the context after every turn
//! as a chat does, so its compactions happened along the way and the
//! timed turns see a session in its steady state: a summary, the covered
//! originals within their horizon, and the recent turns. The time of a
//! turn includes any compaction it runs (made in line, not in the
//! background). A session is built again (untimed) once measuring has
//! grown it by a tenth.
//!
//! `cargo bench -p memory-compact --bench turn`

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_main};
use memory_compact::Compact;
use memory_core::{Memory, Message, Pipeline};
use memory_session::WindowMemory;
use memory_summarize::ExtractiveSummarizer;
use memory_thrift::Thrift;

const BUDGET: usize = 8_000;
const SIZES: [usize; 2] = [10_000, 100_000];
const WORDS: [&str; 16] = [
    "parser", "lunch", "invoice", "garden", "deploy", "harbor", "violin", "ledger", "meteor",
    "pepper", "quartz", "saddle", "tunnel", "walnut", "yogurt", "zenith",
];

/// A short chat message: a number and a few topic words that recur now
/// and then, so relevance and summaries have something to work with.
fn text(i: usize) -> String {
    format!(
        "message {i:>6}: about the {} and the {}, see item {} of the {} list",
        WORDS[i % 16],
        WORDS[(i / 16) % 16],
        i % 97,
        WORDS[(i / 7) % 16],
    )
}

fn compact_thrift() -> WindowMemory {
    WindowMemory::new(BUDGET).with_strategy(
        Pipeline::new()
            .then(Compact::new(ExtractiveSummarizer::new()))
            .then(Thrift::new()),
    )
}

/// A session of `size` messages after a system prompt, the context taken
/// after every turn.
async fn grown(mut memory: WindowMemory, size: usize) -> WindowMemory {
    memory
        .record_protected(Message::system("You are a helpful assistant."))
        .await
        .expect("in-memory record");
    for i in (0..size).step_by(2) {
        turn(&mut memory, i).await;
    }
    memory
}

async fn turn(memory: &mut WindowMemory, i: usize) {
    memory.record(Message::user(text(i))).await.expect("record");
    memory
        .record(Message::assistant(text(i + 1)))
        .await
        .expect("record");
    std::hint::black_box(memory.context().await.expect("context"));
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("turn");
    group.sample_size(20);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    type Make = fn() -> WindowMemory;
    let strategies: [(&str, Make); 2] = [
        ("compact,thrift", compact_thrift),
        ("window", || WindowMemory::new(BUDGET)),
    ];
    for size in SIZES {
        for (name, make) in strategies {
            // Built on first use, so that a filter skips the building too;
            // built again, untimed, once measuring has grown it by a tenth.
            let mut session: Option<(WindowMemory, usize)> = None;
            group.bench_with_input(BenchmarkId::new(name, size), &size, |b, _| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let mut spent = Duration::ZERO;
                        for _ in 0..iters {
                            if session
                                .as_ref()
                                .is_none_or(|(_, next)| *next > size + size / 10)
                            {
                                session = Some((grown(make(), size).await, size));
                            }
                            let (memory, next) = session.as_mut().expect("built above");
                            let start = Instant::now();
                            turn(memory, *next).await;
                            spent += start.elapsed();
                            *next += 2;
                        }
                        spent
                    })
                });
            });
            if let Some((memory, _)) = &session {
                eprintln!(
                    "{name} at {size}: {} messages in the view, {} covered",
                    memory.len(),
                    memory.covered().len()
                );
            }
        }
    }
    group.finish();
}

mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
