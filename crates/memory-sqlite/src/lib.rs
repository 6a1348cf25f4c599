//! [`SqliteStore`]: the embedded, durable [`Store`](memory_core::Store) of
//! the memory workspace.
//!
//! One SQLite file holds many sessions. Every message ever appended stays in
//! the session's append-only history with its token count and protected
//! flag; a compaction commits a new view in one transaction, followed by
//! whatever was appended since the version it was computed from, unless
//! another compaction replaced that view first; what it replaced stays
//! readable. The database runs in WAL mode with synchronous commits
//! (`synchronous=FULL`): an append that returned survives a crash of the
//! process or of the machine.
//!
//! ```
//! use std::sync::Arc;
//! use memory_core::{Memory, Message, Store};
//! use memory_sqlite::SqliteStore;
//! use memory_session::WindowMemory;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("memory.db");
//!
//! let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
//! let mut memory = WindowMemory::new(8_000).with_store(store, "session-1");
//! memory.record(Message::user("Run the tests.")).await.unwrap();
//! let before = memory.context().await.unwrap();
//! drop(memory);
//!
//! // After a restart: the same context, the stored counts reused.
//! let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
//! let mut reopened = WindowMemory::new(8_000).with_store(store, "session-1");
//! assert_eq!(reopened.context().await.unwrap(), before);
//! # });
//! ```
//!
//! # Schema
//!
//! Versioned with `PRAGMA user_version` and migrated when a file is opened.
//! Every table is keyed by `(tenant, session)`, but `images`, by
//! `(tenant, digest)`; the tenant is `''` unless the store was namespaced
//! with [`SqliteStore::with_tenant`].
//!
//! | table | holds |
//! |---|---|
//! | `sessions` | one row per session: `version` (grows with every append and compaction), `length` (messages in the history), `generation` (compactions so far), `base` (history length at the version the current view was computed from), `compacted` (the version of the last compaction) |
//! | `messages` | the history, append-only: `seq` (1, 2, ...), `body` (the message as JSON), `tokens`, `protected`, `version` (the version its append produced) |
//! | `compactions` | one row per compaction: its `generation`, the `base` it was committed at and the `version` it produced |
//! | `view_messages` | the view each compaction committed, `pos` by `pos` |
//! | `images` | each distinct image of a tenant's messages once: `digest` (BLAKE3 of its bytes), `data`; a row's `body` names its images by digest instead of holding them |
//!
//! The current view is the rows of `view_messages` of the session's
//! generation followed by the messages appended since (`seq > base`). The
//! view compaction `g` replaced is the view of generation `g - 1` followed
//! by the messages between the two bases. A compaction computed from
//! version `V` commits if no compaction came after `V`; its `base` is the
//! history length at `V` (the last `seq` whose `version` is at most `V`).
//! Nothing is ever deleted or updated but the `sessions` row. An image
//! named by many messages, in one session or several of a tenant, is
//! stored once.

mod append;
mod batch;
mod error;
mod group;
mod images;
mod replace;
mod schema;
mod state;
mod store;

pub use schema::SCHEMA_VERSION;
pub use store::SqliteStore;
