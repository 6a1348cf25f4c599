//! The strategies and pipelines under test. Every stage of the `memory`
//! command is in the suite through the command's own registry
//! ([`memory_cli::registry::STAGES`]); settings and pipelines it does not
//! cover are one entry each here.

use std::sync::Arc;

use memory_cli::registry::{STAGES, StageConfig};
use memory_cli::summarizer::Summarizer;
use memory_compact::Compact;
use memory_core::{
    Budget, CharTokenCounter, ChatResponse, FakeProvider, FakeReply, Message, Pipeline,
    ProviderError, StopReason, TrimStrategy, Usage,
};
use memory_session::floor_cut::FloorCut;
use memory_session::left_out::{IndexSettings, Indexed};
use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
use memory_thrift::Thrift;
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
    let mut entries = command_stages();
    entries.extend(variants());
    entries
}

/// Every stage of the `memory` command, built by the command's own
/// registry ([`memory_cli::registry::STAGES`]) with a summarizer that
/// always answers well: a stage that joins the command joins the suite.
///
/// ```
/// let names: Vec<_> = memory_tests::registry::command_stages().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["window", "thrift", "compact", "summarize"]);
/// ```
pub fn command_stages() -> Vec<Entry> {
    let config = command_config(always(FakeReply::Text(GOOD_SUMMARY.into())));
    STAGES
        .iter()
        .map(|stage| {
            let built = (stage.build)(&config)
                .unwrap_or_else(|e| panic!("the command cannot build `{}`: {e}", stage.name));
            (stage.name, built)
        })
        .collect()
}

/// A summary any stage accepts of the suite's conversations.
const GOOD_SUMMARY: &str =
    "## Goals\nThe user set up the task.\n## State\nThe agent read the files and ran the tests.";

/// The command's stage configuration, summarizing with `provider`.
fn command_config(provider: Arc<FakeProvider>) -> StageConfig {
    StageConfig::new(Budget::tokens(1_000), Arc::new(CharTokenCounter))
        .with_summarizer(Summarizer::metered(provider))
}

/// Settings and pipelines the command's stages do not cover.
fn variants() -> Vec<Entry> {
    vec![
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
        (
            "pipeline(window,floor_cut)",
            Arc::new(Pipeline::new().then(WindowDrop::new()).then(FloorCut)),
        ),
        (
            "pipeline(thrift,floor_cut)",
            Arc::new(Pipeline::new().then(Thrift::new()).then(FloorCut)),
        ),
        // What `WindowMemory` shows: the cut floor, then the index.
        (
            "indexed(pipeline(window,floor_cut))",
            Arc::new(Indexed::new(
                Pipeline::new().then(WindowDrop::new()).then(FloorCut),
                IndexSettings::default(),
            )),
        ),
        (
            "indexed(pipeline(thrift,floor_cut))",
            Arc::new(Indexed::new(
                Pipeline::new().then(Thrift::new()).then(FloorCut),
                IndexSettings::default(),
            )),
        ),
        (
            "summarize(extractive)",
            Arc::new(SummarizeStrategy::new(ExtractiveSummarizer::new())),
        ),
        (
            "summarize(extractive,chunked)",
            Arc::new(
                SummarizeStrategy::new(ExtractiveSummarizer::new())
                    .with_summary_max_tokens(64)
                    .unwrap()
                    .with_max_input_tokens(400),
            ),
        ),
        (
            "pipeline(summarize(extractive),window)",
            Arc::new(
                Pipeline::new()
                    .then(SummarizeStrategy::new(ExtractiveSummarizer::new()))
                    .then(WindowDrop::new()),
            ),
        ),
        (
            "compact(fake,eager)",
            Arc::new(eager_compact(always(FakeReply::Text(
                "## State\nEarlier turns, folded.".into(),
            )))),
        ),
        (
            "compact(failing)",
            Arc::new(eager_compact(Arc::new(FakeProvider::new([])))),
        ),
        (
            "pipeline(compact,thrift)",
            Arc::new(
                Pipeline::new()
                    .then(eager_compact(always(FakeReply::Text(
                        "## State\nEarlier turns, folded.".into(),
                    ))))
                    .then(Thrift::new()),
            ),
        ),
        (
            "pipeline(compact(timed),thrift)",
            Arc::new(
                Pipeline::new()
                    .then(Compact::new(always(FakeReply::Text(
                        "## State\nEarlier turns, folded.".into(),
                    ))))
                    .then(Thrift::new()),
            ),
        ),
        (
            "pipeline(compact(eager),window)",
            Arc::new(
                Pipeline::new()
                    .then(eager_compact(always(FakeReply::Text(
                        "## State\nEarlier turns, folded.".into(),
                    ))))
                    .then(WindowDrop::new()),
            ),
        ),
        (
            "pipeline(window,thrift)",
            Arc::new(Pipeline::new().then(WindowDrop::new()).then(Thrift::new())),
        ),
        (
            "pipeline(thrift,window)",
            Arc::new(Pipeline::new().then(Thrift::new()).then(WindowDrop::new())),
        ),
    ]
}

