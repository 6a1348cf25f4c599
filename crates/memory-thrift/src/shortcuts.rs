//! [`Shortcuts`]: the work a pass may save without changing what it gives,
//! each one a setting, so that a reference can take the long way.
//!
//! Two shortcuts spare a shed most of a long history: the older steps of
//! a long newest round are left out before the stages run (see
//! [`horizon`](crate::horizon)), and the drop stage stops going through its
//! candidates once none left could be kept (see
//! [`drop_stage`](crate::drop_stage)). Both give exactly what the long way
//! gives; the tests turn them off to get that reference, and read how
//! often the first was taken.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::horizon::HORIZON_MARGIN;

/// Which shortcuts a pass takes (all of them by default).
#[derive(Debug, Clone)]
pub(crate) struct Shortcuts {
    /// Whether a pass leaves out the older steps of a long newest round
    /// (else it passes over every step).
    pub skip_long_round: bool,
    /// The share of the budget that the newest steps looked at must hold
    /// before the older ones are left out: one and [`HORIZON_MARGIN`]. A
    /// smaller share leaves out steps a pass needs, so that the pass must
    /// be made again over every step.
    pub horizon_share: f64,
    /// Whether the drop stage stops going through its candidates once
    /// none left could be kept (else it goes through all of them).
    pub stop_early: bool,
    /// How often passes left steps out: shared by clones.
    pub skips: Arc<SkipCounts>,
}

impl Default for Shortcuts {
    fn default() -> Self {
        Self {
            skip_long_round: true,
            horizon_share: 1.0 + HORIZON_MARGIN,
            stop_early: true,
            skips: Arc::default(),
        }
    }
}

/// Passes that left out the older steps of a long newest round.
#[derive(Debug, Default)]
pub(crate) struct SkipCounts {
    /// Those whose result was kept.
    pub kept: AtomicUsize,
    /// Those made again over every step, because leaving the steps out
    /// could have changed the result.
    pub redone: AtomicUsize,
}
