//! [`CompactTally`]: how many summaries `compact` stages started and how
//! many landed, so a replay can say when background work never did.

use std::sync::atomic::{AtomicU64, Ordering};

use memory_compact::{CompactEvent, CompactObserver};

/// Counts of a [`CompactTally`] up to one moment.
///
/// ```
/// use memory_cli::tally::Compactions;
/// let before = Compactions { started: 1, ..Default::default() };
/// let after = Compactions { started: 3, background_started: 2, landed: 1 };
/// assert_eq!(after.since(before), Compactions { started: 2, background_started: 2, landed: 1 });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compactions {
    /// Summaries started (foreground and background).
    pub started: u64,
    /// Of those, the ones started in the background.
    pub background_started: u64,
    /// Summaries that replaced older history.
    pub landed: u64,
}

impl Compactions {
    /// What was counted between `earlier` and `self`.
    ///
    /// ```
    /// let c = memory_cli::tally::Compactions { landed: 2, ..Default::default() };
    /// assert_eq!(c.since(c).landed, 0);
    /// ```
    pub fn since(self, earlier: Compactions) -> Compactions {
        Compactions {
            started: self.started.saturating_sub(earlier.started),
            background_started: self
                .background_started
                .saturating_sub(earlier.background_started),
            landed: self.landed.saturating_sub(earlier.landed),
        }
    }
}

/// A [`CompactObserver`] that counts summaries started and landed.
///
/// ```
/// use memory_cli::tally::CompactTally;
/// use memory_compact::{CompactEvent, CompactObserver};
/// let tally = CompactTally::default();
/// tally.on_event(&CompactEvent::Started {
///     tokens_before: 900, messages: 12, tokens: 700, split: false, background: true,
/// });
/// assert_eq!((tally.snapshot().started, tally.snapshot().background_started), (1, 1));
/// assert_eq!(tally.snapshot().landed, 0);
/// ```
#[derive(Debug, Default)]
pub struct CompactTally {
    started: AtomicU64,
    background_started: AtomicU64,
    landed: AtomicU64,
}

impl CompactTally {
    /// The counts so far.
    ///
    /// ```
    /// assert_eq!(memory_cli::tally::CompactTally::default().snapshot().started, 0);
    /// ```
    pub fn snapshot(&self) -> Compactions {
        Compactions {
            started: self.started.load(Ordering::Relaxed),
            background_started: self.background_started.load(Ordering::Relaxed),
            landed: self.landed.load(Ordering::Relaxed),
        }
    }
}

impl CompactObserver for CompactTally {
    fn on_event(&self, event: &CompactEvent) {
        match event {
            CompactEvent::Started { background, .. } => {
                self.started.fetch_add(1, Ordering::Relaxed);
                if *background {
                    self.background_started.fetch_add(1, Ordering::Relaxed);
                }
            }
            CompactEvent::Completed { .. } => {
                self.landed.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}
