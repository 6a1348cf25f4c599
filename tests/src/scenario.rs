//! [`Scenario`]: a conversation and the budgets it is trimmed at.

use memory_core::{Budget, structure};
use proptest::collection::vec;
use proptest::prelude::*;

use crate::conversation::{Case, cases};

/// A conversation and the seeds of its budgets.
///
/// ```
/// use memory_core::Message;
/// use memory_tests::conversation::Case;
/// use memory_tests::scenario::Scenario;
///
/// let case = Case::new(vec![Message::user("question"), Message::assistant("answer")], vec![]);
/// let scenario = Scenario { case, permille: vec![500], rounds: vec![1] };
/// assert!(scenario.budgets().contains(&memory_core::Budget::tokens(0)));
/// ```
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The conversation.
    pub case: Case,
    /// Token budgets as thousandths of the total, from 0 to above it.
    pub permille: Vec<u16>,
    /// Rounds limits (0 is taken as 1 by [`Budget`]).
    pub rounds: Vec<u8>,
}

/// Conversations with two drawn token fractions and two drawn rounds limits.
///
/// ```
/// use proptest::strategy::{Strategy, ValueTree};
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let s = memory_tests::scenario::scenarios().new_tree(&mut runner).unwrap().current();
/// assert!(!s.budgets().is_empty());
/// ```
pub fn scenarios() -> impl Strategy<Value = Scenario> {
    (cases(), vec(0u16..1300, 2), vec(0u8..5, 2)).prop_map(|(case, permille, rounds)| Scenario {
        case,
        permille,
        rounds,
    })
}

/// Scenarios whose conversation has been compacted: a drawn span folded
/// into a summary and kept as its covered set ([`Case::fold`]), so that the
/// view is trimmed with covered originals within reach.
///
/// ```
/// use proptest::strategy::{Strategy, ValueTree};
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let s = memory_tests::scenario::covered_scenarios().new_tree(&mut runner).unwrap().current();
/// assert!(!s.case.covered.is_empty());
/// ```
pub fn covered_scenarios() -> impl Strategy<Value = Scenario> {
    (scenarios(), 0usize..6, 1usize..40).prop_filter_map(
        "nothing to fold",
        |(scenario, start, len)| {
            let case = scenario.case.fold(start, len)?;
            Some(Scenario { case, ..scenario })
        },
    )
}

impl Scenario {
    /// Every budget to trim at: token budgets at 0, 1, around the floor,
    /// around the total and at the drawn fractions; rounds limits alone; and
    /// both together.
    ///
    /// ```
    /// use memory_core::{Budget, Message};
    /// use memory_tests::{conversation::Case, scenario::Scenario};
    /// let case = Case::new(vec![Message::user("abcd")], vec![]);
    /// let s = Scenario { case, permille: vec![], rounds: vec![2] };
    /// let budgets = s.budgets();
    /// assert!(budgets.contains(&Budget::tokens(2)));
    /// assert!(budgets.contains(&Budget::rounds(2)));
    /// assert!(budgets.contains(&Budget::both(1, 2)));
    /// ```
    pub fn budgets(&self) -> Vec<Budget> {
        let history = self.case.history();
        let floor = structure::floor(&history).tokens;
        // With covered originals, up to the whole of them in view.
        let total = history.total() + history.covered().total();
        let drawn: Vec<usize> = self
            .permille
            .iter()
            .map(|&p| total * usize::from(p) / 1000)
            .collect();
        let mut tokens = vec![
            0,
            1,
            floor.saturating_sub(1),
            floor,
            floor + 1,
            total.saturating_sub(1),
            total,
            total + 1,
        ];
        tokens.extend(&drawn);
        tokens.sort_unstable();
        tokens.dedup();
        let mut budgets: Vec<Budget> = tokens.into_iter().map(Budget::tokens).collect();
        let mut with_rounds = vec![floor, total];
        with_rounds.extend(&drawn);
        with_rounds.sort_unstable();
        with_rounds.dedup();
        for &r in &self.rounds {
            let r = usize::from(r);
            budgets.push(Budget::rounds(r));
            budgets.extend(with_rounds.iter().map(|&t| Budget::both(t, r)));
        }
        let mut seen = std::collections::HashSet::new();
        budgets.retain(|b| seen.insert(*b));
        budgets
    }
}
