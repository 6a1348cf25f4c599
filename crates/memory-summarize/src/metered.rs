//! [`MeteredProvider`]: what a summarizer costs, counted.

use std::sync::atomic::{AtomicU64, Ordering};

use memory_core::{CharTokenCounter, ChatRequest, ChatResponse, Provider, ProviderError};

/// Calls and tokens counted by a [`MeteredProvider`] up to one moment.
///
/// ```
/// use memory_summarize::ProviderStats;
/// let before = ProviderStats { calls: 2, failures: 0, input_tokens: 900, output_tokens: 80 };
/// let after = ProviderStats { calls: 3, failures: 1, input_tokens: 900, output_tokens: 80 };
/// assert_eq!(after.since(before).calls, 1);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ProviderStats {
    /// Calls made, failed ones included.
    pub calls: u64,
    /// Calls that returned an error.
    pub failures: u64,
    /// Input tokens of the calls that returned a reply.
    pub input_tokens: u64,
    /// Output tokens of the calls that returned a reply.
    pub output_tokens: u64,
}

impl ProviderStats {
    /// What was counted between `earlier` and `self`.
    ///
    /// ```
    /// use memory_summarize::ProviderStats;
    /// let s = ProviderStats { calls: 1, failures: 0, input_tokens: 10, output_tokens: 2 };
    /// assert_eq!(s.since(ProviderStats::default()), s);
    /// ```
    pub fn since(self, earlier: ProviderStats) -> ProviderStats {
        ProviderStats {
            calls: self.calls.saturating_sub(earlier.calls),
            failures: self.failures.saturating_sub(earlier.failures),
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
        }
    }
}

/// A [`Provider`] that counts the calls made through it and the tokens they
/// used, as the provider reported them in [`Usage`](memory_core::Usage).
///
/// Where a reply reports zero input tokens (a provider that does not say),
/// the request's text is estimated with [`CharTokenCounter`]; likewise zero
/// output tokens for a reply with text. Share it with an `Arc` to read the
/// counts while a strategy holds it.
///
/// ```
/// use std::sync::Arc;
/// use memory_core::{Memory, Message};
/// use memory_summarize::{ExtractiveSummarizer, MeteredProvider, SummarizeStrategy};
/// use memory_window::WindowMemory;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let metered = Arc::new(MeteredProvider::new(ExtractiveSummarizer::new()));
/// let mut memory = WindowMemory::new(80)
///     .with_strategy(SummarizeStrategy::new(metered.clone()).with_summary_max_tokens(40));
/// for i in 1..=8 {
///     memory.record(Message::user(format!("Step {i}: edit src/mod_{i}.rs"))).await.unwrap();
///     memory.record(Message::assistant(format!("Edited src/mod_{i}.rs"))).await.unwrap();
/// }
/// memory.context().await.unwrap();
/// let stats = metered.snapshot();
/// assert_eq!(stats.calls, 1);
/// assert!(stats.input_tokens > 0 && stats.output_tokens > 0);
/// # });
/// ```
#[derive(Debug, Default)]
pub struct MeteredProvider<P> {
    inner: P,
    calls: AtomicU64,
    failures: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
}

impl<P> MeteredProvider<P> {
    /// Counts the calls made to `inner`.
    ///
    /// ```
    /// let metered = memory_summarize::MeteredProvider::new(memory_core::FakeProvider::default());
    /// assert_eq!(metered.snapshot().calls, 0);
    /// ```
    pub fn new(inner: P) -> Self {
        Self {
            inner,
            calls: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            input_tokens: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
        }
    }

    /// The counts so far.
    ///
    /// ```
    /// use memory_summarize::{MeteredProvider, ProviderStats};
    /// let metered = MeteredProvider::new(memory_summarize::ExtractiveSummarizer::new());
    /// assert_eq!(metered.snapshot(), ProviderStats::default());
    /// ```
    pub fn snapshot(&self) -> ProviderStats {
        ProviderStats {
            calls: self.calls.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            input_tokens: self.input_tokens.load(Ordering::Relaxed),
            output_tokens: self.output_tokens.load(Ordering::Relaxed),
        }
    }

    /// The wrapped provider.
    ///
    /// ```
    /// let metered = memory_summarize::MeteredProvider::new(memory_core::FakeProvider::default());
    /// assert!(metered.inner().requests().is_empty());
    /// ```
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for MeteredProvider<P> {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let input_estimate: u64 = request
            .messages
            .iter()
            .map(|m| CharTokenCounter::estimate(&m.text()) as u64)
            .sum();
        match self.inner.chat(request).await {
            Ok(reply) => {
                let input = match reply.usage.input_tokens {
                    0 => input_estimate,
                    n => n,
                };
                let output = match reply.usage.output_tokens {
                    0 => CharTokenCounter::estimate(&reply.message.text()) as u64,
                    n => n,
                };
                self.input_tokens.fetch_add(input, Ordering::Relaxed);
                self.output_tokens.fetch_add(output, Ordering::Relaxed);
                Ok(reply)
            }
            Err(error) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{FakeReply, Message, StopReason, Usage};

    #[tokio::test]
    async fn counts_calls_failures_and_reported_or_estimated_tokens() {
        let reported = ChatResponse {
            message: Message::assistant("ok"),
            usage: Usage {
                input_tokens: 1000,
                output_tokens: 30,
            },
            stop_reason: StopReason::Stop,
        };
        let metered = MeteredProvider::new(memory_core::FakeProvider::new([
            FakeReply::Response(reported),
            FakeReply::Error(ProviderError::Timeout(10)),
            FakeReply::Text("twelve chars".into()),
        ]));
        let request = || ChatRequest::new(vec![Message::user("abcdefgh")]);
        metered.chat(request()).await.unwrap();
        let after_first = metered.snapshot();
        metered.chat(request()).await.unwrap_err();
        metered.chat(request()).await.unwrap();
        let stats = metered.snapshot();
        assert_eq!(stats.calls, 3);
        assert_eq!(stats.failures, 1);
        // 1000 reported + 2 estimated ("abcdefgh"); 30 reported + 3 ("twelve chars").
        assert_eq!(stats.input_tokens, 1002);
        assert_eq!(stats.output_tokens, 33);
        assert_eq!(
            stats.since(after_first),
            ProviderStats {
                calls: 2,
                failures: 1,
                input_tokens: 2,
                output_tokens: 3
            }
        );
    }
}
