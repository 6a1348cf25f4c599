//! Many writers on shared sessions: 2 processes x 8 tasks append 1,000
//! messages each to 4 shared sessions while a compactor in each process
//! compacts them, taking a few milliseconds to "write" each summary while
//! the appends go on. Afterwards every message is in the history exactly
//! once, each task's messages in its order and all in the order of the
//! versions their appends returned, every view is a summary and the end of
//! the history, and at least 90% of compaction attempts committed within
//! three tries: a compaction rebases over the appends made meanwhile and
//! conflicts only with the other process's compactions.
//!
//! Needs a server: reads `MEMORY_POSTGRES_URL` and skips with a notice when
//! it is unset (fails under CI). The processes are this test binary run again with
//! `CHILD_ENV` set.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memory_postgres::PostgresStore;
use memory_store_support::test_util::{Compactions, appender, check_session, compactor};

const CHILD_ENV: &str = "MEMORY_POSTGRES_CONCURRENCY_CHILD";
const TENANT_ENV: &str = "MEMORY_POSTGRES_CONCURRENCY_TENANT";
const PROCESSES: usize = 2;
const TASKS: usize = 8;
const MESSAGES: usize = 1_000;
const SESSIONS: usize = 4;
/// How long a compactor takes to write a summary.
const THINK: Duration = Duration::from_millis(5);
/// A bound on the whole test.
const TIME_LIMIT: Duration = Duration::from_secs(90);

fn session(task: usize) -> String {
    format!("shared-{}", task % SESSIONS)
}

/// One process: `TASKS` appenders and one compactor. Prints the version
/// of every append and the compactor's tally.
async fn child(url: &str, tenant: &str, process: usize) {
    let store = PostgresStore::connect_with(url, TASKS + 2)
        .await
        .expect("child: connect")
        .with_tenant(tenant);
    let done = Arc::new(AtomicBool::new(false));
    let compactor = tokio::spawn(compactor(
        Arc::new(store.clone()),
        (0..SESSIONS).map(session).collect(),
        process,
        format!("p{process}"),
        THINK,
        done.clone(),
    ));
    let appenders: Vec<_> = (0..TASKS)
        .map(|task| {
            tokio::spawn(appender(
                Arc::new(store.clone()),
                session(task),
                process,
                task,
                MESSAGES,
            ))
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
    let tally = compactor.await.expect("child: compactor");
    println!("{}", tally.line());
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
    let mut tallies: Vec<Compactions> = Vec::new();
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
            if let Some(tally) = Compactions::parse(line) {
                tallies.push(tally);
            } else if let Some((_, acked)) = line.rsplit_once("version ") {
                let (version, text) = acked.split_once(' ').expect("version TEXT");
                versions.insert(text.to_string(), version.parse::<u64>().unwrap());
            }
        }
    }
    let writing = started.elapsed();

    let writers = PROCESSES * TASKS / SESSIONS;
    let mut compactions = 0;
    for s in 0..SESSIONS {
        compactions += check_session(&store, &session(s), &versions, writers * MESSAGES).await;
    }
    let total = tallies
        .iter()
        .fold(Compactions::default(), |a, &b| a.plus(b));
    eprintln!(
        "concurrency test: {PROCESSES} processes x {TASKS} tasks x {MESSAGES} appends on \
         {SESSIONS} sessions in {:.1} s; compactions {total:?}, {:.1}% of attempts committed \
         within three tries; per process {tallies:?}",
        writing.as_secs_f64(),
        100.0 * total.share_within_three()
    );
    assert_eq!(tallies.len(), PROCESSES, "a tally per process");
    assert!(total.attempts > 0, "no compaction attempted");
    assert_eq!(compactions, total.committed, "every commit is in the store");
    assert!(
        total.share_within_three() >= 0.9,
        "only {:.1}% of compaction attempts committed within three tries",
        100.0 * total.share_within_three()
    );
}
