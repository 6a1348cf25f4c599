//! The [`Store`] contract: durable, per-session, append-only history.

use serde::{Deserialize, Serialize};

use crate::message::Message;

/// A recorded message with what the memory knows about it.
///
/// ```
/// use memory_core::{Message, StoredMessage};
/// let s = StoredMessage::new(Message::user("hi"), 1, false);
/// assert_eq!(s.tokens, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// The message.
    pub message: Message,
    /// Its token count, so a reopened session need not recount.
    pub tokens: usize,
    /// Whether trimming must never shed it.
    pub protected: bool,
}

impl StoredMessage {
    /// Bundles a message with its count and protection.
    ///
    /// ```
    /// # use memory_core::{Message, StoredMessage};
    /// assert!(StoredMessage::new(Message::system("rules"), 2, true).protected);
    /// ```
    pub fn new(message: Message, tokens: usize, protected: bool) -> Self {
        Self {
            message,
            tokens,
            protected,
        }
    }
}

/// A session's version: it grows with every append and every compaction.
pub type Version = u64;

/// One write of [`Store::write_all`]: what [`Store::append`] or
/// [`Store::replace_view`] does, to a session of the handle.
///
/// ```
/// use memory_core::{Message, StoredMessage, StoreWrite};
/// let w = StoreWrite::Append { session: "s1".into(), messages: vec![StoredMessage::new(Message::user("hi"), 1, false)] };
/// assert_eq!(w.session(), "s1");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum StoreWrite {
    /// Appends `messages` to `session`, as [`Store::append`].
    Append {
        /// The session appended to.
        session: String,
        /// What is appended.
        messages: Vec<StoredMessage>,
    },
    /// Replaces `session`'s view read at `expected` with `view`, as
    /// [`Store::replace_view`].
    Replace {
        /// The session whose view is replaced.
        session: String,
        /// The version the view was read at.
        expected: Version,
        /// The new view.
        view: Vec<StoredMessage>,
    },
}

impl StoreWrite {
    /// The session written.
    pub fn session(&self) -> &str {
        match self {
            StoreWrite::Append { session, .. } | StoreWrite::Replace { session, .. } => session,
        }
    }
}

/// A session's current view and the version it was read at.
///
/// ```
/// let s = memory_core::Snapshot::default();
/// assert_eq!(s.version, 0);
/// assert!(s.messages.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// The messages the session's context is built from (after compactions).
    pub messages: Vec<StoredMessage>,
    /// The version this view is at.
    pub version: Version,
}

/// Why a store operation failed.
///
/// ```
/// let e = memory_core::StoreError::Conflict { session: "s1".into(), expected: 3, actual: 4 };
/// assert!(e.to_string().contains("reload"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The view a compaction would replace changed since it was read
    /// (another compaction came first): reload and try again.
    #[error(
        "session `{session}` is at version {actual}: its view at version {expected} was replaced by another compaction first, or never existed; reload the session and retry"
    )]
    Conflict {
        /// The session.
        session: String,
        /// The version the caller read and computed its view from.
        expected: Version,
        /// The version the store holds.
        actual: Version,
    },
    /// The session id is not acceptable.
    #[error("invalid session id {0:?}: use a non-empty id without control characters")]
    InvalidSession(String),
    /// The backend failed.
    #[error("store backend failed: {0}")]
    Backend(String),
}

/// Durable history of many sessions.
///
/// Append-only: a message once appended stays readable through
/// [`history`](Store::history) forever. A compaction commits through
/// [`replace_view`](Store::replace_view): it replaces the view the session
/// had at the version the caller read, atomically; what it replaced stays
/// readable through [`replaced`](Store::replaced).
///
/// A compaction *rebases* over appends: the messages appended after the
/// version it was computed from are not part of what it replaced, so they
/// follow its new view and it commits. It conflicts only with what changes
/// the view it replaced: another compaction committed after that version.
/// So under a constant stream of appends a compaction still commits, and
/// of two compactions computed from one view, one commits.
///
/// ```
/// use memory_core::{InMemoryStore, Message, Store, StoredMessage, summary};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// let m = |text: &str| StoredMessage::new(Message::user(text), 1, false);
/// let read = store.append("s1", vec![m("a"), m("b")]).await.unwrap();
/// // While the summary of a and b is being written, c is appended.
/// store.append("s1", vec![m("c")]).await.unwrap();
/// let summary = StoredMessage::new(summary::message("a, b"), 3, true);
/// let v = store.replace_view("s1", read, vec![summary.clone()]).await.unwrap();
/// let snapshot = store.load("s1").await.unwrap();
/// assert_eq!((snapshot.version, snapshot.messages), (v, vec![summary, m("c")]));
/// assert_eq!(store.replaced("s1").await.unwrap(), vec![vec![m("a"), m("b")]]);
/// assert_eq!(store.history("s1").await.unwrap().len(), 3);
/// // A second compaction from the same read conflicts: the view it would
/// // replace is gone.
/// assert!(store.replace_view("s1", read, vec![]).await.is_err());
/// # });
/// ```
#[async_trait::async_trait]
pub trait Store: Send + Sync {
    /// The session's current view (empty at version 0 for a new session).
    ///
    /// # Errors
    ///
    /// Backend failures, invalid ids.
    async fn load(&self, session: &str) -> Result<Snapshot, StoreError>;

