//! The state a [`Compact`](crate::Compact) changes from turn to turn, apart
//! from its settings: the summary state ([`SummaryState`]) and the
//! background summary ([`BackgroundSummary`]). The foreground and background
//! types work on it; dropping it cancels a background request still running.

use crate::background_summary::BackgroundSummary;
use crate::summary_state::SummaryState;

/// The summary state and the background summary.
#[derive(Debug, Default)]
pub(crate) struct CompactState {
    summary_state: SummaryState,
    background_summary: BackgroundSummary,
}

impl CompactState {
    /// What is remembered of the summaries.
    pub fn summary_state(&self) -> &SummaryState {
        &self.summary_state
    }

    /// The background summary.
    pub fn background_summary(&self) -> &BackgroundSummary {
        &self.background_summary
    }
}

impl Drop for CompactState {
    /// Cancels a background request still running.
    fn drop(&mut self) {
        self.background_summary.abort();
    }
}
