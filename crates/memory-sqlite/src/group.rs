//! Group commit: writes (appends, and the several writes of one
//! `write_all`) wait in a queue and one blocking thread, the drainer,
//! commits what waits, many in one transaction, so one flush to disk
//! acknowledges them all. A waiting append holds no thread:
//! its task awaits its answer. The drainer keeps committing groups until
//! nothing waits; the append that finds no drainer at work starts one.
//!
//! While writers keep coming back, the drainer lingers a little for them:
//! when its last group had several appends, it starts the next transaction
//! with what waits, writes each append that arrives, and commits once as
//! many appends as last time are in, or after [`LINGER`]. Lingering costs
//! one wait of [`LINGER`] when the writers stop, and lets all of them
//! share each flush instead of two halves taking turns.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use memory_core::{StoreError, Version};
use memory_store_support::Key;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::batch::{Batch, Op, commit_one_by_one};

/// The longest a drainer waits for the writers of its last group to come
/// back before it commits what it has.
pub(crate) const LINGER: Duration = Duration::from_micros(300);

/// The writes of one caller waiting for a group commit, and where their
/// answers go.
struct Pending {
    writes: Vec<(Key, Op)>,
    answer: oneshot::Sender<Vec<Result<Version, StoreError>>>,
}

#[derive(Default)]
struct Waiting {
    pending: Vec<Pending>,
    /// Whether a drainer is at work.
    draining: bool,
    /// Whether the drainer waits for appends to arrive.
    lingering: bool,
}

#[derive(Default)]
struct Inner {
    waiting: Mutex<Waiting>,
    /// Signalled when an append arrives while the drainer lingers.
    arrived: Condvar,
}

impl Inner {
    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What waits once at least `want` appends do, or at `deadline`.
    fn gather(&self, want: usize, deadline: Instant) -> Vec<Pending> {
        let mut waiting = self.waiting();
        if waiting.pending.len() < want {
            waiting.lingering = true;
            while waiting.pending.len() < want {
                let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                    break;
                };
                waiting = self
                    .arrived
                    .wait_timeout(waiting, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            waiting.lingering = false;
        }
        std::mem::take(&mut waiting.pending)
    }
}

/// The appends waiting for a group commit on one opened file.
#[derive(Default)]
pub(crate) struct Queue(Arc<Inner>);

/// Where the answers of queued writes come: the version each produced
/// once durable, in order.
pub(crate) type Answer = oneshot::Receiver<Vec<Result<Version, StoreError>>>;

impl Queue {
    /// Queues `writes`, committed together in one group. Returns where
    /// their answers come and, when no drainer is at work, the duty to run
    /// one ([`Drainer::run`]).
    pub(crate) fn push(&self, writes: Vec<(Key, Op)>) -> (Answer, Option<Drainer>) {
        let (answer, receiver) = oneshot::channel();
        let mut waiting = self.0.waiting();
        waiting.pending.push(Pending { writes, answer });
        if waiting.lingering {
            self.0.arrived.notify_one();
        }
        let start = !std::mem::replace(&mut waiting.draining, true);
        let drainer = start.then(|| Drainer {
            queue: Arc::clone(&self.0),
            finished: false,
        });
        (receiver, drainer)
    }
}

/// The duty to commit what waits in a [`Queue`]. Dropped without having
/// run to the end (a panic, or a runtime that shut down before running
/// it), it fails the appends still waiting rather than leave them waiting
/// for a drainer that is gone, and lets the next append start one.
pub(crate) struct Drainer {
    queue: Arc<Inner>,
    finished: bool,
}

impl Drainer {
    /// Commits groups of waiting appends on `conn` until none waits, and
    /// answers each append once its group is durable. Blocks: call it on a
    /// thread that may block.
    pub(crate) fn run(mut self, conn: &Mutex<Connection>) {
        let mut last = 0;
        loop {
            let deadline = Instant::now() + LINGER;
            let mut group = if last > 1 {
                self.queue.gather(1, deadline)
            } else {
                Vec::new()
            };
            {
                let mut waiting = self.queue.waiting();
                group.append(&mut waiting.pending);
                if group.is_empty() {
                    waiting.draining = false;
                    self.finished = true;
                    return;
                }
            }
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            let answers = self.commit(&mut conn, &mut group, last, deadline);
            drop(conn);
            last = group.len();
            for (pending, answer) in group.into_iter().zip(answers) {
                // Its task may have stopped waiting; the append stands.
                let _ = pending.answer.send(answer);
            }
        }
    }

