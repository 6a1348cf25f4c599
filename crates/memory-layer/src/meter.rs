//! [`Meter`] and [`ProviderStats`]: the counts a
//! [`Metered`](crate::Metered) provider keeps, readable from
//! anywhere.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::{FailureClass, FailureCounts};
use memory_core::Usage;

/// Calls and tokens counted by a [`Meter`] up to one moment.
///
/// ```
/// use memory_layer::ProviderStats;
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
    /// use memory_layer::ProviderStats;
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

/// The counts of a [`Metered`](crate::Metered) provider: a handle
/// that stays readable (clones share the counts) after the provider is
/// wrapped in further layers or handed to a strategy.
///
/// ```
/// use memory_layer::ProviderExt;
/// let metered = memory_core::FakeProvider::default().metered();
/// let meter = metered.meter();
/// assert_eq!(meter.snapshot().calls, 0);
/// assert!(meter.first_failure().is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Meter {
    counts: Arc<Counts>,
}

/// What a [`Meter`] counts.
#[derive(Debug, Default)]
struct Counts {
    calls: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
    failed: Mutex<Failed>,
}

/// The failures a [`Meter`] saw.
#[derive(Debug, Default)]
struct Failed {
    by_class: FailureCounts,
    first: Option<(FailureClass, String)>,
}

impl Meter {
    /// The counts so far.
    ///
    /// ```
    /// use memory_layer::{Meter, ProviderStats};
    /// assert_eq!(Meter::default().snapshot(), ProviderStats::default());
    /// ```
    pub fn snapshot(&self) -> ProviderStats {
        let by_class = self.failed().by_class;
        ProviderStats {
            calls: self.counts.calls.load(Ordering::Relaxed),
            failures: by_class.total(),
            by_class,
            input_tokens: self.counts.input_tokens.load(Ordering::Relaxed),
            output_tokens: self.counts.output_tokens.load(Ordering::Relaxed),
        }
    }

    /// The first failure seen, with its class and what the provider said;
    /// `None` while every call has succeeded.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use memory_layer::{FailureClass, ProviderExt};
    /// use memory_core::{ChatRequest, FakeProvider, FakeReply, Provider, ProviderError};
    /// let metered = FakeProvider::new([
    ///     FakeReply::Error(ProviderError::Server { status: 503, message: "busy".into() }),
    /// ])
    /// .metered();
    /// metered.chat(ChatRequest::new(vec![])).await.unwrap_err();
    /// let (class, message) = metered.meter().first_failure().unwrap();
    /// assert_eq!(class, FailureClass::ServerError);
    /// assert!(message.contains("503"));
    /// # });
    /// ```
    pub fn first_failure(&self) -> Option<(FailureClass, String)> {
        self.failed().first.clone()
    }

    /// Counts a call being made.
    pub(crate) fn call(&self) {
        self.counts.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts the tokens of a reply.
    pub(crate) fn usage(&self, usage: Usage) {
        let counts = &self.counts;
        counts
            .input_tokens
            .fetch_add(usage.input_tokens, Ordering::Relaxed);
        counts
            .output_tokens
            .fetch_add(usage.output_tokens, Ordering::Relaxed);
    }

    /// Counts a failure of `class`; the first one's `message` is kept. A
    /// [`Metered`](crate::Metered) provider counts how calls ended; a
    /// reader that refuses a reply (a summarizing strategy: an empty or
    /// ungrounded summary) counts that here, into the same counts.
    ///
    /// ```
    /// use memory_layer::{FailureClass, Meter};
    /// let meter = Meter::default();
    /// meter.fail(FailureClass::Ungrounded, "the summary says nothing about its source".into());
    /// let stats = meter.snapshot();
    /// assert_eq!((stats.failures, stats.by_class.ungrounded), (1, 1));
    /// ```
    pub fn fail(&self, class: FailureClass, message: String) {
        tracing::warn!(class = class.name(), "model call failed: {message}");
        let mut failed = self.failed();
        failed.by_class.add(class);
        failed.first.get_or_insert((class, message));
    }

    fn failed(&self) -> MutexGuard<'_, Failed> {
        self.counts.failed.lock().unwrap_or_else(|e| e.into_inner())
    }
}
