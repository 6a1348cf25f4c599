//! [`Breach`]: one way a trim result breaks an invariant, and the [`Rule`]
//! it belongs to.

use std::fmt;

use crate::validate::Violation;

/// The rules an [`Audit`](crate::audit::Audit) checks, each part of one of
/// the workspace's invariants.
///
/// ```
/// use memory_core::audit::Rule;
/// assert_eq!(Rule::Kept.invariant(), 4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// Tool calls stay with all their results (invariant 1).
    Pairing,
    /// Order is kept and nothing is invented but summaries (invariant 2).
    Order,
    /// The result fits whenever the floor fits, and `fits` says so
    /// honestly (invariant 3).
    Fit,
    /// The result's token counts are one per message and the counter's
    /// (invariant 3's bookkeeping).
    Counts,
    /// Protected messages, summaries and the rest of the floor are never
    /// shed, and the result marks exactly them protected (invariant 4).
    Kept,
    /// After a bad model reply, nothing is written back and no summary is
    /// made (invariant 5).
    NothingLost,
}

impl Rule {
    /// The number of the invariant the rule is part of.
    ///
    /// ```
    /// assert_eq!(memory_core::audit::Rule::Counts.invariant(), 3);
    /// ```
    pub fn invariant(self) -> u8 {
        match self {
            Rule::Pairing => 1,
            Rule::Order => 2,
            Rule::Fit | Rule::Counts => 3,
            Rule::Kept => 4,
            Rule::NothingLost => 5,
        }
    }
}

/// One way a trim result breaks an invariant. Its text says what is wrong;
/// positions are indices into the result ("result message") or into the
/// audited history ("history message").
///
/// ```
/// use memory_core::audit::{Breach, Rule};
/// let b = Breach::OverBudget { tokens: 120, budget: 100 };
/// assert_eq!(b.rule(), Rule::Fit);
/// assert_eq!(b.to_string(), "the result says it fits, but holds 120 tokens, over the budget of 100");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Breach {
    /// The result is not a valid transcript.
    Pairing(Violation),
    /// A result message is in the history, but not after the one before it.
    OutOfOrder {
        /// Its position in the result.
        index: usize,
        /// Its role.
        role: &'static str,
        /// The history position the result had reached.
        after: usize,
    },
    /// A result message that is neither in the history nor a summary.
    Invented {
        /// Its position in the result.
        index: usize,
        /// Its role.
        role: &'static str,
    },
    /// The result says it fits but holds more than the budget.
    OverBudget {
        /// Its tokens, counted.
        tokens: usize,
        /// The token limit.
        budget: usize,
    },
    /// The history's floor fits the budget but the result does not.
    OverBudgetThoughFloorFits {
        /// Tokens of the history's floor.
        floor: usize,
        /// The result's tokens, counted.
        tokens: usize,
        /// The token limit.
        budget: usize,
    },
    /// The result says it does not fit, but its own floor does: it kept
    /// what it could have shed.
    FalseNoFit {
        /// Tokens of the result's own floor.
        floor: usize,
        /// The result's tokens, counted.
        tokens: usize,
        /// The token limit.
        budget: usize,
    },
    /// There is no token limit, yet the result says it does not fit.
    NoFitWithoutLimit,
    /// The result says it fits though the history's floor alone exceeds the
    /// budget and none of the floor was shown shrunk or merged into a new
    /// summary.
    FitsOverFloor {
        /// Tokens of the history's floor.
        floor: usize,
        /// The token limit.
        budget: usize,
    },
    /// The result has not one count per message.
    CountsLength {
        /// Counts reported.
        counts: usize,
        /// Messages in the result.
        messages: usize,
    },
    /// A count that is not the counter's.
    WrongCount {
        /// Position in the result.
        index: usize,
        /// The count the result reports.
        reported: usize,
        /// The counter's count.
        counted: usize,
    },
    /// A protected history message is not in the result.
    ProtectedShed {
        /// Its position in the history.
        index: usize,
        /// Its role.
        role: &'static str,
    },
    /// A protected history message is in the result, changed.
    ProtectedChanged {
        /// Its position in the history.
        index: usize,
        /// Its role.
        role: &'static str,
    },
    /// The result does not mark exactly its protected messages and
    /// summaries protected.
    ProtectedMislabeled {
        /// The indices it marks.
        reported: Vec<usize>,
        /// The indices of its protected messages and summaries.
        expected: Vec<usize>,
    },
    /// A step of the history's floor is not in the result whole.
    FloorMissing {
        /// First history position of the step.
        start: usize,
        /// One past its last.
        end: usize,
    },
    /// After a bad reply, the result writes back.
    WroteBackAfterBadReply {
        /// Messages it would store.
        messages: usize,
    },
    /// After a bad reply, the result holds a summary the history did not.
    SummaryFromBadReply {
        /// Its position in the result.
        index: usize,
    },
}

