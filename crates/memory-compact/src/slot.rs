//! The background slot: at most one summary request in flight, and the
//! summary it made until it is spliced.
//!
//! A [`Claim`] on the slot travels with the request's task; however the task
//! ends without filling it (a failure, a timeout, a panic, being dropped or
//! aborted), dropping the claim frees the slot.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::task::JoinHandle;

use crate::CompactCost;
use crate::covering::Covering;

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

/// What the slot held when a turn looked.
#[derive(Debug)]
pub(crate) enum Taken {
    /// A summary, now out of the slot.
    Ready(Box<Ready>),
    /// A request is running.
    InFlight,
    /// Nothing.
    Idle,
}

#[derive(Debug)]
enum Phase {
    Idle,
    /// The request of this generation is running.
    InFlight(u64),
    Ready(Box<Ready>),
}

#[derive(Debug)]
struct Inner {
    phase: Phase,
    /// Counts requests, so that a finished task frees only its own slot.
    generation: u64,
    /// The running task, aborted when the strategy is dropped.
    task: Option<JoinHandle<()>>,
    /// Whether "no tokio runtime" was reported.
    warned_no_runtime: bool,
}

/// The slot, shared with the background task.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    inner: Arc<Mutex<Inner>>,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            inner: Arc::new(Mutex::new(Inner {
                phase: Phase::Idle,
                generation: 0,
                task: None,
                warned_no_runtime: false,
            })),
        }
    }
}

impl Slot {
    /// A poisoned lock is used as it is: each field is replaced whole.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the summary stands.
    pub fn status(&self) -> BackgroundStatus {
        match self.lock().phase {
            Phase::Idle => BackgroundStatus::Idle,
            Phase::InFlight(_) => BackgroundStatus::InFlight,
            Phase::Ready(_) => BackgroundStatus::Ready,
        }
    }

    /// Whether nothing is running or waiting.
    pub fn is_idle(&self) -> bool {
        matches!(self.lock().phase, Phase::Idle)
    }

    /// Takes a ready summary out of the slot, or says what is there.
    pub fn take(&self) -> Taken {
        let mut inner = self.lock();
        match std::mem::replace(&mut inner.phase, Phase::Idle) {
            Phase::Ready(ready) => Taken::Ready(ready),
            other => {
                let taken = match other {
                    Phase::InFlight(_) => Taken::InFlight,
                    _ => Taken::Idle,
                };
                inner.phase = other;
                taken
            }
        }
    }

    /// Claims the slot for a new request, when it is idle.
    pub fn claim(&self) -> Option<Claim> {
        let mut inner = self.lock();
        if !matches!(inner.phase, Phase::Idle) {
            return None;
        }
        inner.generation += 1;
        inner.phase = Phase::InFlight(inner.generation);
        Some(Claim {
            slot: self.clone(),
            generation: inner.generation,
        })
    }

    /// Keeps the task of the request in flight, to abort it with
    /// [`abort`](Self::abort).
    pub fn hold(&self, task: JoinHandle<()>) {
        self.lock().task = Some(task);
    }

    /// Aborts the task in flight, if any: nothing keeps paying for a summary
    /// no one will read.
    pub fn abort(&self) {
        if let Some(task) = self.lock().task.take() {
            task.abort();
        }
    }

    /// Whether "no tokio runtime" is yet to be reported: true once.
    pub fn first_without_runtime(&self) -> bool {
        let mut inner = self.lock();
        !std::mem::replace(&mut inner.warned_no_runtime, true)
    }
}

/// The right of one request to fill the slot.
#[derive(Debug)]
pub(crate) struct Claim {
    slot: Slot,
    generation: u64,
}

impl Claim {
    /// Puts `ready` in the slot, unless the slot has moved on.
    pub fn fill(self, ready: Ready) {
        let mut inner = self.slot.lock();
        if matches!(inner.phase, Phase::InFlight(g) if g == self.generation) {
            inner.phase = Phase::Ready(Box::new(ready));
        }
    }
}

impl Drop for Claim {
    /// Frees the slot when the request ends without filling it.
    fn drop(&mut self) {
        let mut inner = self.slot.lock();
        if matches!(inner.phase, Phase::InFlight(g) if g == self.generation) {
            inner.phase = Phase::Idle;
        }
    }
}

#[cfg(test)]
mod tests {
    use memory_core::{History, Message, summary};

    use super::*;
    use crate::FileOps;

    fn ready() -> Ready {
        let messages = [Message::user("u")];
        let history = History::new(&messages, &[1]).unwrap();
        Ready {
            covering: Covering::new(
                &history,
                std::iter::once(0..1).collect(),
                summary::message("s"),
                FileOps::new(),
            ),
            cost: CompactCost::default(),
            from_hook: false,
        }
    }

    #[test]
    fn one_claim_at_a_time_freed_when_dropped_unfilled() {
        let slot = Slot::default();
        let claim = slot.claim().unwrap();
        assert_eq!(slot.status(), BackgroundStatus::InFlight);
        assert!(slot.claim().is_none());
        assert!(matches!(slot.take(), Taken::InFlight));
        drop(claim);
        assert!(slot.is_idle());
    }

    #[test]
    fn a_filled_claim_is_taken_once() {
        let slot = Slot::default();
        slot.claim().unwrap().fill(ready());
        assert_eq!(slot.status(), BackgroundStatus::Ready);
        assert!(matches!(slot.take(), Taken::Ready(_)));
        assert!(matches!(slot.take(), Taken::Idle));
        assert!(slot.first_without_runtime());
        assert!(!slot.first_without_runtime());
    }
}
