//! What a [`Compact`](crate::Compact) remembers between calls, behind one
//! mutex: the summary it last applied, the attempt that last failed, the
//! files of its last summary and the background slot.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::task::JoinHandle;

use crate::covering::{Covering, Fingerprint};
use crate::{CompactCost, FileOps};

/// Where the background summary stands.
///
/// ```
/// use memory_compact::{BackgroundStatus, Compact};
/// let compact = Compact::background(memory_core::FakeProvider::default());
/// assert_eq!(compact.background_status(), BackgroundStatus::Idle);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackgroundStatus {
    /// Nothing is being made or waiting.
    Idle,
    /// A summary request is running.
    InFlight,
    /// A summary is ready, to be spliced when the budget is crossed.
    Ready,
}

/// A background summary, made and not yet spliced.
#[derive(Debug)]
pub(crate) struct Ready {
    /// The summary and the messages it replaces.
    pub covering: Covering,
    /// What making it cost.
    pub cost: CompactCost,
    /// Whether a hook supplied it.
    pub from_hook: bool,
}

/// The background slot.
#[derive(Debug)]
pub(crate) enum Phase {
    Idle,
    /// The request of this generation is running.
    InFlight(u64),
    Ready(Box<Ready>),
}

/// An attempt that made no usable summary: no other is made for the same
/// history until its new material has grown by the threshold again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FailedAt {
    /// The history up to the last message the attempt would have replaced.
    pub fingerprint: Fingerprint,
    /// Tokens of its new material.
    pub new_tokens: usize,
}

/// Everything remembered.
#[derive(Debug)]
pub(crate) struct State {
    /// The summaries applied by the last materializing result, restated for
    /// the history that call was given: re-applied when the next history
    /// starts with the same messages (the result was not written back).
    pub covered: Option<Covering>,
    /// The last failed attempt.
    pub failed: Option<FailedAt>,
    /// Identity of the last summary made, and its files.
    pub files: Option<(u64, FileOps)>,
    /// The background slot.
    pub phase: Phase,
    /// Counts background requests, so that a finished task frees only its
    /// own slot.
    pub generation: u64,
    /// The background task, aborted when the strategy is dropped.
    pub task: Option<JoinHandle<()>>,
    /// Whether "no tokio runtime" was reported.
    pub warned_no_runtime: bool,
}

impl Default for State {
    fn default() -> Self {
        State {
            covered: None,
            failed: None,
            files: None,
            phase: Phase::Idle,
            generation: 0,
            task: None,
            warned_no_runtime: false,
        }
    }
}

/// The state, shared with the background task.
pub(crate) type Shared = Arc<Mutex<State>>;

/// Locks the state. A panic elsewhere while it was held leaves nothing
/// half-written that matters (each field is replaced whole), so a poisoned
/// lock is used as it is rather than wedging every later turn.
pub(crate) fn lock(state: &Shared) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}
