//! One agent turn (record a user and an assistant message, then take the
//! context) at 1k, 10k and 100k messages of history, budget 8,000 tokens,
//! a window of about 570 messages; against molo-agent 0.6's `WindowMemory`
//! measured in the same run.
//!
//! `cargo bench -p memory-window --bench turn`

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_main};
use memory_core::{Memory, Message};
use memory_session::WindowMemory;
use molo_agent::memory::Memory as _;

const BUDGET: usize = 8_000;
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn text(i: usize) -> String {
    format!("message {i:>6}: the quick brown fox jumps over the lazy dog")
}

/// Rebuilds a memory once a run has grown its history by a tenth, so every
/// size is measured at that size; rebuilding is not timed.
async fn ours(size: usize) -> WindowMemory {
    let mut memory = WindowMemory::new(BUDGET);
    memory
        .record_protected(Message::system("You are a helpful agent."))
        .await
        .expect("in-memory record");
    for i in 0..size {
        let m = if i % 2 == 0 {
            Message::user(text(i))
        } else {
            Message::assistant(text(i))
        };
        memory.record(m).await.expect("in-memory record");
    }
    memory
}

async fn molo(size: usize) -> molo_agent::WindowMemory {
    use molo_agent::message::Message as M;
    let mut memory = molo_agent::WindowMemory::new(BUDGET);
    memory
        .record_protected(M::system("You are a helpful agent."))
        .await
        .expect("in-memory record");
    for i in 0..size {
        let m = if i % 2 == 0 {
            M::user(text(i))
        } else {
            M::assistant(text(i))
        };
        memory.record(m).await.expect("in-memory record");
    }
    memory
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("turn");
    group.sample_size(20);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    for size in SIZES {
        group.bench_with_input(
            BenchmarkId::new("memory-window", size),
            &size,
            |b, &size| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let mut memory = ours(size).await;
                        let mut grown = 0;
                        let mut spent = Duration::ZERO;
                        for i in 0..iters as usize {
                            if grown > size / 10 {
                                memory = ours(size).await;
                                grown = 0;
                            }
                            let start = Instant::now();
                            memory.record(Message::user(text(i))).await.expect("record");
                            memory
                                .record(Message::assistant(text(i + 1)))
                                .await
                                .expect("record");
                            let context = memory.context().await.expect("context");
                            spent += start.elapsed();
                            std::hint::black_box(context);
                            grown += 2;
                        }
                        spent
                    })
                });
            },
        );
        group.bench_with_input(
            BenchmarkId::new("molo-agent-0.6", size),
            &size,
            |b, &size| {
                use molo_agent::message::Message as M;
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let mut memory = molo(size).await;
                        let mut grown = 0;
                        let mut spent = Duration::ZERO;
                        for i in 0..iters as usize {
                            if grown > size / 10 {
                                memory = molo(size).await;
                                grown = 0;
                            }
                            let start = Instant::now();
                            memory.record(M::user(text(i))).await.expect("record");
                            memory
                                .record(M::assistant(text(i + 1)))
                                .await
                                .expect("record");
                            let context = memory.context().await.expect("context");
                            spent += start.elapsed();
                            std::hint::black_box(context);
                            grown += 2;
                        }
                        spent
                    })
                });
            },
        );
    }
    group.finish();
}

mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
