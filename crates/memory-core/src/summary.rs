//! The summary recognizer: the one place that says whether a message is a
//! summary of earlier history.
//!
//! A summary is a [`Message::System`] whose text starts with [`PREFIX`].
//! Producers build summaries with [`message`]; every subtractive stage keeps
//! what [`is_summary`] recognizes. The defaults every summarizing strategy
//! shares are here too: [`DEFAULT_SUMMARY_MAX_TOKENS`] and
//! [`DEFAULT_SUMMARY_TEMPERATURE`].
//!
//! ```
//! use memory_core::{summary, Message};
//!
//! let s = summary::message("The user wants a CSV parser; tests pass.");
//! assert!(summary::is_summary(&s));
//! assert_eq!(summary::body(&s), Some("The user wants a CSV parser; tests pass."));
//! assert!(!summary::is_summary(&Message::system("You are terse.")));
//! ```

use crate::Message;

/// What every summary message starts with.
pub const PREFIX: &str = "Summary of prior context:\n";

/// The default cap on a summary, in tokens, for every strategy that asks a
/// model for one: sent as the request's `max_tokens`, a reply cut off there
/// is rejected (`memory_summary::accept_reply`), and where a strategy
/// keeps room for the summary in the budget, that room.
///
/// ```
/// assert_eq!(memory_core::summary::DEFAULT_SUMMARY_MAX_TOKENS, 1_024);
/// ```
pub const DEFAULT_SUMMARY_MAX_TOKENS: u32 = 1_024;

/// The default sampling temperature of a summary request: a summary should
/// restate, not invent, and the same history should give the same summary.
/// Strategies send it unless their options set another.
///
/// ```
/// assert_eq!(memory_core::summary::DEFAULT_SUMMARY_TEMPERATURE, 0.0);
/// ```
pub const DEFAULT_SUMMARY_TEMPERATURE: f32 = 0.0;

/// Builds the summary message for `body`.
///
/// ```
/// let s = memory_core::summary::message("done so far");
/// assert!(s.is_system());
/// ```
pub fn message(body: impl AsRef<str>) -> Message {
    Message::System(format!("{PREFIX}{}", body.as_ref()))
}

/// Whether `message` is a summary.
///
/// ```
/// use memory_core::{summary, Message};
/// assert!(!summary::is_summary(&Message::user(summary::PREFIX)));
/// ```
pub fn is_summary(message: &Message) -> bool {
    matches!(message, Message::System(text) if text.starts_with(PREFIX))
}

/// The text of a summary without its prefix; `None` for other messages.
///
/// ```
/// use memory_core::{summary, Message};
/// assert_eq!(summary::body(&Message::system("x")), None);
/// ```
pub fn body(message: &Message) -> Option<&str> {
    match message {
        Message::System(text) => text.strip_prefix(PREFIX),
        _ => None,
    }
}
