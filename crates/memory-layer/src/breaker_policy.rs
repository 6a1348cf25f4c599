//! [`BreakerPolicy`]: when a circuit breaker opens and for how long.

use std::time::Duration;

/// When a [`CircuitBreaker`](crate::CircuitBreaker) opens and how
/// long it stays open: after `failures` failed calls in a row it refuses
/// calls for `cool_down`, then lets one probe call through; each failed
/// probe doubles the cool-down, up to `max_cool_down`; a successful one
/// closes the circuit and resets it.
///
/// ```
/// use std::time::Duration;
/// use memory_layer::BreakerPolicy;
///
/// let policy = BreakerPolicy::new(5, Duration::from_secs(10));
/// assert_eq!(policy.failures, 5);
/// assert_eq!(policy.cool_down_after(0), Duration::from_secs(10));
/// assert_eq!(policy.cool_down_after(2), Duration::from_secs(40));
/// assert_eq!(policy.cool_down_after(30), policy.max_cool_down);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    /// Failed calls in a row that open the circuit (0 is taken as 1).
    pub failures: u32,
    /// How long the circuit first stays open.
    pub cool_down: Duration,
    /// The longest it stays open, however many probes failed.
    pub max_cool_down: Duration,
}

impl Default for BreakerPolicy {
    /// Opens after 3 failures in a row, for 30 s, then up to 10 minutes.
    ///
    /// ```
    /// let p = memory_layer::BreakerPolicy::default();
    /// assert_eq!((p.failures, p.cool_down.as_secs(), p.max_cool_down.as_secs()), (3, 30, 600));
    /// ```
    fn default() -> Self {
        Self::new(3, Duration::from_secs(30))
    }
}

impl BreakerPolicy {
    /// Opens after `failures` failures in a row, for `cool_down` at first,
    /// at most 10 minutes.
    ///
    /// ```
    /// let p = memory_layer::BreakerPolicy::new(1, std::time::Duration::from_millis(50));
    /// assert_eq!(p.max_cool_down.as_secs(), 600);
    /// ```
    pub fn new(failures: u32, cool_down: Duration) -> Self {
        Self {
            failures,
            cool_down,
            max_cool_down: Duration::from_secs(600).max(cool_down),
        }
    }

    /// Stays open at most `max_cool_down`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = memory_layer::BreakerPolicy::default().with_max_cool_down(Duration::from_secs(60));
    /// assert_eq!(p.cool_down_after(5), Duration::from_secs(60));
    /// ```
    pub fn with_max_cool_down(mut self, max_cool_down: Duration) -> Self {
        self.max_cool_down = max_cool_down;
        self
    }

    /// How long the circuit stays open after `failed_probes` probes in a
    /// row failed.
    ///
    /// ```
    /// let p = memory_layer::BreakerPolicy::default();
    /// assert_eq!(p.cool_down_after(1).as_secs(), 60);
    /// ```
    pub fn cool_down_after(&self, failed_probes: u32) -> Duration {
        self.cool_down
            .saturating_mul(2u32.saturating_pow(failed_probes.min(31)))
            .min(self.max_cool_down)
    }
}
