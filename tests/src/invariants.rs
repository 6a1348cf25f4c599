//! One check per invariant of the workspace, and [`for_every_trim`], which
//! runs a check for every strategy of a list at every budget of a scenario.
//!
//! Each check takes a [`Trimmed`] (a strategy, its input, the budget and
//! what it returned) and says what is wrong, if anything.

use memory_core::{
    Budget, CharTokenCounter, History, Message, TrimResult, TrimStrategy, count_messages,
    structure, summary, validate,
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

/// Whether a strategy may put `message` in its output without taking it
/// from the input: summaries only, until core recognizes explicit
/// truncation markers too (add that recognizer here).
///
/// ```
/// use memory_core::{summary, Message};
/// assert!(memory_tests::invariants::may_be_invented(&summary::message("so far")));
/// assert!(!memory_tests::invariants::may_be_invented(&Message::user("hi")));
/// ```
pub fn may_be_invented(message: &Message) -> bool {
    summary::is_summary(message)
}

/// The core definition of a shrunk message, re-exported for the checks.
pub use memory_core::is_shrunk_from;

/// Whether the result shows some input message [shrunk](is_shrunk_from)
/// rather than as it was.
///
/// ```
/// use memory_core::{Budget, History, Message, Selection};
/// use memory_tests::invariants::{shows_shrunk, Trimmed};
///
/// let input = [Message::user("q"), Message::tool_result("c", "a long output")];
/// let history = History::new(&input, &[1, 4]).unwrap();
/// let mut shown = Selection::new(&history);
/// shown.keep(0..1);
/// shown.push(Message::tool_result("c", "[cut]"), 2, false);
/// let t = Trimmed {
///     name: "shrink",
///     strategy: &memory_window::WindowDrop::new(),
///     history: &history,
///     budget: Budget::tokens(3),
///     result: shown.finish(false, true),
/// };
/// assert!(shows_shrunk(&t));
/// ```
pub fn shows_shrunk(t: &Trimmed<'_>) -> bool {
    let Ok(sources) = sources(t.history.messages(), &t.result.messages) else {
        return false;
    };
    sources
        .iter()
        .zip(&t.result.messages)
        .any(|(s, m)| s.is_some_and(|i| t.history.messages()[i] != *m))
}

/// Invariant 1, tool pairing: the output is a valid transcript.
///
/// # Errors
///
/// The violations found.
pub fn tool_pairing(t: &Trimmed<'_>) -> Result<(), String> {
    let violations = validate(&t.result.messages);
    if violations.is_empty() {
        Ok(())
    } else {
        let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
        Err(format!("tool pairing broken: {}", list.join("; ")))
    }
}

/// Where each output message comes from in the input (`None` for a message
/// the strategy made, which [`may_be_invented`] must allow), provided the
/// output keeps the input's order.
///
/// Messages are matched to their earliest input message after the previous
/// match that they are equal to or [shrunk from](is_shrunk_from); the
/// suite's conversations hold no two equal messages (and no two tool
/// messages with the same call ids), so the match is exact.
///
/// # Errors
///
/// The first output message that is neither next in the input nor allowed
/// to be invented.
///
/// ```
/// use memory_core::{summary, Message};
/// use memory_tests::invariants::sources;
/// let input = [Message::user("a"), Message::assistant("b"), Message::user("c")];
/// let output = [summary::message("a, b"), Message::user("c")];
/// assert_eq!(sources(&input, &output).unwrap(), vec![None, Some(2)]);
/// assert!(sources(&input, &[Message::user("c"), Message::user("a")]).is_err());
/// ```
pub fn sources(input: &[Message], output: &[Message]) -> Result<Vec<Option<usize>>, String> {
    let mut next = 0;
    let mut found = Vec::with_capacity(output.len());
    for (k, m) in output.iter().enumerate() {
        match input[next..].iter().position(|x| is_shrunk_from(x, m)) {
            Some(offset) => {
                found.push(Some(next + offset));
                next += offset + 1;
            }
            None if may_be_invented(m) => found.push(None),
            None => {
                let why = if input.iter().any(|x| is_shrunk_from(x, m)) {
                    "out of order"
                } else {
                    "invented"
                };
                return Err(format!(
                    "output message {k} ({}) is {why}: not in the input after position {next}",
                    m.role()
                ));
            }
        }
    }
    Ok(found)
}

/// Invariant 2, order kept and nothing invented: the output is a
/// subsequence of the input, apart from messages [`may_be_invented`]
/// allows; a message may be shown [shrunk](is_shrunk_from).
///
/// # Errors
///
/// The first message out of order or invented.
pub fn order_kept(t: &Trimmed<'_>) -> Result<(), String> {
    sources(t.history.messages(), &t.result.messages).map(|_| ())
}

/// Invariant 3, fits when the floor fits: within the token limit and
/// `fits` when the floor is; `!fits` otherwise.
///
/// # Errors
///
/// What does not hold.
pub fn fits_when_floor_fits(t: &Trimmed<'_>) -> Result<(), String> {
    let floor = structure::floor(t.history).tokens;
    let (tokens, fits) = (t.result.tokens(), t.result.fits);
    match t.budget.max_tokens {
        Some(max) if floor > max => {
            // Folding the earlier summary into a new, shorter one can bring
            // a result under a floor that held the earlier summary; so can
            // shrinking the floor's own messages (cutting the newest tool
            // output, say).
            if fits && !(tokens <= max && (replaces_a_summary(t) || shows_shrunk(t))) {
                return Err(format!(
                    "the floor ({floor} tokens) exceeds the budget ({max}) but the result says it fits"
                ));
            }
        }
        Some(max) => {
            if tokens > max {
                return Err(format!(
                    "the floor fits ({floor} <= {max}) but the result holds {tokens} tokens"
                ));
            }
            if !fits {
                return Err(format!(
                    "the result holds {tokens} <= {max} tokens but says it does not fit"
                ));
            }
        }
        None => {
            if !fits {
                return Err("no token limit, yet the result says it does not fit".into());
            }
        }
    }
    Ok(())
}

/// Invariant 3's bookkeeping: one count per output message, each the true
/// count under [`CharTokenCounter`].
///
/// # Errors
///
/// The first wrong count.
pub fn true_counts(t: &Trimmed<'_>) -> Result<(), String> {
    let r = &t.result;
    if r.counts.len() != r.messages.len() {
        return Err(format!(
            "{} counts for {} messages",
            r.counts.len(),
            r.messages.len()
        ));
    }
    let truth = block_on(count_messages(&CharTokenCounter, &r.messages))
        .map_err(|e| format!("counting failed: {e}"))?;
    match truth.iter().zip(&r.counts).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(k) => Err(format!(
            "count of output message {k} is {}, truly {}",
            r.counts[k], truth[k]
        )),
    }
}

