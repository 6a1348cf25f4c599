//! What durable [`Store`](memory_core::Store) backends share, so that each
//! SQL store writes only its SQL: how a message, its count and its flag
//! become column values and back (a user message's images kept apart,
//! once each), how a session key is checked, how 64-bit
//! columns hold versions and counts, and how the views that compactions
//! replaced are put together again from an append-only log.
//!
//! | item | what it is |
//! |---|---|
//! | [`Row`] | a stored message as column values (JSON body, count, flag), encoded and decoded, and the images it names |
//! | [`decode_message`], [`decode_all`] | messages and rows back from their columns |
//! | [`images`]: [`Blob`], [`digest`], [`image_digests`], [`attach_images`] | images stored once per distinct image, by digest, apart from the rows that name them |
//! | [`Key`] | the checked `(tenant, session)` key of a session |
//! | [`to_u64`], [`to_i64`] | versions and counts to and from 64-bit columns |
//! | [`assemble`] | the views compactions replaced, from the views committed and the log |
//! | `test_util` (feature `test-util`) | conformance helpers for durable stores: the race of appenders and compactors, and the rebase of a session written before migration |
//!
//! ```
//! use memory_core::{Message, StoredMessage};
//! use memory_store_support::Row;
//!
//! let stored = StoredMessage::new(Message::user("hi"), 1, false);
//! let row = Row::encode(&stored).unwrap();
//! assert_eq!(row.decode().unwrap(), stored);
//! ```

mod column;
pub mod images;
mod key;
mod replaced;
mod row;
#[cfg(feature = "test-util")]
pub mod test_util;

pub use column::{to_i64, to_u64};
pub use images::{Blob, attach_images, digest, image_digests};
pub use key::Key;
pub use replaced::assemble;
pub use row::{Row, decode_all, decode_message};
