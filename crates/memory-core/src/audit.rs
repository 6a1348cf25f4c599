//! The audit of a trim: checks a [`TrimResult`] against the history it came
//! from and the budget it was fitted to, and reports every [`Breach`] of the
//! workspace's invariants. The `memory` command audits every context it
//! replays with it; the property suite audits every strategy and pipeline
//! at every budget with it.
//!
//! | item | what it is |
//! |---|---|
//! | [`Audit`] | the history, the budget, and what is known of the trim; [`check`](Audit::check) runs it |
//! | [`Given`] | whether the strategy was given the history itself or a view of it |
//! | [`Reply`] | whether the strategy's model gave a bad reply (adds invariant 5's check) |
//! | [`Report`] | the breaches found, the floor's and the result's tokens |
//! | [`Breach`] | one way a result breaks an invariant, with text that says which |
//! | [`Rule`] | the rule a breach breaks, and its invariant's number |
//!
//! What it checks, rule by rule:
//!
//! 1. [`Rule::Pairing`]: the result is a valid transcript ([`validate`]).
//! 2. [`Rule::Order`]: the result, less summaries, is a subsequence of the
//!    history; a message may be shown [shrunk](crate::is_shrunk_from).
//! 3. [`Rule::Fit`]: a result that says it fits is within the token limit;
//!    one that says it does not fit has a floor of its own over the limit;
//!    one that says it fits though the history's floor is over the limit
//!    shows that floor shrunk or a summary merged; and, when the strategy
//!    was given the history itself, the result fits whenever the history's
//!    floor does. [`Rule::Counts`]: one count per message, the counter's.
//! 4. [`Rule::Kept`]: each protected message and summary (the
//!    [task](crate::structure::task) among them unless the history forgot
//!    it) is in the result unchanged (an earlier summary may be merged into a new one), each
//!    step of the history's floor is there whole, and the result marks
//!    exactly its protected messages and summaries.
//! 5. [`Rule::NothingLost`], after a bad reply only: nothing written back,
//!    no summary made.
//!
//! A history with [covered](crate::covered) originals is audited as its
//! [expanded](crate::covered::Expanded) history: covered messages may be
//! shown, in order, before the summary that stands for them, and count
//! against the budget like any other.
//!
//! Invariants 6 (stable) and 7 (deterministic) need a second trim, so the
//! caller checks them.
//!
//! ```
//! use memory_core::audit::{Audit, Breach};
//! use memory_core::{Budget, History, Message, Selection};
//!
//! let m = [
//!     Message::system("rules"),
//!     Message::user("old"),
//!     Message::assistant("old answer"),
//!     Message::user("new"),
//! ];
//! let history = History::new(&m, &[2, 1, 3, 1]).unwrap().protect(&[0]);
//! // A broken trim: it sheds the protected prompt.
//! let mut s = Selection::new(&history);
//! s.keep(3..4);
//! let result = s.finish(false, true);
//! let report = Audit::new(&history, Budget::tokens(3)).check(&result, &[1]).unwrap();
//! assert!(report.breaches.contains(&Breach::ProtectedShed { index: 0, role: "system" }));
//! ```

mod breach;
mod fit;
mod kept;
mod lost;
mod report;
mod sources;

pub use breach::{Breach, Rule};
pub use report::Report;

use crate::budget::Budget;
use crate::counter::{TokenCounter, count_messages};
use crate::covered::Expanded;
use crate::error::MemoryError;
use crate::history::History;
use crate::strategy::TrimResult;
use crate::structure;
use crate::validate::validate;
use fit::Fit;
use sources::Source;

/// What the strategy was given to trim.
///
/// ```
/// use memory_core::audit::{Audit, Given};
/// use memory_core::{Budget, History};
/// let h = History::new(&[], &[]).unwrap();
/// let _ = Audit::new(&h, Budget::tokens(10)).given(Given::View);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Given {
    /// The history itself (a strategy trimmed directly, as the property
    /// suite does): the result must fit whenever the history's floor does.
    #[default]
    History,
    /// A view of the history that a memory may have compacted before (an
    /// earlier summary in place of older messages), as a
    /// [`Memory`](crate::Memory) trims: the history is everything recorded,
    /// and the strategy's own floor may exceed the history's by that
    /// summary, so only the result's own floor is held against `fits`.
    View,
}

