//! The schema and its migrations, versioned in `memory_schema_version`.

use deadpool_postgres::Client;

use crate::error::backend;
use memory_core::StoreError;

/// The schema version this library writes (the row of the
/// `memory_schema_version` table).
///
/// A database at an older version is migrated on
/// [`connect`](crate::PostgresStore::connect); one at a newer version is
/// refused, so an old worker never misreads it.
///
/// ```
/// assert_eq!(memory_postgres::SCHEMA_VERSION, 3);
/// ```
pub const SCHEMA_VERSION: i32 = 3;

/// Key of the advisory lock that serializes migrations of many workers
/// starting at once (an arbitrary constant of this crate).
const MIGRATION_LOCK: i64 = 0x6d65_6d6f_7279_0001;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: [&str; 3] = [
    r"
CREATE TABLE memory_sessions (
    tenant     TEXT   NOT NULL,
    session    TEXT   NOT NULL,
    version    BIGINT NOT NULL,
    length     BIGINT NOT NULL,
    generation BIGINT NOT NULL,
    base       BIGINT NOT NULL,
    PRIMARY KEY (tenant, session)
);
CREATE TABLE memory_messages (
    tenant    TEXT    NOT NULL,
    session   TEXT    NOT NULL,
    seq       BIGINT  NOT NULL,
    body      TEXT    NOT NULL,
    tokens    BIGINT  NOT NULL,
    protected BOOLEAN NOT NULL,
    PRIMARY KEY (tenant, session, seq)
);
CREATE TABLE memory_compactions (
    tenant     TEXT   NOT NULL,
    session    TEXT   NOT NULL,
    generation BIGINT NOT NULL,
    base       BIGINT NOT NULL,
    version    BIGINT NOT NULL,
    PRIMARY KEY (tenant, session, generation)
);
CREATE TABLE memory_view_messages (
    tenant     TEXT    NOT NULL,
    session    TEXT    NOT NULL,
    generation BIGINT  NOT NULL,
    pos        BIGINT  NOT NULL,
    body       TEXT    NOT NULL,
    tokens     BIGINT  NOT NULL,
    protected  BOOLEAN NOT NULL,
    PRIMARY KEY (tenant, session, generation, pos)
);
",
    // Compactions rebase over appends: each message records the version
    // its append produced, each session the version of its last
    // compaction. A session already there may rebase from its current
    // version on; older messages read as version 0, before any of those.
    r"
ALTER TABLE memory_sessions ADD COLUMN compacted BIGINT NOT NULL DEFAULT 0;
UPDATE memory_sessions SET compacted = version;
ALTER TABLE memory_messages ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
",
    // Images stored once: each distinct image of a tenant's messages, by
    // the digest of its bytes; the rows that hold it name it. Rows written
    // before hold their images in their body and read as they are.
    r"
CREATE TABLE memory_images (
    tenant TEXT  NOT NULL,
    digest TEXT  NOT NULL,
    data   BYTEA NOT NULL,
    PRIMARY KEY (tenant, digest)
);
",
];

/// Brings the database to [`SCHEMA_VERSION`] in one transaction under an
/// advisory lock, so that workers starting at once migrate it once.
pub(crate) async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(backend)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(backend)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS memory_schema_version (version INTEGER NOT NULL)")
        .await
        .map_err(backend)?;
    let found: i32 = tx
        .query_one("SELECT max(version) FROM memory_schema_version", &[])
        .await
        .map_err(backend)?
        .get::<_, Option<i32>>(0)
        .unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(StoreError::Backend(format!(
            "the database is at schema version {found}, newer than the {SCHEMA_VERSION} this \
             version of memory-postgres knows: upgrade memory-postgres in every worker"
        )));
    }
    let from = usize::try_from(found).unwrap_or(0);
    for (step, migration) in MIGRATIONS.iter().enumerate().skip(from) {
        tx.batch_execute(migration).await.map_err(|e| {
            StoreError::Backend(format!(
                "cannot migrate the schema from version {step}: {}",
                backend(e)
            ))
        })?;
    }
    if found < SCHEMA_VERSION {
        tx.execute("DELETE FROM memory_schema_version", &[])
            .await
            .map_err(backend)?;
        tx.execute(
            "INSERT INTO memory_schema_version (version) VALUES ($1)",
            &[&SCHEMA_VERSION],
        )
        .await
        .map_err(backend)?;
        tracing::info!(
            from = found,
            to = SCHEMA_VERSION,
            "migrated the memory-postgres schema"
        );
    }
    tx.commit().await.map_err(backend)
}
