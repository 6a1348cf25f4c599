//! Crash safety: a child process appends tool-call steps and compacts in a
//! loop, while writers of its own append steps to sessions of their own
//! at the same time (so that their appends share group commits), and is
//! killed with SIGKILL at random moments, again and again. After each
//! kill, a reopened store must hold every append the child saw
//! acknowledged, no half-applied compaction, and valid tool pairing.
//!
//! The child is this test binary run again with `CHILD_ENV` naming the
//! database; it prints `ack N` (flushed) after append `N` returned, and
//! `ack wK N` after writer `K`'s append `N` returned.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memory_core::{Message, Store, StoredMessage, ToolCall, structure, summary, validate};
use memory_sqlite::SqliteStore;

const CHILD_ENV: &str = "MEMORY_SQLITE_CRASH_CHILD";
const SESSION: &str = "crash";
const KILLS: usize = 20;
/// Writers appending alongside the compacting loop, each to its session.
const WRITERS: usize = 4;
/// A bound on the whole test, whatever the machine's speed.
const TIME_LIMIT: Duration = Duration::from_secs(60);

fn step_number(message: &Message) -> Option<u64> {
    match message {
        Message::Assistant { content, .. } => content.strip_prefix("step ")?.parse().ok(),
        _ => None,
    }
}

/// Step `n`: an assistant message calling a tool and its result, appended
/// in one call so that the pair is atomic.
fn step(n: u64) -> Vec<StoredMessage> {
    vec![
        StoredMessage::new(
            Message::assistant_with_tools(
                format!("step {n}"),
                vec![ToolCall::new(
                    format!("c{n}"),
                    "work",
                    format!("{{\"n\":{n}}}"),
                )],
            ),
            4,
            false,
        ),
        StoredMessage::new(
            Message::tool_result(format!("c{n}"), format!("result {n}")),
            2,
            false,
        ),
    ]
}

/// The child's loop: append steps, compact every third one down to a
/// summary and the two newest steps. Never returns.
fn writer_session(writer: usize) -> String {
    format!("{SESSION}-w{writer}")
}

/// The last step in `session`'s history.
async fn last_step(store: &SqliteStore, session: &str) -> u64 {
    let history = store.history(session).await.expect("child: history");
    history.iter().filter_map(step_number).max().unwrap_or(0)
}

/// Writer `writer`'s loop: append steps to its session. Never returns.
async fn writer(store: SqliteStore, writer: usize) {
    let session = writer_session(writer);
    let mut n = last_step(&store, &session).await;
    loop {
        n += 1;
        store
            .append(&session, step(n))
            .await
            .expect("child: append");
        let mut out = std::io::stdout();
        writeln!(out, "ack w{writer} {n}")
            .and_then(|()| out.flush())
            .expect("child: stdout");
    }
}

async fn child(path: &Path) {
    let store = SqliteStore::open(path).expect("child: open");
    for w in 0..WRITERS {
        tokio::spawn(writer(store.clone(), w));
    }
    let mut n = last_step(&store, SESSION).await;
    let mut out = std::io::stdout();
    loop {
        n += 1;
        store.append(SESSION, step(n)).await.expect("child: append");
        writeln!(out, "ack {n}")
            .and_then(|()| out.flush())
            .expect("child: stdout");
        if n % 3 != 0 {
            continue;
        }
        let snapshot = store.load(SESSION).await.expect("child: load");
        let messages: Vec<Message> = snapshot
            .messages
            .iter()
            .map(|s| s.message.clone())
            .collect();
        let steps: Vec<_> = structure::steps(&messages).collect();
        if steps.len() < 4 {
            continue;
        }
        let cut = steps[steps.len() - 2].start;
        let first_kept = step_number(&messages[cut]).expect("child: a step starts the tail");
        let mut view = vec![StoredMessage::new(
            summary::message(format!("steps before {first_kept}")),
            5,
            true,
        )];
        view.extend_from_slice(&snapshot.messages[cut..]);
        store
            .replace_view(SESSION, snapshot.version, view)
            .await
            .expect("child: replace the view (the only writer)");
    }
}

/// Not a test of its own: the body of the child process, which runs only
/// when the crash test starts this binary with `CHILD_ENV` set.
#[test]
fn crash_child_process() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("child: runtime")
        .block_on(child(Path::new(&path)));
}

/// What the reopened store holds after a kill; panics on any broken
/// promise. Returns (steps in the history, compactions).
async fn check(path: &Path, acked: &BTreeSet<u64>, writers: &[u64]) -> (u64, usize) {
    let store = SqliteStore::open(path).expect("reopen after the kill");
    let history = store.history(SESSION).await.unwrap();
    let n = steps_of(&history);
    if let Some(lost) = acked.iter().find(|&&a| a > n) {
        panic!("acknowledged append {lost} is missing (history has {n} steps)");
    }
    for (w, &last) in writers.iter().enumerate() {
        let steps = steps_of(&store.history(&writer_session(w)).await.unwrap());
        assert!(
            steps >= last,
            "writer {w}'s acknowledged append {last} is missing (history has {steps} steps)"
        );
    }

    let snapshot = store.load(SESSION).await.unwrap();
    let replaced = store.replaced(SESSION).await.unwrap();
    assert_eq!(
        snapshot.version,
        n + replaced.len() as u64,
        "the version counts every append and every compaction"
    );
    for view in replaced.iter().chain(std::iter::once(&snapshot.messages)) {
        consistent(view, &history);
    }
    (n, replaced.len())
}

