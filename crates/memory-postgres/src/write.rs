//! The writes: an append, a view replaced, and several of them in one
//! transaction ([`Store::write_all`](memory_core::Store::write_all)).
//!
//! Each write runs its SQL through a [`GenericClient`]: a connection, where
//! every statement is a transaction of its own ([`Store::append`] and
//! [`Store::replace_view`] alone), or an open transaction. A write whose
//! messages hold images first asks which of them the tenant's table lacks
//! ([`missing`]); its statement stores those.
//!
//! Several writes commit in one transaction. When each is one statement
//! on a session of its own (appends, and views replaced against a version
//! past 0), the transaction's begin, the writes and its commit go in one
//! round trip ([`in_one_trip`]), after the questions of the writes that
//! hold images. Should a write fail in the database (the transaction is
//! then rolled back whole), or the writes not go so, they run in one
//! transaction each in a savepoint of its own ([`with_savepoints`]): a
//! write that fails is rolled back alone.
//!
//! [`Store::append`]: memory_core::Store::append
//! [`Store::replace_view`]: memory_core::Store::replace_view

use std::collections::{BTreeMap, HashSet};

use deadpool_postgres::{Client, GenericClient, Object, Transaction};
use memory_core::{StoreError, StoreWrite, StoredMessage, Version};
use memory_store_support::{Key, Row, to_i64, to_u64};

use crate::error::backend;
use crate::images::{Lacking, missing};

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

/// Commits the transaction only if no statement in it failed: in one that
/// failed, `SELECT 1` fails and the rest of the string is not run. (A
/// plain `COMMIT` of such a transaction rolls it back without an error, so
/// the caller could not tell whether it committed.)
const COMMIT_IF_SOUND: &str = "SELECT 1; COMMIT";

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
    let lacking = missing(client, key, &columns.images).await?;
    append_lacking(client, key, columns, &lacking).await
}

/// [`append_on`], the images the tenant lacks known: one statement, sent
/// when first polled if `client` has it prepared.
async fn append_lacking(
    client: &impl GenericClient,
    key: &Key,
    columns: &Columns,
    lacking: &Lacking<'_>,
) -> Result<Version, StoreError> {
    let count = to_i64(columns.bodies.len() as u64, "message count")?;
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
                &lacking.digests,
                &lacking.data,
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
    let lacking = missing(client, key, &columns.images).await?;
    replace_lacking(client, key, expected, columns, &lacking).await
}

/// [`replace_on`], the images the tenant lacks known: against a version
/// past 0, one statement (and a read of the version should it conflict),
/// sent when first polled if `client` has it prepared.
async fn replace_lacking(
    client: &impl GenericClient,
    key: &Key,
    expected: Version,
    columns: &Columns,
    lacking: &Lacking<'_>,
) -> Result<Version, StoreError> {
    let expected_column = to_i64(expected, "version")?;
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
                &lacking.digests,
                &lacking.data,
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

    /// As [`run`](Self::run), the images the tenant lacks known.
    async fn run_lacking(
        &self,
        client: &impl GenericClient,
        lacking: &Lacking<'_>,
    ) -> Result<Version, StoreError> {
        match self {
            Self::Append(key, columns) => append_lacking(client, key, columns, lacking).await,
            Self::Replace(key, expected, columns) => {
                replace_lacking(client, key, *expected, columns, lacking).await
            }
        }
    }

    /// Prepares the write's statement on `client` (once per connection)
    /// and asks which of its images the tenant lacks, so that its
    /// statement is sent when [`run_lacking`](Self::run_lacking) is first
    /// polled. The write must be one statement ([`one_statement_each`]).
    async fn ready(&self, client: &Client) -> Result<Lacking<'_>, StoreError> {
        let (sql, key, columns) = match self {
            Self::Append(key, columns) => (APPEND, key, columns),
            Self::Replace(key, _, columns) => (COMPACT, key, columns),
        };
        client.prepare_cached(sql).await.map_err(backend)?;
        missing(client, key, &columns.images).await
    }
}

/// Answers `writes` (each checked and encoded, or refused with its error)
/// on `client`, in order: one write alone as [`append_on`] or
/// [`replace_on`] would; several in one transaction, in one round trip
/// when they can go so, else (or when one of them fails in the database)
/// each in a savepoint of its own.
pub(crate) async fn write_all(
    mut client: Client,
    writes: Vec<Result<Encoded, StoreError>>,
) -> Vec<Result<Version, StoreError>> {
    if writes.iter().filter(|write| write.is_ok()).count() == 1 {
        let mut answers = Vec::with_capacity(writes.len());
        for write in &writes {
            answers.push(answer(&client, write).await);
        }
        return answers;
    }
    if one_statement_each(&writes) {
        client = match in_one_trip(client, &writes).await {
            Ok(answers) => return answers,
            Err(client) => client,
        };
    }
    with_savepoints(&mut client, writes).await
}

