//! [`RejectionObserver`]: who hears of every reply that acceptance refused.

use crate::Rejection;

/// Told of every reply that
/// [`SummarySettings::accept`](crate::SummarySettings::accept) refuses, as
/// it refuses it: to count failures by kind, to log, to alert. Any
/// `Fn(&Rejection) + Send + Sync` is one.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use memory_core::ChatResponse;
/// use memory_summary_engine::{Rejection, SummarySettings};
///
/// let refused = Arc::new(AtomicUsize::new(0));
/// let count = refused.clone();
/// let settings = SummarySettings::new()
///     .with_rejection_observer(move |_: &Rejection| { count.fetch_add(1, Ordering::Relaxed); });
/// assert!(settings.accept("user: hi", &ChatResponse::text("  ")).is_err());
/// assert_eq!(refused.load(Ordering::Relaxed), 1);
/// ```
pub trait RejectionObserver: Send + Sync {
    /// Called once for each refused reply.
    fn on_rejection(&self, rejection: &Rejection);
}

impl<F: Fn(&Rejection) + Send + Sync> RejectionObserver for F {
    fn on_rejection(&self, rejection: &Rejection) {
        self(rejection)
    }
}
