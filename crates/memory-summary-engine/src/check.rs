//! [`SummaryCheck`]: the part of accepting a summary that a user may
//! replace or turn off, and its two stock answers, [`SalientTerms`] (the
//! default: the [grounding](crate::grounding) check) and [`NoGrounding`].
//!
//! A reply that ended normally and has text is then asked one more
//! question: does it say something about what it covers? By default the
//! answer is [`grounding::check`](crate::grounding::check), which refuses
//! chatter that shares next to none of the source's salient terms. A
//! template or fake summarizer whose summaries share no words with their
//! source, or a domain where the salient terms are not the ones that
//! matter, turns it off with [`NoGrounding`] or brings its own check.
//!
//! ```
//! use memory_core::ChatResponse;
//! use memory_summary_engine::{NoGrounding, Rejection, SummarySettings};
//!
//! let source = "user: rename parse_amount in tidyledger/importer.py and rerun test_importer.py";
//! let template = ChatResponse::text("Earlier turns were folded away.");
//! let grounded = SummarySettings::new();
//! assert!(matches!(grounded.accept(source, &template), Err(Rejection::Ungrounded { .. })));
//! let trusting = SummarySettings::new().with_grounding(NoGrounding);
//! assert_eq!(trusting.accept(source, &template), Ok("Earlier turns were folded away."));
//! ```

use crate::Rejection;

/// Whether a summary's text may stand for its source: the last step of
/// accepting a reply, after it is known to be a complete, non-blank
/// assistant text ([`accept_reply`](crate::accept_reply)).
///
/// Implemented by [`SalientTerms`] (the default), [`NoGrounding`] and any
/// `Fn(&str, &str) -> Result<(), Rejection>` taking the source and the
/// summary. Set one with
/// [`SummarySettings::with_grounding`](crate::SummarySettings::with_grounding).
///
/// ```
/// use memory_summary_engine::{Rejection, SummaryCheck};
///
/// // Summaries must name the ticket they are about.
/// let names_the_ticket = |source: &str, summary: &str| {
///     if source.contains("TICKET-42") && !summary.contains("TICKET-42") {
///         Err(Rejection::Ungrounded { shared: 0, needed: 1, source_terms: 1 })
///     } else {
///         Ok(())
///     }
/// };
/// assert!(names_the_ticket.check("user: TICKET-42 is open", "An open ticket.").is_err());
/// assert!(names_the_ticket.check("user: TICKET-42 is open", "TICKET-42 is open.").is_ok());
/// ```
pub trait SummaryCheck: Send + Sync {
    /// `Ok` when `summary` may stand for `source` (what the request asked
    /// to summarize: [`grounding::source_of`](crate::grounding::source_of)).
    ///
    /// # Errors
    ///
    /// The [`Rejection`] that says why not, usually
    /// [`Rejection::Ungrounded`].
    fn check(&self, source: &str, summary: &str) -> Result<(), Rejection>;
}

impl<F> SummaryCheck for F
where
    F: Fn(&str, &str) -> Result<(), Rejection> + Send + Sync,
{
    fn check(&self, source: &str, summary: &str) -> Result<(), Rejection> {
        self(source, summary)
    }
}

/// The default check: the summary shares enough salient terms with its
/// source ([`grounding::check`](crate::grounding::check)).
///
/// ```
/// use memory_summary_engine::{SalientTerms, SummaryCheck};
/// let source = "assistant: Ran pytest: test_importer.py::test_decimal_commas fails on '1.234,56'.";
/// assert!(SalientTerms.check(source, "test_decimal_commas fails on '1.234,56'.").is_ok());
/// assert!(SalientTerms.check(source, "The changes look good overall.").is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SalientTerms;

impl SummaryCheck for SalientTerms {
    fn check(&self, source: &str, summary: &str) -> Result<(), Rejection> {
        crate::grounding::check(source, summary)
    }
}

/// No check: every complete, non-blank reply is grounded. For summarizers
/// that are trusted or write from a template.
///
/// ```
/// use memory_summary_engine::{NoGrounding, SummaryCheck};
/// assert!(NoGrounding.check("user: fix src/lib.rs", "I'm ready to help.").is_ok());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoGrounding;

impl SummaryCheck for NoGrounding {
    fn check(&self, _source: &str, _summary: &str) -> Result<(), Rejection> {
        Ok(())
    }
}
