//! [`RetryPolicy`]: which failures are tried again, how often, and how long
//! to wait before each retry.

use std::time::Duration;

use crate::RetryBudget;
use memory_core::ProviderError;

/// Retries of retryable failures ([`ProviderError::is_retryable`]: network
/// errors, timeouts, rate limits, server errors) with exponential backoff:
/// the `n`-th retry waits `base_delay · 2ⁿ⁻¹`, or what the server asked for
/// with `Retry-After` ([`ProviderError::retry_after`]), at most `max_delay`
/// either way. A [`RetryBudget`], when set, bounds retries to a share of
/// recent calls, so that a dead backend is not hammered.
///
/// ```
/// use std::time::Duration;
/// use memory_layer::RetryPolicy;
///
/// let policy = RetryPolicy::new(3, Duration::from_millis(500));
/// assert_eq!(policy.max_retries, 3);
/// assert_eq!(policy.delay(1, None), Duration::from_millis(500));
/// assert_eq!(policy.delay(3, None), Duration::from_millis(2_000));
/// assert_eq!(policy.delay(1, Some(Duration::from_secs(2))), Duration::from_secs(2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: no retry).
    pub max_retries: u32,
    /// Wait before the first retry.
    pub base_delay: Duration,
    /// Longest wait between two attempts, whatever the server asks.
    pub max_delay: Duration,
    /// Retries allowed as a share of recent calls; `None` for no bound but
    /// `max_retries`.
    pub budget: Option<RetryBudget>,
}

impl Default for RetryPolicy {
    /// Three retries, from 500 ms, waiting at most 30 s, within the default
    /// [`RetryBudget`].
    ///
    /// ```
    /// let policy = memory_layer::RetryPolicy::default();
    /// assert_eq!(policy.max_retries, 3);
    /// assert!(policy.budget.is_some());
    /// ```
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            budget: Some(RetryBudget::default()),
        }
    }
}

impl RetryPolicy {
    /// `max_retries` retries from `base_delay`, waiting at most 30 s, within
    /// the default [`RetryBudget`].
    ///
    /// ```
    /// let p = memory_layer::RetryPolicy::new(1, std::time::Duration::from_millis(10));
    /// assert_eq!(p.max_delay, std::time::Duration::from_secs(30));
    /// ```
    pub fn new(max_retries: u32, base_delay: Duration) -> Self {
        Self {
            max_retries,
            base_delay,
            ..Self::default()
        }
    }

    /// No retries at all.
    ///
    /// ```
    /// assert_eq!(memory_layer::RetryPolicy::none().max_retries, 0);
    /// ```
    pub fn none() -> Self {
        Self::new(0, Duration::ZERO)
    }

    /// Waits at most `max_delay` between two attempts.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = memory_layer::RetryPolicy::default().with_max_delay(Duration::from_secs(5));
    /// assert_eq!(p.delay(1, Some(Duration::from_secs(60))), Duration::from_secs(5));
    /// ```
    pub fn with_max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// Bounds retries with `budget`; `None` leaves only `max_retries`.
    ///
    /// ```
    /// let p = memory_layer::RetryPolicy::default().with_budget(None);
    /// assert!(p.budget.is_none());
    /// ```
    pub fn with_budget(mut self, budget: impl Into<Option<RetryBudget>>) -> Self {
        self.budget = budget.into();
        self
    }

    /// The wait before retry number `retry` (from 1), given what the server
    /// asked for.
    ///
    /// ```
    /// use std::time::Duration;
    /// use memory_layer::RetryPolicy;
    /// let p = RetryPolicy::new(9, Duration::from_secs(1)).with_max_delay(Duration::from_secs(5));
    /// assert_eq!(p.delay(8, None), Duration::from_secs(5));
    /// assert_eq!(p.delay(1, Some(Duration::from_secs(60))), Duration::from_secs(5));
    /// ```
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let wait = retry_after.unwrap_or_else(|| {
            let factor = 2u32.saturating_pow(retry.saturating_sub(1));
            self.base_delay.saturating_mul(factor)
        });
        wait.min(self.max_delay)
    }

    /// Whether `error`, on attempt `attempt` (from 1), is to be retried
    /// (the budget aside).
    ///
    /// ```
    /// use memory_core::ProviderError;
    /// let p = memory_layer::RetryPolicy::default();
    /// assert!(p.should_retry(&ProviderError::Timeout(10), 1));
    /// assert!(!p.should_retry(&ProviderError::Timeout(10), 4));
    /// assert!(!p.should_retry(&ProviderError::Authentication("no".into()), 1));
    /// assert!(!p.should_retry(&ProviderError::ContextOverflow("too long".into()), 1));
    /// ```
    pub fn should_retry(&self, error: &ProviderError, attempt: u32) -> bool {
        attempt <= self.max_retries && error.is_retryable()
    }
}

/// What the server asked to wait, from a `Retry-After` header in seconds
/// (an HTTP date is not honoured: the backoff applies then).
///
/// ```
/// use std::time::Duration;
/// use memory_layer::parse_retry_after;
/// assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
/// assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
/// assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
/// assert_eq!(parse_retry_after("-1"), None);
/// ```
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    if seconds.is_finite() && seconds >= 0.0 {
        Duration::try_from_secs_f64(seconds).ok()
    } else {
        None
    }
}
