//! One agent turn (record a user and an assistant message, then take the
//! context) at 1k, 10k and 100k messages of history, budget 8,000 tokens,
//! a window of about 570 messages, with the index of what it leaves out
//! (the default) and without; against molo-agent 0.6's `WindowMemory`
//! measured in the same run.
//!
//! `cargo bench -p memory-session --bench turn`

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_main};
use memory_core::{Memory, Message};
use memory_session::WindowMemory;
use memory_session::left_out::IndexSettings;
use molo_agent::memory::Memory as _;

const BUDGET: usize = 8_000;
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn text(i: usize) -> String {
    format!("message {i:>6}: the quick brown fox jumps over the lazy dog")
}

/// A memory of `$size` messages after a system prompt, built with
/// `$memory` from `$message` (system, user, assistant constructors), its
/// context taken once.
macro_rules! filled {
    ($memory:expr, $message:path, $size:expr) => {{
        let mut memory = $memory;
        memory
            .record_protected(<$message>::system("You are a helpful agent."))
            .await
            .expect("in-memory record");
        for i in 0..$size {
            let m = if i % 2 == 0 {
                <$message>::user(text(i))
            } else {
                <$message>::assistant(text(i))
            };
            memory.record(m).await.expect("in-memory record");
        }
        // The session's first context reads the whole history once (what
        // the index keeps from call to call); a turn is measured after it.
        std::hint::black_box(memory.context().await.expect("context"));
        memory
    }};
}

/// The time of `iters` turns of a memory `$fill` makes (again once a run
/// has grown its history by a tenth, so every size is measured at that
/// size; rebuilding is not timed).
macro_rules! turns {
    ($rt:expr, $iters:expr, $size:expr, $fill:expr, $message:path) => {
        $rt.block_on(async {
            let mut memory = $fill;
            let mut grown = 0;
            let mut spent = Duration::ZERO;
            for i in 0..$iters as usize {
                if grown > $size / 10 {
                    memory = $fill;
                    grown = 0;
                }
                let start = Instant::now();
                memory
                    .record(<$message>::user(text(i)))
                    .await
                    .expect("record");
                memory
                    .record(<$message>::assistant(text(i + 1)))
                    .await
                    .expect("record");
                let context = memory.context().await.expect("context");
                spent += start.elapsed();
                std::hint::black_box(context);
                grown += 2;
            }
            spent
        })
    };
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
        // With the index of what the context leaves out (the default), and
        // without it.
        let indexes = [
            ("memory-session", Some(IndexSettings::default())),
            ("memory-session-no-index", None),
        ];
        for (name, index) in indexes {
            group.bench_with_input(BenchmarkId::new(name, size), &size, |b, &size| {
                b.iter_custom(|iters| {
                    turns!(
                        rt,
                        iters,
                        size,
                        filled!(WindowMemory::new(BUDGET).with_index(index), Message, size),
                        Message
                    )
                });
            });
        }
        group.bench_with_input(
            BenchmarkId::new("molo-agent-0.6", size),
            &size,
            |b, &size| {
                use molo_agent::message::Message as M;
                b.iter_custom(|iters| {
                    turns!(
                        rt,
                        iters,
                        size,
                        filled!(molo_agent::WindowMemory::new(BUDGET), M, size),
                        M
                    )
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
