//! The writes: an append, a view replaced, and several of them in one
//! transaction ([`Store::write_all`](memory_core::Store::write_all)).
//!
//! Each write runs its SQL through a [`GenericClient`]: a connection, where
//! every statement is a transaction of its own ([`Store::append`] and
//! [`Store::replace_view`] alone), or an open transaction, where a write
//! has a savepoint of its own so that one that fails is rolled back alone.
//! A write whose messages hold images first asks which of them the
//! tenant's table lacks ([`missing`]); its statement stores those.
//!
//! [`Store::append`]: memory_core::Store::append
//! [`Store::replace_view`]: memory_core::Store::replace_view

use std::collections::BTreeMap;

use deadpool_postgres::{GenericClient, Transaction};
use memory_core::{StoreError, StoreWrite, StoredMessage, Version};
use memory_store_support::{Key, Row, to_i64, to_u64};

use crate::error::backend;
use crate::images::missing;

/// One statement: bump the session's version and length under its row
/// lock, then write the messages at the positions that lock reserved, and
/// the images they name that were not stored yet. The lock is held to the
/// commit, so positions follow the commit order.
const APPEND: &str = "\
WITH bumped AS (
    INSERT INTO memory_sessions AS s (tenant, session, version, length, generation, base)
    VALUES ($1, $2, 1, $3, 0, 0)
    ON CONFLICT (tenant, session)
    DO UPDATE SET version = s.version + 1, length = s.length + $3
    RETURNING version, length
), written AS (
    INSERT INTO memory_messages (tenant, session, seq, body, tokens, protected, version)
    SELECT $1, $2, bumped.length - $3 + m.ord, m.body, m.tokens, m.protected, bumped.version
    FROM bumped,
         UNNEST($4::text[], $5::bigint[], $6::boolean[]) WITH ORDINALITY AS m(body, tokens, protected, ord)
), imaged AS (
    INSERT INTO memory_images (tenant, digest, data)
    SELECT $1, i.digest, i.data
    FROM bumped, UNNEST($7::text[], $8::bytea[]) AS i(digest, data)
    ON CONFLICT (tenant, digest) DO NOTHING
)
SELECT version FROM bumped";

/// One statement: move the session to its next generation only if no
/// compaction came after the version the caller read (and the session got
/// there), record the compaction and write the new view. The new view
/// continues in the history where the history was at that version (the
/// last message whose append produced a version no later), so what was
/// appended since follows it, and the view's images not stored yet are
/// written. No row back means another compaction came first; then nothing
/// was written.
///
/// Every message appended up to the version the caller read was committed
/// before this statement began, and every later one carries a later
/// version, so the statement's snapshot finds the right position even when
/// it waits for the session's row lock.
const COMPACT: &str = "\
WITH bumped AS (
    UPDATE memory_sessions AS s
    SET version = s.version + 1, generation = s.generation + 1, compacted = s.version + 1,
        base = COALESCE((
            SELECT m.seq FROM memory_messages m
            WHERE m.tenant = $1 AND m.session = $2 AND m.seq > s.base AND m.version <= $3
            ORDER BY m.seq DESC LIMIT 1
        ), s.base)
    WHERE s.tenant = $1 AND s.session = $2 AND s.compacted <= $3 AND s.version >= $3
    RETURNING s.version, s.generation, s.base
), recorded AS (
    INSERT INTO memory_compactions (tenant, session, generation, base, version)
    SELECT $1, $2, generation, base, version FROM bumped
), viewed AS (
    INSERT INTO memory_view_messages (tenant, session, generation, pos, body, tokens, protected)
    SELECT $1, $2, bumped.generation, m.ord - 1, m.body, m.tokens, m.protected
    FROM bumped,
         UNNEST($4::text[], $5::bigint[], $6::boolean[]) WITH ORDINALITY AS m(body, tokens, protected, ord)
), imaged AS (
    INSERT INTO memory_images (tenant, digest, data)
    SELECT $1, i.digest, i.data
    FROM bumped, UNNEST($7::text[], $8::bytea[]) AS i(digest, data)
    ON CONFLICT (tenant, digest) DO NOTHING
)
SELECT version FROM bumped";

/// Makes a session that was never written exist at version 0, so that a
/// compaction against version 0 has a row to lock.
const CREATE_EMPTY: &str = "\
INSERT INTO memory_sessions (tenant, session, version, length, generation, base)
VALUES ($1, $2, 0, 0, 0, 0)
ON CONFLICT (tenant, session) DO NOTHING";

const VERSION: &str = "SELECT version FROM memory_sessions WHERE tenant = $1 AND session = $2";

/// Column arrays for `UNNEST`, and the distinct images the rows name.
pub(crate) struct Columns {
    bodies: Vec<String>,
    tokens: Vec<i64>,
    protected: Vec<bool>,
    images: BTreeMap<String, Vec<u8>>,
}

impl Columns {
    pub(crate) fn encode(messages: &[StoredMessage]) -> Result<Self, StoreError> {
        let mut columns = Self {
            bodies: Vec::with_capacity(messages.len()),
            tokens: Vec::with_capacity(messages.len()),
            protected: Vec::with_capacity(messages.len()),
            images: BTreeMap::new(),
        };
        for row in Row::encode_all(messages)? {
            columns.bodies.push(row.body);
            columns.tokens.push(row.tokens);
            columns.protected.push(row.protected);
            for blob in row.images {
                columns.images.insert(blob.digest, blob.data);
            }
        }
        Ok(columns)
    }
}

