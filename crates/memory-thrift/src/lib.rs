//! Thrift: fits an agent's history into a token budget without calling a
//! model.
//!
//! [`Thrift`] is a [`TrimStrategy`](memory_core::TrimStrategy) that sheds the
//! lowest-signal content first (reasoning of earlier steps, long tool
//! outputs, earlier tool results, media), then drops the rounds and steps
//! least [relevant](relevance) to the current question, and never sheds the
//! floor. [`Thrift::trim_traced`] also says what each stage shed
//! ([`ThriftTrace`]). It returns a projection: storage keeps everything.
//!
//! Public surface: [`Thrift`] and its defaults, [`ThriftTrace`] with
//! [`Shed`] and [`Tally`], the [`Relevance`] trait with its default
//! [`Lexical`] and the embedding blend [`Semantic`], the [`relevance`] terms, the head-and-tail
//! [`cut`] and the [`placeholder`] texts.
//!
//! ```
//! use memory_core::{Budget, CharTokenCounter, Message, Pipeline, TrimStrategy};
//! use memory_thrift::Thrift;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut history = Vec::new();
//! for topic in ["the parser", "lunch", "the weather", "holidays"] {
//!     history.push(Message::user(format!("Tell me about {topic}.")));
//!     history.push(Message::assistant(format!("Here is a long story about {topic}. {}", "la ".repeat(40))));
//! }
//! history.push(Message::user("Back to the parser: what did you say?"));
//!
//! let pipeline = Pipeline::new().then(Thrift::new());
//! let result = pipeline.trim(&history, &Budget::tokens(80), &CharTokenCounter).await.unwrap();
//! assert!(result.fits);
//! // The round about the parser is kept over newer, unrelated ones.
//! assert_eq!(result.messages[0], Message::user("Tell me about the parser."));
//! assert_eq!(result.messages.last(), history.last());
//! # });
//! ```

pub mod cut;
mod dates;
#[cfg(test)]
mod draw;
mod drop_stage;
mod horizon;
mod kind_positions;
mod layout;
mod memo;
mod message_index;
mod neighbours;
mod observation;
mod output_cut;
mod partial_sort;
pub mod placeholder;
mod reach;
pub mod relevance;
mod resume;
mod scoring;
mod semantic;
mod settle;
mod shortcuts;
mod shrink_cache;
mod shrink_stages;
mod sticky;
mod term_index;
mod texts;
mod thrift;
mod trace;
mod working_copy;

#[cfg(test)]
mod horizon_tests;
#[cfg(test)]
mod incremental_tests;

pub use scoring::{Lexical, Relevance};
pub use semantic::{DEFAULT_SEMANTIC_WEIGHT, Semantic};
pub use thrift::{
    DEFAULT_KEEP_RECENT_RESULTS, DEFAULT_LOOP_RECENCY_WEIGHT, DEFAULT_LOW_WATERMARK,
    DEFAULT_MAX_TOOL_OUTPUT_TOKENS, DEFAULT_RECENCY_WEIGHT, Thrift,
};
pub use trace::{Shed, Tally, ThriftTrace};
