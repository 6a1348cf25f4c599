//! Throughput of [`PostgresStore`] against the server in
//! `MEMORY_POSTGRES_URL` (skipped with a notice when unset; under CI, an
//! unset variable fails): appends per
//! second of one message and of 100 messages per call, one writer and 16
//! writers on 16 sessions, and the latency of a compaction commit (a
//! summary and the ten newest messages replacing a view of fifty).
//!
//! `source .ci/postgres.sh && cargo bench -p memory-postgres --bench store`

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, Throughput, criterion_main};
use memory_core::{Message, Store, StoredMessage, summary};
use memory_postgres::PostgresStore;

const WRITERS: u64 = 16;

/// A message of about a hundred tokens.
fn message(i: usize) -> StoredMessage {
    let text = format!(
        "message {i}: {}",
        "the quick brown fox jumps over the lazy dog ".repeat(9)
    );
    StoredMessage::new(Message::user(text), 100, false)
}

fn bench(c: &mut Criterion) {
    let Some(url) = memory_core::test_util::POSTGRES.value() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let store = runtime
        .block_on(PostgresStore::connect_with(&url, WRITERS as usize))
        .expect("connect to MEMORY_POSTGRES_URL")
        .with_tenant(format!("bench-{nanos}"));

    let mut group = c.benchmark_group("postgres");
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

    group.bench_function("append/1 message per call, 16 writers", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            runtime.block_on(async {
                let writers: Vec<_> = (0..WRITERS)
                    .map(|w| {
                        let store = store.clone();
                        let n = iters / WRITERS + u64::from(w < iters % WRITERS);
                        tokio::spawn(async move {
                            for _ in 0..n {
                                store
                                    .append(&format!("writer-{w}"), vec![message(1)])
                                    .await
                                    .expect("append");
                            }
                        })
                    })
                    .collect();
                for writer in writers {
                    writer.await.expect("a writer");
                }
            });
            start.elapsed()
        });
    });

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
