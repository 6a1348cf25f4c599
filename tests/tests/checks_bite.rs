//! The checks of the suite (the rules of `memory_core::audit`, and the two
//! that need a second trim) catch what they are meant to catch: each broken
//! strategy below breaks one invariant, and the matching check fails on some
//! generated scenario. (A suite that passes everything proves nothing.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use memory_core::{
    Budget, History, MemoryError, Message, Selection, TokenCounter, TrimResult, TrimStrategy,
    structure, summary,
};
use memory_tests::invariants::{self, Check, for_every_trim};
use memory_tests::registry::Entry;
use memory_tests::scenario::scenarios;
use proptest::test_runner::{Config, TestRunner};

/// The ways a strategy can be broken.
#[derive(Clone, Copy)]
enum Break {
    /// Drops every tool result.
    DropToolResults,
    /// Shows the messages newest first.
    Reverse,
    /// Adds a message of its own that is not a summary.
    Invent,
    /// Keeps everything and says it fits.
    ClaimFits,
    /// Reports zero tokens for every message.
    ZeroCounts,
    /// Drops the first protected message.
    DropProtected,
    /// Keeps everything but reports nothing protected.
    ForgetProtection,
    /// Drops the oldest message, every time it is asked.
    DropOldestAlways,
    /// Drops the oldest message every other call.
    Flaky(&'static AtomicUsize),
    /// Makes a summary but does not mark it protected.
    UnprotectedSummary,
    /// Drops the current question (part of the floor, though unprotected).
    DropCurrentQuestion,
    /// Keeps everything and says it does not fit.
    GiveUp,
}

struct Broken(Break);

#[async_trait::async_trait]
impl TrimStrategy for Broken {
    fn name(&self) -> &str {
        "broken"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        _counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let messages = history.messages();
        let n = messages.len();
        let mut s = Selection::new(history);
        let keep_all_but = |s: &mut Selection<'_, '_>, skip: Option<usize>| {
            for i in 0..n {
                if Some(i) != skip {
                    s.keep(i..i + 1);
                }
            }
        };
        let mut result = match self.0 {
            Break::DropToolResults => {
                for i in (0..n).filter(|&i| !messages[i].is_tool_result()) {
                    s.keep(i..i + 1);
                }
                s.finish(false, true)
            }
            Break::Reverse => {
                for i in (0..n).rev() {
                    s.keep(i..i + 1);
                }
                s.finish(false, true)
            }
            Break::Invent => {
                keep_all_but(&mut s, None);
                s.push(Message::assistant("made up"), 2, false);
                s.finish(false, true)
            }
            Break::ClaimFits => {
                let mut r = TrimResult::unchanged(history, budget);
                r.fits = true;
                r
            }
            Break::ZeroCounts => {
                let mut r = TrimResult::unchanged(history, budget);
                r.counts.iter_mut().for_each(|c| *c = 0);
                r
            }
            Break::DropProtected => {
                keep_all_but(&mut s, history.protected().first().copied());
                s.finish(false, true)
            }
            Break::ForgetProtection => {
                let mut r = TrimResult::unchanged(history, budget);
                r.protected.clear();
                r
            }
            Break::DropOldestAlways => {
                keep_all_but(&mut s, Some(0));
                s.finish(false, true)
            }
            Break::Flaky(calls) => {
                let skip = (calls.fetch_add(1, Ordering::Relaxed) % 2 == 0).then_some(0);
                keep_all_but(&mut s, skip);
                s.finish(false, true)
            }
            Break::UnprotectedSummary => {
                s.push(summary::message("so far"), 3, false);
                keep_all_but(&mut s, None);
                s.finish(false, true)
            }
            Break::DropCurrentQuestion => {
                keep_all_but(&mut s, structure::current_question(messages));
                s.finish(false, true)
            }
            Break::GiveUp => {
                let mut r = TrimResult::unchanged(history, budget);
                r.fits = false;
                r
            }
        };
        if !matches!(self.0, Break::ClaimFits | Break::ZeroCounts | Break::GiveUp) {
            result.fits = budget.admits_tokens(result.tokens());
        }
        Ok(result)
    }
}

/// A runner that stops at the first failure: no shrinking, nothing saved.
fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        max_shrink_iters: 0,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Whether `check` fails for `broken` on some scenario within 256 cases.
fn caught(broken: Break, check: Check) -> bool {
    let entry: Entry = ("broken", Arc::new(Broken(broken)));
    let mut runner = runner(256);
    runner
        .run(&scenarios(), |s| {
            for_every_trim(&s, std::slice::from_ref(&entry), check)
        })
        .is_err()
}

static FLAKY: AtomicUsize = AtomicUsize::new(0);

#[test]
fn each_check_catches_its_breakage() {
    let cases: [(&str, Break, Check); 12] = [
        (
            "tool pairing",
            Break::DropToolResults,
            invariants::tool_pairing,
        ),
        ("order", Break::Reverse, invariants::order_kept),
        ("nothing invented", Break::Invent, invariants::order_kept),
        ("fits", Break::ClaimFits, invariants::fits_when_floor_fits),
        (
            "honest no-fit",
            Break::GiveUp,
            invariants::fits_when_floor_fits,
        ),
        ("true counts", Break::ZeroCounts, invariants::true_counts),
        (
            "protected kept",
            Break::DropProtected,
            invariants::protected_kept,
        ),
        (
            "protected indexed",
            Break::ForgetProtection,
            invariants::protected_kept,
        ),
        (
            "summary protected",
            Break::UnprotectedSummary,
            invariants::protected_kept,
        ),
        (
            "floor kept",
            Break::DropCurrentQuestion,
            invariants::protected_kept,
        ),
        ("stable", Break::DropOldestAlways, invariants::stable),
        (
            "deterministic",
            Break::Flaky(&FLAKY),
            invariants::deterministic,
        ),
    ];
    for (what, broken, check) in cases {
        assert!(
            caught(broken, check),
            "the {what} check missed its breakage"
        );
    }
}

#[test]
fn a_bad_reply_that_is_stored_or_summarized_is_caught() {
    /// Materializes whatever it has (as if it had stored a bad summary).
    struct StoresAnyway;

    #[async_trait::async_trait]
    impl TrimStrategy for StoresAnyway {
        fn name(&self) -> &str {
            "stores-anyway"
        }
        async fn trim_with_counts(
            &self,
            history: &History<'_>,
            budget: &Budget,
            _counter: &dyn TokenCounter,
        ) -> Result<TrimResult, MemoryError> {
            let mut s = Selection::new(history);
            s.push(summary::message(""), 6, true);
            s.keep(0..history.len());
            let fits = budget.admits_tokens(history.total() + 6);
            Ok(s.finish(true, fits))
        }
    }
    let entry: Entry = ("stores-anyway", Arc::new(StoresAnyway));
    let mut runner = runner(16);
    let result = runner.run(&scenarios(), |s| {
        for_every_trim(
            &s,
            std::slice::from_ref(&entry),
            invariants::nothing_lost_on_bad_reply,
        )
    });
    assert!(result.is_err());
}
