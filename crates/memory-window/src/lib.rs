//! [`WindowMemory`], the default [`Memory`](memory_core::Memory), and
//! [`WindowDrop`], the strategy that keeps the newest rounds and steps that
//! fit.
//!
//! | item | what it is |
//! |---|---|
//! | [`WindowMemory`] | the default [`Memory`](memory_core::Memory): records into a [`Store`](memory_core::Store), trims with a strategy on every call, commits what materializes |
//! | [`WindowDrop`] | the strategy that keeps the newest rounds (and, inside one long round, the newest steps) that fit |
//!
//! ```
//! use memory_core::{Memory, Message};
//! use memory_window::WindowMemory;
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

mod drop;
mod memory;
mod own;
mod recover;

pub use drop::WindowDrop;
pub use memory::WindowMemory;