impl Breach {
    /// The rule it breaks.
    ///
    /// ```
    /// use memory_core::audit::{Breach, Rule};
    /// assert_eq!(Breach::NoFitWithoutLimit.rule(), Rule::Fit);
    /// ```
    pub fn rule(&self) -> Rule {
        match self {
            Breach::Pairing(_) => Rule::Pairing,
            Breach::OutOfOrder { .. } | Breach::Invented { .. } => Rule::Order,
            Breach::OverBudget { .. }
            | Breach::OverBudgetThoughFloorFits { .. }
            | Breach::FalseNoFit { .. }
            | Breach::NoFitWithoutLimit
            | Breach::FitsOverFloor { .. } => Rule::Fit,
            Breach::CountsLength { .. } | Breach::WrongCount { .. } => Rule::Counts,
            Breach::ProtectedShed { .. }
            | Breach::ProtectedChanged { .. }
            | Breach::ProtectedMislabeled { .. }
            | Breach::FloorMissing { .. } => Rule::Kept,
            Breach::WroteBackAfterBadReply { .. } | Breach::SummaryFromBadReply { .. } => {
                Rule::NothingLost
            }
        }
    }
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rule() {
            Rule::Pairing | Rule::Order => self.fmt_order(f),
            Rule::Fit => self.fmt_fit(f),
            Rule::Counts | Rule::Kept | Rule::NothingLost => self.fmt_kept(f),
        }
    }
}

// Each variant is written by the function its rule names; the fallbacks
// pass any other on, round the three, so every variant is written once.
impl Breach {
    fn fmt_order(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Breach::Pairing(v) => write!(f, "tool pairing broken: {v}"),
            Breach::OutOfOrder { index, role, after } => write!(
                f,
                "result message {index} ({role}) is out of order: in the history, but not after position {after}"
            ),
            Breach::Invented { index, role } => write!(
                f,
                "result message {index} ({role}) is invented: not in the history, and not a summary"
            ),
            other => other.fmt_fit(f),
        }
    }

    fn fmt_fit(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Breach::OverBudget { tokens, budget } => write!(
                f,
                "the result says it fits, but holds {tokens} tokens, over the budget of {budget}"
            ),
            Breach::OverBudgetThoughFloorFits {
                floor,
                tokens,
                budget,
            } => write!(
                f,
                "the floor fits ({floor} <= {budget} tokens) but the result holds {tokens}"
            ),
            Breach::FalseNoFit {
                floor,
                tokens,
                budget,
            } => write!(
                f,
                "the result says it does not fit, but its own floor is {floor} tokens, within the budget of {budget} (it holds {tokens})"
            ),
            Breach::NoFitWithoutLimit => {
                write!(
                    f,
                    "there is no token limit, yet the result says it does not fit"
                )
            }
            Breach::FitsOverFloor { floor, budget } => write!(
                f,
                "the result says it fits, but the floor alone is {floor} tokens, over the budget of {budget}, and none of it was shrunk or merged"
            ),
            other => other.fmt_kept(f),
        }
    }

    fn fmt_kept(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Breach::CountsLength { counts, messages } => write!(
                f,
                "the result has {counts} token counts for {messages} messages"
            ),
            Breach::WrongCount {
                index,
                reported,
                counted,
            } => write!(
                f,
                "the result counts message {index} as {reported} tokens; the counter says {counted}"
            ),
            Breach::ProtectedShed { index, role } => {
                write!(f, "protected history message {index} ({role}) was shed")
            }
            Breach::ProtectedChanged { index, role } => {
                write!(f, "protected history message {index} ({role}) was changed")
            }
            Breach::ProtectedMislabeled { reported, expected } => write!(
                f,
                "the result marks {reported:?} protected; its protected messages and summaries are {expected:?}"
            ),
            Breach::FloorMissing { start, end } => write!(
                f,
                "floor messages {start}..{end} (protected, current question or newest step) are not in the result whole"
            ),
            Breach::WroteBackAfterBadReply { messages } => write!(
                f,
                "a bad summary reply replaced history with {messages} messages"
            ),
            Breach::SummaryFromBadReply { index } => write!(
                f,
                "result message {index} is a summary made from a bad reply"
            ),
            other => other.fmt_order(f),
        }
    }
}
