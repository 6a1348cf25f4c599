//! [`EmbedderExt`]: the layers that fit an [`Embedder`] as its methods.

use std::time::Duration;

use crate::{Retry, RetryPolicy, Timeout};
use memory_core::Embedder;

/// Wraps any [`Embedder`] in the [`Retry`] or [`Timeout`] layer, as
/// [`ProviderExt`](crate::ProviderExt) wraps a provider; the first
/// one called is the innermost. Put a
/// [`CachedEmbedder`](crate::CachedEmbedder) over them, so that a retry
/// resends one batch.
///
/// ```
/// use std::time::Duration;
/// use memory_layer::{EmbedderExt, RetryPolicy};
/// use memory_core::FakeEmbedder;
/// use memory_layer::CachedEmbedder;
///
/// // Each request limited to 30 s, failed ones retried, vectors cached.
/// let embedder = CachedEmbedder::new(
///     FakeEmbedder::new(384)
///         .with_timeout(Duration::from_secs(30))
///         .with_retry(RetryPolicy::default()),
/// );
/// assert!(embedder.is_empty());
/// ```
pub trait EmbedderExt: Embedder + Sized {
    /// Retries failed calls as `policy` says: see [`Retry`].
    ///
    /// ```
    /// use memory_layer::{EmbedderExt, RetryPolicy};
    /// let e = memory_core::FakeEmbedder::new(8).with_retry(RetryPolicy::default());
    /// assert_eq!(e.policy().max_retries, 3);
    /// ```
    fn with_retry(self, policy: RetryPolicy) -> Retry<Self> {
        Retry::new(self, policy)
    }

    /// Limits each call to `limit`: see [`Timeout`].
    ///
    /// ```
    /// use memory_layer::EmbedderExt;
    /// let e = memory_core::FakeEmbedder::new(8).with_timeout(std::time::Duration::from_secs(30));
    /// assert_eq!(e.limit().as_secs(), 30);
    /// ```
    fn with_timeout(self, limit: Duration) -> Timeout<Self> {
        Timeout::new(self, limit)
    }
}

impl<E: Embedder> EmbedderExt for E {}
