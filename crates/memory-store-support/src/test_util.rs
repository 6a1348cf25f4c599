//! Conformance helpers for durable stores, behind the `test-util` feature
//! (enable it in `[dev-dependencies]`): what every [`Store`](memory_core::Store)
//! backend is tested with.
//!
//! | item | what it is |
//! |---|---|
//! | [`rebases_after_migration`] | what a durable store promises about a session written before compactions rebased |
//! | [`appender`], [`compactor`], [`check_session`], [`Compactions`], [`race_text`] | the race of appenders and compactors the durable stores are tested with |
//!
//! ```toml
//! [dev-dependencies]
//! memory-store-support = { version = "0.1", features = ["test-util"] }
//! ```
//!
//! ```
//! assert_eq!(memory_store_support::test_util::race_text(1, 2, 3), "p1-t2-3");
//! ```

mod migrated;
mod race;

pub use migrated::rebases_after_migration;
pub use race::{Compactions, appender, check_session, compactor, race_text};
