//! [`Row`]: a stored message as the column values a SQL store writes.

use memory_core::{Message, StoreError, StoredMessage};

/// A message ready to be written: its JSON text, count and flag.
///
/// ```
/// use memory_core::{Message, StoredMessage};
/// use memory_store_support::Row;
///
/// let row = Row::encode(&StoredMessage::new(Message::system("rules"), 2, true)).unwrap();
/// assert_eq!((row.tokens, row.protected), (2, true));
/// ```
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
    ///
    /// ```
    /// use memory_core::{Message, StoredMessage};
    /// let row = memory_store_support::Row::encode(&StoredMessage::new(Message::user("hi"), 1, false)).unwrap();
    /// assert!(row.body.contains("hi"));
    /// ```
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
    ///
    /// ```
    /// use memory_core::{Message, StoredMessage};
    /// let messages = [StoredMessage::new(Message::user("a"), 1, false)];
    /// assert_eq!(memory_store_support::Row::encode_all(&messages).unwrap().len(), 1);
    /// ```
    pub fn encode_all(messages: &[StoredMessage]) -> Result<Vec<Self>, StoreError> {
        messages.iter().map(Self::encode).collect()
    }

    /// The stored message back.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] for a body that is not a message or a
    /// negative count (a database altered outside this library).
    ///
    /// ```
    /// use memory_store_support::Row;
    /// let row = Row { body: r#"{"User":[{"Text":"hi"}]}"#.into(), tokens: -1, protected: false };
    /// assert!(row.decode().is_err());
    /// ```
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
///
/// ```
/// use memory_core::Message;
/// let body = serde_json::to_string(&Message::user("hi")).unwrap();
/// assert_eq!(memory_store_support::decode_message(&body).unwrap(), Message::user("hi"));
/// assert!(memory_store_support::decode_message("{").is_err());
/// ```
pub fn decode_message(body: &str) -> Result<Message, StoreError> {
    serde_json::from_str(body).map_err(|e| {
        StoreError::Backend(format!(
            "a stored message is not a message ({e}): the database was altered outside this library or by a newer version"
        ))
    })
}

/// Every row decoded, in order.
///
/// # Errors
///
/// As [`Row::decode`].
///
/// ```
/// use memory_core::{Message, StoredMessage};
/// use memory_store_support::{decode_all, Row};
/// let stored = vec![StoredMessage::new(Message::user("a"), 1, false)];
/// assert_eq!(decode_all(Row::encode_all(&stored).unwrap()).unwrap(), stored);
/// ```
pub fn decode_all(rows: Vec<Row>) -> Result<Vec<StoredMessage>, StoreError> {
    rows.into_iter().map(Row::decode).collect()
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
