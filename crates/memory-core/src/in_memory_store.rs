//! [`InMemoryStore`]: the [`Store`] contract in process memory.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::check_session;
use crate::{Message, Snapshot, Store, StoreError, StoredMessage, Version};

#[derive(Debug, Default)]
struct Session {
    view: Vec<StoredMessage>,
    history: Vec<Message>,
    replaced: Vec<Vec<StoredMessage>>,
    version: Version,
}

/// Sessions held in memory: for tests, short-lived agents, and as the
/// default store of a memory.
///
/// ```
/// use memory_core::{InMemoryStore, Message, Store, StoredMessage};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// store.append("s", vec![StoredMessage::new(Message::user("hi"), 1, false)]).await.unwrap();
/// assert_eq!(store.load("s").await.unwrap().messages.len(), 1);
/// # });
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    sessions: Mutex<HashMap<String, Session>>,
}

impl InMemoryStore {
    /// An empty store.
    ///
    /// ```
    /// let _store = memory_core::InMemoryStore::new();
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, session: &str, f: impl FnOnce(&mut Session) -> R) -> Result<R, StoreError> {
        check_session(session)?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        Ok(f(sessions.entry(session.to_string()).or_default()))
    }
}

#[async_trait::async_trait]
impl Store for InMemoryStore {
    async fn load(&self, session: &str) -> Result<Snapshot, StoreError> {
        self.with(session, |s| Snapshot {
            messages: s.view.clone(),
            version: s.version,
        })
    }

    async fn append(
        &self,
        session: &str,
        messages: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        self.with(session, |s| {
            s.history.extend(messages.iter().map(|m| m.message.clone()));
            s.view.extend(messages);
            s.version += 1;
            s.version
        })
    }

    async fn replace_view(
        &self,
        session: &str,
        expected: Version,
        view: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        self.with(session, |s| {
            if s.version != expected {
                return Err(StoreError::Conflict {
                    session: session.to_string(),
                    expected,
                    actual: s.version,
                });
            }
            let old = std::mem::replace(&mut s.view, view);
            s.replaced.push(old);
            s.version += 1;
            Ok(s.version)
        })?
    }

    async fn history(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        self.with(session, |s| s.history.clone())
    }

    async fn replaced(&self, session: &str) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
        self.with(session, |s| s.replaced.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary;

    fn m(text: &str) -> StoredMessage {
        StoredMessage::new(Message::user(text), 1, false)
    }

    #[tokio::test]
    async fn sessions_are_isolated_and_versions_grow() {
        let store = InMemoryStore::new();
        assert_eq!(store.append("a", vec![m("1")]).await.unwrap(), 1);
        assert_eq!(store.append("a", vec![m("2"), m("3")]).await.unwrap(), 2);
        assert_eq!(store.append("b", vec![m("x")]).await.unwrap(), 1);
        assert_eq!(store.load("a").await.unwrap().messages.len(), 3);
        assert_eq!(store.load("b").await.unwrap().messages, vec![m("x")]);
        assert_eq!(store.load("c").await.unwrap(), Snapshot::default());
    }

    #[tokio::test]
    async fn stale_compaction_conflicts_and_changes_nothing() {
        let store = InMemoryStore::new();
        let read = store.append("s", vec![m("1")]).await.unwrap();
        store.append("s", vec![m("2")]).await.unwrap();
        let err = store
            .replace_view(
                "s",
                read,
                vec![StoredMessage::new(summary::message("1"), 2, true)],
            )
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            StoreError::Conflict {
                expected: 1,
                actual: 2,
                ..
            }
        ));
        assert_eq!(
            store.load("s").await.unwrap().messages,
            vec![m("1"), m("2")]
        );
    }

    #[tokio::test]
    async fn compaction_keeps_what_it_replaced_readable() {
        let store = InMemoryStore::new();
        let v = store.append("s", vec![m("1"), m("2")]).await.unwrap();
        let summary = StoredMessage::new(summary::message("one, two"), 3, true);
        store
            .replace_view("s", v, vec![summary.clone()])
            .await
            .unwrap();
        store.append("s", vec![m("3")]).await.unwrap();
        assert_eq!(
            store.load("s").await.unwrap().messages,
            vec![summary, m("3")]
        );
        assert_eq!(
            store.history("s").await.unwrap(),
            vec![Message::user("1"), Message::user("2"), Message::user("3")]
        );
        assert_eq!(
            store.replaced("s").await.unwrap(),
            vec![vec![m("1"), m("2")]]
        );
    }

    #[tokio::test]
    async fn bad_session_ids_are_refused() {
        let store = InMemoryStore::new();
        assert!(matches!(
            store.load("").await,
            Err(StoreError::InvalidSession(_))
        ));
        assert!(store.append("a\nb", vec![m("1")]).await.is_err());
    }
}
