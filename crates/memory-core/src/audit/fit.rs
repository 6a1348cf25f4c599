//! Invariant 3: the result fits whenever the floor fits, `fits` says so
//! honestly, and the counts are the counter's.

use crate::audit::{Breach, Given};
use crate::strategy::TrimResult;

/// What the fit rules look at.
pub(crate) struct Fit {
    /// The budget's token limit.
    pub budget: Option<usize>,
    /// The result's verdict.
    pub fits: bool,
    /// The result's tokens, counted.
    pub tokens: usize,
    /// Tokens of the history's floor.
    pub floor: usize,
    /// Tokens of the result's own floor (its protected messages and
    /// summaries, current question and newest step).
    pub own_floor: usize,
    /// Whether the floor is shown shrunk or an earlier summary was merged
    /// into a new one: the two ways a result can be under a floor it kept.
    pub eased: bool,
    /// What the strategy was given.
    pub given: Given,
}

impl Fit {
    /// What breaks the fit rules, if anything.
    pub(crate) fn breach(&self) -> Option<Breach> {
        let Some(budget) = self.budget else {
            return (!self.fits).then_some(Breach::NoFitWithoutLimit);
        };
        let tokens = self.tokens;
        if self.fits && tokens > budget {
            Some(Breach::OverBudget { tokens, budget })
        } else if !self.fits && self.own_floor <= budget {
            Some(Breach::FalseNoFit {
                floor: self.own_floor,
                tokens,
                budget,
            })
        } else if !self.fits && self.given == Given::History && self.floor <= budget {
            Some(Breach::OverBudgetThoughFloorFits {
                floor: self.floor,
                tokens,
                budget,
            })
        } else if self.fits && self.floor > budget && !self.eased {
            Some(Breach::FitsOverFloor {
                floor: self.floor,
                budget,
            })
        } else {
            None
        }
    }
}

/// One count per message, each the counter's (`counted`).
pub(crate) fn counts(result: &TrimResult, counted: &[usize]) -> Option<Breach> {
    if result.counts.len() != result.messages.len() {
        return Some(Breach::CountsLength {
            counts: result.counts.len(),
            messages: result.messages.len(),
        });
    }
    let index = result
        .counts
        .iter()
        .zip(counted)
        .position(|(a, b)| a != b)?;
    Some(Breach::WrongCount {
        index,
        reported: result.counts[index],
        counted: counted[index],
    })
}
