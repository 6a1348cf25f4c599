//! The background summary: at most one summary request in flight, and the
//! summary it made until it is spliced.
//!
//! The [`Permit`] of the request in flight travels with its task; however
//! the task ends without delivering a summary (a failure, a timeout, a
//! panic, being dropped or aborted), dropping the permit makes the
//! background summary idle again.

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

/// What the background summary held when a turn looked.
#[derive(Debug)]
pub(crate) enum Taken {
    /// A summary, now taken out.
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
    /// Counts requests, so that a finished task idles the background
    /// summary only while its own request is the one in flight.
    generation: u64,
    /// The running task, aborted when the strategy is dropped.
    task: Option<JoinHandle<()>>,
    /// Whether "no tokio runtime" was reported.
    warned_no_runtime: bool,
}

/// The background summary, shared with the background task.
#[derive(Debug, Clone)]
pub(crate) struct BackgroundSummary {
    inner: Arc<Mutex<Inner>>,
}

impl Default for BackgroundSummary {
    fn default() -> Self {
        BackgroundSummary {
            inner: Arc::new(Mutex::new(Inner {
                phase: Phase::Idle,
                generation: 0,
                task: None,
                warned_no_runtime: false,
            })),
        }
    }
}

impl BackgroundSummary {
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

    /// Takes a ready summary out, or says what is there.
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

    /// Puts a new request in flight, when nothing is running or waiting:
    /// the permit it delivers its summary with.
    pub fn start(&self) -> Option<Permit> {
        let mut inner = self.lock();
        if !matches!(inner.phase, Phase::Idle) {
            return None;
        }
        inner.generation += 1;
        inner.phase = Phase::InFlight(inner.generation);
        Some(Permit {
            background: self.clone(),
            generation: inner.generation,
        })
    }

    /// Keeps the task of the request in flight, to abort it with
    /// [`abort`](Self::abort).
    pub fn keep_task(&self, task: JoinHandle<()>) {
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

/// The right of the request in flight to deliver its summary.
#[derive(Debug)]
pub(crate) struct Permit {
    background: BackgroundSummary,
    generation: u64,
}

impl Permit {
    /// Makes `ready` the background summary, unless another request has
    /// been started since.
    pub fn fill(self, ready: Ready) {
        let mut inner = self.background.lock();
        if matches!(inner.phase, Phase::InFlight(g) if g == self.generation) {
            inner.phase = Phase::Ready(Box::new(ready));
        }
    }
}

impl Drop for Permit {
    /// Makes the background summary idle when the request ends without
    /// delivering one.
    fn drop(&mut self) {
        let mut inner = self.background.lock();
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
    fn one_request_at_a_time_idle_again_when_its_permit_is_dropped_unfilled() {
        let background = BackgroundSummary::default();
        let permit = background.start().unwrap();
        assert_eq!(background.status(), BackgroundStatus::InFlight);
        assert!(background.start().is_none());
        assert!(matches!(background.take(), Taken::InFlight));
        drop(permit);
        assert!(background.is_idle());
    }

    #[test]
    fn a_filled_permit_is_taken_once() {
        let background = BackgroundSummary::default();
        background.start().unwrap().fill(ready());
        assert_eq!(background.status(), BackgroundStatus::Ready);
        assert!(matches!(background.take(), Taken::Ready(_)));
        assert!(matches!(background.take(), Taken::Idle));
        assert!(background.first_without_runtime());
        assert!(!background.first_without_runtime());
    }
}
