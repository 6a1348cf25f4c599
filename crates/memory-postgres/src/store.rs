//! [`PostgresStore`]: sessions in PostgreSQL, shared by many workers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{
    Client, Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime,
};
use memory_core::{Message, Snapshot, Store, StoreError, StoreWrite, StoredMessage, Version};
use tokio_postgres::config::Host;
use tokio_postgres::{Config, IsolationLevel};

use crate::error::backend;
use crate::images::read_images;
use crate::schema;
use crate::tls;
use crate::write::{self, Columns, Encoded, append_on, none_committed, replace_on};
use memory_store_support::{Key, Row, assemble, decode_all, to_u64};

/// Connections a store opens at most unless told otherwise.
///
/// ```
/// assert_eq!(memory_postgres::DEFAULT_MAX_CONNECTIONS, 16);
/// ```
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// One statement, so one snapshot: the version (part 0), the committed
/// view (part 1) and the messages appended since (part 2).
const LOAD: &str = "\
WITH s AS (
    SELECT version, generation, base, length FROM memory_sessions
    WHERE tenant = $1 AND session = $2
)
SELECT 0 AS part, 0::bigint AS ord, NULL::text AS body, NULL::bigint AS tokens,
       NULL::boolean AS protected, s.version
FROM s
UNION ALL
SELECT 1, v.pos, v.body, v.tokens, v.protected, s.version
FROM s JOIN memory_view_messages v
  ON v.tenant = $1 AND v.session = $2 AND v.generation = s.generation
UNION ALL
SELECT 2, m.seq, m.body, m.tokens, m.protected, s.version
FROM s JOIN memory_messages m
  ON m.tenant = $1 AND m.session = $2 AND m.seq > s.base AND m.seq <= s.length
ORDER BY part, ord";

const HISTORY: &str = "SELECT body, tokens, protected FROM memory_messages \
     WHERE tenant = $1 AND session = $2 ORDER BY seq";

const STATE: &str =
    "SELECT generation, base FROM memory_sessions WHERE tenant = $1 AND session = $2";

const BASES: &str =
    "SELECT base FROM memory_compactions WHERE tenant = $1 AND session = $2 ORDER BY generation";

const VIEWS: &str = "\
SELECT generation, body, tokens, protected FROM memory_view_messages
WHERE tenant = $1 AND session = $2 AND generation < $3
ORDER BY generation, pos";

const LOG: &str = "\
SELECT body, tokens, protected FROM memory_messages
WHERE tenant = $1 AND session = $2 AND seq <= $3
ORDER BY seq";