/// Whether each of `writes` is one statement (an append, or a view
/// replaced against a version past 0: against 0 the session is made
/// first) on a session no other of them writes.
fn one_statement_each(writes: &[Result<Encoded, StoreError>]) -> bool {
    let mut sessions = HashSet::new();
    writes.iter().flatten().all(|write| match write {
        Encoded::Append(key, _) => sessions.insert((&key.tenant, &key.session)),
        Encoded::Replace(key, expected, _) => {
            *expected != 0 && sessions.insert((&key.tenant, &key.session))
        }
    })
}

/// A connection inside a transaction not known to have ended. Dropped so
/// (the caller stopped waiting), it is closed, which rolls the transaction
/// back, instead of going back to the pool.
struct Begun(Option<Client>);

impl Drop for Begun {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            drop(Object::take(client));
        }
    }
}

/// Sends the transaction's begin, `writes` and its commit before reading
/// any answer, so that they cost one round trip (after one question per
/// write that holds images: which of them the tenant lacks); the answers
/// follow the order of `writes`. Each write must be one statement on a
/// session of its own ([`one_statement_each`]): a view replaced that
/// conflicts reads the session's version after the commit, as
/// [`replace_on`] alone does.
///
/// `Err` gives the connection back when a write failed in the database:
/// nothing was committed, and the transaction was rolled back.
async fn in_one_trip(
    client: Client,
    writes: &[Result<Encoded, StoreError>],
) -> Result<Vec<Result<Version, StoreError>>, Client> {
    // Each statement prepared and its images asked for first, so that every
    // statement is sent when its write is first polled.
    let mut lacking = Vec::with_capacity(writes.len());
    for write in writes {
        match write {
            Ok(write) => match write.ready(&client).await {
                Ok(ready) => lacking.push(ready),
                Err(e) => {
                    let writes = writes.iter().map(|w| w.as_ref().map_err(StoreError::clone));
                    return Ok(none_committed(writes, &e));
                }
            },
            Err(_) => lacking.push(Lacking::default()),
        }
    }
    let mut begun = Begun(Some(client));
    let client = begun.0.as_ref().expect("the connection is held");
    // `join!` and `join_all` poll in order, and a statement is sent when
    // first polled: the begin, the writes, then the commit.
    let (_, answers, committed) = futures::join!(
        client.batch_execute("BEGIN"),
        futures::future::join_all(
            writes
                .iter()
                .zip(&lacking)
                .map(|(write, lacking)| answer_lacking(client, write, lacking))
        ),
        client.batch_execute(COMMIT_IF_SOUND)
    );
    if committed.is_ok() {
        drop(begun.0.take());
        return Ok(answers);
    }
    if let Err(e) = client.batch_execute("ROLLBACK").await {
        return Ok(none_committed(answers, &backend(e)));
    }
    Err(begun.0.take().expect("the connection is held"))
}

/// The answer of `write`, run on `client` or refused.
async fn answer(
    client: &Client,
    write: &Result<Encoded, StoreError>,
) -> Result<Version, StoreError> {
    match write {
        Ok(write) => write.run(client).await,
        Err(e) => Err(e.clone()),
    }
}

/// The answer of `write`, run on `client` with the images the tenant
/// lacks known, or refused.
async fn answer_lacking(
    client: &Client,
    write: &Result<Encoded, StoreError>,
    lacking: &Lacking<'_>,
) -> Result<Version, StoreError> {
    match write {
        Ok(write) => write.run_lacking(client, lacking).await,
        Err(e) => Err(e.clone()),
    }
}

/// Runs `writes` in one transaction, each in a savepoint of its own, and
/// commits.
async fn with_savepoints(
    client: &mut Client,
    writes: Vec<Result<Encoded, StoreError>>,
) -> Vec<Result<Version, StoreError>> {
    let tx = match client.transaction().await {
        Ok(tx) => tx,
        Err(e) => return none_committed(writes, &backend(e)),
    };
    let answers = write_in(&tx, writes).await;
    match tx.commit().await {
        Ok(()) => answers,
        Err(e) => none_committed(answers, &backend(e)),
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
async fn write_in(
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
    writes: impl IntoIterator<Item = Result<T, StoreError>>,
    e: &StoreError,
) -> Vec<Result<Version, StoreError>> {
    writes
        .into_iter()
        .map(|write| Err(write.err().unwrap_or_else(|| e.clone())))
        .collect()
}