    /// Commits `group` and the appends that arrive until it is `want`
    /// strong or `deadline` passes, in one transaction; the answers follow
    /// the order of `group`. Should an append fail, the group is written
    /// again with each append on its own, so that only that one fails.
    fn commit(
        &self,
        conn: &mut Connection,
        group: &mut Vec<Pending>,
        want: usize,
        deadline: Instant,
    ) -> Vec<Vec<Result<Version, StoreError>>> {
        let fail_all = |group: &[Pending], e: StoreError| {
            group
                .iter()
                .map(|p| p.writes.iter().map(|_| Err(e.clone())).collect())
                .collect()
        };
        let mut batch = match Batch::begin(conn) {
            Ok(batch) => batch,
            Err(e) => return fail_all(group, e),
        };
        let mut written = 0;
        let failed = loop {
            if let Some(e) = group[written..]
                .iter()
                .flat_map(|pending| &pending.writes)
                .find_map(|(key, op)| batch.write(key, op).err())
            {
                break Some(e);
            }
            written = group.len();
            if written >= want {
                break None;
            }
            let arrived = self.queue.gather(want - written, deadline);
            if arrived.is_empty() {
                break None;
            }
            group.extend(arrived);
        };
        let answers = if failed.is_some() {
            drop(batch);
            let writes: Vec<(&Key, &Op)> = group
                .iter()
                .flat_map(|pending| pending.writes.iter().map(|(key, op)| (key, op)))
                .collect();
            commit_one_by_one(conn, &writes)
        } else {
            match batch.commit() {
                Ok(versions) => versions.into_iter().map(Ok).collect(),
                Err(e) => return fail_all(group, e),
            }
        };
        // Each caller's answers, in the order of its writes.
        let mut answers = answers.into_iter();
        group
            .iter()
            .map(|p| answers.by_ref().take(p.writes.len()).collect())
            .collect()
    }
}

impl Drop for Drainer {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut waiting = self.queue.waiting();
        // Dropping their senders answers them with an error.
        waiting.pending.clear();
        waiting.draining = false;
    }
}

#[cfg(test)]
mod tests {
    use memory_core::{Message, StoredMessage};

    use super::*;
    use crate::schema;
    use memory_store_support::Row;

    fn connection() -> Mutex<Connection> {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::migrate(&mut conn).unwrap();
        Mutex::new(conn)
    }

    fn rows(texts: &[&str]) -> Vec<Row> {
        let messages: Vec<StoredMessage> = texts
            .iter()
            .map(|t| StoredMessage::new(Message::user(*t), 1, false))
            .collect();
        Row::encode_all(&messages).unwrap()
    }

    fn key(session: &str) -> Key {
        Key::new(None, session).unwrap()
    }

    fn answer(mut answer: Answer) -> Result<Version, StoreError> {
        answer.try_recv().expect("answered").remove(0)
    }

    fn append(key: Key, rows: Vec<Row>) -> Vec<(Key, Op)> {
        vec![(key, Op::Append(rows))]
    }

