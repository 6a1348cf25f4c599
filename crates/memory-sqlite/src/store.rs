//! [`SqliteStore`]: many sessions in one SQLite file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use memory_core::{Message, Snapshot, Store, StoreError, StoreWrite, StoredMessage, Version};
use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use crate::append::append_in;
use crate::batch::{Op, commit_one_by_one};
use crate::error::{BUSY_TIMEOUT, backend};
use crate::group::Queue;
use crate::images::read_images;
use crate::replace::replace_in;
use crate::schema;
use crate::state::read_state;
use memory_store_support::{Key, Row, assemble, decode_all, to_u64};

/// Connections of a file that only read: as many as the reads a busy
/// server makes at once on a small machine (a chat call reads the
/// session's state and a few index entries while others commit); each is
/// a file handle and a page cache.
const READERS: usize = 4;

/// A connection to `path` that only reads.
fn reader(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| {
        StoreError::Backend(format!(
            "cannot open the SQLite file {} for reading: {e}",
            path.display()
        ))
    })?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
    Ok(conn)
}

/// The connection, shared by every handle of one opened file.
struct Shared {
    /// Connections that only read (a file's; WAL lets them read while the
    /// writer commits), tried in turn; none for a database in memory.
    /// Declared first, so dropped first: the writer is the file's last
    /// connection to close, and it checkpoints the write-ahead log into
    /// the file and removes it (a reader cannot).
    readers: Vec<Mutex<Connection>>,
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
    /// Appends waiting for the next group commit.
    queue: Queue,
}

/// Sessions in a SQLite file: embedded and durable.
///
/// Every write is one transaction, committed synchronously in WAL mode: an
/// append or compaction that returned `Ok` is on disk. Compactions take the
/// write lock (`BEGIN IMMEDIATE`), check the session's state and write the
/// new view in the same transaction: a compaction rebases over the appends
/// made since the version it was computed from, and one computed from a
/// view another compaction already replaced changes nothing and returns
/// [`StoreError::Conflict`]. Several
/// processes may open the same file; their writes queue on SQLite's lock,
/// each waiting up to 10 seconds.
///
/// SQLite is blocking: each call runs on tokio's blocking threads (inline
/// when there is no tokio runtime), one at a time per opened file. Clones
/// and [`with_tenant`](SqliteStore::with_tenant) handles share the file's
/// connection.
///
/// ```
/// use memory_core::{Message, Store, StoredMessage, summary};
/// use memory_sqlite::SqliteStore;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = SqliteStore::open_in_memory().unwrap();
/// let v = store.append("s1", vec![
///     StoredMessage::new(Message::user("What failed?"), 4, false),
///     StoredMessage::new(Message::assistant("The parser test."), 5, false),
/// ]).await.unwrap();
/// let summary = StoredMessage::new(summary::message("The parser test failed."), 8, true);
/// store.replace_view("s1", v, vec![summary.clone()]).await.unwrap();
///
/// assert_eq!(store.load("s1").await.unwrap().messages, vec![summary]);
/// assert_eq!(store.history("s1").await.unwrap().len(), 2);
/// assert_eq!(store.replaced("s1").await.unwrap()[0].len(), 2);
/// # });
/// ```
#[derive(Clone)]
pub struct SqliteStore {
    shared: Arc<Shared>,
    tenant: Option<Arc<str>>,
    group_commit: bool,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.shared.path)
            .field("tenant", &self.tenant)
            .finish()
    }
}

