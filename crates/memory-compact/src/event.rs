//! What a compaction reports: [`CompactEvent`]s with their [`CompactCost`],
//! delivered to a [`CompactObserver`] ([`EventLog`] keeps them).
//!
//! Every summarizer call is reported exactly once, in the
//! [`Completed`](CompactEvent::Completed) event of the summary it made or in
//! the [`Failed`](CompactEvent::Failed) event of the attempt that came to
//! nothing (a rejected reply, a timeout, a background summary that went
//! stale): summing the costs of both gives what was spent.

use std::sync::Mutex;

use memory_core::Usage;

use crate::Failure;

/// What summarizer calls cost, as the provider reported it.
///
/// ```
/// use memory_compact::CompactCost;
/// use memory_core::Usage;
/// let mut cost = CompactCost::default();
/// cost.add_call(Some(Usage { input_tokens: 900, output_tokens: 120 }));
/// cost.add_call(None); // a call that failed or timed out
/// assert_eq!((cost.calls, cost.input_tokens, cost.output_tokens), (2, 900, 120));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CompactCost {
    /// Calls made, failed ones included.
    pub calls: u32,
    /// Input tokens of the calls that returned a reply.
    pub input_tokens: u64,
    /// Output tokens of the calls that returned a reply.
    pub output_tokens: u64,
}

impl CompactCost {
    /// Counts one call, with its usage when it returned a reply.
    ///
    /// ```
    /// let mut cost = memory_compact::CompactCost::default();
    /// cost.add_call(None);
    /// assert_eq!(cost.calls, 1);
    /// ```
    pub fn add_call(&mut self, usage: Option<Usage>) {
        self.calls += 1;
        if let Some(usage) = usage {
            self.input_tokens += usage.input_tokens;
            self.output_tokens += usage.output_tokens;
        }
    }

    /// Adds another cost.
    ///
    /// ```
    /// use memory_compact::CompactCost;
    /// let one = CompactCost { calls: 1, input_tokens: 10, output_tokens: 2 };
    /// let mut sum = one;
    /// sum.add(one);
    /// assert_eq!(sum.input_tokens, 20);
    /// ```
    pub fn add(&mut self, other: CompactCost) {
        self.calls += other.calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// Why the turn was fitted by dropping history instead of by a summary.
///
/// ```
/// let reason = memory_compact::FallbackReason::Pending;
/// assert_eq!(format!("{reason:?}"), "Pending");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FallbackReason {
    /// No summary is due: the new material is below the threshold.
    NotDue,
    /// The summary attempt failed (see the preceding `Failed` event).
    Failed,
    /// A hook declined the compaction.
    Declined,
    /// A background summary is being made and is not ready yet.
    Pending,
    /// Background mode without a tokio runtime: no summary can be made.
    NoRuntime,
}

/// One step of a compaction.
///
/// `tokens_before` is the size of the history the strategy was given;
/// `tokens_after` the size of what it returned.
///
/// ```
/// use memory_compact::{CompactCost, CompactEvent};
/// let event = CompactEvent::Completed {
///     tokens_before: 9_000,
///     tokens_after: 3_100,
///     messages: 40,
///     cost: CompactCost { calls: 1, input_tokens: 6_000, output_tokens: 400 },
///     from_hook: false,
/// };
/// assert_eq!(event.cost().calls, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactEvent {
    /// A summary is being made (in the background: the request was spawned).
    Started {
        /// Tokens of the history.
        tokens_before: usize,
        /// Messages the summary will replace.
        messages: usize,
        /// Tokens of the new material (earlier summaries excluded).
        tokens: usize,
        /// Whether the newest round is split (two requests).
        split: bool,
        /// Whether it runs in the background.
        background: bool,
    },
    /// A summary replaced the older history.
    Completed {
        /// Tokens of the history.
        tokens_before: usize,
        /// Tokens of the result.
        tokens_after: usize,
        /// Messages the summary replaced.
        messages: usize,
        /// What the summarizer calls cost.
        cost: CompactCost,
        /// Whether a hook supplied the summary (no call was made).
        from_hook: bool,
    },
    /// A hook declined the compaction; nothing was called or replaced.
    Declined {
        /// Tokens of the history.
        tokens_before: usize,
    },
    /// No summary was made, or one was made and could not be used; nothing
    /// was replaced.
    Failed {
        /// Tokens of the history.
        tokens_before: usize,
        /// Why.
        failure: Failure,
        /// What the attempt cost.
        cost: CompactCost,
    },
    /// The turn was fitted by dropping the oldest history from view
    /// (storage unchanged).
    Fallback {
        /// Tokens of the history.
        tokens_before: usize,
        /// Tokens of the view returned.
        tokens_after: usize,
        /// Why no summary was used.
        reason: FallbackReason,
    },
}

impl CompactEvent {
    /// The summarizer cost this event reports (zero for events that report
    /// none).
    ///
    /// ```
    /// let e = memory_compact::CompactEvent::Declined { tokens_before: 10 };
    /// assert_eq!(e.cost().calls, 0);
    /// ```
    pub fn cost(&self) -> CompactCost {
        match self {
            CompactEvent::Completed { cost, .. } | CompactEvent::Failed { cost, .. } => *cost,
            _ => CompactCost::default(),
        }
    }
}

/// Receives compaction events. Closures `Fn(&CompactEvent)` are observers.
///
/// Called on the thread that trims, or, in background mode, on the task
/// that made the request; keep it quick.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use memory_compact::{Compact, CompactEvent, CompactObserver};
///
/// let calls = Arc::new(AtomicU32::new(0));
/// let seen = calls.clone();
/// let observer = move |event: &CompactEvent| {
///     seen.fetch_add(event.cost().calls, Ordering::Relaxed);
/// };
/// let compact = Compact::new(memory_core::FakeProvider::default()).with_observer(Arc::new(observer));
/// # let _ = compact;
/// ```
pub trait CompactObserver: Send + Sync {
    /// One event.
    fn on_event(&self, event: &CompactEvent);
}

