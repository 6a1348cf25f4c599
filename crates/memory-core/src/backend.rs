//! What durable [`Store`](crate::Store) backends share: how messages,
//! counts and session keys become column values and back, and how the views
//! that compactions replaced are put together again from an append-only log.
//!
//! ```
//! use memory_core::backend::Row;
//! use memory_core::{Message, StoredMessage};
//!
//! let stored = StoredMessage::new(Message::user("hi"), 1, false);
//! let row = Row::encode(&stored).unwrap();
//! assert_eq!(row.decode().unwrap(), stored);
//! ```

use std::collections::BTreeMap;

use crate::store::check_session;
use crate::{Message, StoreError, StoredMessage};

/// A message ready to be written: its JSON text, count and flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The message as JSON text.
    pub body: String,
    /// Its token count, as a 64-bit column holds it.
    pub tokens: i64,
    /// Whether it is protected.
    pub protected: bool,
}

impl Row {
    /// The row for `stored`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] when the count does not fit 64 bits.
    pub fn encode(stored: &StoredMessage) -> Result<Self, StoreError> {
        let body = serde_json::to_string(&stored.message)
            .map_err(|e| StoreError::Backend(format!("cannot encode a message as JSON: {e}")))?;
        let tokens = i64::try_from(stored.tokens).map_err(|_| {
            StoreError::Backend(format!(
                "a token count of {} does not fit a 64-bit column",
                stored.tokens
            ))
        })?;
        Ok(Self {
            body,
            tokens,
            protected: stored.protected,
        })
    }

    /// The rows for `messages`.
    ///
    /// # Errors
    ///
    /// As [`encode`](Row::encode).
    pub fn encode_all(messages: &[StoredMessage]) -> Result<Vec<Self>, StoreError> {
        messages.iter().map(Self::encode).collect()
    }

    /// The stored message back.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] for a body that is not a message or a
    /// negative count (a database altered outside this library).
    pub fn decode(self) -> Result<StoredMessage, StoreError> {
        let tokens = usize::try_from(self.tokens).map_err(|_| {
            StoreError::Backend(format!(
                "a stored token count of {} is not a count: the database was altered outside this library",
                self.tokens
            ))
        })?;
        Ok(StoredMessage::new(
            decode_message(&self.body)?,
            tokens,
            self.protected,
        ))
    }
}

/// A message from its stored JSON text.
///
/// # Errors
///
/// [`StoreError::Backend`] for text that is not a message.
pub fn decode_message(body: &str) -> Result<Message, StoreError> {
    serde_json::from_str(body).map_err(|e| {
        StoreError::Backend(format!(
            "a stored message is not a message ({e}): the database was altered outside this library or by a newer version"
        ))
    })
}

/// The `(tenant, session)` key of a session, both checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The tenant, `""` for the unnamed namespace.
    pub tenant: String,
    /// The session id.
    pub session: String,
}

impl Key {
    /// `tenant` is `None` for the unnamed namespace (stored as `''`).
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidSession`] for an empty id or one with control
    /// characters, in the session or the tenant.
    pub fn new(tenant: Option<&str>, session: &str) -> Result<Self, StoreError> {
        check_session(session)?;
        let tenant = match tenant {
            None => String::new(),
            Some(t) => {
                if check_session(t).is_err() {
                    return Err(StoreError::InvalidSession(format!("{t}/{session}")));
                }
                t.to_string()
            }
        };
        Ok(Self {
            tenant,
            session: session.to_string(),
        })
    }
}

/// A stored 64-bit value as the unsigned number it stands for.
///
/// # Errors
///
/// [`StoreError::Backend`] for a negative value; `what` names it.
pub fn to_u64(value: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| {
        StoreError::Backend(format!(
            "a stored {what} of {value} is negative: the database was altered outside this library"
        ))
    })
}

/// A number as a 64-bit column holds it.
///
/// # Errors
///
/// [`StoreError::Backend`] past `i64::MAX`; `what` names it.
pub fn to_i64(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| {
        StoreError::Backend(format!("a {what} of {value} does not fit a 64-bit column"))
    })
}

/// Every row decoded, in order.
///
/// # Errors
///
/// As [`Row::decode`].
pub fn decode_all(rows: Vec<Row>) -> Result<Vec<StoredMessage>, StoreError> {
    rows.into_iter().map(Row::decode).collect()
}

/// The view compaction `g` (1-based) replaced: the view of generation
/// `g - 1`, then the history between compactions `g - 1` and `g`; `bases`
/// are the history lengths at each compaction, `views` the rows of each
/// generation's view, `log` the history rows in order.
///
/// # Errors
///
/// [`StoreError::Backend`] when the bases are out of order or a row does
/// not decode.
pub fn assemble(
    bases: Vec<i64>,
    mut views: BTreeMap<i64, Vec<Row>>,
    log: Vec<Row>,
) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
    let mut log = log.into_iter();
    let mut previous = 0;
    let mut replaced = Vec::with_capacity(bases.len());
    for (generation, base) in (1_i64..).zip(bases) {
        let mut rows = views.remove(&(generation - 1)).unwrap_or_default();
        let between = usize::try_from(base - previous).map_err(|_| {
            StoreError::Backend(
                "compactions are out of order: the database was altered outside this library"
                    .into(),
            )
        })?;
        rows.extend(log.by_ref().take(between));
        replaced.push(decode_all(rows)?);
        previous = base;
    }
    Ok(replaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip() {
        let stored = StoredMessage::new(Message::user("hi"), 3, true);
        assert_eq!(Row::encode(&stored).unwrap().decode().unwrap(), stored);
    }

    #[test]
    fn tenants_and_sessions_are_checked() {
        assert_eq!(Key::new(None, "s").unwrap().tenant, "");
        assert_eq!(Key::new(Some("acme"), "s").unwrap().tenant, "acme");
        assert!(Key::new(Some(""), "s").is_err());
        assert!(Key::new(Some("a\tb"), "s").is_err());
        assert!(Key::new(None, "").is_err());
    }

    #[test]
    fn garbage_is_reported_not_panicked() {
        let row = Row {
            body: "{".into(),
            tokens: 1,
            protected: false,
        };
        assert!(matches!(row.decode(), Err(StoreError::Backend(_))));
        let row = Row {
            body: serde_json::to_string(&Message::user("x")).unwrap(),
            tokens: -1,
            protected: false,
        };
        assert!(matches!(row.decode(), Err(StoreError::Backend(_))));
    }
}