impl SqliteStore {
    /// Opens (or creates) the database file at `path`, switches it to WAL
    /// mode and migrates its schema to [`SCHEMA_VERSION`](crate::SCHEMA_VERSION).
    ///
    /// This blocks while the file is opened and migrated; call it before
    /// serving, or inside `spawn_blocking`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when the file cannot be opened or written,
    /// is not a SQLite database, or has a schema newer than this library.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = memory_sqlite::SqliteStore::open(dir.path().join("memory.db")).unwrap();
    /// assert!(store.path().is_some());
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        create_private(path)?;
        let conn = Connection::open(path).map_err(|e| {
            StoreError::Backend(format!(
                "cannot open the SQLite file {}: {e}",
                path.display()
            ))
        })?;
        // Before anything that takes a lock another process may hold.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
        let journal: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(|e| {
                StoreError::Backend(format!(
                    "cannot switch {} to WAL mode (is it a SQLite database?): {e}",
                    path.display()
                ))
            })?;
        if !journal.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Backend(format!(
                "{} stays in journal mode {journal}, not WAL: use a file on a local file system",
                path.display()
            )));
        }
        let mut store = Self::setup(conn, Some(path.to_path_buf()))?;
        let readers = (0..READERS)
            .map(|_| reader(path).map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        Arc::get_mut(&mut store.shared)
            .expect("made above, not yet shared")
            .readers = readers;
        Ok(store)
    }

    /// A private database in memory, gone when the last handle is dropped:
    /// for tests.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] if SQLite cannot allocate it.
    ///
    /// ```
    /// let store = memory_sqlite::SqliteStore::open_in_memory().unwrap();
    /// assert!(store.path().is_none());
    /// ```
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(backend)?;
        Self::setup(conn, None)
    }

    fn setup(mut conn: Connection, path: Option<PathBuf>) -> Result<Self, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(backend)?;
        schema::migrate(&mut conn).map_err(StoreError::Backend)?;
        Ok(Self {
            shared: Arc::new(Shared {
                readers: Vec::new(),
                conn: Mutex::new(conn),
                path,
                queue: Queue::default(),
            }),
            tenant: None,
            group_commit: true,
        })
    }

    /// A handle on the same file whose sessions live in `tenant`'s
    /// namespace: session `s` of tenant `acme` is another session than `s`
    /// of any other tenant or of the store without a tenant, and can only
    /// be reached through a handle of `acme`.
    ///
    /// A tenant follows the rules of session ids (non-empty, no control
    /// characters); every call through a handle with another tenant fails
    /// with [`StoreError::InvalidSession`].
    ///
    /// ```
    /// use memory_core::{Message, Store, StoredMessage};
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let store = memory_sqlite::SqliteStore::open_in_memory().unwrap();
    /// let acme = store.with_tenant("acme");
    /// acme.append("s", vec![StoredMessage::new(Message::user("hi"), 1, false)]).await.unwrap();
    /// assert_eq!(acme.load("s").await.unwrap().messages.len(), 1);
    /// assert!(store.with_tenant("globex").load("s").await.unwrap().messages.is_empty());
    /// assert!(store.load("s").await.unwrap().messages.is_empty());
    /// # });
    /// ```
    pub fn with_tenant(&self, tenant: impl Into<String>) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            tenant: Some(Arc::from(tenant.into())),
            group_commit: self.group_commit,
        }
    }

    /// The tenant of this handle, if any.
    ///
    /// ```
    /// let store = memory_sqlite::SqliteStore::open_in_memory().unwrap();
    /// assert_eq!(store.tenant(), None);
    /// assert_eq!(store.with_tenant("acme").tenant(), Some("acme"));
    /// ```
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// The database file, `None` for [`open_in_memory`](Self::open_in_memory).
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("m.db");
    /// let store = memory_sqlite::SqliteStore::open(&path).unwrap();
    /// assert_eq!(store.path(), Some(path.as_path()));
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.shared.path.as_deref()
    }

    /// Whether appends through this handle share commits with the appends
    /// of other tasks (on by default): appends wait in a queue, holding no
    /// thread, and one blocking thread commits what waits together, in one
    /// transaction and one flush to disk, each append still acknowledged
    /// only once it is durable and each still atomic on its own. While the
    /// writers of its last group keep coming back, it waits for them up to
    /// 300 µs. Off, every append is a transaction and a flush of its own.
    /// The order of appends, their versions and what a crash keeps are the
    /// same either way; with many concurrent writers group commit
    /// multiplies throughput.
    ///
    /// ```
    /// let store = memory_sqlite::SqliteStore::open_in_memory().unwrap();
    /// assert!(store.group_commit());
    /// assert!(!store.with_group_commit(false).group_commit());
    /// ```
    pub fn with_group_commit(mut self, on: bool) -> Self {
        self.group_commit = on;
        self
    }

    /// Whether appends through this handle use group commit.
    ///
    /// ```
    /// assert!(memory_sqlite::SqliteStore::open_in_memory().unwrap().group_commit());
    /// ```
    pub fn group_commit(&self) -> bool {
        self.group_commit
    }

    /// Runs `job` on the connection, on a blocking thread when there is a
    /// tokio runtime.
    async fn run<R, F>(&self, session: &str, job: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection, &Key) -> Result<R, StoreError> + Send + 'static,
    {
        let key = Key::new(self.tenant.as_deref(), session)?;
        self.blocking(move |conn| job(conn, &key)).await?
    }

    /// Runs `job` with the connection locked, on a blocking thread when
    /// there is a tokio runtime (inline otherwise).
    async fn blocking<R, F>(&self, job: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> R + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        off_thread(move || {
            let mut conn = shared.conn.lock().unwrap_or_else(PoisonError::into_inner);
            job(&mut conn)
        })
        .await
    }

    /// Runs the read-only `job` on a reader connection (the first one free,
    /// else the first), or on the writer's when there is none.
    async fn read<R, F>(&self, session: &str, job: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection, &Key) -> Result<R, StoreError> + Send + 'static,
    {
        if self.shared.readers.is_empty() {
            return self.run(session, job).await;
        }
        let key = Key::new(self.tenant.as_deref(), session)?;
        let shared = Arc::clone(&self.shared);
        off_thread(move || {
            let readers = &shared.readers;
            let mut conn = readers
                .iter()
                .find_map(|r| r.try_lock().ok())
                .unwrap_or_else(|| readers[0].lock().unwrap_or_else(PoisonError::into_inner));
            job(&mut conn, &key)
        })
        .await?
    }

    /// Writes through the file's group commit: queues the writes, starts a
    /// drainer when none is at work (on a blocking thread, inline without
    /// a tokio runtime), and waits for their answers.
    async fn grouped(&self, writes: Vec<(Key, Op)>) -> Vec<Result<Version, StoreError>> {
        let count = writes.len();
        let (answer, drainer) = self.shared.queue.push(writes);
        if let Some(drainer) = drainer {
            let shared = Arc::clone(&self.shared);
            let drain = move || drainer.run(&shared.conn);
            match tokio::runtime::Handle::try_current() {
                // It runs on its own; its writers' tasks await their answers.
                Ok(runtime) => drop(runtime.spawn_blocking(drain)),
                Err(_) => drain(),
            }
        }
        answer.await.unwrap_or_else(|_| {
            let e = StoreError::Backend(
                "the group commit of this write ended without an answer".into(),
            );
            vec![Err(e); count]
        })
    }

    /// The writes of [`Store::write_all`] as the group commit takes them;
    /// a write with an invalid session is answered at once.
    fn ops(&self, writes: Vec<StoreWrite>) -> Vec<Result<(Key, Op), StoreError>> {
        writes
            .into_iter()
            .map(|write| {
                let key = Key::new(self.tenant.as_deref(), write.session())?;
                Ok(match write {
                    StoreWrite::Append { messages, .. } => {
                        (key, Op::Append(Row::encode_all(&messages)?))
                    }
                    StoreWrite::Replace { expected, view, .. } => (
                        key,
                        Op::Replace {
                            expected,
                            rows: Row::encode_all(&view)?,
                        },
                    ),
                })
            })
            .collect()
    }
}

