//! [`CallReport`]: what one call sent upstream, and why, as the replay's
//! rows say it.

use memory_core::{TrimResult, summary, validate};
use memory_session::PrefixKept;
use serde::{Deserialize, Serialize};

/// How a request found its session.
///
/// ```
/// assert_eq!(memory_serve::Admission::Forked.as_str(), "forked");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Admission {
    /// No stored history is a prefix of the request: a new session.
    New,
    /// A stored session's whole history is a prefix of the request.
    Continued,
    /// The request shares a prefix with a stored session that has since
    /// gone on differently (an edit, a retry, a fork): a new session.
    Forked,
    /// Named by the client with `X-Memory-Session`.
    Named,
}

impl Admission {
    /// The name used in reports and metrics.
    ///
    /// ```
    /// assert_eq!(memory_serve::Admission::New.as_str(), "new");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Admission::New => "new",
            Admission::Continued => "continued",
            Admission::Forked => "forked",
            Admission::Named => "named",
        }
    }
}

/// The report of one call: the session's history and stored view, what
/// the pipeline sent upstream, what it shed and how much of the previous
/// call's context the new one starts with.
///
/// ```
/// let report = memory_serve::CallReport::default();
/// assert!(!report.cache_break);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallReport {
    /// Messages in the history before the call (the client's messages
    /// included, the reply not).
    pub turn: usize,
    /// How the request found its session.
    pub admission: Option<Admission>,
    /// Messages the request added to the history.
    pub new_messages: usize,
    /// Tokens of the whole history.
    pub history_tokens: usize,
    /// Tokens of the stored view the pipeline started from (after
    /// compactions).
    pub tokens_in: usize,
    /// Messages of that view.
    pub messages_in: usize,
    /// Tokens sent upstream (the messages, by the server's counter).
    pub tokens_out: usize,
    /// Messages sent upstream.
    pub messages_out: usize,
    /// The token budget of the messages.
    pub budget: usize,
    /// Tokens of the history not sent (`history_tokens - tokens_out`).
    pub tokens_saved: usize,
    /// Summary messages in what was sent.
    pub summaries: usize,
    /// Whether the pipeline wrote a new stored view (a compaction).
    pub compacted: bool,
    /// Tokens of the longest prefix shared with the previous call's
    /// context (what a provider's prefix cache serves).
    pub prefix_kept_tokens: usize,
    /// Whether the previous call's context is not a prefix of this one.
    pub cache_break: bool,
    /// False only when what may never be shed exceeds the budget.
    pub fits: bool,
    /// Whether what was sent keeps every tool call with its results.
    pub valid: bool,
    /// The server's own time for the call before it went upstream, in
    /// microseconds.
    pub latency_us: u64,
    /// The upstream's status, once it answered.
    pub upstream_status: Option<u16>,
    /// What a `thrift` stage shed, per kind, when the pipeline has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thrift: Option<memory_thrift::ThriftTrace>,
}

impl CallReport {
    /// Measures `result`, whose messages have the `keys`
    /// ([`message_key`](memory_core::identity::message_key)), against the
    /// previous call's context, given by its messages' keys.
    ///
    /// ```
    /// use memory_core::{identity::message_key, Budget, CharTokenCounter, History, Message, TrimResult};
    /// let messages = [Message::user("hi")];
    /// let history = History::new(&messages, &[1]).unwrap();
    /// let result = TrimResult::unchanged(&history, &Budget::tokens(10));
    /// let keys: Vec<u64> = result.messages.iter().map(message_key).collect();
    /// let report = memory_serve::CallReport::measure(&result, &keys, &[]);
    /// assert_eq!((report.tokens_out, report.messages_out, report.valid), (1, 1, true));
    /// assert!(!report.cache_break);
    /// ```
    pub fn measure(result: &TrimResult, keys: &[u64], previous: &[u64]) -> Self {
        let kept = PrefixKept::between(previous, keys, &result.counts);
        Self {
            tokens_out: result.tokens(),
            messages_out: result.messages.len(),
            summaries: result
                .messages
                .iter()
                .filter(|m| summary::is_summary(m))
                .count(),
            compacted: result.to_store().is_some(),
            prefix_kept_tokens: kept.tokens,
            cache_break: kept.cache_break,
            fits: result.fits,
            valid: validate(&result.messages).is_empty(),
            thrift: result
                .diagnostics
                .get::<memory_thrift::ThriftTrace>()
                .cloned(),
            ..Self::default()
        }
    }
}
