//! Throughput of [`SqliteStore`] on a file in WAL mode with synchronous
//! commits: appends per second of one message and of 100 messages per
//! call, of one message per call from 16 concurrent writers with a commit
//! each and with group commit, and the latency of a compaction commit (a
//! summary and the ten newest messages replacing a view of fifty).
//!
//! Then the pair of 16-writer runs again, interleaved: rounds of half a
//! second of each, in alternating order, so that both see the same moments
//! of a shared machine; it prints each round's two throughputs and their
//! ratio, and the medians.
//!
//! `cargo bench -p memory-sqlite --bench store`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
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

/// Rounds of the interleaved pair.
const ROUNDS: usize = 9;
/// How long each of the pair runs in a round.
const SLICE: Duration = Duration::from_millis(500);
/// The interleaved pair's name, matched by a benchmark filter.
const PAIR: &str = "sqlite/append/1 message per call, 16 writers, group commit vs a commit each";

/// Appends per second of `store` from [`WRITERS`] writers for about
/// [`SLICE`].
fn rate(runtime: &tokio::runtime::Runtime, store: &Arc<SqliteStore>, name: &str) -> f64 {
    let burst = WRITERS * 8;
    let mut spent = Duration::ZERO;
    let mut appends = 0;
    while spent < SLICE {
        spent += runtime.block_on(concurrent_appends(store, name, burst));
        appends += burst;
    }
    appends as f64 / spent.as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn thousands(rate: f64) -> String {
    format!("{:.1}k/s", rate / 1e3)
}

/// The 16-writer pair in interleaved rounds: each round's throughputs and
/// ratio, then the medians.
fn pair() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(dir.path().join("pair.db")).expect("open the file");
    let each = Arc::new(store.clone().with_group_commit(false));
    let group = Arc::new(store);
    println!(
        "{PAIR}: {ROUNDS} interleaved rounds of {} ms each",
        SLICE.as_millis()
    );
    let (mut alone, mut grouped, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=ROUNDS {
        let (a, g) = if round % 2 == 1 {
            let a = rate(&runtime, &each, "pair, a commit each");
            (a, rate(&runtime, &group, "pair, group commit"))
        } else {
            let g = rate(&runtime, &group, "pair, group commit");
            (rate(&runtime, &each, "pair, a commit each"), g)
        };
        println!(
            "  round {round}: a commit each {}, group commit {}: {:.1}x",
            thousands(a),
            thousands(g),
            g / a
        );
        alone.push(a);
        grouped.push(g);
        ratios.push(g / a);
    }
    let (low, high) = ratios
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(l, h), &r| (l.min(r), h.max(r)));
    println!(
        "  median: a commit each {}, group commit {}; ratio per round: median {:.1}x, \
         lowest {low:.1}x, highest {high:.1}x",
        thousands(median(alone)),
        thousands(median(grouped)),
        median(ratios)
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    // Only under `cargo bench`, and unless a filter leaves the pair out.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let benching = args.iter().any(|a| a == "--bench");
    let filter = args.iter().find(|a| !a.starts_with('-'));
    if benching && filter.is_none_or(|f| PAIR.contains(f.as_str())) {
        pair();
    }
    criterion.final_summary();
}
