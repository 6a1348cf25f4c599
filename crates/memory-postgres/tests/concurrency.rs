//! Many writers on shared sessions: 2 processes x 8 tasks append 1,000
//! messages each to 4 shared sessions while a compactor in each process
//! compacts them; afterwards every message is in the history exactly once,
//! each task's messages in its order, and every view is consistent.
//!
//! Needs a server: reads `MEMORY_POSTGRES_URL` and skips with a notice when
//! it is unset (fails under CI). The processes are this test binary run again with
//! `CHILD_ENV` set.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memory_core::{Message, Store, StoreError, StoredMessage, summary};
use memory_postgres::PostgresStore;

const CHILD_ENV: &str = "MEMORY_POSTGRES_CONCURRENCY_CHILD";
const TENANT_ENV: &str = "MEMORY_POSTGRES_CONCURRENCY_TENANT";
const PROCESSES: usize = 2;
const TASKS: usize = 8;
const MESSAGES: usize = 1_000;
const SESSIONS: usize = 4;
/// A bound on the whole test.
const TIME_LIMIT: Duration = Duration::from_secs(90);

fn session(task: usize) -> String {
    format!("shared-{}", task % SESSIONS)
}

/// Appenders keep still for the first 40 ms of every 250 ms of wall-clock
/// time, in both processes at once, as agents waiting on their model: a
/// compaction commits only when no append comes between its read and its
/// write, so under a steady stream of appends it would always conflict.
async fn quiet_period() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let phase = (now % 250) as u64;
    if phase < 40 {
        tokio::time::sleep(Duration::from_millis(40 - phase)).await;
    }
}

/// One process: `TASKS` appenders and one compactor. Prints the
/// compactor's tally.
async fn child(url: &str, tenant: &str, process: usize) {
    let store = PostgresStore::connect_with(url, TASKS + 2)
        .await
        .expect("child: connect")
        .with_tenant(tenant);
    let done = Arc::new(AtomicBool::new(false));
    let compactor = {
        let (store, done) = (store.clone(), done.clone());
        tokio::spawn(async move {
            let (mut committed, mut conflicts) = (0, 0);
            while !done.load(Ordering::Relaxed) {
                for s in 0..SESSIONS {
                    let id = session(s);
                    let snapshot = store.load(&id).await.expect("child: load");
                    if snapshot.messages.len() < 40 {
                        continue;
                    }
                    let mut view = vec![StoredMessage::new(
                        summary::message(format!("p{process} at version {}", snapshot.version)),
                        8,
                        true,
                    )];
                    view.extend_from_slice(&snapshot.messages[snapshot.messages.len() - 10..]);
                    match store.replace_view(&id, snapshot.version, view).await {
                        Ok(_) => committed += 1,
                        Err(StoreError::Conflict { .. }) => conflicts += 1,
                        Err(e) => panic!("child: replace the view: {e}"),
                    }
                }
            }
            (committed, conflicts)
        })
    };
    let appenders: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut versions = Vec::with_capacity(MESSAGES);
                for i in 0..MESSAGES {
                    let text = format!("p{process}-t{task}-{i}");
                    let message = StoredMessage::new(Message::user(&text), 3, false);
                    let version = store
                        .append(&session(task), vec![message])
                        .await
                        .expect("child: append");
                    versions.push((text, version));
                    quiet_period().await;
                }
                versions
            })
        })
        .collect();
    let mut out = String::new();
    for appender in appenders {
        for (text, version) in appender.await.expect("child: appender") {
            out.push_str(&format!("version {version} {text}\n"));
        }
    }
    print!("{out}");
    done.store(true, Ordering::Relaxed);
    let (committed, conflicts) = compactor.await.expect("child: compactor");
    println!("compactions {committed} conflicts {conflicts}");
}

/// Not a test of its own: the body of a writer process, which runs only
/// when the concurrency test starts this binary with `CHILD_ENV` set.
#[test]
fn concurrency_child_process() {
    let (Ok(process), Ok(tenant), Ok(url)) = (
        std::env::var(CHILD_ENV),
        std::env::var(TENANT_ENV),
        std::env::var("MEMORY_POSTGRES_URL"),
    ) else {
        return;
    };
    let process: usize = process.parse().expect("child: process number");
    // Durability is not under test here: commits need not wait for the disk.
    let separator = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{separator}options=-csynchronous_commit%3Doff");
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("child: runtime")
        .block_on(child(&url, &tenant, process));
}

