//! A compaction written inside the caller's transaction: the new view
//! committed against the version it was computed from, or a conflict.

use memory_core::{StoreError, Version};
use memory_store_support::{Key, Row, to_u64};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::backend;
use crate::images::insert_images;
use crate::state::{State, read_state, write_state};

/// Replaces the view `key`'s session had at `expected` with `rows`,
/// inside the caller's write transaction; returns the new version.
///
/// # Errors
///
/// [`StoreError::Conflict`] when a compaction committed after `expected`
/// or the session never was there; nothing is written then.
pub(crate) fn replace_in(
    tx: &Connection,
    key: &Key,
    expected: Version,
    rows: &[Row],
) -> Result<Version, StoreError> {
    let state = read_state(tx, key)?.unwrap_or_default();
    let Some(base) = length_at(tx, key, &state, expected)? else {
        return Err(StoreError::Conflict {
            session: key.session.clone(),
            expected,
            actual: to_u64(state.version, "version")?,
        });
    };
    let next = State {
        version: state.version + 1,
        length: state.length,
        generation: state.generation + 1,
        base,
        compacted: state.version + 1,
    };
    tx.prepare_cached(
        "INSERT INTO compactions (tenant, session, generation, base, version) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            key.tenant,
            key.session,
            next.generation,
            next.base,
            next.version
        ])
    })
    .map_err(backend)?;
    insert_view(tx, key, next.generation, rows)?;
    write_state(tx, key, &next)?;
    to_u64(next.version, "version")
}

/// The history's length at `version`, if a compaction may be computed from
/// that version: no compaction since, and the session got there. The
/// messages appended since all carry later versions.
fn length_at(
    tx: &Connection,
    key: &Key,
    state: &State,
    version: Version,
) -> Result<Option<i64>, StoreError> {
    let Ok(version) = i64::try_from(version) else {
        return Ok(None);
    };
    if version < state.compacted || version > state.version {
        return Ok(None);
    }
    if version == state.version {
        return Ok(Some(state.length));
    }
    // From the end back: as many rows as appended since `version`.
    let last: Option<i64> = tx
        .prepare_cached(
            "SELECT seq FROM messages WHERE tenant = ?1 AND session = ?2 AND seq > ?3 \
             AND version <= ?4 ORDER BY seq DESC LIMIT 1",
        )
        .and_then(|mut stmt| {
            stmt.query_row(
                params![key.tenant, key.session, state.base, version],
                |row| row.get(0),
            )
            .optional()
        })
        .map_err(backend)?;
    Ok(Some(last.unwrap_or(state.base)))
}

fn insert_view(
    tx: &Connection,
    key: &Key,
    generation: i64,
    rows: &[Row],
) -> Result<(), StoreError> {
    insert_images(tx, key, rows)?;
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO view_messages (tenant, session, generation, pos, body, tokens, protected) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(backend)?;
    for (pos, row) in (0_i64..).zip(rows) {
        stmt.execute(params![
            key.tenant,
            key.session,
            generation,
            pos,
            row.body,
            row.tokens,
            row.protected
        ])
        .map_err(backend)?;
    }
    Ok(())
}
