//! The strategies and pipelines under test. Adding a strategy to the suite
//! is adding one entry here.

use std::sync::Arc;

use memory_core::{
    ChatResponse, FakeProvider, FakeReply, Message, Pipeline, ProviderError, StopReason,
    TrimStrategy, Usage,
};
use memory_window::WindowDrop;

/// A strategy under test, with the name its failures are reported under.
pub type Entry = (&'static str, Arc<dyn TrimStrategy>);

/// Every strategy and pipeline the invariants 1-4, 6 and 7 are checked for.
///
/// A strategy that calls a model goes here built around a provider that
/// always answers well (a [`FakeProvider`] scripted with enough summaries),
/// and in [`summarizers`] too.
///
/// ```
/// let names: Vec<_> = memory_tests::registry::strategies().into_iter().map(|(n, _)| n).collect();
/// assert!(names.contains(&"window"));
/// ```
pub fn strategies() -> Vec<Entry> {
    vec![
        ("window", Arc::new(WindowDrop::new())),
        (
            "pipeline(window)",
            Arc::new(Pipeline::new().then(WindowDrop::new())),
        ),
        (
            "pipeline(window,window)",
            Arc::new(
                Pipeline::new()
                    .then(WindowDrop::new())
                    .then(WindowDrop::new()),
            ),
        ),
    ]
}

/// Builds a model-calling strategy (or a pipeline holding one) around the
/// provider it is given.
pub type SummarizerFactory = fn(Arc<FakeProvider>) -> Arc<dyn TrimStrategy>;

/// Every strategy and pipeline that calls a model, for invariant 5 (nothing
/// is lost): each is run against providers that fail, reply with nothing,
/// are cut off or refuse (see [`bad_replies`]).
///
/// Empty until a summarizing crate joins the suite; it adds an entry such as
/// `("summarize", |provider| Arc::new(SummarizeStrategy::new(provider)))`.
///
/// ```
/// assert!(memory_tests::registry::summarizers().len() < 100);
/// ```
pub fn summarizers() -> Vec<(&'static str, SummarizerFactory)> {
    Vec::new()
}

/// Replies no summary may be made from: a failed call, an empty reply, a
/// reply cut off at the token limit, and a refusal.
///
/// ```
/// assert_eq!(memory_tests::registry::bad_replies().len(), 4);
/// ```
pub fn bad_replies() -> Vec<(&'static str, FakeReply)> {
    let response = |text: &str, stop_reason| {
        FakeReply::Response(ChatResponse {
            message: Message::assistant(text),
            usage: Usage {
                input_tokens: 100,
                output_tokens: 10,
            },
            stop_reason,
        })
    };
    vec![
        (
            "failed",
            FakeReply::Error(ProviderError::Network("connection reset".into())),
        ),
        ("empty", FakeReply::Text(String::new())),
        (
            "truncated",
            response("The user asked for a parser and the", StopReason::Length),
        ),
        (
            "refused",
            response("I can't help with that.", StopReason::Refusal),
        ),
    ]
}

/// A provider that gives `reply` to every call (up to a generous number of
/// calls, then fails, which is just as bad).
///
/// ```
/// use memory_core::FakeReply;
/// let provider = memory_tests::registry::always(FakeReply::Text(String::new()));
/// assert!(provider.requests().is_empty());
/// ```
pub fn always(reply: FakeReply) -> Arc<FakeProvider> {
    Arc::new(FakeProvider::new(std::iter::repeat_n(reply, 256)))
}
