//! The summarization engine that `memory-summarize` and `memory-compact`
//! share: history rendered as text ([`render`]), the cap in tokens
//! ([`cap`]), splitting what overflows the model's context ([`split`]),
//! accepting a reply ([`SummarySettings::accept`]: complete, not refused,
//! with text, grounded) with a grounding check a user may replace or turn
//! off ([`SummaryCheck`]), and the settings both strategies take
//! ([`SummarySettings`]). Each strategy keeps its own policy: when to
//! summarize, what stays verbatim, what the summary carries. Whether a
//! message *is* a summary, and the summary message itself, stay with the
//! contracts (`memory_core::summary`).
//!
//! | item | what it is |
//! |---|---|
//! | [`SummarySettings`] | the shared knobs: cap, input limit, prompt, options, grounding, rejection observer; and [`accept`](SummarySettings::accept) |
//! | [`accept_reply`], [`accept_summary`], [`Rejection`] | whether a model's reply may serve as a summary |
//! | [`SummaryCheck`], [`SalientTerms`], [`NoGrounding`] | the pluggable grounding check: the default, and none |
//! | [`RejectionObserver`] | told of every refused reply |
//! | [`grounding`] | whether a summary says something about what it covers |
//! | [`cap`] | the cap in tokens: the model's allowance, over-cap and not-shorter checks, the build-time check ([`cap::CapTooSmall`]) |
//! | [`render`] | history as text, shortened to fit a request |
//! | [`split`] | splitting a request that overflows the model's context |
//! | [`sections`] | the tagged sections of a summarization prompt, which the compact prompt writes and the extractive summarizer reads |
//!
//! ```
//! use memory_core::ChatResponse;
//! use memory_summary_engine::{NoGrounding, Rejection, SummarySettings};
//!
//! let source = "user: rename parse_amount in tidyledger/importer.py and rerun test_importer.py";
//! let chatter = ChatResponse::text("I'm ready to assist with any code you'd like me to work on.");
//! let settings = SummarySettings::new();
//! assert!(matches!(settings.accept(source, &chatter), Err(Rejection::Ungrounded { .. })));
//! let summary = ChatResponse::text("Renamed parse_amount in tidyledger/importer.py.");
//! assert!(settings.accept(source, &summary).is_ok());
//! // Grounding off: a template summarizer's reply is taken as it is.
//! assert!(settings.with_grounding(NoGrounding).accept(source, &chatter).is_ok());
//! ```

pub mod cap;
mod check;
pub mod grounding;
mod observer;
pub mod render;
mod reply;
pub mod sections;
mod settings;
pub mod split;

pub use check::{NoGrounding, SalientTerms, SummaryCheck};
pub use observer::RejectionObserver;
pub use reply::{Rejection, accept_reply, accept_summary};
pub use settings::SummarySettings;
