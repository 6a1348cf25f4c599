//! Group commit: appends that arrive while another commit is under way
//! wait in a queue, and one writer, the leader, commits them all in one
//! transaction, so one flush to disk acknowledges them all. The others
//! wait for their answer without touching the connection; when the leader
//! is done and appends are waiting, it hands the lead to the oldest.

use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};

use memory_core::{StoreError, Version};
use memory_store_support::{Key, Row};
use rusqlite::{Connection, TransactionBehavior};

use crate::store::{append_in, backend};

/// What a waiting writer is told.
enum Word {
    /// Its append was committed, or failed.
    Done(Result<Version, StoreError>),
    /// It leads the next group commit.
    Lead,
}

/// An append waiting for a group commit, and where its answer goes.
struct Pending {
    key: Key,
    rows: Vec<Row>,
    answer: mpsc::Sender<Word>,
}

#[derive(Default)]
struct Waiting {
    pending: Vec<Pending>,
    /// Whether a writer leads now (commits, or is about to).
    led: bool,
}

/// The appends waiting for the next group commit of one opened file.
#[derive(Default)]
pub(crate) struct Queue(Mutex<Waiting>);

impl Queue {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `rows` to `key`'s session in the next group commit on
    /// `conn`; blocks until it is committed (or failed). Call it on a
    /// thread that may block.
    pub(crate) fn append(
        &self,
        conn: &Mutex<Connection>,
        key: Key,
        rows: Vec<Row>,
    ) -> Result<Version, StoreError> {
        let (answer, words) = mpsc::channel();
        let lead = {
            let mut waiting = self.waiting();
            waiting.pending.push(Pending { key, rows, answer });
            !std::mem::replace(&mut waiting.led, true)
        };
        if lead {
            self.lead(conn);
        }
        loop {
            match words.recv() {
                Ok(Word::Done(result)) => return result,
                Ok(Word::Lead) => self.lead(conn),
                Err(_) => {
                    return Err(StoreError::Backend(
                        "the group commit of this append ended without an answer".into(),
                    ));
                }
            }
        }
    }

    /// Commits every waiting append in one transaction, answers each, and
    /// hands the lead on (also if the commit panicked).
    fn lead(&self, conn: &Mutex<Connection>) {
        let _handoff = Handoff(self);
        let group = std::mem::take(&mut self.waiting().pending);
        if group.is_empty() {
            return;
        }
        let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
        let answers = commit_group(&mut conn, &group);
        drop(conn);
        for (pending, answer) in group.into_iter().zip(answers) {
            // The waiter is blocked on its receiver: it is there.
            let _ = pending.answer.send(Word::Done(answer));
        }
    }
}

/// Hands the lead to the oldest waiting append, or gives it up.
struct Handoff<'a>(&'a Queue);

impl Drop for Handoff<'_> {
    fn drop(&mut self) {
        let mut waiting = self.0.waiting();
        match waiting.pending.first() {
            Some(next) => {
                let _ = next.answer.send(Word::Lead);
            }
            None => waiting.led = false,
        }
    }
}

fn commit_group(conn: &mut Connection, group: &[Pending]) -> Vec<Result<Version, StoreError>> {
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            let e = backend(e);
            return group.iter().map(|_| Err(e.clone())).collect();
        }
    };
    let mut answers = Vec::with_capacity(group.len());
    for pending in group {
        let answer = tx.savepoint().map_err(backend).and_then(|savepoint| {
            let version = append_in(&savepoint, &pending.key, &pending.rows)?;
            savepoint.commit().map_err(backend)?;
            Ok(version)
        });
        answers.push(answer);
    }
    match tx.commit() {
        Ok(()) => answers,
        Err(e) => {
            let e = backend(e);
            answers.into_iter().map(|_| Err(e.clone())).collect()
        }
    }
}
