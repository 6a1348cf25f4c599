//! [`Timeout`]: a provider, or an embedder, whose calls may take so long
//! and no longer.

use std::time::Duration;

use memory_core::{ChatRequest, ChatResponse, Embedder, Provider, ProviderError};

/// Wraps a [`Provider`] (or an [`Embedder`]) so that a call taking longer than its limit is
/// abandoned (the inner call is dropped, which closes its connection) and
/// fails with [`ProviderError::Timeout`]. Under a
/// [`Retry`](crate::Retry) layer it limits each attempt; over one,
/// the whole call with its retries.
///
/// The limit uses tokio's timers inside a tokio runtime (it needs them
/// enabled); outside one, calls are not limited. Build it with
/// [`ProviderExt::with_timeout`](crate::ProviderExt::with_timeout).
///
/// ```
/// use std::time::Duration;
/// use memory_layer::ProviderExt;
/// use memory_core::{ChatRequest, ChatResponse, Provider, ProviderError};
///
/// struct Slow;
/// #[async_trait::async_trait]
/// impl Provider for Slow {
///     async fn chat(&self, _: ChatRequest) -> Result<ChatResponse, ProviderError> {
///         tokio::time::sleep(Duration::from_secs(60)).await;
///         Ok(ChatResponse::text("late"))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let provider = Slow.with_timeout(Duration::from_millis(20));
/// let error = provider.chat(ChatRequest::default()).await.unwrap_err();
/// assert_eq!(error, ProviderError::Timeout(20));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Timeout<P> {
    inner: P,
    limit: Duration,
}

impl<P> Timeout<P> {
    /// Limits each call to `inner` to `limit`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = memory_layer::Timeout::new(memory_core::FakeProvider::default(), Duration::from_secs(30));
    /// assert_eq!(t.limit(), Duration::from_secs(30));
    /// ```
    pub fn new(inner: P, limit: Duration) -> Self {
        Self { inner, limit }
    }

    /// The limit of one call.
    ///
    /// ```
    /// use memory_layer::ProviderExt;
    /// let t = memory_core::FakeProvider::default().with_timeout(std::time::Duration::from_secs(5));
    /// assert_eq!(t.limit().as_secs(), 5);
    /// ```
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// The wrapped provider.
    ///
    /// ```
    /// use memory_layer::ProviderExt;
    /// let t = memory_core::FakeProvider::default().with_timeout(std::time::Duration::from_secs(5));
    /// assert!(t.inner().requests().is_empty());
    /// ```
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for Timeout<P> {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.limited(self.inner.chat(request)).await
    }
}

/// Limits an [`Embedder`]'s calls as a provider's are limited.
///
/// ```
/// use std::time::Duration;
/// use memory_layer::EmbedderExt;
/// use memory_core::{Embedder, FakeEmbedder};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let embedder = FakeEmbedder::new(8).with_timeout(Duration::from_secs(5));
/// assert_eq!(embedder.embed(&["quick".into()]).await.unwrap().len(), 1);
/// # });
/// ```
#[async_trait::async_trait]
impl<E: Embedder> Embedder for Timeout<E> {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        self.limited(self.inner.embed(texts)).await
    }
}

impl<P> Timeout<P> {
    /// `call`, abandoned past the limit: what every wrapped contract shares.
    async fn limited<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return call.await;
        }
        match tokio::time::timeout(self.limit, call).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ProviderError::Timeout(
                u64::try_from(self.limit.as_millis()).unwrap_or(u64::MAX),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{FakeProvider, FakeReply};

    #[tokio::test]
    async fn a_call_within_the_limit_passes_through() {
        let fake = FakeProvider::new([FakeReply::Text("quick".into())]);
        let provider = Timeout::new(fake, Duration::from_secs(5));
        let reply = provider.chat(ChatRequest::default()).await.unwrap();
        assert_eq!(reply.message.text(), "quick");
    }

    #[test]
    fn outside_a_runtime_calls_are_not_limited() {
        let fake = FakeProvider::new([FakeReply::Text("ok".into())]);
        let provider = Timeout::new(fake, Duration::ZERO);
        let mut call = std::pin::pin!(provider.chat(ChatRequest::default()));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let std::task::Poll::Ready(reply) = call.as_mut().poll(&mut cx) else {
            panic!("a scripted reply is ready at once");
        };
        assert_eq!(reply.unwrap().message.text(), "ok");
    }
}
