//! [`ProviderExt`]: the layers as methods of every [`Provider`], so that a
//! stack reads in one line.

use std::time::Duration;

use crate::{BreakerPolicy, CircuitBreaker, Metered, Retry, RetryPolicy, Timeout};
use memory_core::Provider;

/// Wraps any [`Provider`] in a layer. Each method returns the wrapped
/// provider, itself a `Provider`, so layers stack left to right from the
/// backend outwards: the first one called is the innermost.
///
/// ```
/// use std::time::Duration;
/// use memory_layer::{BreakerPolicy, ProviderExt, RetryPolicy};
/// use memory_core::FakeProvider;
///
/// // Each request counted and limited to 60 s, failed ones retried, and
/// // after repeated failures no calls at all for a while.
/// let summarizer = FakeProvider::default().metered();
/// let meter = summarizer.meter();
/// let summarizer = summarizer
///     .with_timeout(Duration::from_secs(60))
///     .with_retry(RetryPolicy::default())
///     .with_circuit_breaker(BreakerPolicy::default());
/// assert_eq!(meter.snapshot().calls, 0);
/// # let _ = summarizer;
/// ```
pub trait ProviderExt: Provider + Sized {
    /// Retries failed calls as `policy` says: see [`Retry`].
    ///
    /// ```
    /// use memory_layer::{ProviderExt, RetryPolicy};
    /// let p = memory_core::FakeProvider::default().with_retry(RetryPolicy::default());
    /// # let _ = p;
    /// ```
    fn with_retry(self, policy: RetryPolicy) -> Retry<Self> {
        Retry::new(self, policy)
    }

    /// Limits each call to `limit`: see [`Timeout`].
    ///
    /// ```
    /// use memory_layer::ProviderExt;
    /// let p = memory_core::FakeProvider::default().with_timeout(std::time::Duration::from_secs(30));
    /// # let _ = p;
    /// ```
    fn with_timeout(self, limit: Duration) -> Timeout<Self> {
        Timeout::new(self, limit)
    }

    /// Counts calls, tokens and failures: see [`Metered`].
    ///
    /// ```
    /// use memory_layer::ProviderExt;
    /// let p = memory_core::FakeProvider::default().metered();
    /// assert_eq!(p.meter().snapshot().calls, 0);
    /// ```
    fn metered(self) -> Metered<Self> {
        Metered::new(self)
    }

    /// Fails fast while the provider keeps failing: see [`CircuitBreaker`].
    ///
    /// ```
    /// use memory_layer::{BreakerPolicy, ProviderExt};
    /// let p = memory_core::FakeProvider::default().with_circuit_breaker(BreakerPolicy::default());
    /// assert!(!p.is_open());
    /// ```
    fn with_circuit_breaker(self, policy: BreakerPolicy) -> CircuitBreaker<Self> {
        CircuitBreaker::new(self, policy)
    }
}

impl<P: Provider> ProviderExt for P {}
