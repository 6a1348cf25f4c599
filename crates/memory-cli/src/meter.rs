//! [`Meter`]: counts the model calls stages make, for the report's
//! `summarizer_*` columns.
//!
//! A stage that calls a model gets its [`Provider`] through
//! [`Meter::wrap`]; the replay reads the meter around each `context()` call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memory_core::{ChatRequest, ChatResponse, Provider, ProviderError};

/// Shared counters of calls and tokens; clones count into the same totals.
///
/// ```
/// use memory_cli::Meter;
/// use memory_core::{ChatRequest, FakeProvider, FakeReply, Message, Provider};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let meter = Meter::new();
/// let provider = meter.wrap(std::sync::Arc::new(FakeProvider::new([FakeReply::Text("a summary".into())])));
/// let before = meter.read();
/// provider.chat(ChatRequest::new(vec![Message::user("summarize")])).await.unwrap();
/// assert_eq!(meter.read().since(before).calls, 1);
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct Meter {
    counts: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    calls: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
}

/// The meter's totals at one moment.
///
/// ```
/// let r = memory_cli::meter::Reading { calls: 3, input_tokens: 10, output_tokens: 2 };
/// assert_eq!(r.since(memory_cli::meter::Reading::default()), r);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// Model calls, failed ones included.
    pub calls: u64,
    /// Input tokens the provider reported.
    pub input_tokens: u64,
    /// Output tokens the provider reported.
    pub output_tokens: u64,
}

impl Reading {
    /// What was counted between `earlier` and `self`.
    ///
    /// ```
    /// use memory_cli::meter::Reading;
    /// let a = Reading { calls: 1, input_tokens: 5, output_tokens: 1 };
    /// let b = Reading { calls: 3, input_tokens: 9, output_tokens: 4 };
    /// assert_eq!(b.since(a), Reading { calls: 2, input_tokens: 4, output_tokens: 3 });
    /// ```
    pub fn since(self, earlier: Reading) -> Reading {
        Reading {
            calls: self.calls.saturating_sub(earlier.calls),
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
        }
    }
}

impl Meter {
    /// A meter at zero.
    ///
    /// ```
    /// assert_eq!(memory_cli::Meter::new().read().calls, 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// `provider`, counting every call into this meter.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let p = memory_cli::Meter::new().wrap(Arc::new(memory_core::FakeProvider::new([])));
    /// # let _ = p;
    /// ```
    pub fn wrap(&self, provider: Arc<dyn Provider>) -> Arc<dyn Provider> {
        Arc::new(Metered {
            inner: provider,
            meter: self.clone(),
        })
    }

    /// The totals so far.
    ///
    /// ```
    /// assert_eq!(memory_cli::Meter::new().read(), memory_cli::meter::Reading::default());
    /// ```
    pub fn read(&self) -> Reading {
        Reading {
            calls: self.counts.calls.load(Ordering::Relaxed),
            input_tokens: self.counts.input_tokens.load(Ordering::Relaxed),
            output_tokens: self.counts.output_tokens.load(Ordering::Relaxed),
        }
    }
}

/// A provider that counts into a [`Meter`].
struct Metered {
    inner: Arc<dyn Provider>,
    meter: Meter,
}

#[async_trait::async_trait]
impl Provider for Metered {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let counts = &self.meter.counts;
        counts.calls.fetch_add(1, Ordering::Relaxed);
        let response = self.inner.chat(request).await?;
        counts
            .input_tokens
            .fetch_add(response.usage.input_tokens, Ordering::Relaxed);
        counts
            .output_tokens
            .fetch_add(response.usage.output_tokens, Ordering::Relaxed);
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{FakeProvider, FakeReply, Message, StopReason, Usage};

    #[tokio::test]
    async fn counts_calls_failures_and_reported_usage() {
        let reply = ChatResponse {
            message: Message::assistant("summary"),
            usage: Usage {
                input_tokens: 120,
                output_tokens: 30,
            },
            stop_reason: StopReason::Stop,
        };
        let fake = FakeProvider::new([
            FakeReply::Response(reply),
            FakeReply::Error(ProviderError::Network("down".into())),
        ]);
        let meter = Meter::new();
        let provider = meter.wrap(Arc::new(fake));
        let request = ChatRequest::new(vec![Message::user("go")]);
        assert!(provider.chat(request.clone()).await.is_ok());
        assert!(provider.chat(request).await.is_err());
        assert_eq!(
            meter.clone().read(),
            Reading {
                calls: 2,
                input_tokens: 120,
                output_tokens: 30
            }
        );
    }
}
