//! Many writers on shared sessions of one file: two handles opened apart
//! (two connections, as two processes would have), each with 8 writer
//! tasks on their own threads appending to 4 shared sessions and a
//! compactor that takes a few milliseconds to "write" each summary while
//! the appends go on. Afterwards every message is in the history exactly
//! once, each writer's in its order and all in the order of the versions
//! their appends returned, every view is a summary and the end of the
//! history, and at least 90% of compaction attempts committed within three
//! tries.
//!
//! CI runs 100 appends per writer; the full size (1,000 per writer) is
//! `cargo test -p memory-sqlite --test race -- --ignored --nocapture`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use memory_sqlite::SqliteStore;
use memory_store_support::test_util::{Compactions, appender, check_session, compactor};

const HANDLES: usize = 2;
const TASKS: usize = 8;
const SESSIONS: usize = 4;
/// How long a compactor takes to write a summary.
const THINK: Duration = Duration::from_millis(5);

fn session(task: usize) -> String {
    format!("shared-{}", task % SESSIONS)
}

async fn race(messages: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let handles: Vec<SqliteStore> = (0..HANDLES)
        .map(|_| SqliteStore::open(&path).expect("open the file"))
        .collect();
    let started = Instant::now();
    let done = Arc::new(AtomicBool::new(false));
    let compactors: Vec<_> = handles
        .iter()
        .enumerate()
        .map(|(h, store)| {
            tokio::spawn(compactor(
                Arc::new(store.clone()),
                (0..SESSIONS).map(session).collect(),
                h,
                format!("h{h}"),
                THINK,
                done.clone(),
            ))
        })
        .collect();
    let writers: Vec<_> = handles
        .iter()
        .enumerate()
        .flat_map(|(h, store)| (0..TASKS).map(move |task| (h, task, store.clone())))
        .map(|(h, task, store)| {
            tokio::spawn(appender(Arc::new(store), session(task), h, task, messages))
        })
        .collect();
    let mut versions: HashMap<String, u64> = HashMap::new();
    for writer in writers {
        versions.extend(writer.await.expect("a writer"));
    }
    let writing = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let mut total = Compactions::default();
    for c in compactors {
        total = total.plus(c.await.expect("a compactor"));
    }

    let store = SqliteStore::open(&path).expect("reopen");
    let per_session = HANDLES * TASKS / SESSIONS * messages;
    let mut compactions = 0;
    for s in 0..SESSIONS {
        compactions += check_session(&store, &session(s), &versions, per_session).await;
    }
    eprintln!(
        "sqlite race: {HANDLES} handles x {TASKS} writers x {messages} appends on {SESSIONS} \
         sessions in {:.1} s ({:.0} appends/s); compactions {total:?}, {:.1}% of attempts \
         committed within three tries",
        writing.as_secs_f64(),
        versions.len() as f64 / writing.as_secs_f64(),
        100.0 * total.share_within_three()
    );
    assert!(total.attempts > 0, "no compaction attempted");
    assert_eq!(compactions, total.committed, "every commit is in the store");
    assert!(
        total.share_within_three() >= 0.9,
        "only {:.1}% of compaction attempts committed within three tries",
        100.0 * total.share_within_three()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_and_compactions_race_and_every_message_is_kept_once() {
    race(100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the full size, about a minute: run with --ignored"]
async fn full_size_race() {
    race(1_000).await;
}
