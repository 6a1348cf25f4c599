//! [`FailureClass`] and [`FailureCounts`]: why a model call came to
//! nothing usable, and how often, by class.

use serde::{Deserialize, Serialize};

use memory_core::{ChatResponse, Message, ProviderError, StopReason};

/// Why a model call came to nothing usable. A [`Metered`](crate::Metered)
/// provider classifies how each call ended: an error by its kind, a text
/// reply by its stop reason. What a reply says is for its reader to judge:
/// a summarizing strategy that refuses a reply (empty, asking for tools,
/// saying nothing about what it covers) counts it into the same
/// [`Meter`](crate::Meter) with [`Meter::fail`](crate::Meter::fail), as
/// [`MalformedReply`](FailureClass::MalformedReply) or
/// [`Ungrounded`](FailureClass::Ungrounded).
///
/// ```
/// use memory_core::{ChatResponse, ProviderError, StopReason};
/// use memory_layer::FailureClass;
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
    /// The reply could not be read, or (reported by its reader) cannot be
    /// a summary: not an assistant message, a request for tools, or no
    /// text.
    MalformedReply,
    /// The reply says nothing about what it was asked to summarize
    /// (reported by its reader: `memory-summary-engine`'s grounding check).
    Ungrounded,
    /// Anything else (authentication, an open circuit, an unclassified
    /// error).
    Other,
}

impl FailureClass {
    /// Every class, in the order reports list them.
    ///
    /// ```
    /// use memory_layer::FailureClass;
    /// assert_eq!(FailureClass::ALL.len(), 9);
    /// assert_eq!(FailureClass::ALL.last(), Some(&FailureClass::Other));
    /// ```
    pub const ALL: [FailureClass; 9] = [
        FailureClass::Refused,
        FailureClass::Truncated,
        FailureClass::Timeout,
        FailureClass::ContextOverflow,
        FailureClass::ServerError,
        FailureClass::Network,
        FailureClass::MalformedReply,
        FailureClass::Ungrounded,
        FailureClass::Other,
    ];

    /// The class of a call's outcome; `None` for a reply that ended
    /// normally. A text reply (an assistant message without tool calls)
    /// that did not end normally was refused, cut off at its token limit,
    /// or failed mid-way; any other reply is left to its reader to judge.
    ///
    /// ```
    /// use memory_core::ProviderError;
    /// use memory_layer::FailureClass;
    /// assert_eq!(FailureClass::of(&Err(ProviderError::Timeout(5))), Some(FailureClass::Timeout));
    /// ```
    pub fn of(outcome: &Result<ChatResponse, ProviderError>) -> Option<Self> {
        match outcome {
            Ok(reply) => Self::of_reply(reply),
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

    /// How a text reply ended, when not normally.
    fn of_reply(reply: &ChatResponse) -> Option<Self> {
        let Message::Assistant { tool_calls, .. } = &reply.message else {
            return None;
        };
        if !tool_calls.is_empty() {
            return None;
        }
        match reply.stop_reason {
            StopReason::Stop | StopReason::ToolCalls => None,
            StopReason::Refusal => Some(Self::Refused),
            StopReason::Length => Some(Self::Truncated),
            _ => Some(Self::ServerError),
        }
    }

    /// The class's name in reports: `refused`, `truncated`, `timeout`,
    /// `context_overflow`, `server_error`, `network`, `malformed_reply`,
    /// `ungrounded`, `other`.
    ///
    /// ```
    /// assert_eq!(memory_layer::FailureClass::ContextOverflow.name(), "context_overflow");
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
            Self::Ungrounded => "ungrounded",
            Self::Other => "other",
        }
    }
}

/// Failed calls counted by [`FailureClass`].
///
/// ```
/// use memory_layer::{FailureClass, FailureCounts};
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
    pub ungrounded: u64,
    pub other: u64,
}

impl FailureCounts {
    /// Counts one failure of `class`.
    ///
    /// ```
    /// let mut c = memory_layer::FailureCounts::default();
    /// c.add(memory_layer::FailureClass::Network);
    /// assert_eq!(c.network, 1);
    /// ```
    pub fn add(&mut self, class: FailureClass) {
        *self.slot(class) += 1;
    }

    /// Every class with its count, in a fixed order.
    ///
    /// ```
    /// let c = memory_layer::FailureCounts::default();
    /// assert_eq!(c.classes().len(), 9);
    /// ```
    pub fn classes(&self) -> [(FailureClass, u64); 9] {
        let mut copy = *self;
        FailureClass::ALL.map(|class| (class, *copy.slot(class)))
    }

    /// Whether there are none.
    ///
    /// ```
    /// assert!(memory_layer::FailureCounts::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// All failures.
    ///
    /// ```
    /// assert_eq!(memory_layer::FailureCounts::default().total(), 0);
    /// ```
    pub fn total(&self) -> u64 {
        self.classes().iter().map(|(_, n)| n).sum()
    }

    /// What was counted between `earlier` and `self`.
    ///
    /// ```
    /// use memory_layer::FailureCounts;
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
    /// use memory_layer::FailureCounts;
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
            FailureClass::Ungrounded => &mut self.ungrounded,
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