/// Sessions in a PostgreSQL database, shared by many agent workers.
///
/// Connections come from a pool. Every write is one statement, so one
/// transaction: an append bumps the session's version under its row lock
/// and writes its messages at the positions that lock reserved, so appends
/// from any number of processes are neither lost nor duplicated and their
/// order is the commit order. A compaction rebases over the appends made
/// since the version it was computed from (they follow its view) and
/// commits unless another compaction came after that version: when two
/// workers compact one session at once, one commits and the other gets
/// [`StoreError::Conflict`] with nothing written. [`Store::write_all`]
/// commits its writes in one transaction, sent in one round trip when
/// each is one statement on a session of its own; should one fail in the
/// database, they run again each in a savepoint of its own, so that a
/// write that fails is rolled back alone and the others commit together.
/// Each of its writes holds its session's row lock to that commit: two
/// calls writing the same sessions in opposite orders can deadlock, and
/// PostgreSQL then fails a write of one of them (answered with its error).
///
/// The schema (tables `memory_sessions`, `memory_messages`,
/// `memory_compactions`, `memory_view_messages`, `memory_images`, versioned in
/// `memory_schema_version`) is created or migrated on
/// [`connect`](Self::connect); put it in its own schema with
/// `options=-csearch_path%3Dmy_schema` in the connection string. The
/// connection string, and its password, never appear in `Debug` output,
/// errors or logs.
///
/// ```no_run
/// use memory_core::{Message, Store, StoredMessage};
/// use memory_postgres::PostgresStore;
///
/// # async fn run() -> Result<(), memory_core::StoreError> {
/// let store = PostgresStore::connect("postgres://agent:secret@db.internal/agents").await?;
/// let v = store
///     .append("s1", vec![StoredMessage::new(Message::user("hi"), 1, false)])
///     .await?;
/// assert_eq!(store.load("s1").await?.version, v);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    tenant: Option<Arc<str>>,
    target: Arc<str>,
    max_connections: usize,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("target", &self.target)
            .field("tenant", &self.tenant)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/dbname`
    /// or `host=... user=...` pairs) with a pool of up to
    /// [`DEFAULT_MAX_CONNECTIONS`] connections, and creates or migrates the
    /// schema. TLS follows the string's `sslmode` and `sslrootcert`, as
    /// the [crate documentation](crate#tls) describes; without them a
    /// connection is encrypted when the server offers it, and the server's
    /// certificate is not checked.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when the string cannot be parsed or asks for
    /// an unsupported TLS setting, the root certificates cannot be read,
    /// the server cannot be reached, fails the certificate check or refuses
    /// the login, or the schema is newer than this library. The message
    /// never contains the password.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), memory_core::StoreError> {
    /// let store = memory_postgres::PostgresStore::connect("postgres://agent@localhost/agents").await?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, DEFAULT_MAX_CONNECTIONS).await
    }

    /// Like [`connect`](Self::connect), with a pool of up to
    /// `max_connections` connections (at least one).
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), memory_core::StoreError> {
    /// let store = memory_postgres::PostgresStore::connect_with("postgres://agent@localhost/agents", 4).await?;
    /// assert_eq!(store.max_connections(), 4);
    /// # Ok(()) }
    /// ```
    pub async fn connect_with(url: &str, max_connections: usize) -> Result<Self, StoreError> {
        let (url, tls) = tls::split(url)?;
        // The parser's messages may quote a character of the string: keep
        // them out, the string may hold a password.
        let mut config: Config = url.parse().map_err(|_| {
            StoreError::Backend(
                "the PostgreSQL connection string cannot be parsed (it is not shown: it may \
                 hold a password); write it as postgres://user:password@host:port/dbname"
                    .into(),
            )
        })?;
        if config.get_application_name().is_none() {
            config.application_name("memory-postgres");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        config.ssl_mode(tls.driver_mode());
        let target: Arc<str> = Arc::from(format!("{}?sslmode={}", describe(&config), tls.mode));
        let max_connections = max_connections.max(1);
        let manager = Manager::from_config(
            config,
            tls.connector()?,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_connections)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(30)))
            .create_timeout(Some(Duration::from_secs(15)))
            .build()
            .map_err(|e| StoreError::Backend(format!("cannot build the connection pool: {e}")))?;
        let store = Self {
            pool,
            tenant: None,
            target,
            max_connections,
        };
        let mut client = store.client().await?;
        schema::migrate(&mut client).await?;
        tracing::debug!(target_db = %store.target, "memory-postgres connected");
        Ok(store)
    }

    /// A handle on the same pool whose sessions live in `tenant`'s
    /// namespace (a `tenant` column in every table): session `s` of tenant
    /// `acme` is another session than `s` of any other tenant or of the
    /// store without a tenant, and can only be reached through a handle of
    /// `acme`.
    ///
    /// A tenant follows the rules of session ids (non-empty, no control
    /// characters); every call through a handle with another tenant fails
    /// with [`StoreError::InvalidSession`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), memory_core::StoreError> {
    /// let store = memory_postgres::PostgresStore::connect("postgres://agent@localhost/agents").await?;
    /// let acme = store.with_tenant("acme");
    /// assert_eq!(acme.tenant(), Some("acme"));
    /// # Ok(()) }
    /// ```
    pub fn with_tenant(&self, tenant: impl Into<String>) -> Self {
        Self {
            tenant: Some(Arc::from(tenant.into())),
            ..self.clone()
        }
    }

    /// The tenant of this handle, if any.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), memory_core::StoreError> {
    /// let store = memory_postgres::PostgresStore::connect("postgres://agent@localhost/agents").await?;
    /// assert_eq!(store.tenant(), None);
    /// # Ok(()) }
    /// ```
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// Opens every connection the pool may hold, at once, so that the
    /// first calls of a busy start (a server's first burst of requests)
    /// do not each wait for a login; a long-running process calls it once
    /// after [`connect`](Self::connect). Returns how many are open.
    ///
    /// # Errors
    ///
    /// A connection cannot be opened.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), memory_core::StoreError> {
    /// let store = memory_postgres::PostgresStore::connect("postgres://agent@localhost/agents").await?;
    /// assert_eq!(store.warm().await?, store.max_connections());
    /// # Ok(()) }
    /// ```
    pub async fn warm(&self) -> Result<usize, StoreError> {
        let clients =
            futures::future::join_all((0..self.max_connections).map(|_| self.client())).await;
        let open = clients.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(open.len())
    }

    /// The size limit of the connection pool.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), memory_core::StoreError> {
    /// let store = memory_postgres::PostgresStore::connect("postgres://agent@localhost/agents").await?;
    /// assert_eq!(store.max_connections(), memory_postgres::DEFAULT_MAX_CONNECTIONS);
    /// # Ok(()) }
    /// ```
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    async fn client(&self) -> Result<Client, StoreError> {
        self.pool.get().await.map_err(|e| match e {
            PoolError::Backend(e) => {
                StoreError::Backend(format!("cannot connect to {}: {}", self.target, backend(e)))
            }
            other => StoreError::Backend(format!(
                "no PostgreSQL connection to {} available: {other}",
                self.target
            )),
        })
    }

    fn key(&self, session: &str) -> Result<Key, StoreError> {
        Key::new(self.tenant.as_deref(), session)
    }
}

