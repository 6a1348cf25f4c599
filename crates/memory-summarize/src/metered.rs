//! [`MeteredProvider`]: what a summarizer costs, counted.

use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use memory_core::{
    CharTokenCounter, ChatRequest, ChatResponse, Provider, ProviderError, Rejection, StopReason,
    accept_reply,
};

/// Calls and tokens counted by a [`MeteredProvider`] up to one moment.
///
/// ```
/// use memory_summarize::ProviderStats;
/// let before = ProviderStats { calls: 2, input_tokens: 900, output_tokens: 80, ..Default::default() };
/// let after = ProviderStats { calls: 3, failures: 1, input_tokens: 900, output_tokens: 80, ..Default::default() };
/// assert_eq!(after.since(before).calls, 1);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ProviderStats {
    /// Calls made, failed ones included.
    pub calls: u64,
    /// Calls that came to nothing usable: an error, a reply that cannot be
    /// a summary, or a call abandoned before it answered (the sum of
    /// `by_class`).
    pub failures: u64,
    /// Those failures, by class.
    pub by_class: FailureCounts,
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
    /// let s = ProviderStats { calls: 1, input_tokens: 10, output_tokens: 2, ..Default::default() };
    /// assert_eq!(s.since(ProviderStats::default()), s);
    /// ```
    pub fn since(self, earlier: ProviderStats) -> ProviderStats {
        ProviderStats {
            calls: self.calls.saturating_sub(earlier.calls),
            failures: self.failures.saturating_sub(earlier.failures),
            by_class: self.by_class.since(earlier.by_class),
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
        }
    }
}

/// Why a summarizer call came to nothing usable.
///
/// ```
/// use memory_core::{ChatResponse, ProviderError, StopReason};
/// use memory_summarize::FailureClass;
///
/// let mut cut = ChatResponse::text("The user asked for");
/// cut.stop_reason = StopReason::Length;
/// assert_eq!(FailureClass::of(&Ok(cut)), Some(FailureClass::Truncated));
/// let overflow = ProviderError::ContextOverflow("8192 tokens".into());
/// assert_eq!(FailureClass::of(&Err(overflow)), Some(FailureClass::ContextOverflow));
/// assert_eq!(FailureClass::of(&Ok(ChatResponse::text("Done."))), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureClass {
    /// The model refused (stop reason `refusal`).
    Refused,
    /// The reply was cut off at its token limit (stop reason `length`).
    Truncated,
    /// No answer in time: the provider timed out, or the caller gave up
    /// waiting and dropped the call.
    Timeout,
    /// The request was larger than the model's context window.
    ContextOverflow,
    /// The server failed (5xx, an error mid-reply) or asked to slow down.
    ServerError,
    /// The endpoint could not be reached.
    Network,
    /// The reply could not be read, or cannot be a summary: not an
    /// assistant message, a request for tools, or no text.
    MalformedReply,
    /// Anything else (authentication, an unclassified error).
    Other,
}

impl FailureClass {
    /// The class of a call's outcome, judged as a summary request; `None`
    /// for a reply that may become a summary.
    ///
    /// ```
    /// use memory_core::ProviderError;
    /// use memory_summarize::FailureClass;
    /// assert_eq!(FailureClass::of(&Err(ProviderError::Timeout(5))), Some(FailureClass::Timeout));
    /// ```
    pub fn of(outcome: &Result<ChatResponse, ProviderError>) -> Option<Self> {
        match outcome {
            Ok(reply) => match accept_reply(reply) {
                Ok(_) => None,
                Err(Rejection::Incomplete(StopReason::Refusal)) => Some(Self::Refused),
                Err(Rejection::Incomplete(StopReason::Length)) => Some(Self::Truncated),
                Err(Rejection::Incomplete(_)) => Some(Self::ServerError),
                Err(_) => Some(Self::MalformedReply),
            },
            Err(error) => Some(match error {
                ProviderError::Timeout(_) => Self::Timeout,
                ProviderError::ContextOverflow(_) => Self::ContextOverflow,
                ProviderError::Server { .. } | ProviderError::RateLimited { .. } => {
                    Self::ServerError
                }
                ProviderError::Network(_) => Self::Network,
                ProviderError::MalformedReply(_) => Self::MalformedReply,
                _ => Self::Other,
            }),
        }
    }

