//! Images stored once: a user message's images are kept apart from its
//! row, each distinct image once, by the digest of its bytes, and the row's
//! body names them.
//!
//! A body whose message holds images is `{"images": [DIGEST, ...],
//! "message": MESSAGE}`: the message with each image's bytes left out (its
//! MIME type and `detail` stay), and the digest of each image's bytes, in
//! the order of its image blocks. Any other body is the message itself, as
//! rows were written before images were stored apart; both read back.
//!
//! ```
//! use memory_core::{ContentBlock, ImageContent, Message, StoredMessage};
//! use memory_store_support::{digest, Row};
//!
//! let photo = ImageContent::new("image/jpeg", vec![0xFF; 1 << 20]).with_detail("high");
//! let message = Message::user_blocks(vec![
//!     ContentBlock::Text("Same photo twice?".into()),
//!     ContentBlock::Image(photo.clone()),
//!     ContentBlock::Image(photo),
//! ]);
//! let row = Row::encode(&StoredMessage::new(message, 1_600, false)).unwrap();
//! assert!(row.body.starts_with(r#"{"images":[""#) && row.body.len() < 400);
//! assert_eq!(row.images.len(), 1);
//! assert_eq!(row.images[0].digest, digest(&[0xFF; 1 << 20]));
//! ```

use std::collections::{BTreeMap, BTreeSet};

use memory_core::{ContentBlock, ImageContent, Message, StoreError};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use crate::Row;

/// An image's bytes as a SQL store keeps them: once per distinct image, by
/// [`digest`].
///
/// ```
/// use memory_store_support::{digest, Blob};
/// let blob = Blob::of(vec![1, 2, 3]);
/// assert_eq!(blob.digest, digest(&[1, 2, 3]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// The [`digest`] of the bytes.
    pub digest: String,
    /// The image's bytes.
    pub data: Vec<u8>,
}

impl Blob {
    /// The blob of `data`, its digest computed.
    ///
    /// ```
    /// let blob = memory_store_support::Blob::of(Vec::new());
    /// assert_eq!(blob.digest.len(), 64);
    /// ```
    pub fn of(data: Vec<u8>) -> Self {
        Self {
            digest: digest(&data),
            data,
        }
    }
}

/// The digest by which an image's bytes are stored and named: BLAKE3 of
/// the bytes, as 64 lowercase hex digits.
///
/// ```
/// let a = memory_store_support::digest(b"same bytes");
/// assert_eq!(a, memory_store_support::digest(b"same bytes"));
/// assert_ne!(a, memory_store_support::digest(b"other bytes"));
/// ```
pub fn digest(data: &[u8]) -> String {
    blake3::hash(data).to_hex().to_string()
}

/// A body that names its images.
#[derive(Serialize)]
struct Naming<'m> {
    images: Vec<String>,
    message: &'m Message,
}

/// A body that names its images, read back.
#[derive(Deserialize)]
struct Named {
    images: Vec<String>,
    message: Message,
}

/// The names of a body that names its images, its message skipped.
#[derive(Deserialize)]
struct Names {
    images: Vec<String>,
    #[serde(rename = "message")]
    _message: IgnoredAny,
}

/// How a body that names its images begins (serde writes the fields in
/// the order [`Naming`] declares them).
const NAMING: &str = r#"{"images":"#;

/// `message`'s body, and the distinct images it names.
pub(crate) fn encode_body(message: &Message) -> Result<(String, Vec<Blob>), serde_json::Error> {
    let blocks = match message {
        Message::User(blocks) if blocks.iter().any(is_image) => blocks,
        _ => return Ok((serde_json::to_string(message)?, Vec::new())),
    };
    let mut names = Vec::new();
    let mut blobs: Vec<Blob> = Vec::new();
    let without_bytes = blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Image(image) => {
                let name = digest(&image.data);
                if !blobs.iter().any(|b| b.digest == name) {
                    blobs.push(Blob {
                        digest: name.clone(),
                        data: image.data.clone(),
                    });
                }
                names.push(name);
                ContentBlock::Image(ImageContent {
                    mime_type: image.mime_type.clone(),
                    data: Vec::new(),
                    detail: image.detail.clone(),
                })
            }
            other => other.clone(),
        })
        .collect();
    let body = serde_json::to_string(&Naming {
        images: names,
        message: &Message::User(without_bytes),
    })?;
    Ok((body, blobs))
}