/// Runs `job` on a blocking thread when there is a tokio runtime, inline
/// otherwise.
async fn off_thread<R, F>(job: F) -> Result<R, StoreError>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => runtime
            .spawn_blocking(job)
            .await
            .map_err(|e| StoreError::Backend(format!("the SQLite worker thread failed: {e}"))),
        Err(_) => Ok(job()),
    }
}

/// Messages of the history with `after < seq <= upto`, in order.
fn log_rows(
    tx: &Transaction<'_>,
    key: &Key,
    after: i64,
    upto: i64,
) -> Result<Vec<Row>, StoreError> {
    let mut stmt = tx
        .prepare_cached(
            "SELECT body, tokens, protected FROM messages \
             WHERE tenant = ?1 AND session = ?2 AND seq > ?3 AND seq <= ?4 ORDER BY seq",
        )
        .map_err(backend)?;
    let rows = stmt
        .query_map(params![key.tenant, key.session, after, upto], |row| {
            Ok(Row {
                body: row.get(0)?,
                tokens: row.get(1)?,
                protected: row.get(2)?,
                images: Vec::new(),
            })
        })
        .map_err(backend)?;
    rows.collect::<Result<_, _>>().map_err(backend)
}

/// The committed views of generations `from..to`, each in order.
fn view_rows(
    tx: &Transaction<'_>,
    key: &Key,
    from: i64,
    to: i64,
) -> Result<BTreeMap<i64, Vec<Row>>, StoreError> {
    let mut stmt = tx
        .prepare_cached(
            "SELECT generation, body, tokens, protected FROM view_messages \
             WHERE tenant = ?1 AND session = ?2 AND generation >= ?3 AND generation < ?4 \
             ORDER BY generation, pos",
        )
        .map_err(backend)?;
    let rows = stmt
        .query_map(params![key.tenant, key.session, from, to], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                Row {
                    body: row.get(1)?,
                    tokens: row.get(2)?,
                    protected: row.get(3)?,
                    images: Vec::new(),
                },
            ))
        })
        .map_err(backend)?;
    let mut views: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    for row in rows {
        let (generation, row) = row.map_err(backend)?;
        views.entry(generation).or_default().push(row);
    }
    Ok(views)
}

