//! An append written inside the caller's transaction: its messages at the
//! end of the history, and the session's row moved on.

use memory_core::{StoreError, Version};
use memory_store_support::{Key, Row, to_i64, to_u64};
use rusqlite::{Connection, params};

use crate::error::backend;
use crate::images::insert_images;
use crate::state::{State, read_state, write_state};

/// Appends `rows` inside the caller's transaction; returns the version.
pub(crate) fn append_in(tx: &Connection, key: &Key, rows: &[Row]) -> Result<Version, StoreError> {
    let state = read_state(tx, key)?.unwrap_or_default();
    let next = State {
        version: state.version + 1,
        length: state.length + to_i64(rows.len() as u64, "message count")?,
        ..state
    };
    insert_log(tx, key, state.length + 1, next.version, rows)?;
    write_state(tx, key, &next)?;
    to_u64(next.version, "version")
}

/// Writes `rows` at `first_seq` on, as appended by the append that
/// produced `version`, and the images they name.
pub(crate) fn insert_log(
    tx: &Connection,
    key: &Key,
    first_seq: i64,
    version: i64,
    rows: &[Row],
) -> Result<(), StoreError> {
    insert_images(tx, key, rows)?;
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO messages (tenant, session, seq, body, tokens, protected, version) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(backend)?;
    for (seq, row) in (first_seq..).zip(rows) {
        stmt.execute(params![
            key.tenant,
            key.session,
            seq,
            row.body,
            row.tokens,
            row.protected,
            version
        ])
        .map_err(backend)?;
    }
    Ok(())
}
