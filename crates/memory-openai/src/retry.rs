//! [`RetryPolicy`]: how often and how long to wait before trying again.

use std::time::Duration;

use memory_core::ProviderError;

/// Retries of retryable failures (network errors, timeouts, 429 and 5xx)
/// with exponential backoff: the `n`-th retry waits `base_delay · 2ⁿ⁻¹`, at
/// most `max_delay`, or what the server asked for with `Retry-After` (also
/// at most `max_delay`).
///
/// ```
/// use std::time::Duration;
/// use memory_openai::RetryPolicy;
///
/// let policy = RetryPolicy::new(3, Duration::from_millis(500));
/// assert_eq!(policy.max_retries, 3);
/// assert_eq!(policy.delay(1, None), Duration::from_millis(500));
/// assert_eq!(policy.delay(3, None), Duration::from_millis(2_000));
/// assert_eq!(policy.delay(1, Some(Duration::from_secs(2))), Duration::from_secs(2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: no retry).
    pub max_retries: u32,
    /// Wait before the first retry.
    pub base_delay: Duration,
    /// Longest wait between two attempts, whatever the server asks.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// Three retries, from 500 ms, waiting at most 30 s.
    ///
    /// ```
    /// assert_eq!(memory_openai::RetryPolicy::default().max_retries, 3);
    /// ```
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// `max_retries` retries from `base_delay`, waiting at most 30 s.
    ///
    /// ```
    /// let p = memory_openai::RetryPolicy::new(1, std::time::Duration::from_millis(10));
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
    /// assert_eq!(memory_openai::RetryPolicy::none().max_retries, 0);
    /// ```
    pub fn none() -> Self {
        Self::new(0, Duration::ZERO)
    }

    /// The wait before retry number `retry` (from 1), given what the server
    /// asked for.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = memory_openai::RetryPolicy { max_retries: 9, base_delay: Duration::from_secs(1), max_delay: Duration::from_secs(5) };
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

    /// Whether `error`, on attempt `attempt` (from 1), is to be retried.
    ///
    /// ```
    /// use memory_core::ProviderError;
    /// let p = memory_openai::RetryPolicy::default();
    /// assert!(p.should_retry(&ProviderError::Timeout(10), 1));
    /// assert!(!p.should_retry(&ProviderError::Timeout(10), 4));
    /// assert!(!p.should_retry(&ProviderError::Authentication("no".into()), 1));
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
/// use memory_openai::parse_retry_after;
/// assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
/// assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
/// assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
/// ```
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    if seconds.is_finite() && seconds >= 0.0 {
        Duration::try_from_secs_f64(seconds).ok()
    } else {
        None
    }
}
