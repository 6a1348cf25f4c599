//! [`Report`]: what an audit found.

use crate::audit::{Breach, Rule};

/// What an [`Audit`](crate::audit::Audit) found: the breaches, and the
/// figures it measured on the way.
///
/// ```
/// use memory_core::audit::{Audit, Rule};
/// use memory_core::{Budget, History, Message, TrimResult};
///
/// let m = [Message::user("hi")];
/// let history = History::new(&m, &[1]).unwrap();
/// let result = TrimResult::unchanged(&history, &Budget::tokens(10));
/// let report = Audit::new(&history, Budget::tokens(10)).check(&result, &[1]).unwrap();
/// assert!(report.is_clean());
/// assert_eq!((report.floor_tokens, report.tokens), (1, 1));
/// assert_eq!(report.breaches_of(Rule::Fit).count(), 0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// Tokens of the history's floor.
    pub floor_tokens: usize,
    /// The result's tokens, as the counter counts them.
    pub tokens: usize,
    /// Every breach found; empty when the result keeps the invariants.
    pub breaches: Vec<Breach>,
}

impl Report {
    /// Whether nothing was found.
    ///
    /// ```
    /// # use memory_core::audit::Audit;
    /// # use memory_core::{Budget, History, Message, TrimResult};
    /// # let m = [Message::user("hi")];
    /// # let history = History::new(&m, &[1]).unwrap();
    /// let result = TrimResult::unchanged(&history, &Budget::tokens(0));
    /// // Says it does not fit, though its floor (1 token) is over the budget of 0: honest.
    /// assert!(Audit::new(&history, Budget::tokens(0)).check(&result, &[1]).unwrap().is_clean());
    /// ```
    pub fn is_clean(&self) -> bool {
        self.breaches.is_empty()
    }

    /// The breaches of one rule.
    ///
    /// ```
    /// # use memory_core::audit::{Audit, Rule};
    /// # use memory_core::{Budget, History, Message, TrimResult};
    /// # let m = [Message::user("hi")];
    /// # let history = History::new(&m, &[1]).unwrap();
    /// let result = TrimResult::unchanged(&history, &Budget::tokens(10));
    /// let report = Audit::new(&history, Budget::tokens(10)).check(&result, &[5]).unwrap();
    /// assert_eq!(report.breaches_of(Rule::Counts).count(), 1);
    /// ```
    pub fn breaches_of(&self, rule: Rule) -> impl Iterator<Item = &Breach> + '_ {
        self.breaches.iter().filter(move |b| b.rule() == rule)
    }
}
