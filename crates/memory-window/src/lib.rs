//! [`WindowDrop`], the smallest strategy: it keeps the newest rounds and
//! steps that fit. (`WindowMemory`, the default `Memory`, is the
//! `memory-session` crate's.)
//!
//! | item | what it is |
//! |---|---|
//! | [`WindowDrop`] | the strategy that keeps the newest rounds (and, inside one long round, the newest steps) that fit |
//!
//! ```
//! use memory_core::{Budget, CharTokenCounter, Message, TrimStrategy};
//! use memory_window::WindowDrop;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut history = Vec::new();
//! for i in 1..=3 {
//!     history.push(Message::user(format!("u{i}")));
//!     history.push(Message::assistant(format!("a{i}")));
//! }
//! // Each round is 2 tokens: the task (the first user message, 1 token)
//! // and the newest round fit in 3.
//! let result = WindowDrop::new().trim(&history, &Budget::tokens(3), &CharTokenCounter).await.unwrap();
//! assert_eq!(
//!     result.messages,
//!     vec![Message::user("u1"), Message::user("u3"), Message::assistant("a3")]
//! );
//! # });
//! ```

mod drop;

pub use drop::WindowDrop;
