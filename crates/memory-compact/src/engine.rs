//! The state a [`Compact`](crate::Compact) changes from turn to turn, apart
//! from its settings: the summary state ([`SummaryState`]) and the
//! background slot ([`Slot`]). The foreground and background types work on it; dropping it
//! cancels a background request still running.

use crate::slot::Slot;
use crate::summary_state::SummaryState;

/// The summary state and the background slot.
#[derive(Debug, Default)]
pub(crate) struct Engine {
    summary_state: SummaryState,
    slot: Slot,
}

impl Engine {
    /// What is remembered of the summaries.
    pub fn summary_state(&self) -> &SummaryState {
        &self.summary_state
    }

    /// The background slot.
    pub fn slot(&self) -> &Slot {
        &self.slot
    }
}

impl Drop for Engine {
    /// Cancels a background request still running.
    fn drop(&mut self) {
        self.slot.abort();
    }
}