/// Invariant 4, protected messages and summaries are never shed: each
/// protected input message is in the output, unchanged (an earlier summary
/// may instead be merged into a summary the strategy made), and
/// `result.protected` indexes exactly them and the summaries the strategy
/// made.
///
/// # Errors
///
/// The first protected message shed, or the two protected lists.
pub fn protected_kept(t: &Trimmed<'_>) -> Result<(), String> {
    let sources = sources(t.history.messages(), &t.result.messages)?;
    for (k, source) in sources.iter().enumerate() {
        if let Some(i) = *source
            && t.history.is_protected(i)
            && t.result.messages[k] != t.history.messages()[i]
        {
            return Err(format!(
                "protected input message {i} ({}) was changed",
                t.history.messages()[i].role()
            ));
        }
    }
    let made_a_summary = sources.contains(&None);
    for &p in t.history.protected() {
        // An earlier summary may be folded into the summary the strategy
        // made: replaced, not shed.
        let merged = made_a_summary && summary::is_summary(&t.history.messages()[p]);
        if !merged && !sources.contains(&Some(p)) {
            return Err(format!(
                "protected input message {p} ({}) was shed",
                t.history.messages()[p].role()
            ));
        }
    }
    let expected: Vec<usize> = sources
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none_or(|i| t.history.is_protected(i)))
        .map(|(k, _)| k)
        .collect();
    if t.result.protected == expected {
        Ok(())
    } else {
        Err(format!(
            "result.protected is {:?}, expected {expected:?}",
            t.result.protected
        ))
    }
}

/// Whether the result replaces a summary of the input with one the
/// strategy made (a summarizer that merges the previous summary into the
/// next one does).
///
/// ```
/// use memory_core::{summary, Budget, History, Message, Selection};
/// use memory_tests::invariants::{replaces_a_summary, Trimmed};
///
/// let input = [summary::message("old"), Message::user("q")];
/// let history = History::new(&input, &[3, 1]).unwrap();
/// let mut merged = Selection::new(&history);
/// merged.push(summary::message("old and more"), 4, true);
/// merged.keep(1..2);
/// let t = Trimmed {
///     name: "merge",
///     strategy: &memory_window::WindowDrop::new(),
///     history: &history,
///     budget: Budget::tokens(5),
///     result: merged.finish(true, true),
/// };
/// assert!(replaces_a_summary(&t));
/// ```
pub fn replaces_a_summary(t: &Trimmed<'_>) -> bool {
    let Ok(sources) = sources(t.history.messages(), &t.result.messages) else {
        return false;
    };
    sources.contains(&None)
        && t.history
            .messages()
            .iter()
            .enumerate()
            .any(|(i, m)| summary::is_summary(m) && !sources.contains(&Some(i)))
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
    if let Some(stored) = t.result.to_store() {
        return Err(format!(
            "a bad summary reply replaced history with {} messages",
            stored.messages.len()
        ));
    }
    let sources = sources(t.history.messages(), &t.result.messages)?;
    match sources.iter().position(Option::is_none) {
        None => Ok(()),
        Some(k) => Err(format!(
            "output message {k} is a summary made from a bad reply"
        )),
    }
}