fn load(conn: &mut Connection, key: &Key) -> Result<Snapshot, StoreError> {
    // One read transaction: the view and the tail come from one snapshot.
    let tx = conn.transaction().map_err(backend)?;
    let Some(state) = read_state(&tx, key)? else {
        return Ok(Snapshot::default());
    };
    let mut rows = view_rows(&tx, key, state.generation, state.generation + 1)?
        .remove(&state.generation)
        .unwrap_or_default();
    rows.extend(log_rows(&tx, key, state.base, state.length)?);
    read_images(&tx, key, &mut rows)?;
    tx.commit().map_err(backend)?;
    Ok(Snapshot {
        messages: decode_all(rows)?,
        version: to_u64(state.version, "version")?,
    })
}

fn append(conn: &mut Connection, key: &Key, rows: &[Row]) -> Result<Version, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    let version = append_in(&tx, key, rows)?;
    tx.commit().map_err(backend)?;
    Ok(version)
}

fn replace_view(
    conn: &mut Connection,
    key: &Key,
    expected: Version,
    rows: &[Row],
) -> Result<Version, StoreError> {
    // The write lock first, then the check: nothing can come between them.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    let version = replace_in(&tx, key, expected, rows)?;
    tx.commit().map_err(backend)?;
    Ok(version)
}

/// Erases a session's rows from every table, in one transaction.
fn delete(conn: &mut Connection, key: &Key) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    for table in ["messages", "view_messages", "compactions", "sessions"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE tenant = ?1 AND session = ?2"),
            params![key.tenant, key.session],
        )
        .map_err(backend)?;
    }
    tx.commit().map_err(backend)
}

fn history(conn: &mut Connection, key: &Key) -> Result<Vec<Message>, StoreError> {
    // One read transaction: the rows and their images from one snapshot.
    let tx = conn.transaction().map_err(backend)?;
    let mut rows = log_rows(&tx, key, 0, i64::MAX)?;
    read_images(&tx, key, &mut rows)?;
    tx.commit().map_err(backend)?;
    Ok(decode_all(rows)?
        .into_iter()
        .map(|stored| stored.message)
        .collect())
}