/// A plain function that builds a model-calling strategy around a provider.
type Build = fn(Arc<FakeProvider>) -> Arc<dyn TrimStrategy>;

/// Builds a model-calling strategy (or a pipeline holding one) around the
/// provider it is given.
pub type SummarizerFactory = Arc<dyn Fn(Arc<FakeProvider>) -> Arc<dyn TrimStrategy> + Send + Sync>;

/// Every strategy and pipeline that calls a model, for invariant 5 (nothing
/// is lost): each is run against providers that fail, reply with nothing,
/// are cut off or refuse (see [`bad_replies`]).
///
/// A summarizing crate joins with an entry such as
/// `("summarize", |provider| Arc::new(SummarizeStrategy::new(provider)))`.
///
/// ```
/// assert!(memory_tests::registry::summarizers().len() < 100);
/// ```
pub fn summarizers() -> Vec<(&'static str, SummarizerFactory)> {
    // Every stage of the command that summarizes, as the command builds it.
    let mut entries: Vec<(&'static str, SummarizerFactory)> = STAGES
        .iter()
        .filter(|stage| stage.summarizes)
        .map(|stage| {
            let build = stage.build;
            let name = stage.name;
            let factory: SummarizerFactory = Arc::new(move |provider| {
                build(&command_config(provider))
                    .unwrap_or_else(|e| panic!("the command cannot build `{name}`: {e}"))
            });
            (name, factory)
        })
        .collect();
    let variants: Vec<(&'static str, Build)> = vec![
        ("summarize(chunked)", |provider| {
            Arc::new(
                SummarizeStrategy::new(provider)
                    .with_summary_max_tokens(64)
                    .unwrap()
                    .with_max_input_tokens(400),
            )
        }),
        ("compact(eager)", |provider| {
            Arc::new(eager_compact(provider))
        }),
        ("pipeline(compact,thrift)", |provider| {
            Arc::new(
                Pipeline::new()
                    .then(eager_compact(provider))
                    .then(Thrift::new()),
            )
        }),
        ("pipeline(summarize,window)", |provider| {
            Arc::new(
                Pipeline::new()
                    .then(SummarizeStrategy::new(provider))
                    .then(WindowDrop::new()),
            )
        }),
    ];
    entries.extend(variants.into_iter().map(|(name, make)| {
        let factory: SummarizerFactory = Arc::new(make);
        (name, factory)
    }));
    entries
}

/// [`Compact`] set to summarize as soon as the suite's small conversations
/// give it something: older material past 30 tokens, one turn kept.
///
/// ```
/// let compact = memory_tests::registry::eager_compact(memory_tests::registry::always(
///     memory_core::FakeReply::Text("so far".into()),
/// ));
/// assert_eq!(compact.keep_verbatim(), 1);
/// ```
pub fn eager_compact(provider: Arc<FakeProvider>) -> Compact {
    Compact::new(provider)
        .with_summarize_at_tokens(30)
        .with_keep_verbatim(1)
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