/// What the strategy's model replied, when it called one.
///
/// ```
/// use memory_core::audit::{Audit, Reply};
/// use memory_core::{Budget, History};
/// let h = History::new(&[], &[]).unwrap();
/// let _ = Audit::new(&h, Budget::tokens(10)).replied(Reply::Bad);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reply {
    /// Unknown, or good: a summary may be made.
    #[default]
    Any,
    /// Failed, empty, truncated or refused: nothing may be written back
    /// and no summary made ([`Rule::NothingLost`]).
    Bad,
}

/// An audit of trims of one history at one budget.
///
/// ```
/// use memory_core::audit::Audit;
/// use memory_core::{Budget, CharTokenCounter, History, Message, TrimStrategy};
///
/// struct KeepAll;
/// #[async_trait::async_trait]
/// impl TrimStrategy for KeepAll {
///     fn name(&self) -> &str { "keep-all" }
///     async fn trim_with_counts(
///         &self,
///         history: &History<'_>,
///         budget: &Budget,
///         _counter: &dyn memory_core::TokenCounter,
///     ) -> Result<memory_core::TrimResult, memory_core::MemoryError> {
///         Ok(memory_core::TrimResult::unchanged(history, budget))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let m = [
///     Message::user("old"),
///     Message::assistant("old answer"),
///     Message::user("new"),
///     Message::assistant("hi"),
/// ];
/// let history = History::new(&m, &[1, 3, 1, 1]).unwrap();
/// let budget = Budget::tokens(3);
/// let result = KeepAll.trim_with_counts(&history, &budget, &CharTokenCounter).await.unwrap();
/// let report = Audit::new(&history, budget).count_and_check(&result, &CharTokenCounter).await.unwrap();
/// // KeepAll says it does not fit, though its floor (the current question
/// // and the newest step, 2 tokens) would.
/// assert_eq!(report.breaches.len(), 1);
/// assert!(report.breaches[0].to_string().contains("does not fit"));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Audit<'a> {
    history: &'a History<'a>,
    budget: Budget,
    given: Given,
    reply: Reply,
}

impl<'a> Audit<'a> {
    /// An audit of trims of `history` (its messages, counts and protected
    /// indices) at `budget`; the strategy was given `history` itself and
    /// its model's reply, if any, is not known to be bad.
    ///
    /// ```
    /// # use memory_core::{audit::Audit, Budget, History};
    /// let h = History::new(&[], &[]).unwrap();
    /// let _ = Audit::new(&h, Budget::default());
    /// ```
    pub fn new(history: &'a History<'a>, budget: Budget) -> Self {
        Self {
            history,
            budget,
            given: Given::History,
            reply: Reply::Any,
        }
    }

    /// Says what the strategy was given (see [`Given`]).
    ///
    /// ```
    /// # use memory_core::{audit::{Audit, Given}, Budget, History};
    /// let h = History::new(&[], &[]).unwrap();
    /// let _ = Audit::new(&h, Budget::default()).given(Given::View);
    /// ```
    pub fn given(mut self, given: Given) -> Self {
        self.given = given;
        self
    }

    /// Says what the model replied (see [`Reply`]).
    ///
    /// ```
    /// # use memory_core::{audit::{Audit, Reply}, Budget, History};
    /// let h = History::new(&[], &[]).unwrap();
    /// let _ = Audit::new(&h, Budget::default()).replied(Reply::Bad);
    /// ```
    pub fn replied(mut self, reply: Reply) -> Self {
        self.reply = reply;
        self
    }

