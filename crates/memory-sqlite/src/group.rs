//! Group commit: appends that arrive while another commit is under way
//! wait in a queue, and the next writer to get the connection commits them
//! all in one transaction, so one flush to disk acknowledges them all.

use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};

use memory_core::{StoreError, Version};
use memory_store_support::{Key, Row};
use rusqlite::{Connection, TransactionBehavior};

use crate::store::{append_in, backend};

/// An append waiting for a group commit, and where its answer goes.
pub(crate) struct Pending {
    key: Key,
    rows: Vec<Row>,
    answer: mpsc::Sender<Result<Version, StoreError>>,
}

/// The appends waiting for the next group commit of one opened file.
#[derive(Default)]
pub(crate) struct Queue(Mutex<Vec<Pending>>);

impl Queue {
    /// Queues an append; its answer arrives on the receiver once a
    /// [`commit`](Queue::commit) took it.
    pub(crate) fn push(
        &self,
        key: Key,
        rows: Vec<Row>,
    ) -> mpsc::Receiver<Result<Version, StoreError>> {
        let (answer, receiver) = mpsc::channel();
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Pending { key, rows, answer });
        receiver
    }

    /// Commits every queued append in one transaction on `conn`, which the
    /// caller holds locked, and answers each before returning; an append
    /// that fails is rolled back alone, and a commit that fails fails them
    /// all. Nothing to do when an earlier commit took the queue.
    pub(crate) fn commit(&self, conn: &mut Connection) {
        let group = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        if group.is_empty() {
            return;
        }
        let answers = commit_group(conn, &group);
        for (pending, answer) in group.into_iter().zip(answers) {
            // The waiter may be gone (its future dropped): nothing to tell.
            let _ = pending.answer.send(answer);
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
