//! One session of an agent: [`WindowMemory`], the default
//! [`Memory`](memory_core::Memory), and what it alone uses to make a
//! context.
//!
//! A [`WindowMemory`] records each message into a
//! [`Store`](memory_core::Store), fits the session with a strategy (or a
//! pipeline) on every call, and commits what materializes. On the fitted
//! result it cuts, as a last resort, an oversized message of the floor
//! around a marker ([`floor_cut`]), and adds the index of what the context
//! leaves out, each piece named by its recall handle ([`left_out`]). A
//! process that serves many sessions keeps them open in a [`SessionPool`].
//!
//! | item | what it is |
//! |---|---|
//! | [`WindowMemory`] | the default [`Memory`](memory_core::Memory): records into a store, trims with a strategy on every call, commits what materializes, cuts the floor and adds the index |
//! | [`floor_cut`] | the last-resort cut of an oversized floor message, each cut with its recall handle |
//! | [`left_out`] | the index of what a context leaves out: its pieces, their handles, its room in the budget |
//! | [`PrefixKept`] | what a call's context keeps of the previous call's: the prefix a provider's cache serves again, or a cache break |
//! | [`SessionPool`], [`DEFAULT_OPEN_SESSIONS`] | the open sessions of a process, least recently used closed first, each behind its own lock |
//!
//! ```
//! use memory_core::{Memory, Message};
//! use memory_session::WindowMemory;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut memory = WindowMemory::new(3);
//! for i in 1..=3 {
//!     memory.record(Message::user(format!("u{i}"))).await.unwrap();
//!     memory.record(Message::assistant(format!("a{i}"))).await.unwrap();
//! }
//! // Each round is 2 tokens: the task (the first user message, 1 token)
//! // and the newest round fit in 3.
//! assert_eq!(
//!     memory.context().await.unwrap(),
//!     vec![Message::user("u1"), Message::user("u3"), Message::assistant("a3")]
//! );
//! // With its size and whether it fits.
//! let context = memory.fitted().await.unwrap();
//! assert_eq!((context.tokens, context.fits), (3, true));
//! # });
//! ```

pub mod floor_cut;
pub mod left_out;
mod memory;
mod own;
mod pool;
mod prefix;
mod recover;

pub use memory::WindowMemory;
pub use pool::{DEFAULT_OPEN_SESSIONS, SessionPool};
pub use prefix::PrefixKept;
