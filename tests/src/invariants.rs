//! One check per invariant of the workspace, and [`for_every_trim`], which
//! runs a check for every strategy of a list at every budget of a scenario.
//!
//! Each check takes a [`Trimmed`] (a strategy, its input, the budget and
//! what it returned) and says what is wrong, if anything. Invariants 1-5
//! are the rules of [`memory_core::audit`], the checker the `memory`
//! command runs too; stability and determinism, which need a second trim,
//! are checked here.

use memory_core::audit::{Audit, Reply, Rule};
use memory_core::{
    Budget, CharTokenCounter, History, Message, TrimResult, TrimStrategy, structure,
};
use proptest::test_runner::TestCaseError;

use crate::block_on;
use crate::conversation::describe;
use crate::registry::Entry;
use crate::scenario::Scenario;

/// One trim: which strategy, on what, at which budget, and its result.
pub struct Trimmed<'a> {
    /// The name the strategy is listed under.
    pub name: &'static str,
    /// The strategy (to trim again).
    pub strategy: &'a dyn TrimStrategy,
    /// Its input.
    pub history: &'a History<'a>,
    /// The budget.
    pub budget: Budget,
    /// What it returned.
    pub result: TrimResult,
}

/// A check of one invariant on one trim: `Err` says what is wrong.
pub type Check = fn(&Trimmed<'_>) -> Result<(), String>;

/// Trims `history` with `strategy`, counting with [`CharTokenCounter`].
///
/// # Errors
///
/// The strategy's error, as text.
///
/// ```
/// use memory_core::{Budget, History, Message};
/// let m = [Message::user("hi")];
/// let h = History::new(&m, &[1]).unwrap();
/// let r = memory_tests::invariants::trim(&memory_window::WindowDrop::new(), &h, &Budget::tokens(5));
/// assert_eq!(r.unwrap().messages, m.to_vec());
/// ```
pub fn trim(
    strategy: &dyn TrimStrategy,
    history: &History<'_>,
    budget: &Budget,
) -> Result<TrimResult, String> {
    block_on(strategy.trim_with_counts(history, budget, &CharTokenCounter))
        .map_err(|e| format!("trim failed: {e}"))
}

/// Runs `check` on the result of every strategy of `entries` at every
/// budget of `scenario`; the first failure names the strategy, the budget
/// and the output.
///
/// # Errors
///
/// A [`TestCaseError`] describing the first failing trim.
///
/// ```
/// use memory_core::Message;
/// use memory_tests::{conversation::Case, invariants, registry, scenario::Scenario};
/// let case = Case::new(vec![Message::user("question"), Message::assistant("answer")], vec![]);
/// let s = Scenario { case, permille: vec![300], rounds: vec![1] };
/// invariants::for_every_trim(&s, &registry::strategies(), invariants::tool_pairing).unwrap();
/// ```
pub fn for_every_trim(
    scenario: &Scenario,
    entries: &[Entry],
    check: impl Fn(&Trimmed<'_>) -> Result<(), String>,
) -> Result<(), TestCaseError> {
    let history = scenario.case.history();
    for (name, strategy) in entries {
        for budget in scenario.budgets() {
            let result = trim(strategy.as_ref(), &history, &budget)
                .map_err(|e| TestCaseError::fail(format!("{name} at {budget:?}: {e}")))?;
            let trimmed = Trimmed {
                name,
                strategy: strategy.as_ref(),
                history: &history,
                budget,
                result,
            };
            if let Err(e) = check(&trimmed) {
                let r = &trimmed.result;
                return Err(TestCaseError::fail(format!(
                    "{name} at {budget:?}: {e}\nfloor: {:?}\noutput ({} tokens, fits {}, replace {}, protected {:?}):\n{}",
                    structure::floor(&history),
                    r.tokens(),
                    r.fits,
                    r.replace,
                    r.protected,
                    describe(&r.messages, &r.counts)
                )));
            }
        }
    }
    Ok(())
}

/// The breaches of `rules` in `t`'s result, audited against its history
/// and budget (the strategy was given the history itself), counting with
/// [`CharTokenCounter`]; `reply` says whether the model's reply was bad.
///
/// # Errors
///
/// Every breach of `rules`, one per line.
///
/// ```
/// use memory_core::audit::{Reply, Rule};
/// use memory_core::{Budget, History, Message, Selection};
/// use memory_tests::invariants::{check_rules, Trimmed};
///
/// let input = [Message::user("q"), Message::assistant("a")];
/// let history = History::new(&input, &[1, 1]).unwrap();
/// let mut reversed = Selection::new(&history);
/// reversed.keep(1..2);
/// reversed.keep(0..1);
/// let t = Trimmed {
///     name: "reverse",
///     strategy: &memory_window::WindowDrop::new(),
///     history: &history,
///     budget: Budget::tokens(5),
///     result: reversed.finish(false, true),
/// };
/// let e = check_rules(&t, &[Rule::Order], Reply::Any).unwrap_err();
/// assert!(e.contains("out of order"));
/// assert!(check_rules(&t, &[Rule::Counts], Reply::Any).is_ok());
/// ```
pub fn check_rules(t: &Trimmed<'_>, rules: &[Rule], reply: Reply) -> Result<(), String> {
    let audit = Audit::new(t.history, t.budget).replied(reply);
    let report = block_on(audit.count_and_check(&t.result, &CharTokenCounter))
        .map_err(|e| format!("audit failed: {e}"))?;
    let found: Vec<String> = report
        .breaches
        .iter()
        .filter(|b| rules.contains(&b.rule()))
        .map(ToString::to_string)
        .collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(found.join("\n"))
    }
}

/// Invariant 1, tool pairing: the output is a valid transcript.
///
/// # Errors
///
/// The violations found.
pub fn tool_pairing(t: &Trimmed<'_>) -> Result<(), String> {
    check_rules(t, &[Rule::Pairing], Reply::Any)
}

/// Invariant 2, order kept and nothing invented: the output is a
/// subsequence of the input, apart from summaries; a message may be shown
/// [shrunk](memory_core::is_shrunk_from).
///
/// # Errors
///
/// The first message out of order or invented.
pub fn order_kept(t: &Trimmed<'_>) -> Result<(), String> {
    check_rules(t, &[Rule::Order], Reply::Any)
}

/// Invariant 3, fits when the floor fits: within the token limit whenever
/// the floor is, and `fits` honest (false only when the result's own floor
/// exceeds the limit; true over a floor only when the floor is shown
/// shrunk or an earlier summary merged into a shorter one).
///
/// # Errors
///
/// What does not hold.
pub fn fits_when_floor_fits(t: &Trimmed<'_>) -> Result<(), String> {
    check_rules(t, &[Rule::Fit], Reply::Any)
}

/// Invariant 3's bookkeeping: one count per output message, each the true
/// count under [`CharTokenCounter`].
///
/// # Errors
///
/// The first wrong count.
pub fn true_counts(t: &Trimmed<'_>) -> Result<(), String> {
    check_rules(t, &[Rule::Counts], Reply::Any)
}

/// Invariant 4, protected messages and summaries are never shed: each
/// protected input message is in the output, unchanged (an earlier summary
/// may instead be merged into a summary the strategy made), every step of
/// the floor is there whole, and `result.protected` indexes exactly the
/// protected messages and the summaries.
///
/// # Errors
///
/// What was shed, changed or mislabeled.
pub fn protected_kept(t: &Trimmed<'_>) -> Result<(), String> {
    check_rules(t, &[Rule::Kept], Reply::Any)
}

/// Invariant 6, stable: trimming the output again (its own counts and
/// protected indices) at the same budget gives the same messages, byte for
/// byte.
///
/// # Errors
///
/// Where the second trim differs.
pub fn stable(t: &Trimmed<'_>) -> Result<(), String> {
    let history = t
        .result
        .as_history()
        .map_err(|e| format!("result is not a history: {e}"))?;
    let again = trim(t.strategy, &history, &t.budget)?;
    let bytes = |m: &[Message]| serde_json::to_vec(m).expect("messages serialize");
    if again.messages == t.result.messages && bytes(&again.messages) == bytes(&t.result.messages) {
        return Ok(());
    }
    let first = again
        .messages
        .iter()
        .zip(&t.result.messages)
        .position(|(a, b)| a != b)
        .unwrap_or(again.messages.len().min(t.result.messages.len()));
    Err(format!(
        "trimming the result again changed it ({} -> {} messages, first difference at {first}):\n{}",
        t.result.messages.len(),
        again.messages.len(),
        describe(&again.messages, &again.counts)
    ))
}

/// Invariant 7, deterministic: the same input trimmed again gives an equal
/// result.
///
/// # Errors
///
/// When the two results differ.
pub fn deterministic(t: &Trimmed<'_>) -> Result<(), String> {
    let again = trim(t.strategy, t.history, &t.budget)?;
    if again == t.result {
        Ok(())
    } else {
        Err(format!(
            "a second trim of the same input differs:\n{}",
            describe(&again.messages, &again.counts)
        ))
    }
}

/// Invariant 5, nothing is lost, for a strategy whose model gave a bad
/// reply (failed, empty, truncated, refused): nothing is written back, and
/// no summary appears that the input did not hold.
///
/// # Errors
///
/// What was stored or made from the bad reply.
pub fn nothing_lost_on_bad_reply(t: &Trimmed<'_>) -> Result<(), String> {
    check_rules(t, &[Rule::NothingLost], Reply::Bad)
}
