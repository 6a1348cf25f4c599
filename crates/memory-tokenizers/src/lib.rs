//! Exact and calibrated [`TokenCounter`](memory_core::TokenCounter)s.
//!
//! The default counter of the workspace, `CharTokenCounter`, estimates a
//! token per four characters: off by 10-20% per message, which is fine as a
//! default and unsafe as a hard limit. This crate counts exactly, or learns
//! how wrong the estimate is:
//!
//! | type | counts with |
//! |---|---|
//! | [`Cl100k`], [`O200k`] | OpenAI's encodings, built into the binary (no file, no network) |
//! | [`HfCounter`] | any Hugging Face `tokenizer.json`, loaded from a file |
//! | [`CachedCounter`] | any counter, behind a bounded cache of counts |
//! | [`Calibrated`] | any cheap estimate, scaled by the input tokens a provider reports |
//!
//! Layers compose like any other counter:
//!
//! ```
//! use memory_core::TokenCounter;
//! use memory_tokenizers::{CachedCounter, Cl100k};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let counter = CachedCounter::new(Cl100k);
//! assert_eq!(counter.count("hello world").await.unwrap(), 2);
//! assert_eq!(counter.count("hello world").await.unwrap(), 2);
//! assert_eq!(counter.stats().hits, 1);
//! # });
//! ```

mod cached;
mod calibrated;
mod hf;
mod openai;
mod pretokenize;
mod singles;

pub use cached::{CacheStats, CachedCounter};
pub use calibrated::Calibrated;
pub use hf::HfCounter;
pub use openai::{Cl100k, O200k};
