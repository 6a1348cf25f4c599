//! [`Failure`]: why a compaction made no summary. Whether a reply may
//! become one is `memory-summary-engine`'s rule
//! ([`memory_summary_engine::SummarySettings::accept`]); its [`Rejection`] is
//! wrapped, not restated.

use std::time::Duration;

use memory_core::ProviderError;
use memory_summary_engine::Rejection;

/// Why a compaction left the history as it was. Each message says what to do.
///
/// ```
/// use memory_compact::Failure;
/// use memory_core::StopReason;
/// use memory_summary_engine::Rejection;
/// let failure = Failure::from(Rejection::Incomplete(StopReason::Length));
/// assert!(failure.to_string().contains("summary cap"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The summarizer's provider failed (after the retries allowed).
    #[error("the summarizer failed: {0}")]
    Provider(ProviderError),
    /// The summarizer did not answer in time (after the retries allowed).
    #[error(
        "the summarizer did not answer within {0:?}; raise with_timeout or route summaries to a faster model"
    )]
    TimedOut(Duration),
    /// The reply may not become a summary: cut off at the summary cap,
    /// refused, failed mid-way, empty, not an assistant message, asking
    /// for tools, or saying nothing about what it covers (see
    /// [`memory_summary_engine::SummarySettings::accept`]); or the summary message, file list
    /// included, is over the summary cap ([`Rejection::OverCap`]).
    #[error(transparent)]
    Rejected(#[from] Rejection),
    /// A `before_compaction` hook supplied a blank summary.
    #[error(
        "the before_compaction hook supplied a blank summary; return HookDecision::Proceed to let the model write it, or Decline"
    )]
    BlankFromHook,
    /// A background summary was made for a history that has changed since.
    #[error(
        "the history changed while the background summary was made (another compaction or an edit); it was discarded and a new one will be made"
    )]
    Stale,
    /// The history with the summary is no smaller than without it (a
    /// summary as long as the text it covers); nothing was replaced.
    #[error(
        "the summary is no shorter than what it covers ({after} tokens with it, {before} without); nothing was replaced"
    )]
    NotSmaller {
        /// Tokens of the history before.
        before: usize,
        /// Tokens with the summary in place.
        after: usize,
    },
    /// With the summary, what may never be shed exceeds the budget.
    #[error(
        "with the summary, the messages that may never be shed hold {floor} tokens, over the budget of {budget}; lower with_summary_max_tokens or raise the budget"
    )]
    TooLarge {
        /// Tokens of the compacted history's floor.
        floor: usize,
        /// The token budget.
        budget: usize,
    },
}

#[cfg(test)]
mod tests {
    use memory_core::StopReason;

    use super::*;

    #[test]
    fn a_rejection_reads_as_core_says_it() {
        let rejection = Rejection::Incomplete(StopReason::Length);
        let failure = Failure::from(rejection.clone());
        assert_eq!(failure, Failure::Rejected(rejection.clone()));
        assert_eq!(failure.to_string(), rejection.to_string());
    }
}