/// The message of `body`, each image it names given its bytes from
/// `blobs`.
pub(crate) fn decode_body(body: &str, blobs: &[Blob]) -> Result<Message, StoreError> {
    if !body.starts_with(NAMING) {
        return serde_json::from_str(body).map_err(not_a_message);
    }
    let Named {
        images,
        mut message,
    } = serde_json::from_str(body).map_err(not_a_message)?;
    let Message::User(blocks) = &mut message else {
        return Err(altered("names images but is not a user message"));
    };
    let mut names = images.iter();
    for block in blocks.iter_mut() {
        if let ContentBlock::Image(image) = block {
            let name = names
                .next()
                .ok_or_else(|| altered("has more images than it names"))?;
            let blob = blobs.iter().find(|b| &b.digest == name).ok_or_else(|| {
                altered(&format!(
                    "names image {name}, which the database does not hold"
                ))
            })?;
            image.data = blob.data.clone();
        }
    }
    if names.next().is_some() {
        return Err(altered("names more images than it has"));
    }
    Ok(message)
}

/// The digests of the images `rows` name, each once: what a store reads
/// from its image table before [`attach_images`].
///
/// # Errors
///
/// [`StoreError::Backend`] for a body that names images but does not
/// read.
///
/// ```
/// use memory_core::{ContentBlock, ImageContent, Message, StoredMessage};
/// use memory_store_support::{digest, image_digests, Row};
/// let image = ContentBlock::Image(ImageContent::new("image/png", vec![7; 16]));
/// let message = Message::user_blocks(vec![image.clone(), image]);
/// let rows = [Row::encode(&StoredMessage::new(message, 1, false)).unwrap()];
/// let wanted = image_digests(&rows).unwrap();
/// assert_eq!(wanted.into_iter().collect::<Vec<_>>(), vec![digest(&[7; 16])]);
/// ```
pub fn image_digests<'r>(
    rows: impl IntoIterator<Item = &'r Row>,
) -> Result<BTreeSet<String>, StoreError> {
    let mut wanted = BTreeSet::new();
    for row in rows {
        wanted.extend(names(&row.body)?);
    }
    Ok(wanted)
}

/// Gives each row the bytes of the images its body names, from `fetched`
/// (the images a store read by [`image_digests`]), so that
/// [`Row::decode`] gives back the message with its images.
///
/// # Errors
///
/// [`StoreError::Backend`] when a row names an image `fetched` does not
/// hold (the database was altered outside this library).
///
/// ```
/// use std::collections::BTreeMap;
/// use memory_core::{ContentBlock, ImageContent, Message, StoredMessage};
/// use memory_store_support::{attach_images, Row};
/// let stored = StoredMessage::new(
///     Message::user_blocks(vec![ContentBlock::Image(ImageContent::new("image/png", vec![1, 2]))]),
///     1,
///     false,
/// );
/// let written = Row::encode(&stored).unwrap();
/// // What a store's tables hold: the row without the bytes, and the bytes by digest.
/// let fetched: BTreeMap<_, _> = written.images.iter().map(|b| (b.digest.clone(), b.data.clone())).collect();
/// let mut read = vec![Row { images: Vec::new(), ..written }];
/// assert!(read[0].clone().decode().is_err());
/// attach_images(&mut read, &fetched).unwrap();
/// assert_eq!(read.remove(0).decode().unwrap(), stored);
/// ```
pub fn attach_images<'r>(
    rows: impl IntoIterator<Item = &'r mut Row>,
    fetched: &BTreeMap<String, Vec<u8>>,
) -> Result<(), StoreError> {
    for row in rows {
        let mut names: Vec<String> = names(&row.body)?;
        names.sort();
        names.dedup();
        row.images = names
            .into_iter()
            .map(|name| match fetched.get(&name) {
                Some(data) => Ok(Blob {
                    digest: name,
                    data: data.clone(),
                }),
                None => Err(altered(&format!(
                    "names image {name}, which the database does not hold"
                ))),
            })
            .collect::<Result<_, _>>()?;
    }
    Ok(())
}

/// The digests `body` names, none for a body that is a message itself.
fn names(body: &str) -> Result<Vec<String>, StoreError> {
    if !body.starts_with(NAMING) {
        return Ok(Vec::new());
    }
    let names: Names = serde_json::from_str(body).map_err(not_a_message)?;
    Ok(names.images)
}

fn is_image(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Image(_))
}

fn not_a_message(e: serde_json::Error) -> StoreError {
    StoreError::Backend(format!(
        "a stored message is not a message ({e}): the database was altered outside this library or by a newer version"
    ))
}

fn altered(what: &str) -> StoreError {
    StoreError::Backend(format!(
        "a stored message {what}: the database was altered outside this library"
    ))
}
