//! [`InMemoryStore`]: the [`Store`] contract in process memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::message::Message;
use crate::store::check_session;
use crate::store::{Snapshot, Store, StoreError, StoredMessage, Version};

/// A session as the SQL stores keep it, so that each message is held once:
/// the log of everything appended, and the views compactions committed;
/// the current view is the newest committed view followed by the log from
/// where that compaction left it.
#[derive(Debug, Default)]
struct Session {
    /// Every message appended, in order, with its count and flag.
    log: Vec<StoredMessage>,
    /// The view compaction `g` committed, at index `g - 1`.
    committed: Vec<Vec<StoredMessage>>,
    /// Where each compaction's view continues in the log: the log's length
    /// at the version it was computed from.
    bases: Vec<usize>,
    version: Version,
    /// The version the last compaction produced (0 before any): the oldest
    /// version a compaction may still be computed from.
    compacted: Version,
    /// The log's length when the last compaction committed (it may have
    /// rebased over appends its base does not count).
    compacted_length: usize,
    /// The log's length after each append since the last compaction: the
    /// append that produced version `compacted + 1 + i` at index `i`.
    lengths: Vec<usize>,
}

impl Session {
    fn base(&self) -> usize {
        self.bases.last().copied().unwrap_or(0)
    }

    fn view(&self) -> Vec<StoredMessage> {
        let head = self.committed.last().map_or(&[][..], Vec::as_slice);
        [head, &self.log[self.base()..]].concat()
    }

    /// The log's length at `version`, if a compaction may be computed
    /// from it (no compaction since, and the session got there).
    fn length_at(&self, version: Version) -> Option<usize> {
        if version < self.compacted || version > self.version {
            return None;
        }
        match usize::try_from(version - self.compacted).ok()? {
            0 => Some(self.compacted_length),
            appends => self.lengths.get(appends - 1).copied(),
        }
    }

    fn replaced(&self) -> Vec<Vec<StoredMessage>> {
        let mut from = 0;
        let mut views = Vec::with_capacity(self.bases.len());
        for (g, &base) in self.bases.iter().enumerate() {
            let head = g
                .checked_sub(1)
                .map_or(&[][..], |previous| self.committed[previous].as_slice());
            views.push([head, &self.log[from..base]].concat());
            from = base;
        }
        views
    }
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
    sessions: Arc<Mutex<HashMap<String, Session>>>,
    /// The tenant whose namespace this handle sees ([`Store::for_tenant`]).
    tenant: Option<Arc<str>>,
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
        let key = self.key(session)?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        Ok(f(sessions.entry(key).or_default()))
    }

    /// The map's key of a session of this handle's tenant.
    fn key(&self, session: &str) -> Result<String, StoreError> {
        check_session(session)?;
        // A tenant's sessions are keyed behind a control character, which
        // no session id holds, so no two namespaces meet.
        Ok(match &self.tenant {
            Some(tenant) => {
                check_session(tenant)?;
                format!("{tenant}\u{0}{session}")
            }
            None => session.to_string(),
        })
    }
}

#[async_trait::async_trait]
impl Store for InMemoryStore {
    async fn load(&self, session: &str) -> Result<Snapshot, StoreError> {
        self.with(session, |s| Snapshot {
            messages: s.view(),
            version: s.version,
        })
    }

    async fn append(
        &self,
        session: &str,
        messages: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        self.with(session, |s| {
            s.log.extend(messages);
            s.lengths.push(s.log.len());
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
            let Some(base) = s.length_at(expected) else {
                return Err(StoreError::Conflict {
                    session: session.to_string(),
                    expected,
                    actual: s.version,
                });
            };
            s.committed.push(view);
            s.bases.push(base);
            s.version += 1;
            s.compacted = s.version;
            s.compacted_length = s.log.len();
            s.lengths.clear();
            Ok(s.version)
        })?
    }

    async fn history(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        self.with(session, |s| {
            s.log.iter().map(|m| m.message.clone()).collect()
        })
    }

    async fn replaced(&self, session: &str) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
        self.with(session, |s| s.replaced())
    }

    async fn delete(&self, session: &str) -> Result<(), StoreError> {
        let key = self.key(session)?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.remove(&key);
        Ok(())
    }

    fn for_tenant(&self, tenant: &str) -> Arc<dyn Store> {
        Arc::new(InMemoryStore {
            sessions: Arc::clone(&self.sessions),
            tenant: Some(Arc::from(tenant)),
        })
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
    async fn a_compaction_rebases_over_appends_and_conflicts_with_a_compaction() {
        let store = InMemoryStore::new();
        let read = store.append("s", vec![m("1")]).await.unwrap();
        store.append("s", vec![m("2")]).await.unwrap();
        let summary = StoredMessage::new(summary::message("1"), 2, true);
        assert_eq!(
            store
                .replace_view("s", read, vec![summary.clone()])
                .await
                .unwrap(),
            3
        );
        assert_eq!(
            store.load("s").await.unwrap().messages,
            vec![summary.clone(), m("2")]
        );
        assert_eq!(store.replaced("s").await.unwrap(), vec![vec![m("1")]]);
        for stale in [read, 2, 4] {
            let err = store.replace_view("s", stale, vec![]).await.unwrap_err();
            assert_eq!(
                err,
                StoreError::Conflict {
                    session: "s".into(),
                    expected: stale,
                    actual: 3
                }
            );
        }
        assert_eq!(
            store.load("s").await.unwrap().messages,
            vec![summary, m("2")]
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
