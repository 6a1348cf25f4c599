//! [`RetryBudget`]: retries as a share of recent calls, so that a backend
//! that fails every call is not sent a multiple of the traffic.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Within any `window`, a [`Retry`](crate::Retry) layer makes at most
/// `min_retries` retries plus `ratio` of the calls it was given in that
/// window. Retries of calls that are few and far between stay possible
/// (`min_retries`); when every call fails, the retries stop growing with
/// the traffic.
///
/// ```
/// use std::time::Duration;
/// use memory_layer::RetryBudget;
///
/// let budget = RetryBudget::new(Duration::from_secs(60), 2, 0.5);
/// // 10 calls in the window: 2 + 5 retries allowed.
/// assert!(budget.allows(10, 6));
/// assert!(!budget.allows(10, 7));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBudget {
    /// How far back calls and retries are counted.
    pub window: Duration,
    /// Retries allowed in any window, whatever the traffic.
    pub min_retries: u32,
    /// Retries allowed per call in the window, on top of `min_retries`
    /// (0.2: one retry for every five calls). A value that is not a
    /// positive number counts as 0.
    pub ratio: f32,
}

impl Default for RetryBudget {
    /// Five retries a minute, plus one for every five calls.
    ///
    /// ```
    /// let b = memory_layer::RetryBudget::default();
    /// assert_eq!((b.window.as_secs(), b.min_retries, b.ratio), (60, 5, 0.2));
    /// ```
    fn default() -> Self {
        Self::new(Duration::from_secs(60), 5, 0.2)
    }
}

impl RetryBudget {
    /// `min_retries` plus `ratio` of the calls, per `window`.
    ///
    /// ```
    /// let b = memory_layer::RetryBudget::new(std::time::Duration::from_secs(10), 1, 0.0);
    /// assert!(b.allows(100, 0));
    /// assert!(!b.allows(100, 1));
    /// ```
    pub fn new(window: Duration, min_retries: u32, ratio: f32) -> Self {
        Self {
            window,
            min_retries,
            ratio,
        }
    }

    /// Whether one more retry is allowed after `calls` calls and `retries`
    /// retries in the current window.
    ///
    /// ```
    /// let b = memory_layer::RetryBudget::default();
    /// assert!(b.allows(0, 4));
    /// assert!(!b.allows(0, 5));
    /// ```
    pub fn allows(&self, calls: usize, retries: usize) -> bool {
        let ratio = if self.ratio.is_finite() && self.ratio > 0.0 {
            f64::from(self.ratio)
        } else {
            0.0
        };
        // Whole retries earned by the calls: truncation is meant.
        let earned = (calls as f64 * ratio) as usize;
        retries < (self.min_retries as usize).saturating_add(earned)
    }
}

/// When the calls and retries of the current window happened.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    calls: VecDeque<Instant>,
    retries: VecDeque<Instant>,
}

impl Ledger {
    /// Books a call.
    pub fn call(&mut self, budget: &RetryBudget, now: Instant) {
        self.forget(budget, now);
        self.calls.push_back(now);
    }

    /// Books a retry if `budget` allows one; whether it did.
    pub fn retry(&mut self, budget: &RetryBudget, now: Instant) -> bool {
        self.forget(budget, now);
        let allowed = budget.allows(self.calls.len(), self.retries.len());
        if allowed {
            self.retries.push_back(now);
        }
        allowed
    }

    /// Drops what happened before the window.
    fn forget(&mut self, budget: &RetryBudget, now: Instant) {
        let Some(start) = now.checked_sub(budget.window) else {
            return;
        };
        for times in [&mut self.calls, &mut self.retries] {
            while times.front().is_some_and(|&t| t < start) {
                times.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_allows_the_minimum_then_a_share_and_forgets_old_calls() {
        let budget = RetryBudget::new(Duration::from_secs(10), 1, 0.5);
        let mut ledger = Ledger::default();
        let t0 = Instant::now();
        ledger.call(&budget, t0);
        assert!(ledger.retry(&budget, t0), "the minimum");
        assert!(!ledger.retry(&budget, t0), "one call earns no whole retry");
        ledger.call(&budget, t0);
        assert!(ledger.retry(&budget, t0), "two calls earn one");
        assert!(!ledger.retry(&budget, t0));
        let later = t0 + Duration::from_secs(11);
        ledger.call(&budget, later);
        assert!(ledger.retry(&budget, later), "the window moved on");
    }

    #[test]
    fn a_ratio_that_is_not_a_positive_number_earns_nothing() {
        for ratio in [f32::NAN, -1.0, 0.0] {
            assert!(!RetryBudget::new(Duration::from_secs(1), 0, ratio).allows(1_000, 0));
        }
    }
}
