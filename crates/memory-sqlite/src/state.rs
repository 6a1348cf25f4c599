//! [`State`]: a session's row in `sessions`, read and written inside the
//! caller's transaction.

use memory_core::StoreError;
use memory_store_support::Key;
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::backend;

/// A session's row in `sessions`; all zero for a session never written.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct State {
    /// Grows with every append and compaction.
    pub(crate) version: i64,
    /// Messages in the history.
    pub(crate) length: i64,
    /// Compactions so far.
    pub(crate) generation: i64,
    /// The history's length at the version the current view was computed
    /// from.
    pub(crate) base: i64,
    /// The version of the last compaction: the oldest a compaction may be
    /// computed from.
    pub(crate) compacted: i64,
}

/// The session's row; `None` for a session never written.
pub(crate) fn read_state(tx: &Connection, key: &Key) -> Result<Option<State>, StoreError> {
    tx.prepare_cached(
        "SELECT version, length, generation, base, compacted FROM sessions \
         WHERE tenant = ?1 AND session = ?2",
    )
    .and_then(|mut stmt| {
        stmt.query_row(params![key.tenant, key.session], |row| {
            Ok(State {
                version: row.get(0)?,
                length: row.get(1)?,
                generation: row.get(2)?,
                base: row.get(3)?,
                compacted: row.get(4)?,
            })
        })
        .optional()
    })
    .map_err(backend)
}

/// Writes the session's row, inserting it for a session never written.
pub(crate) fn write_state(tx: &Connection, key: &Key, state: &State) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT INTO sessions (tenant, session, version, length, generation, base, compacted) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (tenant, session) DO UPDATE SET version = excluded.version, \
         length = excluded.length, generation = excluded.generation, base = excluded.base, \
         compacted = excluded.compacted",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            key.tenant,
            key.session,
            state.version,
            state.length,
            state.generation,
            state.base,
            state.compacted
        ])
    })
    .map(drop)
    .map_err(backend)
}