/// What the child acknowledged: `(None, n)` for the compacting loop's
/// append `n`, `(Some(k), n)` for writer `k`'s.
type Ack = (Option<usize>, u64);

fn parse_ack(text: &str) -> Ack {
    let number = |n: &str| n.parse::<u64>().expect("an ack number");
    match text.strip_prefix('w').and_then(|rest| rest.split_once(' ')) {
        Some((w, n)) => (Some(w.parse().expect("a writer number")), number(n)),
        None => (None, number(text)),
    }
}

/// Everything acknowledged so far.
#[derive(Default)]
struct Acked {
    main: BTreeSet<u64>,
    /// The last step each writer saw acknowledged.
    writers: [u64; WRITERS],
    count: usize,
}

impl Acked {
    fn extend(&mut self, acks: impl IntoIterator<Item = Ack>) {
        for ack in acks {
            self.count += 1;
            match ack {
                (None, n) => {
                    self.main.insert(n);
                }
                (Some(w), n) => self.writers[w] = self.writers[w].max(n),
            }
        }
    }
}

/// Checks that `history` is steps 1..=n, whole and in order; returns `n`.
fn steps_of(history: &[Message]) -> u64 {
    assert!(validate(history).is_empty(), "history pairs broken");
    // Steps 1..=n, each an assistant and its result, in order.
    let n = history.len() as u64 / 2;
    assert_eq!(history.len() % 2, 0, "half a step in the history");
    for (i, pair) in history.chunks(2).enumerate() {
        let k = i as u64 + 1;
        assert_eq!(
            pair,
            step(k)
                .iter()
                .map(|s| s.message.clone())
                .collect::<Vec<_>>()
        );
    }
    n
}

/// A view is an optional summary of the steps before its first kept step,
/// then a run of the history ending where the history ended at the time.
fn consistent(view: &[StoredMessage], history: &[Message]) {
    let messages: Vec<Message> = view.iter().map(|s| s.message.clone()).collect();
    assert!(validate(&messages).is_empty(), "view pairs broken");
    let rest = match messages.first() {
        Some(first) if summary::is_summary(first) => {
            let first_kept = step_number(&messages[1]).expect("a step after the summary");
            assert_eq!(
                summary::body(first),
                Some(format!("steps before {first_kept}").as_str())
            );
            &messages[1..]
        }
        _ => &messages[..],
    };
    assert!(rest.iter().all(|m| !summary::is_summary(m)));
    let start = rest
        .first()
        .map_or(0, |m| (step_number(m).expect("a step") as usize - 1) * 2);
    assert_eq!(
        rest,
        &history[start..start + rest.len()],
        "not a run of the history"
    );
}

/// xorshift64*, seeded from the clock: delays differ from run to run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

#[tokio::test]
async fn acknowledged_appends_survive_sigkill_and_compactions_stay_whole() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let exe = std::env::current_exe().unwrap();
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    let mut rng = Rng(seed);
    let started = Instant::now();
    let mut acked = Acked::default();
    let mut kills = 0;
    let (mut steps, mut compactions) = (0, 0);

    while kills < KILLS && started.elapsed() < TIME_LIMIT {
        let stderr = std::fs::File::create(dir.path().join("child.err")).unwrap();
        let mut child = Command::new(&exe)
            .args([
                "crash_child_process",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start the child");
        let stdout = child.stdout.take().unwrap();
        let (lines, receive) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            // Only whole lines: a line cut by the kill is no acknowledgment.
            while stdout.read_line(&mut line).is_ok_and(|n| n > 0) && line.ends_with('\n') {
                // The harness may print the test's name before the first ack.
                if let Some((_, ack)) = line.trim_end().rsplit_once("ack ") {
                    let _ = lines.send(parse_ack(ack));
                }
                line.clear();
            }
        });
        // Kill it at a random moment: every fifth time maybe while it opens
        // the file, otherwise once its loop runs.
        let child_err =
            || std::fs::read_to_string(dir.path().join("child.err")).unwrap_or_default();
        if kills % 5 == 4 {
            tokio::time::sleep(Duration::from_micros(rng.below(20_000))).await;
        } else {
            let first = receive.recv_timeout(Duration::from_secs(30));
            assert!(
                first.is_ok(),
                "the child never acknowledged an append:\n{}",
                child_err()
            );
            acked.extend(first);
            tokio::time::sleep(Duration::from_micros(rng.below(80_000))).await;
            assert!(
                child.try_wait().unwrap().is_none(),
                "the child stopped by itself:\n{}",
                child_err()
            );
        }
        child.kill().expect("SIGKILL the child");
        child.wait().unwrap();
        kills += 1;
        reader.join().unwrap();
        acked.extend(receive.try_iter());
        (steps, compactions) = check(&path, &acked.main, &acked.writers).await;
    }
    eprintln!(
        "crash test: {kills} kills, {} acknowledged appends checked ({} by {WRITERS} writers \
         alongside), {steps} steps in the compacted history, {compactions} compactions, {:.1} s \
         (seed {seed})",
        acked.count,
        acked.writers.iter().sum::<u64>(),
        started.elapsed().as_secs_f64()
    );
    assert!(kills >= 5, "only {kills} kills in {TIME_LIMIT:?}");
    assert!(compactions > 0);
}
