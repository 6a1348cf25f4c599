//! The one recognizer of index messages: the system message a context
//! carries, in place of what it leaves out, that names each left-out
//! piece by its recall handle (made by `memory-session`'s `left_out`).
//! The audit takes such a message as made, neither a summary nor
//! protected, as it takes a summary.
//!
//! ```
//! use memory_core::{index, Message};
//! assert!(index::is_index(&Message::system(format!("{}- r:000000002a", index::PREFIX))));
//! assert!(!index::is_index(&Message::system("You are terse.")));
//! ```

use crate::message::Message;

/// What every index message starts with.
pub const PREFIX: &str = "Left out (recall a handle to see it):\n";

/// Whether `message` is an index of what a context leaves out.
///
/// ```
/// use memory_core::{index, Message};
/// assert!(index::is_index(&Message::system(format!("{}- r:000000002a", index::PREFIX))));
/// assert!(!index::is_index(&Message::user(index::PREFIX)));
/// ```
pub fn is_index(message: &Message) -> bool {
    matches!(message, Message::System(text) if text.starts_with(PREFIX))
}
