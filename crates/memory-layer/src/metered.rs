//! [`Metered`]: a provider whose calls, tokens and failures are counted.

use std::sync::Arc;
use std::time::Instant;

use crate::{CallEvent, CallObserver, FailureClass, Meter};
use memory_core::{CharTokenCounter, ChatRequest, ChatResponse, Provider, ProviderError, Usage};

/// Wraps a [`Provider`] and counts, in a [`Meter`], the calls made through
/// it, the tokens they used as the provider reported them in [`Usage`],
/// and the calls that came to nothing usable, by [`FailureClass`]: how
/// each ended ([`FailureClass::of`]). It does not judge what a reply says:
/// a summarizing strategy that refuses one reports it into the same
/// [`Meter`] ([`Meter::fail`]). A call the caller
/// drops before it answers (a timeout above this layer) counts as a
/// [`FailureClass::Timeout`]; the first failure's message is kept.
///
/// Where a reply reports zero input tokens (a provider that does not say),
/// the request's text is estimated with [`CharTokenCounter`]; likewise zero
/// output tokens for a reply with text. Each call, as it ends, is also
/// reported to the [`CallObserver`] set with
/// [`with_observer`](Self::with_observer).
///
/// Under a [`Retry`](crate::Retry) layer it counts every attempt,
/// that is every request sent; over one, every call made. Build it with
/// [`ProviderExt::metered`](crate::ProviderExt::metered), and keep
/// its [`meter`](Self::meter) to read the counts once the provider is
/// wrapped further or handed to a strategy.
///
/// ```
/// use memory_layer::ProviderExt;
/// use memory_core::{ChatRequest, FakeProvider, FakeReply, Message, Provider, ProviderError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let metered = FakeProvider::new([
///     FakeReply::Text("A summary.".into()),
///     FakeReply::Error(ProviderError::Network("reset".into())),
/// ])
/// .metered();
/// let meter = metered.meter();
/// let request = ChatRequest::new(vec![Message::user("Summarize the session so far.")]);
/// metered.chat(request.clone()).await.unwrap();
/// metered.chat(request).await.unwrap_err();
/// let stats = meter.snapshot();
/// assert_eq!((stats.calls, stats.failures, stats.by_class.network), (2, 1, 1));
/// assert_eq!(stats.input_tokens, 8); // estimated: the fake reports none
/// # });
/// ```
pub struct Metered<P> {
    inner: P,
    meter: Meter,
    observer: Option<Arc<dyn CallObserver>>,
}

impl<P: std::fmt::Debug> std::fmt::Debug for Metered<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metered")
            .field("inner", &self.inner)
            .field("meter", &self.meter.snapshot())
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

/// Counts a call as abandoned ([`FailureClass::Timeout`]) when the caller
/// drops it before it answers.
struct InFlight<'a, P> {
    metered: &'a Metered<P>,
    started: Instant,
    answered: bool,
}

impl<P> Drop for InFlight<'_, P> {
    fn drop(&mut self) {
        if !self.answered {
            let message = "the caller stopped waiting before the model answered".to_string();
            self.metered.end(
                Usage::default(),
                Some((FailureClass::Timeout, message)),
                self.started,
            );
        }
    }
}

impl<P> Metered<P> {
    /// Counts the calls made to `inner`.
    ///
    /// ```
    /// let metered = memory_layer::Metered::new(memory_core::FakeProvider::default());
    /// assert_eq!(metered.meter().snapshot().calls, 0);
    /// ```
    pub fn new(inner: P) -> Self {
        Self {
            inner,
            meter: Meter::default(),
            observer: None,
        }
    }

