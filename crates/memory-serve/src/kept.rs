//! The originals a named session keeps: a client that names its session
//! sends only its new messages, so the wire form of its earlier ones
//! (signatures, `cache_control`, blocks of no known kind) is kept in the
//! store, beside the session, for the calls that send them upstream again.
//!
//! `memory-serve/originals/{session}`, in the principal's part of the
//! store: one JSON system message `{"digest", "original"}` per message
//! whose wire form the neutral message does not hold whole. A client that
//! sends its whole history needs none of this: each request brings them.

use memory_core::{Store, StoreError, StoreWrite};
use serde::{Deserialize, Serialize};

use crate::ledger::RESERVED_PREFIX;
use crate::protocol::originals::Original;

/// Where session `session`'s originals are kept.
pub(crate) fn key(session: &str) -> String {
    format!("{RESERVED_PREFIX}originals/{session}")
}

#[derive(Serialize, Deserialize)]
struct Entry {
    /// The digest of the message it is the original of, in hex.
    digest: String,
    original: Original,
}

/// The write that keeps `originals` for `session`; `None` when there are
/// none to keep.
pub(crate) fn write(session: &str, originals: Vec<([u8; 32], &Original)>) -> Option<StoreWrite> {
    if originals.is_empty() {
        return None;
    }
    let messages = originals
        .into_iter()
        .filter_map(|(digest, original)| {
            crate::record::message(&Entry {
                digest: hex(&digest),
                original: original.clone(),
            })
        })
        .collect();
    Some(StoreWrite::Append {
        session: key(session),
        messages,
    })
}

/// The originals kept for `session`, by digest.
pub(crate) async fn load(
    store: &dyn Store,
    session: &str,
) -> Result<Vec<([u8; 32], Original)>, StoreError> {
    let entries: Vec<Entry> = crate::record::read_all(store, &key(session)).await?;
    Ok(entries
        .into_iter()
        .filter_map(|e| Some((unhex(&e.digest)?, e.original)))
        .collect())
}

fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn originals_kept_are_read_back() {
        let store = memory_core::InMemoryStore::new();
        let original = Original {
            blocks: vec![
                json!({"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}),
            ],
            string: false,
            fields: serde_json::Map::new(),
            opens: true,
            in_system: false,
        };
        assert!(write("s", Vec::new()).is_none());
        let w = write("s", vec![([7; 32], &original)]).unwrap();
        store.write_all(vec![w]).await;
        assert_eq!(load(&store, "s").await.unwrap(), vec![([7; 32], original)]);
    }
}
