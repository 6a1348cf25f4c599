//! Throughput of [`SqliteStore`] on a file in WAL mode with synchronous
//! commits: appends per second of one message and of 100 messages per
//! call, of one message per call from 16 concurrent writers with a commit
//! each and with group commit, and the latency of a compaction commit (a
//! summary and the ten newest messages replacing a view of fifty).
//!
//! `cargo bench -p memory-sqlite --bench store`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_main};
use memory_core::{Message, Store, StoredMessage, summary};
use memory_sqlite::SqliteStore;

/// A message of about a hundred tokens.
fn message(i: usize) -> StoredMessage {
    let text = format!(
        "message {i}: {}",
        "the quick brown fox jumps over the lazy dog ".repeat(9)
    );
    StoredMessage::new(Message::user(text), 100, false)
}

/// Concurrent writers in the "16 writers" benchmarks.
const WRITERS: u64 = 16;

/// Time for `iters` single-message appends from [`WRITERS`] tasks at once,
/// each to a session of its own.
async fn concurrent_appends(store: &Arc<SqliteStore>, name: &str, iters: u64) -> Duration {
    let each = iters.div_ceil(WRITERS);
    let start = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = Arc::clone(store);
            let session = format!("{name} {w}");
            tokio::spawn(async move {
                for _ in 0..each {
                    store
                        .append(&session, vec![message(1)])
                        .await
                        .expect("append");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("a writer");
    }
    // Per append asked for: scale the few extra away.
    start
        .elapsed()
        .mul_f64(iters as f64 / (each * WRITERS) as f64)
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(dir.path().join("bench.db")).expect("open the file");

    let mut group = c.benchmark_group("sqlite");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));

    group.throughput(Throughput::Elements(1));
    group.bench_function("append/1 message per call", |b| {
        b.to_async(&runtime).iter(|| async {
            store
                .append("single", vec![message(1)])
                .await
                .expect("append")
        });
    });

    for (name, store) in [
        ("a commit each", store.clone().with_group_commit(false)),
        ("group commit", store.clone()),
    ] {
        let store = Arc::new(store);
        group.bench_function(
            format!("append/1 message per call, {WRITERS} writers, {name}"),
            |b| {
                b.iter_custom(|iters| runtime.block_on(concurrent_appends(&store, name, iters)));
            },
        );
    }

    let batch: Vec<StoredMessage> = (0..100).map(message).collect();
    group.throughput(Throughput::Elements(100));
    group.bench_function("append/100 messages per call", |b| {
        b.to_async(&runtime).iter(|| async {
            store
                .append("batched", batch.clone())
                .await
                .expect("append")
        });
    });

    let view: Vec<StoredMessage> = std::iter::once(StoredMessage::new(
        summary::message("what happened so far, in a few sentences"),
        12,
        true,
    ))
    .chain((40..50).map(message))
    .collect();
    let mut version = runtime
        .block_on(store.append("compacted", (0..50).map(message).collect()))
        .expect("append");
    group.throughput(Throughput::Elements(1));
    group.bench_function("compaction commit", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let view = view.clone();
                let start = Instant::now();
                version = runtime
                    .block_on(store.replace_view("compacted", version, view))
                    .expect("replace the view");
                spent += start.elapsed();
            }
            spent
        });
    });
    group.finish();
}

mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