    /// Reports every call, as it ends, to `observer`.
    ///
    /// ```
    /// use memory_layer::{CallEvent, ProviderExt};
    /// let metered = memory_core::FakeProvider::default()
    ///     .metered()
    ///     .with_observer(|event: &CallEvent| println!("{:?}", event.usage));
    /// # let _ = metered;
    /// ```
    pub fn with_observer(mut self, observer: impl CallObserver + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// A handle on the counts; clones share them.
    ///
    /// ```
    /// use memory_layer::ProviderExt;
    /// let metered = memory_core::FakeProvider::default().metered();
    /// assert_eq!(metered.meter().snapshot(), metered.meter().snapshot());
    /// ```
    pub fn meter(&self) -> Meter {
        self.meter.clone()
    }

    /// The wrapped provider.
    ///
    /// ```
    /// use memory_layer::ProviderExt;
    /// let metered = memory_core::FakeProvider::default().metered();
    /// assert!(metered.inner().requests().is_empty());
    /// ```
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Counts and reports the end of a call.
    fn end(&self, usage: Usage, failure: Option<(FailureClass, String)>, started: Instant) {
        self.meter.usage(usage);
        let class = failure.as_ref().map(|(class, _)| *class);
        if let Some((class, message)) = failure {
            self.meter.fail(class, message);
        }
        if let Some(observer) = &self.observer {
            observer.on_call(&CallEvent {
                usage,
                failure: class,
                elapsed: started.elapsed(),
            });
        }
    }
}

/// The tokens of `outcome`: as reported, or estimated where it says zero.
fn usage_of(outcome: &Result<ChatResponse, ProviderError>, input_estimate: u64) -> Usage {
    let Ok(reply) = outcome else {
        return Usage::default();
    };
    Usage {
        input_tokens: match reply.usage.input_tokens {
            0 => input_estimate,
            n => n,
        },
        output_tokens: match reply.usage.output_tokens {
            0 => CharTokenCounter::estimate(&reply.message.text()) as u64,
            n => n,
        },
    }
}

/// The class of an unusable `outcome`, and what it said.
fn failure_of(outcome: &Result<ChatResponse, ProviderError>) -> Option<(FailureClass, String)> {
    let class = FailureClass::of(outcome)?;
    let message = match outcome {
        Err(error) => error.to_string(),
        Ok(reply) => format!(
            "the reply did not end normally (stop reason {:?})",
            reply.stop_reason
        ),
    };
    Some((class, message))
}

#[async_trait::async_trait]
impl<P: Provider> Provider for Metered<P> {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.meter.call();
        let input_estimate: u64 = request
            .messages
            .iter()
            .map(|m| CharTokenCounter::estimate(&m.text()) as u64)
            .sum();
        let mut in_flight = InFlight {
            metered: self,
            started: Instant::now(),
            answered: false,
        };
        let outcome = self.inner.chat(request).await;
        in_flight.answered = true;
        self.end(
            usage_of(&outcome, input_estimate),
            failure_of(&outcome),
            in_flight.started,
        );
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FailureCounts, ProviderExt, ProviderStats};
    use memory_core::{FakeProvider, FakeReply, Message, StopReason};

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
        let metered = FakeProvider::new([
            FakeReply::Response(reported),
            FakeReply::Error(ProviderError::Timeout(10)),
            FakeReply::Text("twelve chars".into()),
        ])
        .metered();
        let meter = metered.meter();
        let request = || ChatRequest::new(vec![Message::user("abcdefgh")]);
        metered.chat(request()).await.unwrap();
        let after_first = meter.snapshot();
        metered.chat(request()).await.unwrap_err();
        metered.chat(request()).await.unwrap();
        let stats = meter.snapshot();
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
    async fn what_a_reply_says_is_left_to_its_reader() {
        let chatter = "I'm ready to assist with any code you'd like me to work on.";
        let metered = FakeProvider::new([
            FakeReply::Text(chatter.into()),
            FakeReply::Text("   ".into()),
        ])
        .metered();
        let meter = metered.meter();
        let request = || {
            ChatRequest::new(vec![
                Message::system("Summarize the conversation."),
                Message::user(
                    "user: rename parse_amount in tidyledger/importer.py, then run test_importer.py",
                ),
            ])
        };
        metered.chat(request()).await.unwrap();
        metered.chat(request()).await.unwrap();
        assert_eq!(meter.snapshot().failures, 0);
        // The reader that refuses one counts it into the same meter.
        meter.fail(FailureClass::Ungrounded, "says nothing".into());
        let stats = meter.snapshot();
        assert_eq!(
            (stats.calls, stats.failures, stats.by_class.ungrounded),
            (2, 1, 1)
        );
        assert_eq!(meter.first_failure().unwrap().0, FailureClass::Ungrounded);
    }

    #[tokio::test]
    async fn rejected_replies_and_abandoned_calls_are_failures_by_class() {
        let refused = ChatResponse {
            message: Message::assistant("I can't help with that."),
            usage: Usage::default(),
            stop_reason: StopReason::Refusal,
        };
        let metered = FakeProvider::new([
            FakeReply::Response(refused),
            FakeReply::Error(ProviderError::MalformedReply("not JSON".into())),
            FakeReply::Error(ProviderError::ContextOverflow("too long".into())),
            FakeReply::Error(ProviderError::Network("refused".into())),
        ])
        .metered();
        for _ in 0..4 {
            let _ = metered.chat(ChatRequest::new(vec![])).await;
        }
        let stats = metered.meter().snapshot();
        assert_eq!(stats.failures, 4);
        let c = stats.by_class;
        assert_eq!(
            (c.refused, c.malformed_reply, c.context_overflow, c.network),
            (1, 1, 1, 1)
        );
        assert_eq!(
            metered.meter().first_failure().unwrap().0,
            FailureClass::Refused
        );

        // A call the caller gives up on counts as a timeout.
        struct Slow;
        #[async_trait::async_trait]
        impl Provider for Slow {
            async fn chat(&self, _: ChatRequest) -> Result<ChatResponse, ProviderError> {
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                Ok(ChatResponse::text("late"))
            }
        }
        let slow = Slow.metered();
        let gave_up = tokio::time::timeout(
            std::time::Duration::from_millis(10),
            slow.chat(ChatRequest::new(vec![])),
        )
        .await;
        assert!(gave_up.is_err());
        let stats = slow.meter().snapshot();
        assert_eq!((stats.calls, stats.by_class.timeout), (1, 1));
    }

    #[tokio::test]
    async fn the_observer_hears_of_every_call_with_its_cost() {
        let events = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = events.clone();
        let metered = FakeProvider::new([
            FakeReply::Text("abcd".into()),
            FakeReply::Error(ProviderError::Network("down".into())),
        ])
        .metered()
        .with_observer(move |e: &CallEvent| log.lock().unwrap().push(*e));
        let _ = metered
            .chat(ChatRequest::new(vec![Message::user("abcdefgh")]))
            .await;
        let _ = metered.chat(ChatRequest::new(vec![])).await;
        let events = events.lock().unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(
            events[0].usage,
            Usage {
                input_tokens: 2,
                output_tokens: 1
            }
        );
        assert!(events[0].is_success());
        assert_eq!(events[1].failure, Some(FailureClass::Network));
        assert_eq!(events[1].usage, Usage::default());
    }
}
