//! [`Retry`]: a provider, or an embedder, whose retryable failures are
//! tried again.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::RetryPolicy;
use crate::retry_budget::Ledger;
use memory_core::{ChatRequest, ChatResponse, Embedder, Provider, ProviderError};

/// Wraps a [`Provider`] (or an [`Embedder`]) so that a failed call is tried again as its
/// [`RetryPolicy`] says: only retryable failures
/// ([`ProviderError::is_retryable`]), at most `max_retries` times, after
/// the backoff or the server's `Retry-After`, and within the policy's
/// [`RetryBudget`](crate::RetryBudget) (the budget is this
/// wrapper's: clones of a policy used by two wrappers do not share it). A
/// reply, whatever it says, is never retried.
///
/// The waits use tokio's timers inside a tokio runtime (it needs them
/// enabled); outside one, retries follow at once. Build it with
/// [`ProviderExt::with_retry`](crate::ProviderExt::with_retry).
///
/// ```
/// use memory_layer::{ProviderExt, RetryPolicy};
/// use memory_core::{ChatRequest, FakeProvider, FakeReply, Provider, ProviderError};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let flaky = FakeProvider::new([
///     FakeReply::Error(ProviderError::Network("connection reset".into())),
///     FakeReply::Text("Summary.".into()),
/// ]);
/// let provider = flaky.with_retry(RetryPolicy::new(2, std::time::Duration::from_millis(1)));
/// let reply = provider.chat(ChatRequest::default()).await.unwrap();
/// assert_eq!(reply.message.text(), "Summary.");
/// assert_eq!(provider.inner().requests().len(), 2);
/// # });
/// ```
#[derive(Debug)]
pub struct Retry<P> {
    inner: P,
    policy: RetryPolicy,
    ledger: Mutex<Ledger>,
}

impl<P> Retry<P> {
    /// Retries the calls to `inner` as `policy` says.
    ///
    /// ```
    /// use memory_layer::{Retry, RetryPolicy};
    /// let retry = Retry::new(memory_core::FakeProvider::default(), RetryPolicy::none());
    /// assert_eq!(retry.policy().max_retries, 0);
    /// ```
    pub fn new(inner: P, policy: RetryPolicy) -> Self {
        Self {
            inner,
            policy,
            ledger: Mutex::default(),
        }
    }

    /// The policy in force.
    ///
    /// ```
    /// use memory_layer::{ProviderExt, RetryPolicy};
    /// let retry = memory_core::FakeProvider::default().with_retry(RetryPolicy::default());
    /// assert_eq!(retry.policy().max_retries, 3);
    /// ```
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// The wrapped provider.
    ///
    /// ```
    /// use memory_layer::{ProviderExt, RetryPolicy};
    /// let retry = memory_core::FakeProvider::default().with_retry(RetryPolicy::none());
    /// assert!(retry.inner().requests().is_empty());
    /// ```
    pub fn inner(&self) -> &P {
        &self.inner
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the budget lets one more retry go.
    fn budget_allows_retry(&self) -> bool {
        match &self.policy.budget {
            Some(budget) => self.ledger().retry(budget, Instant::now()),
            None => true,
        }
    }

    /// The wait before retry `retry` after `error`, or `None` when `error`
    /// is not to be retried.
    fn next_wait(&self, error: &ProviderError, retry: u32) -> Option<Duration> {
        if !self.policy.should_retry(error, retry) {
            return None;
        }
        if !self.budget_allows_retry() {
            tracing::warn!(
                %error,
                "the retry budget is spent: too many calls failed recently; not retrying"
            );
            return None;
        }
        Some(self.policy.delay(retry, error.retry_after()))
    }

    /// Makes `attempt` until it succeeds or the policy gives up: the loop
    /// every wrapped contract shares.
    async fn call<T, F, Fut>(&self, mut attempt: F) -> Result<T, ProviderError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ProviderError>>,
    {
        if let Some(budget) = &self.policy.budget {
            self.ledger().call(budget, Instant::now());
        }
        let timers = tokio::runtime::Handle::try_current().is_ok();
        let mut retry = 1;
        loop {
            let error = match attempt().await {
                Ok(reply) => return Ok(reply),
                Err(error) => error,
            };
            let Some(delay) = self.next_wait(&error, retry) else {
                return Err(error);
            };
            tracing::info!(
                retry,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                %error,
                "model call failed; retrying"
            );
            if timers && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            retry += 1;
        }
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for Retry<P> {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.call(|| self.inner.chat(request.clone())).await
    }
}

/// Retries an [`Embedder`]'s failed calls as a provider's are retried.
///
/// ```
/// use memory_layer::{EmbedderExt, RetryPolicy};
/// use memory_core::{Embedder, FakeEmbedder, ProviderError};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let flaky = FakeEmbedder::new(8);
/// flaky.fail_after(0, ProviderError::Network("connection reset".into()));
/// let embedder = flaky.with_retry(RetryPolicy::new(2, std::time::Duration::from_millis(1)));
/// let vectors = embedder.embed(&["a text".into()]).await.unwrap();
/// assert_eq!(vectors[0], embedder.inner().vector("a text"));
/// assert_eq!(embedder.inner().requests().len(), 2);
/// # });
/// ```
#[async_trait::async_trait]
impl<E: Embedder> Embedder for Retry<E> {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        self.call(|| self.inner.embed(texts)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RetryBudget;
    use memory_core::{FakeProvider, FakeReply};

    fn failing(n: usize) -> FakeProvider {
        FakeProvider::new((0..n).map(|_| FakeReply::Error(ProviderError::Network("down".into()))))
    }

    #[tokio::test]
    async fn only_retryable_failures_are_retried_up_to_the_limit() {
        let retry = Retry::new(failing(10), RetryPolicy::new(2, Duration::ZERO));
        let error = retry.chat(ChatRequest::default()).await.unwrap_err();
        assert!(matches!(error, ProviderError::Network(_)));
        assert_eq!(
            retry.inner().requests().len(),
            3,
            "one attempt, two retries"
        );

        let overflow = FakeProvider::new([
            FakeReply::Error(ProviderError::ContextOverflow("too long".into())),
            FakeReply::Text("unused".into()),
        ]);
        let retry = Retry::new(overflow, RetryPolicy::new(2, Duration::ZERO));
        assert!(retry.chat(ChatRequest::default()).await.is_err());
        assert_eq!(retry.inner().requests().len(), 1);
    }

    #[tokio::test]
    async fn the_budget_stops_retries_when_every_call_fails() {
        let policy = RetryPolicy::new(3, Duration::ZERO).with_budget(RetryBudget::new(
            Duration::from_secs(60),
            2,
            0.0,
        ));
        let retry = Retry::new(failing(100), policy);
        for _ in 0..5 {
            assert!(retry.chat(ChatRequest::default()).await.is_err());
        }
        // Five calls, and only the two retries the budget holds.
        assert_eq!(retry.inner().requests().len(), 7);
    }
}
