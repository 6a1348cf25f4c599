//! The invariants of the workspace, checked for every strategy and pipeline
//! of `registry::strategies` at every budget of each generated scenario.

use memory_core::audit::{Reply, Rule};
use memory_core::summary;
use memory_tests::invariants::{self, Trimmed, for_every_trim};
use memory_tests::registry;
use memory_tests::scenario::{Scenario, covered_scenarios, scenarios};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

/// Cases per property: enough to reach the edge shapes (empty, huge, long
/// agent rounds, floors above the budget) on every run, few enough that the
/// suite stays quick in debug builds.
const CASES: u32 = 96;

/// What must still hold when the summarizer's reply was bad: nothing lost,
/// and the result as sound as any.
const AFTER_A_BAD_REPLY: &[Rule] = &[Rule::NothingLost, Rule::Pairing, Rule::Kept, Rule::Fit];

fn check_all(
    scenario: &Scenario,
    check: impl Fn(&Trimmed<'_>) -> Result<(), String>,
) -> Result<(), TestCaseError> {
    for_every_trim(scenario, &registry::strategies(), check)
}

proptest! {
    #![proptest_config(memory_tests::config(CASES))]

    /// Invariant 1: no tool result without its call, no call without all its results.
    #[test]
    fn tool_pairing_holds(s in scenarios()) {
        check_all(&s, invariants::tool_pairing)?;
    }

    /// Invariant 2: the output is a subsequence of the input, but for summaries.
    #[test]
    fn order_is_kept_and_nothing_invented(s in scenarios()) {
        check_all(&s, invariants::order_kept)?;
    }

    /// Invariant 3: within the budget whenever the floor is; `fits: false` otherwise;
    /// the counts are one per message and true.
    #[test]
    fn fits_whenever_the_floor_fits(s in scenarios()) {
        check_all(&s, |t| {
            invariants::fits_when_floor_fits(t)?;
            invariants::true_counts(t)
        })?;
    }

    /// Invariant 4: protected messages and summaries are never shed, and the result
    /// says which they are.
    #[test]
    fn protected_and_summaries_are_never_shed(s in scenarios()) {
        check_all(&s, invariants::protected_kept)?;
    }

    /// Invariant 6: trimming the result again changes nothing, byte for
    /// byte; for an eager compaction (see [`EAGER`]), a result that holds
    /// no summary.
    #[test]
    fn trimming_again_changes_nothing(s in scenarios()) {
        check_all(&s, |t| {
            if EAGER.contains(&t.name) && t.result.messages.iter().any(summary::is_summary) {
                return Ok(());
            }
            invariants::stable(t)
        })?;
    }

    /// Invariant 7: same input, same output.
    #[test]
    fn same_input_same_output(s in scenarios()) {
        check_all(&s, invariants::deterministic)?;
    }
}

/// Cases of the compacted views: fewer, each trims every strategy at every
/// budget with covered originals within reach.
const COVERED_CASES: u32 = 32;

/// The registry's entries with an eager compaction (a threshold below the
/// budget), whose results' stability is not checked where a compaction
/// could have run. Trimmed again, a fitting result of theirs can hold
/// older material past the threshold (the covered originals thrift showed
/// after the summary, or turns before the summary that a rejected summary
/// left in view), and the compaction folds it then: trimmed again, a
/// result of `compact(eager)` then `thrift` that showed the first of the
/// turns its summary stands for folds that turn once more, and the new
/// summary names a stretch that ends there (its covered set is not part of
/// a result that shows other messages than it stores). With the default
/// timing (a summary only when a cut is due) compaction followed by thrift
/// is checked. At the `Memory` level the stored history never holds what a
/// later stage showed (`same_context`).
const EAGER: [&str; 3] = [
    "compact(fake,eager)",
    "pipeline(compact,thrift)",
    "pipeline(compact(eager),window)",
];

proptest! {
    #![proptest_config(memory_tests::config(COVERED_CASES))]

    /// Invariants 1-4, 6 and 7 for a view a compaction left, its covered
    /// originals within reach (see `memory_core::covered`): whatever a
    /// stage shows of them keeps pairs whole, stands in order after the
    /// summary, fits, sheds nothing protected, and comes out the same
    /// again.
    ///
    /// Stability is checked for every entry but those with an eager
    /// compaction (see [`EAGER`]).
    #[test]
    fn invariants_hold_with_covered_originals(s in covered_scenarios()) {
        check_all(&s, |t| {
            invariants::check_rules(t, &[Rule::Pairing, Rule::Order, Rule::Fit, Rule::Counts, Rule::Kept], Reply::Any)?;
            if !EAGER.contains(&t.name) {
                invariants::stable(t)?;
            }
            invariants::deterministic(t)
        })?;
    }
}

/// Invariant 5: nothing is lost; for every model-calling strategy of
/// `registry::summarizers`, a failed, empty, truncated or refused summary
/// never replaces history, and the other invariants still hold. Runs nothing
/// until a summarizing crate adds its entry.
#[test]
fn nothing_is_lost_when_the_summary_is_bad() {
    let summarizers = registry::summarizers();
    if summarizers.is_empty() {
        return;
    }
    let mut runner = TestRunner::new(memory_tests::config(CASES / 2));
    runner
        .run(&scenarios(), |s| {
            for (name, make) in &summarizers {
                for (kind, reply) in registry::bad_replies() {
                    let strategy = make(registry::always(reply));
                    let entry: registry::Entry = (name, strategy);
                    for_every_trim(&s, std::slice::from_ref(&entry), |t| {
                        invariants::check_rules(t, AFTER_A_BAD_REPLY, Reply::Bad)
                            .map_err(|e| format!("with a {kind} reply: {e}"))
                    })?;
                }
            }
            Ok(())
        })
        .unwrap();
}
