//! [`Row`]: a stored message as the column values a SQL store writes.

use memory_core::{Message, StoreError, StoredMessage};

use crate::images::{Blob, decode_body, encode_body};

/// A message ready to be written: its JSON text, count and flag, and the
/// images it names, which a store keeps apart, once each.
///
/// ```
/// use memory_core::{ContentBlock, ImageContent, Message, StoredMessage};
/// use memory_store_support::Row;
///
/// let row = Row::encode(&StoredMessage::new(Message::system("rules"), 2, true)).unwrap();
/// assert_eq!((row.tokens, row.protected), (2, true));
/// assert!(row.images.is_empty());
///
/// let image = ContentBlock::Image(ImageContent::new("image/png", vec![0; 4096]));
/// let row = Row::encode(&StoredMessage::new(Message::user_blocks(vec![image]), 765, false)).unwrap();
/// assert!(row.body.len() < 200);
/// assert_eq!(row.images[0].data.len(), 4096);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The message as JSON text; a user message's images without their
    /// bytes, named by [digest](crate::digest) (see [`crate::images`]).
    pub body: String,
    /// Its token count, as a 64-bit column holds it.
    pub tokens: i64,
    /// Whether it is protected.
    pub protected: bool,
    /// The distinct images the body names, with their bytes: what a store
    /// writes to its image table (each digest once, whichever rows name
    /// it) beside the row, and gives back to a row it read
    /// ([`attach_images`](crate::attach_images)) before decoding it. Not
    /// a column of the row.
    pub images: Vec<Blob>,
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
        let (body, images) = encode_body(&stored.message)
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
            images,
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

    /// The stored message back, its images given the bytes of
    /// [`images`](Row::images).
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`] for a body that is not a message, names an
    /// image [`images`](Row::images) does not hold, or a negative count (a
    /// database altered outside this library).
    ///
    /// ```
    /// use memory_store_support::Row;
    /// let row = Row { body: r#"{"User":[{"Text":"hi"}]}"#.into(), tokens: -1, protected: false, images: Vec::new() };
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
            decode_body(&self.body, &self.images)?,
            tokens,
            self.protected,
        ))
    }
}

/// A message from its stored JSON text, for a body that names no images
/// (one that does is read through [`Row::decode`]).
///
/// # Errors
///
/// [`StoreError::Backend`] for text that is not a message, or names images.
///
/// ```
/// use memory_core::Message;
/// let body = serde_json::to_string(&Message::user("hi")).unwrap();
/// assert_eq!(memory_store_support::decode_message(&body).unwrap(), Message::user("hi"));
/// assert!(memory_store_support::decode_message("{").is_err());
/// ```
pub fn decode_message(body: &str) -> Result<Message, StoreError> {
    decode_body(body, &[])
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
    use memory_core::{ContentBlock, ImageContent};

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
            images: Vec::new(),
        };
        assert!(matches!(row.decode(), Err(StoreError::Backend(_))));
        let row = Row {
            body: serde_json::to_string(&Message::user("x")).unwrap(),
            tokens: -1,
            protected: false,
            images: Vec::new(),
        };
        assert!(matches!(row.decode(), Err(StoreError::Backend(_))));
    }

    fn image(data: Vec<u8>, detail: Option<&str>) -> ContentBlock {
        let image = ImageContent::new("image/png", data);
        ContentBlock::Image(match detail {
            Some(detail) => image.with_detail(detail),
            None => image,
        })
    }

    #[test]
    fn images_leave_the_body_and_come_back_exactly() {
        let big = vec![0xAB; 100_000];
        let message = Message::user_blocks(vec![
            ContentBlock::Text("these".into()),
            image(big.clone(), Some("low")),
            image(vec![1, 2, 3], None),
            image(big.clone(), Some("high")),
            image(Vec::new(), Some("auto")),
        ]);
        let stored = StoredMessage::new(message, 2_000, false);
        let row = Row::encode(&stored).unwrap();
        assert!(row.body.len() < 1_000, "{}", row.body.len());
        assert!(row.body.contains(r#""detail":"low""#));
        // The same bytes twice are one image.
        assert_eq!(row.images.len(), 3);
        assert_eq!(row.clone().decode().unwrap(), stored);
        let missing = Row {
            images: row.images[1..].to_vec(),
            ..row
        };
        let e = missing.decode().unwrap_err().to_string();
        assert!(e.contains("does not hold"), "{e}");
    }

    #[test]
    fn a_body_of_before_images_were_stored_apart_still_reads() {
        let stored = StoredMessage::new(
            Message::user_blocks(vec![image(vec![9; 10], None)]),
            1,
            false,
        );
        let row = Row {
            body: serde_json::to_string(&stored.message).unwrap(),
            tokens: 1,
            protected: false,
            images: Vec::new(),
        };
        assert_eq!(row.decode().unwrap(), stored);
    }

    #[test]
    fn a_body_naming_too_many_or_too_few_images_is_reported() {
        let one = Message::user_blocks(vec![image(Vec::new(), None)]);
        let none = Message::user("x");
        for (names, message) in [(vec![], &one), (vec!["a", "b"], &one), (vec!["a"], &none)] {
            let body = serde_json::json!({"images": names, "message": message}).to_string();
            let row = Row {
                body,
                tokens: 1,
                protected: false,
                images: vec![Blob {
                    digest: "a".into(),
                    data: Vec::new(),
                }],
            };
            assert!(matches!(row.decode(), Err(StoreError::Backend(_))));
        }
    }
}
