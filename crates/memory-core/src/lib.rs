//! The contracts of the memory workspace: what every crate of it needs to
//! agree on, and nothing else.
//!
//! A [`Memory`] records a conversation and fits it into a [`Context`]; a
//! [`TrimStrategy`] fits it into a [`Budget`] measured by a
//! [`TokenCounter`]. Strategies chain through a [`Pipeline`]. Model calls go
//! through a [`Provider`], text embeddings through an [`Embedder`],
//! durable history through a [`Store`]. Beside those traits this crate
//! holds the definitions every strategy and checker must read the same
//! way: the [`structure`] of a transcript (steps, rounds, the task, the
//! floor), the [`covered`] originals of a summary, [`validate`] and
//! [`repair`], what a [`shrunk`] message is, the [`summary`] and [`index`]
//! recognizers, the recall handle format and the `recall` tool
//! ([`recall`]), and the [`audit`] that checks a trim against the
//! invariants. The algorithms live with the crates that own them: the
//! strategies in theirs, `WindowMemory` with the floor cut and the index in
//! `memory-session`, the provider layers in `memory-layer`, the
//! summarization engine in `memory-summary-engine`, word splitting and
//! stemming in `memory-text`.
//!
//! | item | what it is |
//! |---|---|
//! | [`Message`], [`ContentBlock`], [`ImageContent`], [`ToolCall`] | a conversation's messages |
//! | [`identity`] | a message's key, by which strategies and handles recognize it |
//! | [`image`] | image tokens: what an image costs, priced as OpenAI prices image input (every counter prices images by it) |
//! | [`transcript`] | messages as plain text (what a summarizer reads) |
//! | [`TokenCounter`], [`CharTokenCounter`], [`count_messages`], [`Framing`] | token counting, async and fallible, and what a model family adds per message |
//! | [`Budget`] | a token limit, a rounds limit, or both |
//! | [`History`] | counted messages, their protected indices, the task and the covered set, as a strategy gets them |
//! | [`TrimStrategy`], [`TrimResult`], [`Selection`] | fitting a history into a budget, and building the result |
//! | [`Diagnostics`] | what the stages say about how they reached a result, carried back with it |
//! | [`Pipeline`] | strategies in a chain, itself a strategy |
//! | [`Memory`], [`Context`] | what an agent loop records into, and the fitted context it gets back |
//! | [`structure`] | steps, rounds, the task, the current question, the floor, a text-only agent's observations |
//! | [`covered`] | the originals a summary stands for, and where a stage places them |
//! | [`validate`], [`Violation`], [`repair`], [`Repaired`], [`RepairAction`], [`MISSING_RESULT`] | tool pairing and order: checked and repaired |
//! | [`shrunk`], [`is_shrunk_from`] | what a shown message may be of a recorded one: cut, or with placeholders |
//! | [`summary`], [`index`] | the one recognizer of summary messages, and of index messages |
//! | [`recall`] | the handle format, what one recall reaches, the `recall` tool and its answer |
//! | [`audit`] | the checker of a trim result against its history and budget |
//! | [`Provider`], [`ChatRequest`], [`ChatResponse`], [`ModelOptions`], [`StopReason`], [`Usage`], [`ProviderError`] | model calls |
//! | [`Embedder`], [`cosine`], [`check_embeddings`] | text embeddings: one call, similarity |
//! | [`Store`], [`store`], [`StoredMessage`], [`Snapshot`], [`Version`], [`StoreError`], [`InMemoryStore`] | durable, append-only history and its in-process store |
//! | [`MemoryError`] | the one error type |
//! | `test_util` (feature `test-util`) | `FakeProvider`, `FakeReply`, `FakeEmbedder` (also at the root) and `Needs`, for tests |
//! | `stem`, `observation` | moved (to `memory-text` and [`structure`]), kept as deprecated paths for one release |
//!
//! ```
//! use memory_core::{structure, validate, Budget, CharTokenCounter, History, Message, ToolCall};
//!
//! let transcript = vec![
//!     Message::system("You are a coding agent."),
//!     Message::user("Fix the failing test."),
//!     Message::assistant_with_tools("", vec![ToolCall::new("c1", "run_tests", "{}")]),
//!     Message::tool_result("c1", "1 failed"),
//!     Message::assistant("Fixed."),
//! ];
//! assert!(validate(&transcript).is_empty());
//! let counts = [6, 6, 3, 2, 2];
//! let history = History::new(&transcript, &counts).unwrap().protect(&[0]);
//! let floor = structure::floor(&history);
//! assert!(Budget::tokens(20).admits_tokens(floor.tokens));
//! ```

pub mod audit;
mod budget;
mod context;
mod counter;
pub mod covered;
mod deprecated;
pub mod diagnostics;
mod embedder;
mod error;
mod framing;
mod handle;
mod history;
pub mod identity;
pub mod image;
mod in_memory_store;
pub mod index;
mod memory;
mod message;
mod pipeline;
mod provider;
mod reach;
pub mod recall;
pub mod seen;
pub mod shrunk;
pub mod store;
mod strategy;
pub mod structure;
pub mod summary;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;
pub mod transcript;
mod validate;

pub use budget::Budget;
pub use context::Context;
pub use counter::{CharTokenCounter, CounterId, TokenCounter, count_messages};
#[allow(deprecated)]
pub use deprecated::{observation, stem};
pub use diagnostics::Diagnostics;
pub use embedder::{Embedder, check_embeddings, cosine};
pub use error::MemoryError;
pub use framing::Framing;
pub use history::History;
pub use in_memory_store::InMemoryStore;
pub use memory::Memory;
pub use message::{ContentBlock, ImageContent, Message, ToolCall};
pub use pipeline::Pipeline;
pub use provider::{
    ChatRequest, ChatResponse, ModelOptions, Provider, ProviderError, StopReason, Usage,
};
pub use shrunk::is_shrunk_from;
pub use store::{Snapshot, Store, StoreError, StoreWrite, StoredMessage, Version};
pub use strategy::{Selection, TrimResult, TrimStrategy};
#[cfg(feature = "test-util")]
pub use test_util::{FakeEmbedder, FakeProvider, FakeReply};
pub use validate::{MISSING_RESULT, RepairAction, Repaired, Violation, repair, validate};
