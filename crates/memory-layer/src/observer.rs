//! [`CallEvent`] and [`CallObserver`]: what a [`Metered`](crate::Metered)
//! provider reports about each call as it ends.

use std::time::Duration;

use crate::FailureClass;
use memory_core::Usage;

/// One call as a [`Metered`](crate::Metered) provider counted it.
///
/// ```
/// use std::time::Duration;
/// use memory_core::Usage;
/// use memory_layer::CallEvent;
/// let event = CallEvent {
///     usage: Usage { input_tokens: 900, output_tokens: 60 },
///     failure: None,
///     elapsed: Duration::from_millis(850),
/// };
/// assert!(event.is_success());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallEvent {
    /// Tokens the call used (reported, or estimated where the provider gave
    /// none); zero for a call that returned no reply.
    pub usage: Usage,
    /// Why it came to nothing usable; `None` for a usable reply.
    pub failure: Option<FailureClass>,
    /// How long it took, or how long it ran before it was abandoned.
    pub elapsed: Duration,
}

impl CallEvent {
    /// Whether the call gave a usable reply.
    ///
    /// ```
    /// use memory_layer::{CallEvent, FailureClass};
    /// let failed = CallEvent { usage: Default::default(), failure: Some(FailureClass::Network), elapsed: Default::default() };
    /// assert!(!failed.is_success());
    /// ```
    pub fn is_success(&self) -> bool {
        self.failure.is_none()
    }
}

/// Receives a [`CallEvent`] for every call a
/// [`Metered`](crate::Metered) provider ends: to bill, to log, to
/// plot. Any `Fn(&CallEvent) + Send + Sync` is one.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use memory_layer::{CallEvent, CallObserver};
///
/// let spent = Arc::new(AtomicU64::new(0));
/// let sum = spent.clone();
/// let observer = move |event: &CallEvent| {
///     sum.fetch_add(event.usage.total(), Ordering::Relaxed);
/// };
/// observer.on_call(&CallEvent {
///     usage: memory_core::Usage { input_tokens: 10, output_tokens: 2 },
///     failure: None,
///     elapsed: Default::default(),
/// });
/// assert_eq!(spent.load(Ordering::Relaxed), 12);
/// ```
pub trait CallObserver: Send + Sync {
    /// Called once for every call, as it ends.
    fn on_call(&self, event: &CallEvent);
}

impl<F: Fn(&CallEvent) + Send + Sync> CallObserver for F {
    fn on_call(&self, event: &CallEvent) {
        self(event)
    }
}
