//! The registry: which sessions each principal holds, and which
//! principals hold any, kept in the store so that every replica counts
//! and expires the same sessions.
//!
//! - `memory-serve/sessions`, in each principal's part of the store: one
//!   JSON system message `{"session", "created"}` per session made.
//! - `memory-serve/principals`, outside every principal: one
//!   `{"tenant"}` per principal that made a session.
//!
//! A session erased is taken out of its principal's registry by writing
//! the registry's view again without it.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use memory_core::{Message, Store, StoreError, StoreWrite, StoredMessage};
use serde::{Deserialize, Serialize};

use crate::ledger::RESERVED_PREFIX;

/// The registry of a principal's sessions, in its part of the store.
fn sessions_key() -> String {
    format!("{RESERVED_PREFIX}sessions")
}

/// The registry of principals, outside every principal's part.
fn principals_key() -> String {
    format!("{RESERVED_PREFIX}principals")
}

/// A session as its principal's registry has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) session: String,
    /// When it was made, in seconds since the Unix epoch.
    pub(crate) created: u64,
    /// The client's own name for the conversation it belongs to (Claude
    /// Code's `X-Claude-Code-Session-Id`), under which its forks are shown
    /// together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) group: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct PrincipalEntry {
    tenant: String,
}

/// Seconds since the Unix epoch, now.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn message(value: &impl Serialize) -> StoredMessage {
    let text = serde_json::to_string(value).unwrap_or_default();
    StoredMessage::new(Message::system(text), 0, true)
}

fn parse<T: for<'de> Deserialize<'de>>(stored: &StoredMessage) -> Option<T> {
    match &stored.message {
        Message::System(text) => serde_json::from_str(text).ok(),
        _ => None,
    }
}

/// The write that registers session `id`, made now (in the client's
/// `group`, when it names one), to go with the session's first append.
pub(crate) fn register(id: &str, group: Option<&str>) -> StoreWrite {
    StoreWrite::Append {
        session: sessions_key(),
        messages: vec![message(&Entry {
            session: id.to_string(),
            created: now(),
            group: group.map(str::to_string),
        })],
    }
}

/// The sessions a principal's part of the store registers, each once.
pub(crate) async fn sessions(store: &dyn Store) -> Result<Vec<Entry>, StoreError> {
    let view = store.load(&sessions_key()).await?.messages;
    let mut seen = HashSet::new();
    Ok(view
        .iter()
        .filter_map(parse::<Entry>)
        .filter(|e| seen.insert(e.session.clone()))
        .collect())
}

/// Takes `gone` out of a principal's registry: its view written again
/// without them (read again and retried once when another writer came
/// between).
pub(crate) async fn remove(store: &dyn Store, gone: &HashSet<String>) -> Result<(), StoreError> {
    if gone.is_empty() {
        return Ok(());
    }
    let key = sessions_key();
    for _ in 0..2 {
        let snapshot = store.load(&key).await?;
        let kept: Vec<StoredMessage> = snapshot
            .messages
            .into_iter()
            .filter(|m| parse::<Entry>(m).is_none_or(|e| !gone.contains(&e.session)))
            .collect();
        match store.replace_view(&key, snapshot.version, kept).await {
            Err(StoreError::Conflict { .. }) => continue,
            other => return other.map(|_| ()),
        }
    }
    Ok(())
}

/// Notes that `tenant` holds sessions, in the part of the store outside
/// every principal (`base`).
pub(crate) async fn note_principal(base: &dyn Store, tenant: &str) -> Result<(), StoreError> {
    let entry = PrincipalEntry {
        tenant: tenant.to_string(),
    };
    base.append(&principals_key(), vec![message(&entry)])
        .await?;
    Ok(())
}

/// Every principal that made a session, each once.
pub(crate) async fn principals(base: &dyn Store) -> Result<Vec<String>, StoreError> {
    let view = store_view(base, &principals_key()).await?;
    let mut seen = HashSet::new();
    Ok(view
        .iter()
        .filter_map(parse::<PrincipalEntry>)
        .map(|p| p.tenant)
        .filter(|t| seen.insert(t.clone()))
        .collect())
}

async fn store_view(store: &dyn Store, key: &str) -> Result<Vec<StoredMessage>, StoreError> {
    Ok(store.load(key).await?.messages)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::InMemoryStore;

    #[tokio::test]
    async fn sessions_are_registered_once_and_removed() {
        let store = InMemoryStore::new();
        store
            .write_all(vec![
                register("a", None),
                register("b", Some("g")),
                register("a", None),
            ])
            .await;
        let ids: Vec<String> = sessions(&store)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.session)
            .collect();
        assert_eq!(ids, ["a", "b"]);
        let grouped: Vec<_> = sessions(&store)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.group.as_deref() == Some("g"))
            .collect();
        assert_eq!(grouped.len(), 1);
        remove(&store, &HashSet::from(["a".to_string()]))
            .await
            .unwrap();
        let ids: Vec<String> = sessions(&store)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.session)
            .collect();
        assert_eq!(ids, ["b"]);
        note_principal(&store, "t1").await.unwrap();
        note_principal(&store, "t1").await.unwrap();
        assert_eq!(principals(&store).await.unwrap(), ["t1"]);
    }
}