/// The connection target for messages: `postgres://user:***@host:port/db`.
fn describe(config: &Config) -> String {
    let user = config.get_user().unwrap_or_default();
    let password = if config.get_password().is_some() {
        ":***"
    } else {
        ""
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|host| match host {
            Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    let port = if ports.is_empty() {
        String::new()
    } else {
        format!(":{}", ports.join(","))
    };
    format!(
        "postgres://{user}{password}@{}{port}/{}",
        hosts.join(","),
        config.get_dbname().unwrap_or_default()
    )
}

fn row_of(row: &tokio_postgres::Row, first: usize) -> Result<Row, StoreError> {
    Ok(Row {
        body: row.try_get(first).map_err(backend)?,
        tokens: row.try_get(first + 1).map_err(backend)?,
        protected: row.try_get(first + 2).map_err(backend)?,
        images: Vec::new(),
    })
}

/// The tables a session's rows are erased from, the row of
/// `memory_sessions` last.
const DELETED_FROM: [&str; 4] = [
    "memory_messages",
    "memory_view_messages",
    "memory_compactions",
    "memory_sessions",
];

#[async_trait::async_trait]
impl Store for PostgresStore {
    async fn load(&self, session: &str) -> Result<Snapshot, StoreError> {
        let key = self.key(session)?;
        let client = self.client().await?;
        let statement = client.prepare_cached(LOAD).await.map_err(backend)?;
        let rows = client
            .query(&statement, &[&key.tenant, &key.session])
            .await
            .map_err(backend)?;
        let Some(first) = rows.first() else {
            return Ok(Snapshot::default());
        };
        let version: i64 = first.try_get(5).map_err(backend)?;
        let mut messages = rows[1..]
            .iter()
            .map(|row| row_of(row, 2))
            .collect::<Result<Vec<_>, _>>()?;
        read_images(&client, &key, &mut messages).await?;
        Ok(Snapshot {
            messages: decode_all(messages)?,
            version: to_u64(version, "version")?,
        })
    }

    async fn append(
        &self,
        session: &str,
        messages: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        let key = self.key(session)?;
        let columns = Columns::encode(&messages)?;
        let client = self.client().await?;
        append_on(&client, &key, &columns).await
    }

    async fn replace_view(
        &self,
        session: &str,
        expected: Version,
        view: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        let key = self.key(session)?;
        let columns = Columns::encode(&view)?;
        let client = self.client().await?;
        replace_on(&client, &key, expected, &columns).await
    }

    async fn write_all(&self, writes: Vec<StoreWrite>) -> Vec<Result<Version, StoreError>> {
        let writes: Vec<_> = writes
            .iter()
            .map(|write| Encoded::new(self.tenant.as_deref(), write))
            .collect();
        if writes.iter().all(Result::is_err) {
            return writes
                .into_iter()
                .filter_map(Result::err)
                .map(Err)
                .collect();
        }
        match self.client().await {
            Ok(client) => write::write_all(client, writes).await,
            Err(e) => none_committed(writes, &e),
        }
    }

    async fn history(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        let key = self.key(session)?;
        let client = self.client().await?;
        let statement = client.prepare_cached(HISTORY).await.map_err(backend)?;
        let rows = client
            .query(&statement, &[&key.tenant, &key.session])
            .await
            .map_err(backend)?;
        let mut rows = rows
            .iter()
            .map(|row| row_of(row, 0))
            .collect::<Result<Vec<_>, _>>()?;
        read_images(&client, &key, &mut rows).await?;
        Ok(decode_all(rows)?
            .into_iter()
            .map(|stored| stored.message)
            .collect())
    }

    async fn replaced(&self, session: &str) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
        let key = self.key(session)?;
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(backend)?;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&key.tenant, &key.session];
        let prepare = |sql| tx.prepare_cached(sql);
        let (state, bases, views, log) = (
            prepare(STATE).await.map_err(backend)?,
            prepare(BASES).await.map_err(backend)?,
            prepare(VIEWS).await.map_err(backend)?,
            prepare(LOG).await.map_err(backend)?,
        );
        let Some(state) = tx.query_opt(&state, &params).await.map_err(backend)? else {
            return Ok(Vec::new());
        };
        let generation: i64 = state.try_get(0).map_err(backend)?;
        let base: i64 = state.try_get(1).map_err(backend)?;
        let bases = tx
            .query(&bases, &params)
            .await
            .map_err(backend)?
            .iter()
            .map(|row| row.try_get(0).map_err(backend))
            .collect::<Result<Vec<i64>, _>>()?;
        let mut committed: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
        for row in tx
            .query(&views, &[&key.tenant, &key.session, &generation])
            .await
            .map_err(backend)?
        {
            let generation: i64 = row.try_get(0).map_err(backend)?;
            committed
                .entry(generation)
                .or_default()
                .push(row_of(&row, 1)?);
        }
        let mut log = tx
            .query(&log, &[&key.tenant, &key.session, &base])
            .await
            .map_err(backend)?
            .iter()
            .map(|row| row_of(row, 0))
            .collect::<Result<Vec<_>, _>>()?;
        read_images(&tx, &key, committed.values_mut().flatten().chain(&mut log)).await?;
        tx.commit().await.map_err(backend)?;
        assemble(bases, committed, log)
    }

    async fn delete(&self, session: &str) -> Result<(), StoreError> {
        let key = self.key(session)?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        for table in DELETED_FROM {
            let sql = format!("DELETE FROM {table} WHERE tenant = $1 AND session = $2");
            tx.execute(&sql, &[&key.tenant, &key.session])
                .await
                .map_err(backend)?;
        }
        tx.commit().await.map_err(backend)
    }

    fn for_tenant(&self, tenant: &str) -> Arc<dyn Store> {
        Arc::new(self.with_tenant(tenant))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_hides_the_password() {
        let config: Config = "postgres://agent:hunter2-secret@db.internal:6543/agents"
            .parse()
            .unwrap();
        assert_eq!(
            describe(&config),
            "postgres://agent:***@db.internal:6543/agents"
        );
        let config: Config = "host=/run/postgresql user=me dbname=x".parse().unwrap();
        assert_eq!(describe(&config), "postgres://me@/run/postgresql/x");
    }

    #[tokio::test]
    async fn a_bad_connection_string_is_not_echoed() {
        for url in [
            "postgres://agent:hunter2-secret@db:notaport/agents",
            "host=db password=hunter2-secret bogus_option=1",
            "password='hunter2-secret",
            "postgres://agent:hunter2%ZZsecret@db/agents",
        ] {
            let err = PostgresStore::connect(url).await.unwrap_err();
            let text = format!("{err} {err:?}");
            assert!(!text.contains("hunter2"), "{text}");
            assert!(!text.contains("secret"), "{text}");
        }
    }

    #[tokio::test]
    async fn an_unreachable_server_is_named_without_the_password() {
        // Port 1 on loopback: nothing listens, the connection is refused.
        let err = PostgresStore::connect("postgres://agent:hunter2-secret@127.0.0.1:1/agents")
            .await
            .unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.contains("postgres://agent:***@127.0.0.1:1/agents"),
            "{text}"
        );
    }
}
