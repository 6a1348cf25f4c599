//! The summarization engine that `memory-summarize` and `memory-compact`
//! share. For now it holds the judging of a summarizer's reply: whether it
//! may become a summary (complete, not refused, with text, within its cap,
//! shorter than what it covers) and whether it is grounded in what it
//! covers. Whether a message *is* a summary, and the summary message
//! itself, stay with the contracts (`memory_core::summary`).
//!
//! | item | what it is |
//! |---|---|
//! | [`accept_reply`], [`accept_summary`], [`Rejection`] | whether a model's reply may serve as a summary |
//! | [`grounding`] | whether a summary says something about what it covers |
//!
//! ```
//! use memory_core::ChatResponse;
//! use memory_summary::{accept_summary, Rejection};
//!
//! let source = "user: rename parse_amount in tidyledger/importer.py and rerun test_importer.py";
//! let chatter = ChatResponse::text("I'm ready to assist with any code you'd like me to work on.");
//! assert!(matches!(accept_summary(source, &chatter), Err(Rejection::Ungrounded { .. })));
//! let summary = ChatResponse::text("Renamed parse_amount in tidyledger/importer.py.");
//! assert!(accept_summary(source, &summary).is_ok());
//! ```

pub mod grounding;
mod reply;

pub use reply::{Rejection, accept_reply, accept_summary};