/// Appends the encoded messages to `key`'s session through `client`, and
/// the images they name that the tenant's table lacks; returns the version
/// the append produced.
pub(crate) async fn append_on(
    client: &impl GenericClient,
    key: &Key,
    columns: &Columns,
) -> Result<Version, StoreError> {
    let count = to_i64(columns.bodies.len() as u64, "message count")?;
    let (digests, images) = missing(client, key, &columns.images).await?;
    let statement = client.prepare_cached(APPEND).await.map_err(backend)?;
    let row = client
        .query_one(
            &statement,
            &[
                &key.tenant,
                &key.session,
                &count,
                &columns.bodies,
                &columns.tokens,
                &columns.protected,
                &digests,
                &images,
            ],
        )
        .await
        .map_err(backend)?;
    to_u64(row.try_get(0).map_err(backend)?, "version")
}

/// Replaces the view of `key`'s session read at `expected` with the
/// encoded view through `client`, and the images it names that the
/// tenant's table lacks; returns the version the compaction produced, or
/// [`StoreError::Conflict`] when another compaction came after `expected`
/// (then nothing of the view was written).
pub(crate) async fn replace_on(
    client: &impl GenericClient,
    key: &Key,
    expected: Version,
    columns: &Columns,
) -> Result<Version, StoreError> {
    let expected_column = to_i64(expected, "version")?;
    let (digests, images) = missing(client, key, &columns.images).await?;
    if expected == 0 {
        let statement = client.prepare_cached(CREATE_EMPTY).await.map_err(backend)?;
        client
            .execute(&statement, &[&key.tenant, &key.session])
            .await
            .map_err(backend)?;
    }
    let statement = client.prepare_cached(COMPACT).await.map_err(backend)?;
    let row = client
        .query_opt(
            &statement,
            &[
                &key.tenant,
                &key.session,
                &expected_column,
                &columns.bodies,
                &columns.tokens,
                &columns.protected,
                &digests,
                &images,
            ],
        )
        .await
        .map_err(backend)?;
    if let Some(row) = row {
        return to_u64(row.try_get(0).map_err(backend)?, "version");
    }
    let statement = client.prepare_cached(VERSION).await.map_err(backend)?;
    let actual = match client
        .query_opt(&statement, &[&key.tenant, &key.session])
        .await
        .map_err(backend)?
    {
        Some(row) => to_u64(row.try_get(0).map_err(backend)?, "version")?,
        None => 0,
    };
    tracing::debug!(session = %key.session, expected, actual, "compaction lost a race");
    Err(StoreError::Conflict {
        session: key.session.clone(),
        expected,
        actual,
    })
}

/// One write of a `write_all`, its session's key checked and its messages
/// encoded.
pub(crate) enum Encoded {
    Append(Key, Columns),
    Replace(Key, Version, Columns),
}

impl Encoded {
    /// Checks the session of `write` in `tenant`'s namespace and encodes
    /// its messages.
    pub(crate) fn new(tenant: Option<&str>, write: &StoreWrite) -> Result<Self, StoreError> {
        Ok(match write {
            StoreWrite::Append { session, messages } => {
                Self::Append(Key::new(tenant, session)?, Columns::encode(messages)?)
            }
            StoreWrite::Replace {
                session,
                expected,
                view,
            } => Self::Replace(
                Key::new(tenant, session)?,
                *expected,
                Columns::encode(view)?,
            ),
        })
    }

    async fn run(&self, client: &impl GenericClient) -> Result<Version, StoreError> {
        match self {
            Self::Append(key, columns) => append_on(client, key, columns).await,
            Self::Replace(key, expected, columns) => {
                replace_on(client, key, *expected, columns).await
            }
        }
    }
}

/// Runs `writes` in order in `tx`, each in a savepoint of its own: a write
/// that fails (or could not be encoded) is answered with its error and
/// rolled back alone. The answers follow the order of `writes`; commit
/// `tx` after.
///
/// A savepoint is opened in the same round trip as its write's first
/// statement and never released (its work commits with `tx`), so a write
/// costs the round trips of its statements alone.
pub(crate) async fn write_in(
    tx: &Transaction<'_>,
    writes: Vec<Result<Encoded, StoreError>>,
) -> Vec<Result<Version, StoreError>> {
    let mut answers = Vec::with_capacity(writes.len());
    for (i, write) in writes.into_iter().enumerate() {
        let answer = match write {
            Ok(write) => in_savepoint(tx, &format!("memory_write_{i}"), &write).await,
            Err(e) => Err(e),
        };
        answers.push(answer);
    }
    answers
}

/// Runs `write` in `tx` after a savepoint `name`, and rolls back to it when
/// the write fails.
async fn in_savepoint(
    tx: &Transaction<'_>,
    name: &str,
    write: &Encoded,
) -> Result<Version, StoreError> {
    // Both are sent before either answer is read, the savepoint first:
    // `join!` polls them in order, and each is sent when first polled.
    let savepoint = format!("SAVEPOINT {name}");
    let (opened, answer) = futures::join!(tx.batch_execute(&savepoint), write.run(tx));
    opened.map_err(backend)?;
    if answer.is_err() {
        tx.batch_execute(&format!("ROLLBACK TO SAVEPOINT {name}"))
            .await
            .map_err(backend)?;
    }
    answer
}

/// The answers of writes none of which committed: a write that failed on
/// its own keeps its error, the others get `e`.
pub(crate) fn none_committed<T>(
    writes: Vec<Result<T, StoreError>>,
    e: &StoreError,
) -> Vec<Result<Version, StoreError>> {
    writes
        .into_iter()
        .map(|write| Err(write.err().unwrap_or_else(|| e.clone())))
        .collect()
}