    /// Checks `result`, whose messages the caller's counter counts as
    /// `counted` (one count per message).
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidTranscript`] when `counted` is not one count
    /// per result message.
    ///
    /// ```
    /// use memory_core::audit::{Audit, Rule};
    /// use memory_core::{Budget, History, Message, TrimResult};
    /// let m = [Message::user("hi")];
    /// let history = History::new(&m, &[1]).unwrap();
    /// let mut result = TrimResult::unchanged(&history, &Budget::tokens(5));
    /// result.counts = vec![0];
    /// let report = Audit::new(&history, Budget::tokens(5)).check(&result, &[1]).unwrap();
    /// assert_eq!(report.breaches[0].rule(), Rule::Counts);
    /// ```
    pub fn check(&self, result: &TrimResult, counted: &[usize]) -> Result<Report, MemoryError> {
        // Covered messages may be shown where they stand: before the
        // view's summary.
        let expanded = Expanded::of(self.history);
        let whole = expanded.as_ref().map(Expanded::history);
        let history = whole.as_ref().unwrap_or(self.history);
        let shown = &result.messages;
        let mut breaches: Vec<Breach> = validate(shown).into_iter().map(Breach::Pairing).collect();
        let (sources, stray) = sources::trace(history.messages(), shown);
        breaches.extend(stray);
        let floor = structure::floor(history);
        let made = sources.contains(&Source::Made);
        breaches.extend(kept::protected(history, result, &sources));
        let floor_shown = kept::floor_shown(history, &floor, shown, made);
        breaches.extend(floor_shown.breaches);
        // The result's own floor is what it marks protected: its first user
        // message is the task only when the result says so.
        let own = History::new(shown, counted)?
            .forget_task()
            .protect(&result.protected);
        let tokens = own.total();
        let fit = Fit {
            budget: self.budget.max_tokens,
            fits: result.fits,
            tokens,
            floor: floor.tokens,
            own_floor: structure::floor(&own).tokens,
            eased: floor_shown.shrunk || kept::merges_a_summary(history, &sources),
            given: self.given,
        };
        breaches.extend(fit.breach());
        breaches.extend(fit::counts(result, counted));
        if self.reply == Reply::Bad {
            breaches.extend(lost::after_bad_reply(result, &sources));
        }
        Ok(Report {
            floor_tokens: floor.tokens,
            tokens,
            breaches,
        })
    }