    /// The class's name in reports: `refused`, `truncated`, `timeout`,
    /// `context_overflow`, `server_error`, `network`, `malformed_reply`,
    /// `other`.
    ///
    /// ```
    /// assert_eq!(memory_summarize::FailureClass::ContextOverflow.name(), "context_overflow");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Truncated => "truncated",
            Self::Timeout => "timeout",
            Self::ContextOverflow => "context_overflow",
            Self::ServerError => "server_error",
            Self::Network => "network",
            Self::MalformedReply => "malformed_reply",
            Self::Other => "other",
        }
    }
}

/// Failed calls counted by [`FailureClass`].
///
/// ```
/// use memory_summarize::{FailureClass, FailureCounts};
/// let mut counts = FailureCounts::default();
/// counts.add(FailureClass::Timeout);
/// counts.add(FailureClass::Timeout);
/// counts.add(FailureClass::Refused);
/// assert_eq!((counts.timeout, counts.refused, counts.total()), (2, 1, 3));
/// assert_eq!(counts.to_string(), "1 refused, 2 timeout");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
#[allow(missing_docs)] // one field per FailureClass, named as FailureClass::name
pub struct FailureCounts {
    pub refused: u64,
    pub truncated: u64,
    pub timeout: u64,
    pub context_overflow: u64,
    pub server_error: u64,
    pub network: u64,
    pub malformed_reply: u64,
    pub other: u64,
}

impl FailureCounts {
    /// Counts one failure of `class`.
    ///
    /// ```
    /// let mut c = memory_summarize::FailureCounts::default();
    /// c.add(memory_summarize::FailureClass::Network);
    /// assert_eq!(c.network, 1);
    /// ```
    pub fn add(&mut self, class: FailureClass) {
        *self.slot(class) += 1;
    }

    /// Every class with its count, in a fixed order.
    ///
    /// ```
    /// let c = memory_summarize::FailureCounts::default();
    /// assert_eq!(c.classes().len(), 8);
    /// ```
    pub fn classes(&self) -> [(FailureClass, u64); 8] {
        use FailureClass::*;
        let mut copy = *self;
        [
            Refused,
            Truncated,
            Timeout,
            ContextOverflow,
            ServerError,
            Network,
            MalformedReply,
            Other,
        ]
        .map(|class| (class, *copy.slot(class)))
    }

    /// Whether there are none.
    ///
    /// ```
    /// assert!(memory_summarize::FailureCounts::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// All failures.
    ///
    /// ```
    /// assert_eq!(memory_summarize::FailureCounts::default().total(), 0);
    /// ```
    pub fn total(&self) -> u64 {
        self.classes().iter().map(|(_, n)| n).sum()
    }

    /// What was counted between `earlier` and `self`.
    ///
    /// ```
    /// use memory_summarize::FailureCounts;
    /// let now = FailureCounts { timeout: 3, ..Default::default() };
    /// assert_eq!(now.since(FailureCounts { timeout: 1, ..Default::default() }).timeout, 2);
    /// ```
    pub fn since(self, earlier: FailureCounts) -> FailureCounts {
        let mut out = self;
        for (class, n) in earlier.classes() {
            let slot = out.slot(class);
            *slot = slot.saturating_sub(n);
        }
        out
    }

    /// Adds another count.
    ///
    /// ```
    /// use memory_summarize::FailureCounts;
    /// let mut sum = FailureCounts { refused: 1, ..Default::default() };
    /// sum.merge(FailureCounts { refused: 2, ..Default::default() });
    /// assert_eq!(sum.refused, 3);
    /// ```
    pub fn merge(&mut self, other: FailureCounts) {
        for (class, n) in other.classes() {
            *self.slot(class) += n;
        }
    }

    fn slot(&mut self, class: FailureClass) -> &mut u64 {
        match class {
            FailureClass::Refused => &mut self.refused,
            FailureClass::Truncated => &mut self.truncated,
            FailureClass::Timeout => &mut self.timeout,
            FailureClass::ContextOverflow => &mut self.context_overflow,
            FailureClass::ServerError => &mut self.server_error,
            FailureClass::Network => &mut self.network,
            FailureClass::MalformedReply => &mut self.malformed_reply,
            FailureClass::Other => &mut self.other,
        }
    }
}

impl std::fmt::Display for FailureCounts {
    /// The classes with a count, `2 timeout, 1 refused`; `none` when there
    /// are none.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .classes()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(class, n)| format!("{n} {}", class.name().replace('_', " ")))
            .collect();
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
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
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
    failed: Mutex<Failed>,
}

/// The failures a [`MeteredProvider`] saw.
#[derive(Debug, Default)]
struct Failed {
    by_class: FailureCounts,
    first: Option<(FailureClass, String)>,
}

