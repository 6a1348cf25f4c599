//! Responses the server keeps, as the Responses API defines it: a
//! response asked with `store` (true unless said) is kept, a request's
//! `previous_response_id` continues from it (the client sends only what
//! is new), and `GET /responses/{id}` reads it back.
//!
//! `memory-serve/responses/{id}`, in the principal's part of the store:
//! one JSON system message naming the session the response belongs to,
//! how many of its messages it closes, and the response's body; and each
//! of its output items under `memory-serve/items/{id}`, for the requests
//! that name one by an `item_reference`.

use memory_core::{Message, Store, StoreError, StoreWrite};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ApiError;
use crate::ledger::RESERVED_PREFIX;
use crate::protocol::Decoded;
use crate::sessions::Scope;
use crate::state::AppState;

/// Where response `id` is kept.
fn key(id: &str) -> String {
    format!("{RESERVED_PREFIX}responses/{id}")
}

/// A kept response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The session it belongs to.
    pub(crate) session: String,
    /// The session's messages up to and including its reply.
    pub(crate) length: usize,
    /// The response as the client got it.
    pub(crate) body: Value,
}

/// The writes that keep `record` under the id its body holds, and each of
/// its output items under its own; none for a body with no id.
pub(crate) fn write(record: &Record) -> Vec<StoreWrite> {
    let Some(id) = record.body["id"].as_str() else {
        return Vec::new();
    };
    let mut writes: Vec<StoreWrite> = crate::record::write(key(id), record).into_iter().collect();
    let output = record.body["output"].as_array().into_iter().flatten();
    for item in output {
        if let Some(id) = item["id"].as_str() {
            writes.extend(crate::record::write(item_key(id), item));
        }
    }
    writes
}

/// Where output item `id` is kept.
fn item_key(id: &str) -> String {
    format!("{RESERVED_PREFIX}items/{id}")
}

/// Puts in place of each `item_reference` of `request` the output item it
/// names.
///
/// # Errors
///
/// A 400 naming `input` for a reference to no item kept for this caller.
pub(crate) async fn resolve(scope: &Scope, request: &mut Decoded) -> Result<(), ApiError> {
    for k in 0..request.messages.len() {
        let Message::User(blocks) = &request.messages[k] else {
            continue;
        };
        let [memory_core::ContentBlock::Wire(reference)] = blocks.as_slice() else {
            continue;
        };
        if reference["type"] != "item_reference" {
            continue;
        }
        let id = reference["id"].as_str().unwrap_or_default().to_string();
        let item: Option<serde_json::Value> =
            crate::record::read(&*scope.store(), &item_key(&id)).await?;
        let Some(item) = item else {
            return Err(ApiError::bad_request(
                format!("`input`: the item_reference `{id}` names no item kept"),
                Some("input"),
            ));
        };
        let pieces = crate::protocol::responses::items::pieces(vec![item], "input")?;
        let Some(piece) = pieces.into_iter().next() else {
            continue;
        };
        let original = crate::protocol::originals::Original {
            blocks: piece.items,
            string: false,
            fields: serde_json::Map::new(),
            opens: true,
            in_system: false,
        };
        request.originals.push(&piece.message, Some(original));
        request.messages[k] = piece.message;
    }
    Ok(())
}

/// Response `id`, when it is kept.
pub(crate) async fn load(store: &dyn Store, id: &str) -> Result<Option<Record>, StoreError> {
    crate::record::read(store, &key(id)).await
}

/// Puts before the request's messages those of the response it continues
/// (and, for an upstream of the client's protocol, their originals).
///
/// # Errors
///
/// A 400 naming `previous_response_id` when no such response is kept for
/// this caller, or its session no longer holds it.
pub(crate) async fn continue_from(
    state: &AppState,
    scope: &Scope,
    request: &mut Decoded,
) -> Result<(), ApiError> {
    let Some(id) = request.asks.previous.clone() else {
        return Ok(());
    };
    let missing = |why: &str| {
        ApiError::bad_request(
            format!("previous response `{id}` {why}"),
            Some("previous_response_id"),
        )
    };
    let record = load(&*scope.store(), &id)
        .await?
        .ok_or_else(|| missing("is not found"))?;
    let resumed = state
        .sessions
        .resume(scope, &record.session, record.length, request)
        .await?;
    let history = resumed.ok_or_else(|| missing("names messages its session no longer holds"))?;
    // Instructions are not carried over: the request's own (when it gives
    // any, as its first message) stand in place of the response's.
    let mut history = history;
    if request.asks.instructions.is_some() && history.first().is_some_and(Message::is_system) {
        history.remove(0);
    }
    let new = std::mem::take(&mut request.messages);
    let given = usize::from(request.asks.instructions.is_some()).min(new.len());
    let (instructions, items) = new.split_at(given);
    request.messages = [instructions, &history, items].concat();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_record_kept_is_read_back() {
        let store = memory_core::InMemoryStore::new();
        let record = Record {
            session: "s".into(),
            length: 3,
            body: serde_json::json!({"id": "resp_1", "object": "response"}),
        };
        store.write_all(write(&record)).await;
        assert_eq!(load(&store, "resp_1").await.unwrap(), Some(record));
        assert_eq!(load(&store, "resp_2").await.unwrap(), None);
        assert_eq!(load(&store, "../x").await.unwrap(), None);
    }
}
