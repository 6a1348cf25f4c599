//! Our pipelines as the conversation memory of a [Rig](https://crates.io/crates/rig-core) agent.
//!
//! [`RigMemory`] implements Rig's `ConversationMemory` over any of our
//! [`Store`](memory_core::Store)s and any [`TrimStrategy`](memory_core::TrimStrategy)
//! or [`Pipeline`](memory_core::Pipeline), with a budget and a
//! [`TokenCounter`](memory_core::TokenCounter): give it to
//! `AgentBuilder::memory` and every prompt of a conversation is sent with
//! the trimmed context, tool calls paired with their results.
//!
//! | item | what it is |
//! |---|---|
//! | [`RigMemory`] | the `ConversationMemory`: `append` records, `load` trims, `clear` empties the view |
//! | [`to_ours`], [`to_rig`], [`ConvertError`] | messages from Rig's types to ours and back |
//! | [`RecallTool`] | the `recall` tool as a Rig tool, answered from the conversation's store |
//! | [`Recorded`], [`Carry`] | what a conversation recorded, so that trimmed context goes back to Rig as the messages Rig appended |
//!
//! ```
//! use std::sync::Arc;
//! use memory_core::{InMemoryStore, Pipeline};
//! use memory_rig::RigMemory;
//! use memory_window::WindowDrop;
//!
//! let memory = RigMemory::new(8_000)
//!     .with_strategy(Pipeline::new().then(WindowDrop::new()))
//!     .with_store(Arc::new(InMemoryStore::new()));
//! // AgentBuilder::new(model).memory(memory).build()
//! # let _ = memory;
//! ```

mod convert;
mod memory;
mod recall;
mod recorded;

pub use convert::{ConvertError, to_ours, to_rig};
pub use memory::RigMemory;
pub use recall::RecallTool;
pub use recorded::{Carry, Recorded};
