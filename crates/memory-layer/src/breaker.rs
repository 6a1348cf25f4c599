//! [`CircuitBreaker`]: a provider that stops calling a backend that keeps
//! failing, and tries it again now and then.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::BreakerPolicy;
use memory_core::{ChatRequest, ChatResponse, Provider, ProviderError};

/// Wraps a [`Provider`] so that after [`BreakerPolicy::failures`] failed
/// calls in a row, calls fail fast with [`ProviderError::CircuitOpen`]
/// without reaching it, for a cool-down; then one probe call goes through
/// (others still fail fast while it runs): a success closes the circuit, a
/// failure opens it again for twice as long, up to
/// [`BreakerPolicy::max_cool_down`].
///
/// What counts: any error fails, except a context overflow (the request's
/// fault: the backend answered) and an open circuit below this one, which
/// counts neither way; a reply, whatever it says, succeeds. Over a
/// [`Retry`](crate::Retry) layer, a call with all its retries counts
/// once. A probe the caller abandons leaves the circuit open with its
/// cool-down over, so the next call probes. Time is measured with the
/// system clock: no runtime is needed. Build it with
/// [`ProviderExt::with_circuit_breaker`](crate::ProviderExt::with_circuit_breaker).
///
/// ```
/// use std::time::Duration;
/// use memory_layer::{BreakerPolicy, ProviderExt};
/// use memory_core::{ChatRequest, FakeProvider, FakeReply, Provider, ProviderError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let down = FakeProvider::new((0..10).map(|_| FakeReply::Error(ProviderError::Network("refused".into()))));
/// let provider = down.with_circuit_breaker(BreakerPolicy::new(2, Duration::from_secs(30)));
/// for _ in 0..5 {
///     let _ = provider.chat(ChatRequest::default()).await;
/// }
/// // Two calls reached the backend; the other three failed fast.
/// assert_eq!(provider.inner().requests().len(), 2);
/// assert!(provider.is_open());
/// let error = provider.chat(ChatRequest::default()).await.unwrap_err();
/// assert!(matches!(error, ProviderError::CircuitOpen { .. }));
/// assert!(error.to_string().contains("2 calls failed in a row"));
/// # });
/// ```
#[derive(Debug)]
pub struct CircuitBreaker<P> {
    inner: P,
    policy: BreakerPolicy,
    circuit: Mutex<Circuit>,
}

/// The breaker's state and what it remembers of the failures.
#[derive(Debug)]
struct Circuit {
    state: State,
    /// Failed calls in a row.
    streak: u32,
    /// What the last failure said.
    last: String,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Calls go through.
    Closed,
    /// Calls fail fast until `until`.
    Open { until: Instant, failed_probes: u32 },
    /// One probe call is in flight; others fail fast.
    Probing { failed_probes: u32 },
}

/// How a call was let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    Call,
    Probe,
}

/// What a call's outcome says about the backend.
enum Verdict {
    Up,
    Down(String),
    Unknown,
}

impl Verdict {
    fn of(outcome: &Result<ChatResponse, ProviderError>) -> Self {
        match outcome {
            Ok(_) | Err(ProviderError::ContextOverflow(_)) => Verdict::Up,
            Err(ProviderError::CircuitOpen { .. }) => Verdict::Unknown,
            Err(error) => Verdict::Down(error.to_string()),
        }
    }
}

impl Circuit {
    /// Lets a call through, or says why not.
    fn admit(&mut self, now: Instant) -> Result<Pass, ProviderError> {
        match self.state {
            State::Closed => Ok(Pass::Call),
            State::Open {
                until,
                failed_probes,
            } if now >= until => {
                self.state = State::Probing { failed_probes };
                Ok(Pass::Probe)
            }
            State::Open { until, .. } => Err(self.refusal(until - now, "")),
            State::Probing { .. } => {
                Err(self.refusal(Duration::ZERO, " (a probe call is in flight)"))
            }
        }
    }

