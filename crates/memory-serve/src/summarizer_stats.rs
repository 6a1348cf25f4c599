//! [`SummarizerStats`]: what a summarizing stage's model has done, read
//! through a [`StatsSource`] at each scrape of `/metrics`.

use std::sync::Arc;

/// What a summarizing stage's model has done so far, for `/metrics`.
///
/// ```
/// let stats = memory_serve::SummarizerStats { calls: 3, failures: vec![("timeout".into(), 1)] };
/// assert_eq!(stats.failures[0].1, 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummarizerStats {
    /// Requests sent to the summarizer.
    pub calls: u64,
    /// Failed requests, by class name.
    pub failures: Vec<(String, u64)>,
}

/// Reads the summarizer's statistics.
///
/// ```
/// use std::sync::Arc;
/// let source: memory_serve::StatsSource = Arc::new(memory_serve::SummarizerStats::default);
/// assert_eq!(source().calls, 0);
/// ```
pub type StatsSource = Arc<dyn Fn() -> SummarizerStats + Send + Sync>;