fn replaced(conn: &mut Connection, key: &Key) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
    let tx = conn.transaction().map_err(backend)?;
    let Some(state) = read_state(&tx, key)? else {
        return Ok(Vec::new());
    };
    let bases: Vec<i64> = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT base FROM compactions WHERE tenant = ?1 AND session = ?2 \
                 ORDER BY generation",
            )
            .map_err(backend)?;
        let bases = stmt
            .query_map(params![key.tenant, key.session], |row| row.get(0))
            .map_err(backend)?;
        bases.collect::<Result<_, _>>().map_err(backend)?
    };
    let mut views = view_rows(&tx, key, 0, state.generation)?;
    let mut log = log_rows(&tx, key, 0, state.base)?;
    read_images(&tx, key, views.values_mut().flatten().chain(&mut log))?;
    tx.commit().map_err(backend)?;
    assemble(bases, views, log)
}

/// Creates the database file, when there is none, readable and writable
/// by its owner only (sessions hold what users and tools said); SQLite
/// gives its journal files the same mode. A file that exists keeps the
/// mode its owner gave it.
fn create_private(path: &Path) -> Result<(), StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Backend(format!(
            "cannot create the SQLite file {}: {e}",
            path.display()
        ))),
    }
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    async fn load(&self, session: &str) -> Result<Snapshot, StoreError> {
        self.read(session, load).await
    }

    async fn append(
        &self,
        session: &str,
        messages: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        let rows = Row::encode_all(&messages)?;
        if self.group_commit {
            let key = Key::new(self.tenant.as_deref(), session)?;
            return self.grouped(vec![(key, Op::Append(rows))]).await.remove(0);
        }
        self.run(session, move |conn, key| append(conn, key, &rows))
            .await
    }

    async fn replace_view(
        &self,
        session: &str,
        expected: Version,
        view: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        let rows = Row::encode_all(&view)?;
        self.run(session, move |conn, key| {
            replace_view(conn, key, expected, &rows)
        })
        .await
    }

    async fn history(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        self.read(session, history).await
    }

    async fn replaced(&self, session: &str) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
        self.run(session, replaced).await
    }

    async fn delete(&self, session: &str) -> Result<(), StoreError> {
        self.run(session, delete).await
    }

    fn for_tenant(&self, tenant: &str) -> Arc<dyn Store> {
        Arc::new(self.with_tenant(tenant))
    }

    async fn write_all(&self, writes: Vec<StoreWrite>) -> Vec<Result<Version, StoreError>> {
        let ops = self.ops(writes);
        let valid: Vec<(Key, Op)> = ops
            .iter()
            .filter_map(|op| op.as_ref().ok().cloned())
            .collect();
        let mut done = if valid.is_empty() {
            Vec::new()
        } else if self.group_commit {
            self.grouped(valid).await
        } else {
            self.blocking(move |conn| {
                let writes: Vec<(&Key, &Op)> = valid.iter().map(|(k, o)| (k, o)).collect();
                commit_one_by_one(conn, &writes)
            })
            .await
            .unwrap_or_else(|e| vec![Err(e); ops.iter().filter(|o| o.is_ok()).count()])
        }
        .into_iter();
        ops.into_iter()
            .map(|op| match op {
                Ok(_) => done.next().unwrap_or_else(|| {
                    Err(StoreError::Backend("a write was left unanswered".into()))
                }),
                Err(e) => Err(e),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use memory_core::summary;
    use memory_store_support::test_util::rebases_after_migration;

    use super::*;

    fn m(text: &str) -> StoredMessage {
        StoredMessage::new(Message::user(text), 1, false)
    }

    fn pragma(store: &SqliteStore, name: &str) -> String {
        let conn = store.shared.conn.lock().unwrap();
        conn.query_row(&format!("PRAGMA {name}"), [], |row| {
            row.get::<_, rusqlite::types::Value>(0)
        })
        .map(|v| format!("{v:?}"))
        .unwrap()
    }

    #[test]
    fn a_file_is_in_wal_mode_with_synchronous_commits() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("m.db")).unwrap();
        assert_eq!(pragma(&store, "journal_mode"), r#"Text("wal")"#);
        assert_eq!(pragma(&store, "synchronous"), "Integer(2)");
        assert_eq!(pragma(&store, "busy_timeout"), "Integer(10000)");
        assert_eq!(pragma(&store, "user_version"), "Integer(3)");
    }

    #[test]
    fn calls_work_without_a_tokio_runtime() {
        let store = SqliteStore::open_in_memory().unwrap();
        let version = futures_lite_block_on(store.append("s", vec![m("a")])).unwrap();
        assert_eq!(version, 1);
    }

    /// Polls a future that never waits (no runtime: the store runs inline).
    fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
        }
    }

    #[test]
    fn a_file_that_is_not_sqlite_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not.db");
        std::fs::write(&path, b"this is not a database, just some text here......").unwrap();
        let err = SqliteStore::open(&path).unwrap_err();
        assert!(err.to_string().contains("not.db"), "{err}");
    }

    #[tokio::test]
    async fn several_compactions_keep_each_replaced_view() {
        let store = SqliteStore::open_in_memory().unwrap();
        let s1 = StoredMessage::new(summary::message("1-2"), 2, true);
        let s2 = StoredMessage::new(summary::message("1-4"), 2, true);
        let v = store.append("s", vec![m("1"), m("2")]).await.unwrap();
        store.replace_view("s", v, vec![s1.clone()]).await.unwrap();
        store.append("s", vec![m("3")]).await.unwrap();
        let v = store.append("s", vec![m("4")]).await.unwrap();
        let v = store.replace_view("s", v, vec![s2.clone()]).await.unwrap();
        // A compaction with nothing appended since the last one.
        let v = store
            .replace_view("s", v, vec![s2.clone(), m("x")])
            .await
            .unwrap();
        store.append("s", vec![m("5")]).await.unwrap();
        assert_eq!(v, 6);
        assert_eq!(
            store.replaced("s").await.unwrap(),
            vec![
                vec![m("1"), m("2")],
                vec![s1, m("3"), m("4")],
                vec![s2.clone()],
            ]
        );
        let snapshot = store.load("s").await.unwrap();
        assert_eq!(snapshot.messages, vec![s2, m("x"), m("5")]);
        assert_eq!(snapshot.version, 7);
        assert_eq!(store.history("s").await.unwrap().len(), 5);
    }

    #[tokio::test]
    async fn a_file_of_schema_1_is_migrated_and_rebases_from_then_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
            conn.execute_batch(
                "PRAGMA user_version = 1;
                 INSERT INTO sessions VALUES ('', 's', 2, 3, 0, 0);",
            )
            .unwrap();
            for (seq, text) in [(1, "1"), (2, "2"), (3, "3")] {
                let row = Row::encode(&m(text)).unwrap();
                conn.execute(
                    "INSERT INTO messages VALUES ('', 's', ?1, ?2, ?3, ?4)",
                    params![seq, row.body, row.tokens, row.protected],
                )
                .unwrap();
            }
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(pragma(&store, "user_version"), "Integer(3)");
        rebases_after_migration(&store).await;
    }

    fn with_images(text: &str, images: &[&[u8]]) -> StoredMessage {
        let mut blocks = vec![memory_core::ContentBlock::Text(text.into())];
        for (i, data) in images.iter().enumerate() {
            let image = memory_core::ImageContent::new("image/png", data.to_vec());
            let image = if i % 2 == 0 {
                image.with_detail("low")
            } else {
                image
            };
            blocks.push(memory_core::ContentBlock::Image(image));
        }
        StoredMessage::new(Message::user_blocks(blocks), 1_000, false)
    }

    /// The images table's rows and bytes, and the bytes of every body.
    fn sizes(store: &SqliteStore) -> (i64, i64, i64) {
        let conn = store.shared.conn.lock().unwrap();
        let (images, bytes) = conn
            .query_row(
                "SELECT count(*), coalesce(sum(length(data)), 0) FROM images",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        let bodies: i64 = conn
            .query_row(
                "SELECT (SELECT coalesce(sum(length(body)), 0) FROM messages) + \
                 (SELECT coalesce(sum(length(body)), 0) FROM view_messages)",
                [],
                |row| row.get(0),
            )
            .unwrap();
        (images, bytes, bodies)
    }

    #[tokio::test]
    async fn an_image_is_stored_once_however_many_messages_hold_it() {
        let store = SqliteStore::open_in_memory().unwrap();
        let (a, b) = (vec![1_u8; 50_000], vec![2_u8; 70_000]);
        let messages: Vec<StoredMessage> = (0..5)
            .map(|i| with_images(&format!("look {i}"), &[&a, &b, &a]))
            .collect();
        let mut v = 0;
        for message in &messages {
            v = store.append("s", vec![message.clone()]).await.unwrap();
        }
        // Another session of the tenant, and a compaction's view.
        store.append("t", messages[..1].to_vec()).await.unwrap();
        store
            .replace_view("s", v, messages[3..].to_vec())
            .await
            .unwrap();
        let (images, bytes, bodies) = sizes(&store);
        assert_eq!((images, bytes), (2, 120_000));
        assert!(bodies < 8 * 1_000, "{bodies} bytes of bodies");
        assert_eq!(store.load("s").await.unwrap().messages, messages[3..]);
        assert_eq!(store.history("s").await.unwrap(), plain(&messages));
        assert_eq!(store.replaced("s").await.unwrap(), vec![messages.clone()]);
        assert_eq!(store.history("t").await.unwrap(), plain(&messages[..1]));
        // Another tenant keeps its own.
        store
            .with_tenant("acme")
            .append("s", messages[..1].to_vec())
            .await
            .unwrap();
        assert_eq!(sizes(&store).0, 4);
    }

    fn plain(stored: &[StoredMessage]) -> Vec<Message> {
        stored.iter().map(|s| s.message.clone()).collect()
    }

    #[tokio::test]
    async fn a_file_of_schema_2_keeps_its_inline_images_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v2.db");
        let old = with_images("before", &[&[5; 300]]);
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
            conn.execute_batch(schema::MIGRATIONS[1]).unwrap();
            conn.execute_batch(
                "PRAGMA user_version = 2;
                 INSERT INTO sessions VALUES ('', 's', 1, 1, 0, 0, 0);",
            )
            .unwrap();
            let body = serde_json::to_string(&old.message).unwrap();
            conn.execute(
                "INSERT INTO messages VALUES ('', 's', 1, ?1, 1000, 0, 1)",
                params![body],
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(pragma(&store, "user_version"), "Integer(3)");
        let new = with_images("after", &[&[5; 300], &[6; 10]]);
        store.append("s", vec![new.clone()]).await.unwrap();
        assert_eq!(store.load("s").await.unwrap().messages, vec![old, new]);
        assert_eq!(sizes(&store).0, 2);
    }

    #[tokio::test]
    async fn the_last_handle_closed_leaves_no_write_ahead_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let store = SqliteStore::open(&path).unwrap().with_group_commit(false);
        store.append("s", vec![m("a")]).await.unwrap();
        assert!(path.with_extension("db-wal").exists());
        drop(store);
        assert!(!path.with_extension("db-wal").exists());
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.history("s").await.unwrap(), vec![Message::user("a")]);
    }

    #[test]
    fn debug_names_the_file_and_tenant() {
        let store = SqliteStore::open_in_memory().unwrap().with_tenant("acme");
        assert_eq!(
            format!("{store:?}"),
            r#"SqliteStore { path: None, tenant: Some("acme") }"#
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_new_file_is_its_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        SqliteStore::open(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