    fn refusal(&self, wait: Duration, note: &str) -> ProviderError {
        ProviderError::CircuitOpen {
            retry_in_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            message: format!(
                "{} calls failed in a row, the last with: {}{note}",
                self.streak, self.last
            ),
        }
    }

    /// Books the outcome of a call let through as `pass`.
    fn settle(&mut self, pass: Pass, verdict: Verdict, policy: &BreakerPolicy, now: Instant) {
        match verdict {
            Verdict::Up => {
                if !matches!(self.state, State::Closed) {
                    tracing::info!("the provider answered again; circuit closed");
                }
                self.state = State::Closed;
                self.streak = 0;
            }
            Verdict::Unknown => {
                if pass == Pass::Probe {
                    self.abandon(now);
                }
            }
            Verdict::Down(message) => {
                self.streak = self.streak.saturating_add(1);
                self.last = message;
                let failed_probes = match (pass, self.state) {
                    (Pass::Probe, State::Probing { failed_probes }) => failed_probes + 1,
                    (_, State::Closed) if self.streak >= policy.failures.max(1) => 0,
                    _ => return,
                };
                let cool_down = policy.cool_down_after(failed_probes);
                tracing::warn!(
                    failures = self.streak,
                    cool_down_ms = u64::try_from(cool_down.as_millis()).unwrap_or(u64::MAX),
                    last = %self.last,
                    "the provider keeps failing; circuit open, calls fail fast until a probe succeeds"
                );
                self.state = State::Open {
                    until: now + cool_down,
                    failed_probes,
                };
            }
        }
    }

    /// A probe that ended without a verdict: the next call probes again.
    fn abandon(&mut self, now: Instant) {
        if let State::Probing { failed_probes } = self.state {
            self.state = State::Open {
                until: now,
                failed_probes,
            };
        }
    }
}

/// Reopens the circuit for the next probe when a probe call is dropped
/// before it ends.
struct ProbeGuard<'a> {
    circuit: Option<&'a Mutex<Circuit>>,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        if let Some(circuit) = self.circuit {
            lock(circuit).abandon(Instant::now());
        }
    }
}

fn lock(circuit: &Mutex<Circuit>) -> MutexGuard<'_, Circuit> {
    circuit.lock().unwrap_or_else(|e| e.into_inner())
}

impl<P> CircuitBreaker<P> {
    /// Guards the calls to `inner` as `policy` says.
    ///
    /// ```
    /// use memory_layer::{BreakerPolicy, CircuitBreaker};
    /// let breaker = CircuitBreaker::new(memory_core::FakeProvider::default(), BreakerPolicy::default());
    /// assert!(!breaker.is_open());
    /// ```
    pub fn new(inner: P, policy: BreakerPolicy) -> Self {
        Self {
            inner,
            policy,
            circuit: Mutex::new(Circuit {
                state: State::Closed,
                streak: 0,
                last: String::new(),
            }),
        }
    }

    /// Whether calls are failing fast now (open, or a probe in flight).
    ///
    /// ```
    /// use memory_layer::{BreakerPolicy, ProviderExt};
    /// let breaker = memory_core::FakeProvider::default().with_circuit_breaker(BreakerPolicy::default());
    /// assert!(!breaker.is_open());
    /// ```
    pub fn is_open(&self) -> bool {
        !matches!(lock(&self.circuit).state, State::Closed)
    }

    /// The policy in force.
    ///
    /// ```
    /// use memory_layer::{BreakerPolicy, ProviderExt};
    /// let breaker = memory_core::FakeProvider::default().with_circuit_breaker(BreakerPolicy::default());
    /// assert_eq!(breaker.policy().failures, 3);
    /// ```
    pub fn policy(&self) -> &BreakerPolicy {
        &self.policy
    }

