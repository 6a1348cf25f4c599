//! [`Carrying`]: a handle on a principal's store whose next append carries
//! the server's bookkeeping with it, so that one commit records a reply,
//! its entry in the prefix index and the session's state.
//!
//! A session's memory appends the reply through this handle; the server
//! hands it the other writes first ([`Carrying::carry`]) and reads their
//! answers after ([`Carrying::answers`]). The store commits them together
//! ([`Store::write_all`]; SQLite groups them with other sessions' writes
//! in one transaction).

use std::sync::{Arc, Mutex, PoisonError};

use memory_core::{Message, Snapshot, Store, StoreError, StoreWrite, StoredMessage, Version};

/// A store handle whose next append carries the writes it was given.
pub(crate) struct Carrying {
    inner: Arc<dyn Store>,
    riders: Mutex<Vec<StoreWrite>>,
    answers: Mutex<Vec<Result<Version, StoreError>>>,
}

impl Carrying {
    pub(crate) fn new(inner: Arc<dyn Store>) -> Self {
        Self {
            inner,
            riders: Mutex::new(Vec::new()),
            answers: Mutex::new(Vec::new()),
        }
    }

    /// Writes the next append commits with it.
    pub(crate) fn carry(&self, writes: Vec<StoreWrite>) {
        *self.riders.lock().unwrap_or_else(PoisonError::into_inner) = writes;
    }

    /// The answers of the writes the last append carried, in order; the
    /// writes it did not get to carry (it failed first) are dropped.
    pub(crate) fn answers(&self) -> Vec<Result<Version, StoreError>> {
        self.riders
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        std::mem::take(&mut *self.answers.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[async_trait::async_trait]
impl Store for Carrying {
    async fn load(&self, session: &str) -> Result<Snapshot, StoreError> {
        self.inner.load(session).await
    }

    async fn append(
        &self,
        session: &str,
        messages: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        let riders =
            std::mem::take(&mut *self.riders.lock().unwrap_or_else(PoisonError::into_inner));
        if riders.is_empty() {
            return self.inner.append(session, messages).await;
        }
        let mut writes = vec![StoreWrite::Append {
            session: session.to_string(),
            messages,
        }];
        writes.extend(riders);
        let mut answers = self.inner.write_all(writes).await;
        let own = answers.remove(0);
        *self.answers.lock().unwrap_or_else(PoisonError::into_inner) = answers;
        own
    }

    async fn replace_view(
        &self,
        session: &str,
        expected: Version,
        view: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        self.inner.replace_view(session, expected, view).await
    }

    async fn history(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        self.inner.history(session).await
    }

    async fn replaced(&self, session: &str) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
        self.inner.replaced(session).await
    }

    async fn write_all(&self, writes: Vec<StoreWrite>) -> Vec<Result<Version, StoreError>> {
        self.inner.write_all(writes).await
    }

    async fn delete(&self, session: &str) -> Result<(), StoreError> {
        self.inner.delete(session).await
    }

    fn for_tenant(&self, tenant: &str) -> Arc<dyn Store> {
        self.inner.for_tenant(tenant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::InMemoryStore;

    #[tokio::test]
    async fn the_next_append_carries_the_writes_and_the_one_after_does_not() {
        let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
        let carrying = Carrying::new(store.clone());
        let m = |t: &str| StoredMessage::new(Message::user(t), 1, false);
        carrying.carry(vec![
            StoreWrite::Append {
                session: "note".into(),
                messages: vec![m("n")],
            },
            StoreWrite::Replace {
                session: "state".into(),
                expected: 5,
                view: vec![],
            },
        ]);
        assert_eq!(carrying.append("s", vec![m("reply")]).await.unwrap(), 1);
        let answers = carrying.answers();
        assert_eq!(answers[0].as_ref().ok(), Some(&1));
        assert!(matches!(answers[1], Err(StoreError::Conflict { .. })));
        assert_eq!(store.history("note").await.unwrap().len(), 1);
        carrying.append("s", vec![m("again")]).await.unwrap();
        assert!(carrying.answers().is_empty());
        assert_eq!(store.history("note").await.unwrap().len(), 1);
    }
}
