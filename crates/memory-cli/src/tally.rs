//! [`Compactions`]: how many summaries `compact` stages started and how
//! many landed, as they say in each result's diagnostics, so a replay can
//! say when background work never did.

use memory_compact::CompactEvents;
use memory_core::Diagnostics;

/// Summaries started and landed over some span of a replay.
///
/// ```
/// use memory_cli::tally::Compactions;
/// let c = Compactions::of(&memory_core::Diagnostics::default());
/// assert_eq!(c, Compactions::default());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compactions {
    /// Summaries started, in the foreground or in the background.
    pub started: u64,
    /// Of those, the ones started in the background.
    pub background_started: u64,
    /// Summaries that landed (were accepted and written).
    pub landed: u64,
}

impl Compactions {
    /// What the `compact` stages of one trim reported (their events since
    /// their previous trim).
    ///
    /// ```
    /// use memory_compact::CompactEvents;
    /// let mut d = memory_core::Diagnostics::default();
    /// d.push("compact", CompactEvents::default());
    /// assert_eq!(memory_cli::tally::Compactions::of(&d).started, 0);
    /// ```
    pub fn of(diagnostics: &Diagnostics) -> Compactions {
        diagnostics
            .all::<CompactEvents>()
            .fold(Compactions::default(), |sum, events| Compactions {
                started: sum.started + events.started() as u64,
                background_started: sum.background_started + events.background_started() as u64,
                landed: sum.landed + events.landed() as u64,
            })
    }
}
