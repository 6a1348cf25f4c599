//! [`Compact`]: the newest turns verbatim, the older history folded into one
//! rolling summary by a model once it grows past a threshold; a failed,
//! empty, cut-off, refused or ungrounded summary, or one over its cap (the
//! whole message, file list included), never replaces anything.
//!
//! | item | what it is |
//! |---|---|
//! | [`Compact`] | the strategy (a [`TrimStrategy`](memory_core::TrimStrategy)): its builder, foreground or [background](Compact::with_background), and [`Compact::compact_now`] |
//! | [`CompactEvent`], [`CompactEvents`], [`CompactCost`], [`FallbackReason`], [`CompactObserver`], [`EventLog`] | what each compaction did and cost; the events since the last trim travel in its diagnostics |
//! | [`CompactHook`], [`HookDecision`], [`Preparation`] | the `before_compaction` hook: go ahead, decline, or supply the summary |
//! | [`Failure`] | why no summary was used (a rejected reply is `memory-summary-engine`'s [`Rejection`](memory_summary_engine::Rejection), by [`SummarySettings::accept`](memory_summary_engine::SummarySettings::accept)) |
//! | [`Compact::with_summary`] | takes `memory-summary-engine`'s [`SummarySettings`](memory_summary_engine::SummarySettings), the knobs shared with `memory-summarize`: cap, input limit, prompt, options, grounding check |
//! | [`FileOps`], [`files`] | the files tool calls read and modified, carried from summary to summary |
//! | [`body`] | the summary message: how Compact writes and recognizes its own |
//! | [`BackgroundStatus`] | where the background summary stands |
//! | [`DEFAULT_COMPACT_PROMPT`] and the other `DEFAULT_*` constants | the defaults ([`DEFAULT_SUMMARY_MAX_TOKENS`] is core's, shared with every summarizing strategy) |
//!
//! Compact goes upstream; a subtractive stage downstream fits the final
//! budget and keeps the summary (every stage keeps what
//! [`memory_core::summary`] recognizes):
//!
//! ```
//! use std::sync::Arc;
//! use memory_compact::Compact;
//! use memory_core::{summary, Budget, CharTokenCounter, FakeProvider, FakeReply, Message, Pipeline, TrimStrategy};
//! use memory_window::WindowDrop;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = FakeProvider::new([FakeReply::Text("## Goals\nPort the parser to Rust.".into())]);
//! let pipeline = Pipeline::new()
//!     .then(Compact::new(model).with_summarize_at_tokens(30))
//!     .then(WindowDrop::new());
//! let mut history = vec![Message::system("You are a coding agent.")];
//! for i in 1..=6 {
//!     history.push(Message::user(format!("Step {i}: port module_{i} and run its tests.")));
//!     history.push(Message::assistant(format!("Ported module_{i}; its tests pass.")));
//! }
//! let result = pipeline.trim(&history, &Budget::tokens(90), &CharTokenCounter).await.unwrap();
//! assert!(result.fits);
//! assert!(result.messages.iter().any(summary::is_summary));
//! // What is stored is the compacted history: the prompt, the task (the
//! // first request), the summary and the newest rounds.
//! let stored = result.to_store().unwrap();
//! assert_eq!(stored.messages[1], history[1]);
//! assert!(summary::is_summary(&stored.messages[2]));
//! # });
//! ```

mod background;
mod background_summary;
pub mod body;
mod call;
mod compact;
mod compact_state;
mod covering;
mod event;
mod failure;
pub mod files;
mod foreground;
mod hook;
mod prepare;
mod prompt;
mod scaled;
mod settings;
mod split;
mod summary_state;
mod timing;
mod turn_fit;
mod turns;

pub use background_summary::BackgroundStatus;
pub use compact::Compact;
pub use event::{
    CompactCost, CompactEvent, CompactEvents, CompactObserver, EventLog, FallbackReason,
};
pub use failure::Failure;
pub use files::FileOps;
pub use hook::{CompactHook, HookDecision, Preparation};
pub use memory_core::summary::DEFAULT_SUMMARY_MAX_TOKENS;
pub use prompt::{DEFAULT_COMPACT_PROMPT, DEFAULT_MAX_INPUT_TOKENS};
pub use settings::{
    DEFAULT_BACKOFF, DEFAULT_DEPTH_RATIO, DEFAULT_KEEP_VERBATIM, DEFAULT_RETRIES,
    DEFAULT_SUMMARIZE_AT_TOKENS, DEFAULT_TIMEOUT, DEFAULT_TRIGGER_RATIO,
};
