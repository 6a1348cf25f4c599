//! The invariant suite's shared parts: conversation generators, the list of
//! strategies under test, budgets, and one check per invariant.
//!
//! A strategy crate joins the suite by adding one entry to
//! [`registry::strategies`] (or, for a strategy that calls a model,
//! [`registry::summarizers`]); every property in `tests/` then runs over it.
//!
//! ```
//! use memory_core::validate;
//! use memory_tests::conversation;
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//!
//! let mut runner = TestRunner::deterministic();
//! let case = conversation::cases().new_tree(&mut runner).unwrap().current();
//! assert!(validate(&case.messages).is_empty());
//! ```

pub mod conversation;
pub mod fuzz;
pub mod invariants;
pub mod registry;
pub mod scenario;

use std::future::Future;

use proptest::test_runner::Config;

/// A proptest configuration running `cases` cases, unless the
/// `PROPTEST_CASES` environment variable asks for another number (for a
/// deeper search: `PROPTEST_CASES=5000 cargo test -p memory-tests`).
///
/// ```
/// assert!(memory_tests::config(64).cases > 0);
/// ```
pub fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        ..Config::default()
    }
}

/// Runs `future` to completion on this thread's current-thread runtime.
///
/// Trimming is async; the properties are plain functions.
///
/// ```
/// assert_eq!(memory_tests::block_on(async { 2 + 2 }), 4);
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread tokio runtime");
    }
    RUNTIME.with(|runtime| runtime.block_on(future))
}