#[tokio::test]
async fn appends_from_many_processes_are_kept_once_in_commit_order() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let Some(url) = memory_core::test_util::POSTGRES.value() else {
        return;
    };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let tenant = format!("concurrency-{}-{nanos}", std::process::id());
    // Migrate once before the writers start.
    let store = PostgresStore::connect(&url)
        .await
        .unwrap()
        .with_tenant(&tenant);

    let started = Instant::now();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|process| {
            tokio::process::Command::new(&exe)
                .args([
                    "concurrency_child_process",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, process.to_string())
                .env(TENANT_ENV, &tenant)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("start a writer process")
        })
        .collect();
    let mut tallies = Vec::new();
    // The version each append returned, by message text.
    let mut versions: HashMap<String, u64> = HashMap::new();
    for child in children {
        let output = tokio::time::timeout(
            TIME_LIMIT.saturating_sub(started.elapsed()),
            child.wait_with_output(),
        )
        .await
        .unwrap_or_else(|_| panic!("the writers took longer than {TIME_LIMIT:?}"))
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "a writer failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        for line in stdout.lines() {
            if let Some((_, tally)) = line.rsplit_once("compactions ") {
                tallies.push(tally.to_string());
            } else if let Some((_, acked)) = line.rsplit_once("version ") {
                let (version, text) = acked.split_once(' ').expect("version TEXT");
                versions.insert(text.to_string(), version.parse::<u64>().unwrap());
            }
        }
    }
    let writing = started.elapsed();

    let mut compactions = 0;
    for s in 0..SESSIONS {
        let id = session(s);
        let history = store.history(&id).await.unwrap();
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut next: HashMap<(String, String), usize> = HashMap::new();
        for m in &history {
            let text = m.text();
            *seen.entry(text.clone()).or_default() += 1;
            // Each task's messages in the order it appended them.
            let mut parts = text.splitn(3, '-');
            let (p, t, i) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let expected = next.entry((p.to_string(), t.to_string())).or_default();
            assert_eq!(
                i.parse::<usize>().unwrap(),
                *expected,
                "{text} out of order"
            );
            *expected += 1;
        }
        // Order is the commit order: the versions the appends returned
        // grow along the history.
        let returned: Vec<u64> = history.iter().map(|m| versions[&m.text()]).collect();
        assert!(
            returned.windows(2).all(|w| w[0] < w[1]),
            "{id}: the history's order is not the order of the versions appends returned"
        );
        let writers = PROCESSES * TASKS / SESSIONS;
        assert_eq!(history.len(), writers * MESSAGES, "{id}");
        assert!(seen.values().all(|&n| n == 1), "{id}: a message twice");
        for p in 0..PROCESSES {
            for t in (0..TASKS).filter(|t| session(*t) == id) {
                for i in [0, MESSAGES / 2, MESSAGES - 1] {
                    assert_eq!(seen.get(&format!("p{p}-t{t}-{i}")), Some(&1), "{id}");
                }
            }
        }

        // The view: a summary, then the end of the history.
        let snapshot = store.load(&id).await.unwrap();
        let replaced = store.replaced(&id).await.unwrap();
        compactions += replaced.len();
        assert_eq!(
            snapshot.version as usize,
            history.len() + replaced.len(),
            "{id}: one version per append and per compaction"
        );
        let view: Vec<Message> = snapshot
            .messages
            .iter()
            .map(|m| m.message.clone())
            .collect();
        let tail = if view.first().is_some_and(summary::is_summary) {
            &view[1..]
        } else {
            &view[..]
        };
        assert!(
            history.ends_with(tail),
            "{id}: the view's tail is not the history's end"
        );
    }
    assert!(compactions > 0, "no compaction committed");
    eprintln!(
        "concurrency test: {PROCESSES} processes x {TASKS} tasks x {MESSAGES} appends on \
         {SESSIONS} sessions in {:.1} s, {compactions} compactions committed; per process \
         (committed, conflicts): {tallies:?}",
        writing.as_secs_f64()
    );
}
