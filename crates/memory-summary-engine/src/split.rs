//! Splitting what a summary request holds when the model reports that it
//! overflows its context ([`ProviderError::ContextOverflow`]).
//!
//! Two tools, one for each way a strategy packs its requests:
//! [`step_cut`] halves a run of messages between steps (a tool call never
//! loses its results), and [`OverflowCap`] remembers the largest request
//! that may be sent after an overflow, halved each time, so a request the
//! endpoint refused is not sent again.
//!
//! ```
//! use memory_core::{Message, ProviderError};
//! use memory_summary_engine::split::{self, OverflowCap};
//!
//! let m = [Message::user("a"), Message::assistant("b"), Message::user("c"), Message::assistant("d")];
//! assert_eq!(split::step_cut(&m), Some(2));
//! let cap = OverflowCap::new();
//! assert_eq!(cap.get(), usize::MAX);
//! assert!(split::is_overflow(&ProviderError::ContextOverflow("8192".into())));
//! assert_eq!(cap.halve(1_000), 500);
//! assert_eq!(cap.get(), 500);
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};

use memory_core::{Message, ProviderError, structure};

/// Whether `error` says the request was larger than the model's context.
///
/// ```
/// use memory_core::ProviderError;
/// assert!(!memory_summary_engine::split::is_overflow(&ProviderError::Timeout(5)));
/// ```
pub fn is_overflow(error: &ProviderError) -> bool {
    matches!(error, ProviderError::ContextOverflow(_))
}

/// Where to cut `messages` in two: the step boundary nearest the middle;
/// `None` for a single step.
///
/// ```
/// use memory_core::{Message, ToolCall};
/// let m = [
///     Message::user("a"),
///     Message::assistant_with_tools("", vec![ToolCall::new("c1", "read", "{}")]),
///     Message::tool_result("c1", "x"),
/// ];
/// assert_eq!(memory_summary_engine::split::step_cut(&m), Some(1));
/// assert_eq!(memory_summary_engine::split::step_cut(&m[..1]), None);
/// ```
pub fn step_cut(messages: &[Message]) -> Option<usize> {
    let middle = messages.len() / 2;
    structure::steps(messages)
        .map(|step| step.start)
        .filter(|&start| start > 0)
        .min_by_key(|&start| start.abs_diff(middle))
}

/// The most tokens of material one request may carry since the model last
/// reported a context overflow (`usize::MAX` before any); shared by every
/// request that comes after.
///
/// ```
/// let cap = memory_summary_engine::split::OverflowCap::new();
/// cap.halve(9);
/// assert_eq!(cap.get(), 4);
/// ```
#[derive(Debug)]
pub struct OverflowCap(AtomicUsize);

impl Default for OverflowCap {
    fn default() -> Self {
        Self::new()
    }
}

impl OverflowCap {
    /// No overflow seen yet.
    ///
    /// ```
    /// assert_eq!(memory_summary_engine::split::OverflowCap::new().get(), usize::MAX);
    /// ```
    pub fn new() -> Self {
        Self(AtomicUsize::new(usize::MAX))
    }

    /// The cap now.
    ///
    /// ```
    /// assert_eq!(memory_summary_engine::split::OverflowCap::default().get(), usize::MAX);
    /// ```
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Lowers the cap to half of `tokens`, the size of a request that
    /// overflowed; returns the cap in force.
    ///
    /// ```
    /// let cap = memory_summary_engine::split::OverflowCap::new();
    /// assert_eq!(cap.halve(10), 5);
    /// assert_eq!(cap.halve(40), 5); // never raised
    /// ```
    pub fn halve(&self, tokens: usize) -> usize {
        let half = tokens / 2;
        self.0.fetch_min(half, Ordering::Relaxed).min(half)
    }
}