    fn seqs(conn: &Mutex<Connection>, session: &str) -> Vec<(i64, i64)> {
        let conn = conn.lock().unwrap();
        let mut stmt = conn
            .prepare("SELECT seq, version FROM messages WHERE session = ?1 ORDER BY seq")
            .unwrap();
        stmt.query_map([session], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn one_group_gives_each_append_the_next_version_of_its_session() {
        let conn = connection();
        let queue = Queue::default();
        let (a1, drainer) = queue.push(append(key("a"), rows(&["1", "2"])));
        let (b1, none) = queue.push(append(key("b"), rows(&["x"])));
        let (a2, _) = queue.push(append(key("a"), rows(&["3"])));
        assert!(none.is_none(), "one drainer at a time");
        drainer
            .expect("the first append starts a drainer")
            .run(&conn);
        assert_eq!(
            [answer(a1), answer(b1), answer(a2)].map(Result::unwrap),
            [1, 1, 2]
        );
        assert_eq!(seqs(&conn, "a"), [(1, 1), (2, 1), (3, 2)]);
        assert_eq!(seqs(&conn, "b"), [(1, 1)]);
        // Once it is done, the next append starts a drainer again.
        let (a3, drainer) = queue.push(append(key("a"), rows(&["4"])));
        drainer.expect("a new drainer").run(&conn);
        assert_eq!(answer(a3).unwrap(), 3);
    }

    #[test]
    fn an_append_that_fails_leaves_the_others_of_its_group_to_commit() {
        let conn = connection();
        conn.lock()
            .unwrap()
            .execute_batch(
                "CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.session = 'bad' \
                 BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            )
            .unwrap();
        let queue = Queue::default();
        let (good1, drainer) = queue.push(append(key("good"), rows(&["1"])));
        let (bad, _) = queue.push(append(key("bad"), rows(&["x", "y"])));
        let (good2, _) = queue.push(append(key("good"), rows(&["2"])));
        drainer.unwrap().run(&conn);
        assert_eq!(answer(good1).unwrap(), 1);
        let err = answer(bad).unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
        assert_eq!(answer(good2).unwrap(), 2);
        assert_eq!(seqs(&conn, "good"), [(1, 1), (2, 2)]);
        assert!(
            seqs(&conn, "bad").is_empty(),
            "nothing of the failed append"
        );
        let state: (i64, i64) = conn
            .lock()
            .unwrap()
            .query_row(
                "SELECT version, length FROM sessions WHERE session = 'good'",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(state, (2, 2));
    }

    #[test]
    fn a_drainer_dropped_unrun_fails_the_waiting_appends_and_the_next_starts_one() {
        let conn = connection();
        let queue = Queue::default();
        let (lost, drainer) = queue.push(append(key("s"), rows(&["1"])));
        drop(drainer);
        let mut lost = lost;
        assert_eq!(lost.try_recv(), Err(oneshot::error::TryRecvError::Closed));
        let (kept, drainer) = queue.push(append(key("s"), rows(&["2"])));
        drainer.expect("a new drainer").run(&conn);
        assert_eq!(answer(kept).unwrap(), 1);
    }

    #[test]
    fn appends_that_arrive_as_a_drainer_lingers_or_stops_are_all_committed() {
        // Writers on threads of their own, each waiting for its answer
        // before its next append, and running the drainer when it is given
        // the duty: their appends arrive while a drainer commits, lingers,
        // or has just stopped.
        const WRITERS: usize = 4;
        const APPENDS: u64 = 200;
        let conn = Arc::new(connection());
        let queue = Arc::new(Queue::default());
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (conn, queue) = (Arc::clone(&conn), Arc::clone(&queue));
                std::thread::spawn(move || {
                    for n in 1..=APPENDS {
                        let (answer, drainer) =
                            queue.push(append(key(&format!("w{w}")), rows(&["m"])));
                        if let Some(drainer) = drainer {
                            drainer.run(&conn);
                        }
                        assert_eq!(answer.blocking_recv().unwrap().remove(0).unwrap(), n);
                        if n % 50 == 0 {
                            // Let the drainer give up lingering now and then.
                            std::thread::sleep(LINGER * 2);
                        }
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        for w in 0..WRITERS {
            let seqs = seqs(&conn, &format!("w{w}"));
            let expected: Vec<(i64, i64)> = (1..=APPENDS as i64).map(|n| (n, n)).collect();
            assert_eq!(seqs, expected);
        }
    }
}
