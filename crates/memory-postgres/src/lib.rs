//! [`PostgresStore`]: a [`Store`](memory_core::Store) in PostgreSQL for many
//! agent workers sharing sessions.
//!
//! Every message ever appended stays in the session's append-only history
//! with its token count and protected flag. Appends from any number of
//! processes are serialized per session by the session's row lock: none is
//! lost or duplicated, and their order is the commit order. A compaction
//! rebases over the appends made since the version it was computed from
//! (they follow its view), so a steady stream of appends does not stop it;
//! when two workers compact one session at once, one commits and the other
//! gets [`StoreError::Conflict`](memory_core::StoreError::Conflict), and
//! [`WindowMemory`](https://docs.rs/memory-window) reloads and carries on.
//!
//! ```no_run
//! use std::sync::Arc;
//! use memory_core::{Memory, Message, Store};
//! use memory_postgres::PostgresStore;
//! use memory_session::WindowMemory;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let url = std::env::var("MEMORY_POSTGRES_URL")?;
//! let store = PostgresStore::connect(&url).await?;
//! let store: Arc<dyn Store> = Arc::new(store.with_tenant("acme"));
//! let mut memory = WindowMemory::new(8_000).with_store(store, "session-1");
//! memory.record(Message::user("Run the tests.")).await?;
//! let context = memory.context().await?;
//! # let _ = context; Ok(()) }
//! ```
//!
//! # TLS
//!
//! Connections use TLS (rustls) as the connection string's `sslmode` says,
//! with libpq's meanings:
//!
//! | `sslmode` | encrypted | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (the default) | when the server offers it | not checked |
//! | `require` | always | not checked (checked as by `verify-ca` when `sslrootcert` is given, as libpq does) |
//! | `verify-ca` | always | signed by a trusted root |
//! | `verify-full` | always | signed by a trusted root, and valid for the host name in the string |
//!
//! The trusted roots are the certificates in the PEM file `sslrootcert`
//! names, or the operating system's when it is absent or `system` (unlike
//! libpq, which reads `~/.postgresql/root.crt`). With `host` a name and
//! `hostaddr` an address, the connection goes to the address and the
//! certificate is checked against the name. Client certificates
//! (`sslcert`, `sslkey`) and `sslmode=allow` are refused with an error
//! naming them.
//!
//! ```no_run
//! # async fn run() -> Result<(), memory_core::StoreError> {
//! let url = "postgres://agent:secret@db.internal/agents\
//!            ?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.crt";
//! let store = memory_postgres::PostgresStore::connect(url).await?;
//! # let _ = store; Ok(()) }
//! ```
//!
//! # Schema
//!
//! Created or migrated on [`PostgresStore::connect`], under an advisory
//! lock, and versioned in `memory_schema_version`. Every table is keyed by
//! `(tenant, session)`, but `memory_images`, by `(tenant, digest)`; the
//! tenant is `''` unless the store was namespaced with
//! [`PostgresStore::with_tenant`].
//!
//! | table | holds |
//! |---|---|
//! | `memory_sessions` | one row per session: `version` (grows with every append and compaction), `length` (messages in the history), `generation` (compactions so far), `base` (history length at the version the current view was computed from), `compacted` (the version of the last compaction) |
//! | `memory_messages` | the history, append-only: `seq` (1, 2, ...), `body` (the message as JSON text, byte for byte), `tokens`, `protected`, `version` (the version its append produced) |
//! | `memory_compactions` | one row per compaction: its `generation`, the `base` it was committed at and the `version` it produced |
//! | `memory_view_messages` | the view each compaction committed, `pos` by `pos` |
//! | `memory_images` | each distinct image of a tenant's messages once: `digest` (BLAKE3 of its bytes), `data`; a row's `body` names its images by digest instead of holding them |
//!
//! The current view is the rows of `memory_view_messages` of the session's
//! generation followed by the messages appended since (`seq > base`). The
//! view compaction `g` replaced is the view of generation `g - 1` followed
//! by the messages between the two bases. A compaction computed from
//! version `V` commits if no compaction came after `V`; its `base` is the
//! history length at `V`. Nothing is ever deleted or
//! updated but the `memory_sessions` row. All statements are parameterized.

mod error;
mod images;
mod schema;
mod store;
mod tls;
mod write;

pub use schema::SCHEMA_VERSION;
pub use store::{DEFAULT_MAX_CONNECTIONS, PostgresStore};