    /// The wrapped provider.
    ///
    /// ```
    /// use memory_layer::{BreakerPolicy, ProviderExt};
    /// let breaker = memory_core::FakeProvider::default().with_circuit_breaker(BreakerPolicy::default());
    /// assert!(breaker.inner().requests().is_empty());
    /// ```
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The wrapped provider, for rewrapping (the circuit's state is left
    /// behind).
    ///
    /// ```
    /// use memory_layer::{BreakerPolicy, ProviderExt};
    /// let breaker = memory_core::FakeProvider::default().with_circuit_breaker(BreakerPolicy::default());
    /// let fake: memory_core::FakeProvider = breaker.into_inner();
    /// # let _ = fake;
    /// ```
    pub fn into_inner(self) -> P {
        self.inner
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for CircuitBreaker<P> {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let pass = lock(&self.circuit).admit(Instant::now())?;
        let mut guard = ProbeGuard {
            circuit: (pass == Pass::Probe).then_some(&self.circuit),
        };
        let outcome = self.inner.chat(request).await;
        guard.circuit = None;
        lock(&self.circuit).settle(pass, Verdict::of(&outcome), &self.policy, Instant::now());
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{FakeProvider, FakeReply};

    fn down() -> FakeReply {
        FakeReply::Error(ProviderError::Server {
            status: 502,
            message: "bad gateway".into(),
        })
    }

    #[tokio::test]
    async fn it_opens_fails_fast_probes_and_closes() {
        let fake = FakeProvider::new([down(), down(), down(), FakeReply::Text("back".into())]);
        let breaker = CircuitBreaker::new(fake, BreakerPolicy::new(2, Duration::from_millis(100)));
        for _ in 0..4 {
            assert!(breaker.chat(ChatRequest::default()).await.is_err());
        }
        assert_eq!(breaker.inner().requests().len(), 2, "opened after two");
        tokio::time::sleep(Duration::from_millis(120)).await;
        // The probe fails: open again, for twice as long.
        assert!(breaker.chat(ChatRequest::default()).await.is_err());
        assert_eq!(breaker.inner().requests().len(), 3);
        let refused = breaker.chat(ChatRequest::default()).await.unwrap_err();
        assert!(
            matches!(refused, ProviderError::CircuitOpen { retry_in_ms, .. } if retry_in_ms > 100),
            "{refused:?}"
        );
        tokio::time::sleep(Duration::from_millis(220)).await;
        let reply = breaker.chat(ChatRequest::default()).await.unwrap();
        assert_eq!(reply.message.text(), "back");
        assert!(!breaker.is_open());
    }

    #[tokio::test]
    async fn overflows_do_not_count_and_a_success_resets_the_streak() {
        let overflow = || FakeReply::Error(ProviderError::ContextOverflow("too long".into()));
        let fake = FakeProvider::new([
            down(),
            overflow(),
            down(),
            FakeReply::Text("ok".into()),
            down(),
            overflow(),
        ]);
        let breaker = CircuitBreaker::new(fake, BreakerPolicy::new(2, Duration::from_secs(60)));
        for _ in 0..6 {
            let _ = breaker.chat(ChatRequest::default()).await;
        }
        assert!(!breaker.is_open());
        assert_eq!(breaker.inner().requests().len(), 6);
    }

    #[tokio::test]
    async fn an_abandoned_probe_lets_the_next_call_probe() {
        struct Hang;
        #[async_trait::async_trait]
        impl Provider for Hang {
            async fn chat(&self, _: ChatRequest) -> Result<ChatResponse, ProviderError> {
                std::future::pending().await
            }
        }
        let breaker = CircuitBreaker::new(Hang, BreakerPolicy::new(1, Duration::ZERO));
        {
            let mut circuit = lock(&breaker.circuit);
            circuit.streak = 1;
            circuit.state = State::Open {
                until: Instant::now(),
                failed_probes: 0,
            };
        }
        let probe = breaker.chat(ChatRequest::default());
        assert!(
            tokio::time::timeout(Duration::from_millis(10), probe)
                .await
                .is_err()
        );
        assert!(matches!(lock(&breaker.circuit).state, State::Open { .. }));
        let again = breaker.chat(ChatRequest::default());
        assert!(
            tokio::time::timeout(Duration::from_millis(10), again)
                .await
                .is_err(),
            "the next call went through as a probe"
        );
    }
}