    /// Appends the messages of `batch` at the end of session `id`'s view
    /// and history, in one atomic step; returns the new version.
    ///
    /// # Errors
    ///
    /// Backend failures, invalid ids. Nothing is appended on error.
    async fn append(&self, id: &str, batch: Vec<StoredMessage>) -> Result<Version, StoreError>;

    /// Replaces the view the session had at version `expected` (the
    /// version the caller read and computed `view` from) with `view`;
    /// returns the new version. Messages appended after `expected` follow
    /// `view` in the new view. This is how a compaction commits.
    ///
    /// # Errors
    ///
    /// [`StoreError::Conflict`] when another compaction committed after
    /// `expected`, or the session never was at `expected`; nothing is
    /// changed then.
    async fn replace_view(
        &self,
        session: &str,
        expected: Version,
        view: Vec<StoredMessage>,
    ) -> Result<Version, StoreError>;

    /// Every message ever appended to the session, in order: the original
    /// transcript, whatever compactions did to the view.
    ///
    /// # Errors
    ///
    /// Backend failures, invalid ids.
    async fn history(&self, session: &str) -> Result<Vec<Message>, StoreError>;

    /// The views that compactions replaced, oldest first.
    ///
    /// # Errors
    ///
    /// Backend failures, invalid ids.
    async fn replaced(&self, session: &str) -> Result<Vec<Vec<StoredMessage>>, StoreError>;

    /// Erases the session: its history, its view and the views
    /// compactions replaced. A session erased is as one never written
    /// (empty, version 0). The one way a store forgets what was appended:
    /// for a user's request to delete it, or its retention's end.
    ///
    /// # Errors
    ///
    /// Backend failures, invalid ids; a store that cannot erase says so
    /// (this default).
    ///
    /// ```
    /// use memory_core::{InMemoryStore, Message, Store, StoredMessage};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// store.append("s", vec![StoredMessage::new(Message::user("hi"), 1, false)]).await.unwrap();
    /// store.delete("s").await.unwrap();
    /// assert!(store.history("s").await.unwrap().is_empty());
    /// assert_eq!(store.load("s").await.unwrap().version, 0);
    /// # });
    /// ```
    async fn delete(&self, session: &str) -> Result<(), StoreError> {
        Err(StoreError::Backend(format!(
            "this store cannot erase sessions (asked for `{session}`)"
        )))
    }

    /// Runs `writes` in order, each as [`append`](Store::append) or
    /// [`replace_view`](Store::replace_view) would alone, and answers each:
    /// a write that fails (a conflict, say) leaves the others to stand. A
    /// store that can commits them together, in one transaction (with
    /// other callers' writes, where it groups commits), so that writes
    /// that go together cost one flush to disk; this default runs them one
    /// after the other.
    ///
    /// ```
    /// use memory_core::{InMemoryStore, Message, Store, StoreError, StoreWrite, StoredMessage};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// let m = |t: &str| StoredMessage::new(Message::user(t), 1, false);
    /// let answers = store.write_all(vec![
    ///     StoreWrite::Append { session: "a".into(), messages: vec![m("1")] },
    ///     StoreWrite::Replace { session: "b".into(), expected: 7, view: vec![] },
    ///     StoreWrite::Append { session: "b".into(), messages: vec![m("x")] },
    /// ]).await;
    /// assert_eq!(answers[0].as_ref().unwrap(), &1);
    /// assert!(matches!(answers[1], Err(StoreError::Conflict { .. })));
    /// assert_eq!(answers[2].as_ref().unwrap(), &1);
    /// # });
    /// ```
    async fn write_all(&self, writes: Vec<StoreWrite>) -> Vec<Result<Version, StoreError>> {
        let mut answers = Vec::with_capacity(writes.len());
        for write in writes {
            answers.push(match write {
                StoreWrite::Append { session, messages } => self.append(&session, messages).await,
                StoreWrite::Replace {
                    session,
                    expected,
                    view,
                } => self.replace_view(&session, expected, view).await,
            });
        }
        answers
    }

    /// The same store seen from `tenant`'s namespace: its session `s` is
    /// another session than `s` of any other tenant, or of this handle,
    /// and is reached only through a handle of the same tenant (a SQL
    /// store keeps the tenant in its own column). A tenant follows the
    /// rules of session ids; a handle with an invalid one fails every call
    /// with [`StoreError::InvalidSession`].
    ///
    /// ```
    /// use memory_core::{InMemoryStore, Message, Store, StoredMessage};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = InMemoryStore::new();
    /// let acme = store.for_tenant("acme");
    /// acme.append("s", vec![StoredMessage::new(Message::user("hi"), 1, false)]).await.unwrap();
    /// assert_eq!(acme.load("s").await.unwrap().messages.len(), 1);
    /// assert!(store.for_tenant("globex").load("s").await.unwrap().messages.is_empty());
    /// assert!(store.load("s").await.unwrap().messages.is_empty());
    /// # });
    /// ```
    fn for_tenant(&self, tenant: &str) -> std::sync::Arc<dyn Store>;
}

/// Checks a session id: non-empty, no control characters.
///
/// # Errors
///
/// [`StoreError::InvalidSession`].
///
/// ```
/// assert!(memory_core::store::check_session("tenant-a/s1").is_ok());
/// assert!(memory_core::store::check_session("").is_err());
/// ```
pub fn check_session(session: &str) -> Result<(), StoreError> {
    if session.is_empty() || session.chars().any(char::is_control) {
        Err(StoreError::InvalidSession(session.to_string()))
    } else {
        Ok(())
    }
}