impl<F> CompactObserver for F
where
    F: Fn(&CompactEvent) + Send + Sync,
{
    fn on_event(&self, event: &CompactEvent) {
        self(event)
    }
}

/// The events of a [`Compact`](crate::Compact) stage since its previous
/// trim, in the [`TrimResult`](memory_core::TrimResult)'s diagnostics:
/// summaries started (in this trim), landed or failed (in this trim or in
/// the background since the previous one).
///
/// ```
/// use memory_compact::{CompactEvent, CompactEvents};
/// let events = CompactEvents(vec![]);
/// assert_eq!((events.started(), events.background_started(), events.landed()), (0, 0, 0));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactEvents(pub Vec<CompactEvent>);

impl CompactEvents {
    /// Summaries started.
    ///
    /// ```
    /// assert_eq!(memory_compact::CompactEvents::default().started(), 0);
    /// ```
    pub fn started(&self) -> usize {
        self.0
            .iter()
            .filter(|e| matches!(e, CompactEvent::Started { .. }))
            .count()
    }

    /// Summaries started in the background.
    ///
    /// ```
    /// assert_eq!(memory_compact::CompactEvents::default().background_started(), 0);
    /// ```
    pub fn background_started(&self) -> usize {
        self.0
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    CompactEvent::Started {
                        background: true,
                        ..
                    }
                )
            })
            .count()
    }

    /// Summaries that landed.
    ///
    /// ```
    /// assert_eq!(memory_compact::CompactEvents::default().landed(), 0);
    /// ```
    pub fn landed(&self) -> usize {
        self.0
            .iter()
            .filter(|e| matches!(e, CompactEvent::Completed { .. }))
            .count()
    }
}

/// An observer that keeps every event, for reports and tests.
///
/// ```
/// use std::sync::Arc;
/// use memory_compact::{Compact, EventLog};
///
/// let log = Arc::new(EventLog::new());
/// let compact = Compact::new(memory_core::FakeProvider::default()).with_observer(log.clone());
/// # let _ = compact;
/// assert!(log.events().is_empty());
/// assert_eq!(log.cost().calls, 0);
/// ```
#[derive(Debug, Default)]
pub struct EventLog {
    events: Mutex<Vec<CompactEvent>>,
}

impl EventLog {
    /// An empty log.
    ///
    /// ```
    /// assert!(memory_compact::EventLog::new().events().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The events so far, oldest first.
    ///
    /// ```
    /// use memory_compact::{CompactEvent, CompactObserver, EventLog};
    /// let log = EventLog::new();
    /// log.on_event(&CompactEvent::Declined { tokens_before: 5 });
    /// assert_eq!(log.events(), vec![CompactEvent::Declined { tokens_before: 5 }]);
    /// ```
    pub fn events(&self) -> Vec<CompactEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes the events so far, leaving the log empty.
    ///
    /// ```
    /// use memory_compact::{CompactEvent, CompactObserver, EventLog};
    /// let log = EventLog::new();
    /// log.on_event(&CompactEvent::Declined { tokens_before: 5 });
    /// assert_eq!(log.take().len(), 1);
    /// assert!(log.events().is_empty());
    /// ```
    pub fn take(&self) -> Vec<CompactEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// What every call reported so far cost.
    ///
    /// ```
    /// use memory_compact::{CompactCost, CompactEvent, CompactObserver, EventLog, Failure};
    /// use memory_summary_engine::Rejection;
    /// let log = EventLog::new();
    /// let cost = CompactCost { calls: 1, input_tokens: 50, output_tokens: 0 };
    /// let failure = Failure::Rejected(Rejection::Empty);
    /// log.on_event(&CompactEvent::Failed { tokens_before: 80, failure, cost });
    /// assert_eq!(log.cost(), cost);
    /// ```
    pub fn cost(&self) -> CompactCost {
        let mut total = CompactCost::default();
        for event in self.events.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            total.add(event.cost());
        }
        total
    }
}

impl CompactObserver for EventLog {
    fn on_event(&self, event: &CompactEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

/// Tells `event` to `tracing` (target `memory_compact`).
pub(crate) fn trace(event: &CompactEvent) {
    match event {
        CompactEvent::Started {
            tokens_before,
            messages,
            tokens,
            split,
            background,
        } => tracing::debug!(
            target: "memory_compact",
            tokens_before, messages, tokens, split, background,
            "summarizing older history"
        ),
        CompactEvent::Completed {
            tokens_before,
            tokens_after,
            messages,
            cost,
            from_hook,
        } => tracing::info!(
            target: "memory_compact",
            tokens_before, tokens_after, messages, from_hook,
            calls = cost.calls,
            input_tokens = cost.input_tokens,
            output_tokens = cost.output_tokens,
            "older history replaced by a summary"
        ),
        CompactEvent::Declined { tokens_before } => tracing::info!(
            target: "memory_compact",
            tokens_before,
            "a before_compaction hook declined the compaction"
        ),
        CompactEvent::Failed {
            tokens_before,
            failure,
            cost,
        } => tracing::warn!(
            target: "memory_compact",
            tokens_before,
            calls = cost.calls,
            input_tokens = cost.input_tokens,
            output_tokens = cost.output_tokens,
            "no summary used, history kept: {failure}"
        ),
        CompactEvent::Fallback {
            tokens_before,
            tokens_after,
            reason,
        } => tracing::debug!(
            target: "memory_compact",
            tokens_before, tokens_after, ?reason,
            "oldest history dropped from view"
        ),
    }
}
