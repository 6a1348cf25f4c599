//! Records the server keeps beside the sessions, each a JSON value held as
//! a system message under a key of the reserved prefix: the originals a
//! named session keeps (`kept`), kept responses and their items
//! (`stored_responses`), compactions' contexts (`compaction`).

use memory_core::{Message, Store, StoreError, StoreWrite, StoredMessage};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `value` as a message of a record.
pub(crate) fn message<T: Serialize>(value: &T) -> Option<StoredMessage> {
    let text = serde_json::to_string(value).ok()?;
    Some(StoredMessage::new(Message::system(text), 0, true))
}

/// The write that keeps `value` under `key`; `None` for a key no store
/// takes (an id with characters a session name may not have).
pub(crate) fn write<T: Serialize>(key: String, value: &T) -> Option<StoreWrite> {
    memory_core::store::check_session(&key).ok()?;
    Some(StoreWrite::Append {
        session: key,
        messages: vec![message(value)?],
    })
}

/// Every value kept under `key` that reads as a `T`, oldest first.
pub(crate) async fn read_all<T: DeserializeOwned>(
    store: &dyn Store,
    key: &str,
) -> Result<Vec<T>, StoreError> {
    if memory_core::store::check_session(key).is_err() {
        return Ok(Vec::new());
    }
    let view = store.load(key).await?.messages;
    Ok(view
        .iter()
        .filter_map(|stored| match &stored.message {
            Message::System(text) => serde_json::from_str(text).ok(),
            _ => None,
        })
        .collect())
}

/// The last value kept under `key`, when there is one.
pub(crate) async fn read<T: DeserializeOwned>(
    store: &dyn Store,
    key: &str,
) -> Result<Option<T>, StoreError> {
    Ok(read_all(store, key).await?.pop())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_value_kept_is_read_back_and_a_bad_key_is_refused() {
        let store = memory_core::InMemoryStore::new();
        let w = write("memory-serve/x/1".into(), &vec![1, 2]).unwrap();
        store.write_all(vec![w]).await;
        let back: Option<Vec<u8>> = read(&store, "memory-serve/x/1").await.unwrap();
        assert_eq!(back, Some(vec![1, 2]));
        assert!(write("memory-serve/\u{0}".into(), &1).is_none());
        let none: Option<u8> = read(&store, "memory-serve/\u{0}").await.unwrap();
        assert_eq!(none, None);
    }
}
