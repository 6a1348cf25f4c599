//! The SQL of a group commit: many writes (appends, and views replaced)
//! in one transaction.
//!
//! Each append gets the next version of its session and the history seqs
//! after the ones before it, in the order the writes are written, exactly
//! as if each were a transaction of its own. A session's row in
//! `sessions` is read once per group and written once at its end, or
//! before a view of it is replaced.

use std::collections::HashMap;

use memory_core::{StoreError, Version};
use memory_store_support::{Key, Row, to_i64, to_u64};
use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::append::{append_in, insert_log};
use crate::error::backend;
use crate::replace::replace_in;
use crate::state::{State, read_state, write_state};

/// Appends written into one open write transaction, not yet committed.
pub(crate) struct Batch<'c> {
    tx: Transaction<'c>,
    /// Each session written so far, as it stands after its last append.
    states: HashMap<(String, String), State>,
    versions: Vec<Version>,
}

impl<'c> Batch<'c> {
    /// Takes the write lock (`BEGIN IMMEDIATE`).
    pub(crate) fn begin(conn: &'c mut Connection) -> Result<Self, StoreError> {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        Ok(Self {
            tx,
            states: HashMap::new(),
            versions: Vec::new(),
        })
    }

    /// Writes `op` to `key`'s session. After an error the batch must be
    /// dropped (rolled back): what it wrote is partial.
    pub(crate) fn write(&mut self, key: &Key, op: &Op) -> Result<(), StoreError> {
        match op {
            Op::Append(rows) => self.append(key, rows),
            Op::Replace { expected, rows } => {
                // The session's row as the appends of this batch left it.
                let id = (key.tenant.clone(), key.session.clone());
                if let Some(state) = self.states.remove(&id) {
                    write_state(&self.tx, key, &state)?;
                }
                let version = replace_in(&self.tx, key, *expected, rows)?;
                self.versions.push(version);
                Ok(())
            }
        }
    }

    /// Writes an append of `rows` to `key`'s session.
    fn append(&mut self, key: &Key, rows: &[Row]) -> Result<(), StoreError> {
        let state = match self.states.entry((key.tenant.clone(), key.session.clone())) {
            std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
            std::collections::hash_map::Entry::Vacant(new) => {
                new.insert(read_state(&self.tx, key)?.unwrap_or_default())
            }
        };
        let version = state.version + 1;
        let length = state.length + to_i64(rows.len() as u64, "message count")?;
        insert_log(&self.tx, key, state.length + 1, version, rows)?;
        state.version = version;
        state.length = length;
        self.versions.push(to_u64(version, "version")?);
        Ok(())
    }

    /// Writes each session's new state and commits; returns the version of
    /// each append, in the order they were written.
    pub(crate) fn commit(self) -> Result<Vec<Version>, StoreError> {
        for ((tenant, session), state) in self.states {
            write_state(&self.tx, &Key { tenant, session }, &state)?;
        }
        self.tx.commit().map_err(backend)?;
        Ok(self.versions)
    }
}

/// One write of a group: an append, or a view replaced against the
/// version it was read at.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Append(Vec<Row>),
    Replace { expected: Version, rows: Vec<Row> },
}

/// Commits `writes` (each a session's key and what is written to it) in
/// one transaction with a savepoint for each, so that a write that fails
/// leaves the others to commit; the answers follow the order of `writes`.
pub(crate) fn commit_one_by_one(
    conn: &mut Connection,
    writes: &[(&Key, &Op)],
) -> Vec<Result<Version, StoreError>> {
    let count = writes.len();
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            let e = backend(e);
            return (0..count).map(|_| Err(e.clone())).collect();
        }
    };
    let mut answers = Vec::with_capacity(count);
    for (key, op) in writes {
        let answer = tx.savepoint().map_err(backend).and_then(|savepoint| {
            let version = match op {
                Op::Append(rows) => append_in(&savepoint, key, rows)?,
                Op::Replace { expected, rows } => replace_in(&savepoint, key, *expected, rows)?,
            };
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
