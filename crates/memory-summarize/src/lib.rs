//! [`SummarizeStrategy`]: when the history exceeds the budget, the older part
//! is folded into one summary by a model and the newest part is kept
//! verbatim; a failed, empty, cut-off, refused or ungrounded summary (one
//! that says nothing about what it covers), or one over its cap, never
//! replaces history. And [`ExtractiveSummarizer`], a summarizer that needs no model.
//!
//! | item | what it is |
//! |---|---|
//! | [`SummarizeStrategy`] | the strategy (a [`TrimStrategy`](memory_core::TrimStrategy)) |
//! | [`ExtractiveSummarizer`] | an offline [`Provider`](memory_core::Provider) that keeps the most informative lines |
//! | [`accept_reply`], [`Rejection`] | when a reply may become a summary (`memory-summary-engine`'s, re-exported; the strategy accepts by [`SummarySettings::accept`](memory_summary_engine::SummarySettings::accept), its grounding check replaceable) |
//! | [`SummarizeStrategy::with_summary`] | takes `memory-summary-engine`'s [`SummarySettings`](memory_summary_engine::SummarySettings), the knobs shared with `memory-compact` |
//! | [`DEFAULT_SUMMARIZE_PROMPT`], [`DEFAULT_MAX_INPUT_TOKENS`] | the defaults of this strategy |
//! | [`DEFAULT_SUMMARY_MAX_TOKENS`], [`DEFAULT_SUMMARY_TEMPERATURE`] | the defaults every summarizing strategy shares (core's [`summary`](memory_core::summary) module, re-exported) |
//!
//! ```
//! use memory_core::{summary, Memory, Message};
//! use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
//! use memory_session::WindowMemory;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let strategy = SummarizeStrategy::new(ExtractiveSummarizer::new()).with_summary_max_tokens(40).unwrap();
//! let mut memory = WindowMemory::new(80).with_strategy(strategy);
//! memory.record_protected(Message::system("You are a coding agent.")).await.unwrap();
//! for i in 1..=8 {
//!     memory.record(Message::user(format!("Rename field_{i} in src/model.rs"))).await.unwrap();
//!     memory.record(Message::assistant(format!("Renamed field_{i}."))).await.unwrap();
//! }
//! let context = memory.context().await.unwrap();
//! assert_eq!(context[0], Message::system("You are a coding agent."));
//! // The task (the first request) stays verbatim; the summary follows it.
//! assert_eq!(context[1], Message::user("Rename field_1 in src/model.rs"));
//! assert!(summary::is_summary(&context[2]));
//! assert_eq!(context.last(), Some(&Message::assistant("Renamed field_8.")));
//! # });
//! ```

mod extractive;
mod fold;
mod plan;
mod prompt;
mod strategy;

pub use extractive::{EXTRACTIVE_HEADER, ExtractiveSummarizer};
pub use memory_core::summary::{DEFAULT_SUMMARY_MAX_TOKENS, DEFAULT_SUMMARY_TEMPERATURE};
pub use memory_summary_engine::{Rejection, accept_reply};
pub use prompt::DEFAULT_SUMMARIZE_PROMPT;
pub use strategy::{DEFAULT_MAX_INPUT_TOKENS, SummarizeStrategy};
