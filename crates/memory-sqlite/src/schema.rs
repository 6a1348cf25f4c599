//! The schema and its migrations, versioned with `PRAGMA user_version`.

use rusqlite::{Connection, TransactionBehavior};

/// The schema version this library writes (`PRAGMA user_version`).
///
/// A file at an older version is migrated when it is opened; a file at a
/// newer one is refused, so an old binary never misreads it.
///
/// ```
/// assert_eq!(memory_sqlite::SCHEMA_VERSION, 3);
/// ```
pub const SCHEMA_VERSION: i64 = 3;

/// Migration `i` takes the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: [&str; 3] = [
    r"
CREATE TABLE sessions (
    tenant     TEXT    NOT NULL,
    session    TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    length     INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    base       INTEGER NOT NULL,
    PRIMARY KEY (tenant, session)
);
CREATE TABLE messages (
    tenant    TEXT    NOT NULL,
    session   TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    body      TEXT    NOT NULL,
    tokens    INTEGER NOT NULL,
    protected INTEGER NOT NULL,
    PRIMARY KEY (tenant, session, seq)
);
CREATE TABLE compactions (
    tenant     TEXT    NOT NULL,
    session    TEXT    NOT NULL,
    generation INTEGER NOT NULL,
    base       INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    PRIMARY KEY (tenant, session, generation)
);
CREATE TABLE view_messages (
    tenant     TEXT    NOT NULL,
    session    TEXT    NOT NULL,
    generation INTEGER NOT NULL,
    pos        INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    tokens     INTEGER NOT NULL,
    protected  INTEGER NOT NULL,
    PRIMARY KEY (tenant, session, generation, pos)
);
",
    // Compactions rebase over appends: each message records the version
    // its append produced, each session the version of its last
    // compaction. A session already there may rebase from its current
    // version on; older messages read as version 0, before any of those.
    r"
ALTER TABLE sessions ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET compacted = version;
ALTER TABLE messages ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
",
    // Images stored once: each distinct image of a tenant's messages, by
    // the digest of its bytes; the rows that hold it name it. Rows written
    // before hold their images in their body and read as they are.
    r"
CREATE TABLE images (
    tenant TEXT NOT NULL,
    digest TEXT NOT NULL,
    data   BLOB NOT NULL,
    PRIMARY KEY (tenant, digest)
);
",
];

/// Brings the file to [`SCHEMA_VERSION`] in one write transaction, so that
/// two processes opening a new file at once migrate it once.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), String> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| format!("cannot lock the database to check its schema: {e}"))?;
    let found: i64 = tx
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|e| format!("cannot read the schema version: {e}"))?;
    if found > SCHEMA_VERSION {
        return Err(format!(
            "the database is at schema version {found}, newer than the {SCHEMA_VERSION} this \
             version of memory-sqlite knows: upgrade memory-sqlite to open it"
        ));
    }
    for (from, migration) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(migration)
            .map_err(|e| format!("cannot migrate the schema from version {from}: {e}"))?;
    }
    if found < SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(|e| format!("cannot record the schema version: {e}"))?;
        tracing::info!(
            from = found,
            to = SCHEMA_VERSION,
            "migrated the memory-sqlite schema"
        );
    }
    tx.commit()
        .map_err(|e| format!("cannot commit the schema migration: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_is_a_no_op() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        migrate(&mut conn).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA user_version = 99").unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(err.contains("upgrade memory-sqlite"), "{err}");
    }
}
