//! The state a [`Compact`](crate::Compact) changes from turn to turn, apart
//! from its settings: the summary state ([`Memo`]) and the background slot
//! ([`Slot`]). The foreground and background types work on it; dropping it
//! cancels a background request still running.

use crate::memo::Memo;
use crate::slot::Slot;

/// The summary state and the background slot.
#[derive(Debug, Default)]
pub(crate) struct Engine {
    memo: Memo,
    slot: Slot,
}

impl Engine {
    /// What is remembered of the summaries.
    pub fn memo(&self) -> &Memo {
        &self.memo
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