/// Counts a call as abandoned ([`FailureClass::Timeout`]) when the caller
/// drops it before it answers.
struct InFlight<'a, P> {
    meter: &'a MeteredProvider<P>,
    answered: bool,
}

impl<P> Drop for InFlight<'_, P> {
    fn drop(&mut self) {
        if !self.answered {
            self.meter.fail(
                FailureClass::Timeout,
                "the caller stopped waiting before the summarizer answered".into(),
            );
        }
    }
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
            input_tokens: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            failed: Mutex::default(),
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
        let by_class = self.failed().by_class;
        ProviderStats {
            calls: self.calls.load(Ordering::Relaxed),
            failures: by_class.total(),
            by_class,
            input_tokens: self.input_tokens.load(Ordering::Relaxed),
            output_tokens: self.output_tokens.load(Ordering::Relaxed),
        }
    }

    /// The first failure seen, with its class and what the provider said;
    /// `None` while every call has succeeded.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use memory_core::{ChatRequest, FakeProvider, FakeReply, Provider, ProviderError};
    /// use memory_summarize::{FailureClass, MeteredProvider};
    /// let metered = MeteredProvider::new(FakeProvider::new([
    ///     FakeReply::Error(ProviderError::Server { status: 503, message: "busy".into() }),
    /// ]));
    /// assert!(metered.first_failure().is_none());
    /// metered.chat(ChatRequest::new(vec![])).await.unwrap_err();
    /// let (class, message) = metered.first_failure().unwrap();
    /// assert_eq!(class, FailureClass::ServerError);
    /// assert!(message.contains("503"));
    /// # });
    /// ```
    pub fn first_failure(&self) -> Option<(FailureClass, String)> {
        self.failed().first.clone()
    }

    fn failed(&self) -> std::sync::MutexGuard<'_, Failed> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fail(&self, class: FailureClass, message: String) {
        tracing::warn!(class = class.name(), "summarizer call failed: {message}");
        let mut failed = self.failed();
        failed.by_class.add(class);
        failed.first.get_or_insert((class, message));
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
        let mut in_flight = InFlight {
            meter: self,
            answered: false,
        };
        let outcome = self.inner.chat(request).await;
        in_flight.answered = true;
        if let Ok(reply) = &outcome {
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
        }
        if let Some(class) = FailureClass::of(&outcome) {
            let message = match &outcome {
                Err(error) => error.to_string(),
                Ok(reply) => match accept_reply(reply) {
                    Err(rejection) => rejection.to_string(),
                    Ok(_) => String::new(),
                },
            };
            self.fail(class, message);
        }
        outcome
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
                by_class: FailureCounts {
                    timeout: 1,
                    ..FailureCounts::default()
                },
                input_tokens: 2,
                output_tokens: 3
            }
        );
    }

    #[tokio::test]
    async fn rejected_replies_and_abandoned_calls_are_failures_by_class() {
        let refused = ChatResponse {
            message: Message::assistant("I can't help with that."),
            usage: Usage::default(),
            stop_reason: StopReason::Refusal,
        };
        let metered = MeteredProvider::new(memory_core::FakeProvider::new([
            FakeReply::Response(refused),
            FakeReply::Text("   ".into()),
            FakeReply::Error(ProviderError::ContextOverflow("too long".into())),
            FakeReply::Error(ProviderError::Network("refused".into())),
        ]));
        for _ in 0..4 {
            let _ = metered.chat(ChatRequest::new(vec![])).await;
        }
        let stats = metered.snapshot();
        assert_eq!(stats.failures, 4);
        assert_eq!(
            (
                stats.by_class.refused,
                stats.by_class.malformed_reply,
                stats.by_class.context_overflow,
                stats.by_class.network
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(metered.first_failure().unwrap().0, FailureClass::Refused);

        // A call the caller gives up on counts as a timeout.
        struct Slow;
        #[async_trait::async_trait]
        impl Provider for Slow {
            async fn chat(&self, _: ChatRequest) -> Result<ChatResponse, ProviderError> {
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                Ok(ChatResponse::text("late"))
            }
        }
        let slow = MeteredProvider::new(Slow);
        let gave_up = tokio::time::timeout(
            std::time::Duration::from_millis(10),
            slow.chat(ChatRequest::new(vec![])),
        )
        .await;
        assert!(gave_up.is_err());
        assert_eq!(
            (slow.snapshot().calls, slow.snapshot().by_class.timeout),
            (1, 1)
        );
    }
}