    /// Counts `result`'s messages with `counter`, then [`check`](Audit::check)s it.
    ///
    /// # Errors
    ///
    /// The counter's errors.
    ///
    /// ```
    /// use memory_core::audit::Audit;
    /// use memory_core::{Budget, CharTokenCounter, History, Message, TrimResult};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let m = [Message::user("hello")];
    /// let history = History::new(&m, &[2]).unwrap();
    /// let result = TrimResult::unchanged(&history, &Budget::tokens(5));
    /// let audit = Audit::new(&history, Budget::tokens(5));
    /// assert!(audit.count_and_check(&result, &CharTokenCounter).await.unwrap().is_clean());
    /// # });
    /// ```
    pub async fn count_and_check(
        &self,
        result: &TrimResult,
        counter: &dyn TokenCounter,
    ) -> Result<Report, MemoryError> {
        let counted = count_messages(counter, &result.messages).await?;
        self.check(result, &counted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, ToolCall};
    use crate::summary;

    fn transcript() -> Vec<Message> {
        vec![
            Message::system("rules"),
            Message::user("fix it"),
            Message::assistant_with_tools(
                "",
                vec![
                    ToolCall::new("a", "read", "{}"),
                    ToolCall::new("b", "read", "{}"),
                ],
            ),
            Message::tool_result("a", "aaaa"),
            Message::tool_result("b", "bbbb"),
        ]
    }

    fn result(
        messages: &[Message],
        counts: &[usize],
        protected: &[usize],
        fits: bool,
    ) -> TrimResult {
        TrimResult {
            messages: messages.to_vec(),
            counts: counts.to_vec(),
            protected: protected.to_vec(),
            replace: false,
            fits,
            write_back: None,
            covered: Default::default(),
            diagnostics: Default::default(),
        }
    }

    /// The `memory` command's audit: the transcript with its prompt
    /// protected (and its task, by default), a context shown from a view
    /// of it.
    fn replayed(context: &[Message], counts: &[usize], fits: bool, budget: usize) -> Report {
        let m = transcript();
        let history = History::new(&m, &[5; 5]).unwrap().protect(&[0]);
        let protected: Vec<usize> = (0..context.len())
            .filter(|&k| {
                context[k] == m[0] || context[k] == m[1] || summary::is_summary(&context[k])
            })
            .collect();
        Audit::new(&history, Budget::tokens(budget))
            .given(Given::View)
            .check(&result(context, counts, &protected, fits), counts)
            .unwrap()
    }

    fn has(report: &Report, what: impl Fn(&Breach) -> bool) -> bool {
        report.breaches.iter().any(what)
    }

    #[test]
    fn a_faithful_trim_is_clean() {
        let m = transcript();
        let report = replayed(&m, &[5; 5], true, 25);
        assert!(report.is_clean(), "{:?}", report.breaches);
        assert_eq!((report.floor_tokens, report.tokens), (25, 25));
        let report = replayed(&m, &[5; 5], false, 24);
        assert!(report.is_clean(), "{:?}", report.breaches);
    }

    #[test]
    fn each_broken_invariant_is_reported() {
        let m = transcript();
        // A split step (a result without its sibling) and a missing prompt.
        let split = [m[1].clone(), m[2].clone(), m[3].clone()];
        let report = replayed(&split, &[5; 3], true, 100);
        assert!(has(&report, |b| matches!(b, Breach::Pairing(_))));
        assert!(has(&report, |b| *b == Breach::FloorMissing { start: 0, end: 1 }));
        assert!(has(&report, |b| matches!(
            b,
            Breach::ProtectedShed { index: 0, .. }
        )));
        // Reordered.
        let mut reordered = m.clone();
        reordered.swap(0, 1);
        let report = replayed(&reordered, &[5; 5], true, 100);
        assert!(has(&report, |b| matches!(
            b,
            Breach::OutOfOrder { index: 1, .. }
        )));
        assert!(report.breaches[0].to_string().contains("out of order"));
        // Invented.
        let mut invented = m.clone();
        invented.insert(2, Message::assistant("I made this up"));
        let report = replayed(&invented, &[5; 6], true, 100);
        assert!(has(&report, |b| matches!(
            b,
            Breach::Invented { index: 2, .. }
        )));
        // Silent overflow, and giving up while its floor fits.
        let report = replayed(&m, &[5; 5], true, 20);
        assert!(has(&report, |b| matches!(
            b,
            Breach::OverBudget {
                tokens: 25,
                budget: 20
            }
        )));
        let report = replayed(&m, &[5; 5], false, 30);
        assert!(has(&report, |b| matches!(b, Breach::FalseNoFit { .. })));
        // Counts that are not the counter's.
        let mut wrong = result(&m, &[5; 5], &[0, 1], true);
        wrong.counts[3] = 1;
        let history = History::new(&m, &[5; 5]).unwrap().protect(&[0]);
        let report = Audit::new(&history, Budget::tokens(30))
            .check(&wrong, &[5; 5])
            .unwrap();
        assert_eq!(
            report.breaches,
            vec![Breach::WrongCount {
                index: 3,
                reported: 1,
                counted: 5
            }]
        );
    }

    #[test]
    fn summaries_may_be_added() {
        let m = transcript();
        let mut context = vec![m[0].clone(), summary::message("earlier work")];
        context.extend_from_slice(&m[1..]);
        let report = replayed(&context, &[5; 6], true, 30);
        assert!(report.is_clean(), "{:?}", report.breaches);
    }

    #[test]
    fn a_summary_merged_into_a_new_one_is_not_shed_unless_the_reply_was_bad() {
        let m = [summary::message("old"), Message::user("q")];
        let history = History::new(&m, &[3, 1]).unwrap();
        let shown = [summary::message("old and more"), Message::user("q")];
        let mut merged = result(&shown, &[4, 1], &[0], true);
        merged.replace = true;
        let audit = Audit::new(&history, Budget::tokens(5));
        assert!(audit.check(&merged, &[4, 1]).unwrap().is_clean());
        let report = audit.replied(Reply::Bad).check(&merged, &[4, 1]).unwrap();
        assert_eq!(
            report.breaches,
            vec![
                Breach::WroteBackAfterBadReply { messages: 2 },
                Breach::SummaryFromBadReply { index: 0 }
            ]
        );
    }

    #[test]
    fn fitting_under_a_floor_takes_a_shrunk_floor() {
        let call = Message::assistant_with_tools("", vec![ToolCall::new("c", "cat", "{}")]);
        let m = [
            Message::user("q"),
            call.clone(),
            Message::tool_result("c", "x".repeat(40)),
        ];
        let history = History::new(&m, &[1, 2, 10]).unwrap();
        let audit = Audit::new(&history, Budget::tokens(5));
        // The newest tool output cut: under the floor, honestly.
        let cut = [
            m[0].clone(),
            call.clone(),
            Message::tool_result("c", "[cut]"),
        ];
        assert!(
            audit
                .check(&result(&cut, &[1, 2, 2], &[0], true), &[1, 2, 2])
                .unwrap()
                .is_clean()
        );
        // The newest step dropped and a claim to fit.
        let report = audit
            .check(&result(&m[..1], &[1], &[0], true), &[1])
            .unwrap();
        assert!(has(&report, |b| *b == Breach::FloorMissing { start: 1, end: 3 }));
        assert!(has(&report, |b| *b
            == Breach::FitsOverFloor {
                floor: 13,
                budget: 5
            }));
    }

    #[test]
    fn a_strategy_given_the_history_must_fit_when_its_floor_does() {
        let m = [
            Message::user("old"),
            Message::assistant("old answer"),
            Message::user("new"),
            Message::assistant("ok"),
        ];
        // The old round may go (the task forgotten): this is about fit.
        let history = History::new(&m, &[5, 5, 1, 1]).unwrap().forget_task();
        // A summary bigger than the budget in place of the old round.
        let shown = [
            summary::message("a long summary"),
            m[2].clone(),
            m[3].clone(),
        ];
        let bloated = result(&shown, &[10, 1, 1], &[0], false);
        let exact = Audit::new(&history, Budget::tokens(3));
        let report = exact.check(&bloated, &[10, 1, 1]).unwrap();
        assert_eq!(
            report.breaches,
            vec![Breach::OverBudgetThoughFloorFits {
                floor: 2,
                tokens: 12,
                budget: 3
            }]
        );
        // Given a view that already held that summary, it could not do better.
        let report = exact
            .given(Given::View)
            .check(&bloated, &[10, 1, 1])
            .unwrap();
        assert!(report.is_clean(), "{:?}", report.breaches);
    }

    #[test]
    fn the_task_is_kept_unless_forgotten() {
        let m = [
            Message::user("the task"),
            Message::assistant("step"),
            Message::user("go on"),
        ];
        // The task shed: a breach while the history protects it.
        let shown = &m[1..];
        let history = History::new(&m, &[4, 2, 1]).unwrap();
        let report = Audit::new(&history, Budget::tokens(3))
            .check(&result(shown, &[2, 1], &[], true), &[2, 1])
            .unwrap();
        assert!(has(&report, |b| *b
            == Breach::ProtectedShed {
                index: 0,
                role: "user"
            }));
        assert!(has(&report, |b| *b == Breach::FloorMissing { start: 0, end: 1 }));
        // Kept but not marked protected.
        let report = Audit::new(&history, Budget::tokens(10))
            .check(&result(&m, &[4, 2, 1], &[], true), &[4, 2, 1])
            .unwrap();
        assert!(has(&report, |b| matches!(
            b,
            Breach::ProtectedMislabeled { .. }
        )));
        // Forgotten: the same trim is clean.
        let forgotten = History::new(&m, &[4, 2, 1]).unwrap().forget_task();
        let report = Audit::new(&forgotten, Budget::tokens(3))
            .check(&result(shown, &[2, 1], &[], true), &[2, 1])
            .unwrap();
        assert!(report.is_clean(), "{:?}", report.breaches);
    }

    #[test]
    fn without_a_token_limit_a_result_always_fits() {
        let m = [Message::user("q")];
        let history = History::new(&m, &[1]).unwrap();
        let report = Audit::new(&history, Budget::rounds(1))
            .check(&result(&m, &[1], &[0], false), &[1])
            .unwrap();
        assert_eq!(report.breaches, vec![Breach::NoFitWithoutLimit]);
        assert_eq!(Breach::NoFitWithoutLimit.rule().invariant(), 3);
    }
}
