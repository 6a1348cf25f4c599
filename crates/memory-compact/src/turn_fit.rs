//! How a turn's result is fitted to the budget and reported: a compacted
//! history is fitted (or refused when the summary itself cannot fit), a
//! history without a summary falls back to `WindowDrop`'s projection, and
//! every step is told to the observer and to `tracing`.

use memory_core::{Budget, History, MemoryError, TrimResult, structure};
use memory_window::WindowDrop;

use crate::covering::Covering;
use crate::settings::Settings;
use crate::summary_state::{Known, SummaryState};
use crate::{CompactCost, CompactEvent, Failure, FallbackReason};

/// What a compacted history cost, for its `Completed` event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Report {
    pub cost: CompactCost,
    pub from_hook: bool,
    pub messages: usize,
}

/// A summary made for a turn: the compacted history, its cost, and its
/// covering restated for the history the turn was given.
#[derive(Debug)]
pub(crate) struct Compacted {
    pub result: TrimResult,
    pub report: Report,
    pub covering: Option<Covering>,
}

/// Fits one turn's result: `raw` (the history as given) at `budget`.
pub(crate) struct TurnFit<'a, 'h> {
    settings: &'a Settings,
    raw: &'a History<'h>,
    budget: &'a Budget,
}

impl<'a, 'h> TurnFit<'a, 'h> {
    pub fn new(settings: &'a Settings, raw: &'a History<'h>, budget: &'a Budget) -> Self {
        TurnFit {
            settings,
            raw,
            budget,
        }
    }

    /// Reports a failure of this turn.
    pub fn failed(&self, failure: Failure, cost: CompactCost) {
        self.settings.emit(CompactEvent::Failed {
            tokens_before: self.raw.total(),
            failure,
            cost,
        });
    }

    /// Whether `compacted` is smaller than the `before` tokens it was made
    /// from; a summary no shorter than what it covers is refused, and the
    /// refusal reported.
    pub fn shrinks(&self, before: usize, compacted: &TrimResult, cost: CompactCost) -> bool {
        let after = compacted.tokens();
        if after < before {
            return true;
        }
        self.failed(Failure::NotSmaller { before, after }, cost);
        false
    }

    /// Shows `compacted` and remembers its summary in `summary_state`, even
    /// when it cannot be shown at this budget: it is not paid for again.
    ///
    /// # Errors
    ///
    /// Never for results built by this crate.
    pub fn land(
        &self,
        compacted: Compacted,
        summary_state: &SummaryState,
    ) -> Result<TrimResult, MemoryError> {
        let accepted = self.accept(compacted.result, Some(compacted.report))?;
        summary_state.remember(compacted.covering);
        match accepted {
            Some(result) => Ok(result),
            None => self.unsummarized(),
        }
    }

    /// Fits a compacted history to the budget: as it is when it fits, else
    /// `WindowDrop`'s projection of it with the compacted history to store.
    /// `None` (reported as a failure) when the summary makes what may never
    /// be shed exceed a budget that the turn's own floor fits: shown, the
    /// summary would then push out what must stay.
    ///
    /// # Errors
    ///
    /// Never for results built by this crate.
    pub fn accept(
        &self,
        mut compacted: TrimResult,
        report: Option<Report>,
    ) -> Result<Option<TrimResult>, MemoryError> {
        let view = {
            let history = compacted.as_history()?;
            if let Some(failure) = self.too_large(&history) {
                self.failed(failure, report.map(|r| r.cost).unwrap_or_default());
                return Ok(None);
            }
            WindowDrop::new().window(&history, self.budget)
        };
        compacted.replace = true;
        let result = if view.messages == compacted.messages {
            compacted.fits = view.fits;
            compacted
        } else {
            compacted.fits = self.budget.admits_tokens(compacted.tokens());
            let mut view = view;
            view.write_back = Some(Box::new(compacted));
            view
        };
        if let Some(report) = report {
            self.settings.emit(CompactEvent::Completed {
                tokens_before: self.raw.total(),
                tokens_after: result.tokens(),
                messages: report.messages,
                cost: report.cost,
                from_hook: report.from_hook,
            });
        }
        Ok(Some(result))
    }

    /// Why `compacted` may not be shown: its floor exceeds a budget that
    /// the turn's own floor fits.
    fn too_large(&self, compacted: &History<'_>) -> Option<Failure> {
        let max = self.budget.max_tokens?;
        let floor = structure::floor(compacted).tokens;
        (floor > max && structure::floor(self.raw).tokens <= max)
            .then_some(Failure::TooLarge { floor, budget: max })
    }

    /// The history as given when it fits, else `WindowDrop`'s projection
    /// of it: nothing replaced, nothing stored.
    pub fn fallback(&self, reason: FallbackReason) -> TrimResult {
        let view = WindowDrop::new().window(self.raw, self.budget);
        if view.messages.len() != self.raw.len() {
            self.fell_back(&view, reason);
        }
        view
    }

    /// Reports a turn fitted by dropping history from view.
    fn fell_back(&self, view: &TrimResult, reason: FallbackReason) {
        self.settings.emit(CompactEvent::Fallback {
            tokens_before: self.raw.total(),
            tokens_after: view.tokens(),
            reason,
        });
    }

    /// The view when a summary cannot be shown beside the floor at this
    /// budget: `WindowDrop`'s projection, with its older, not yet
    /// summarized part held to the threshold. Trimmed again, such a view
    /// is then not summarized (a summary of the smaller view could fit, and
    /// would change what was shown).
    ///
    /// # Errors
    ///
    /// Never for results built by this crate.
    pub fn unsummarized(&self) -> Result<TrimResult, MemoryError> {
        let threshold = self.settings.summarize_at_tokens();
        let mut view = WindowDrop::new().window(self.raw, self.budget);
        // Each round drops at least one more step; the bound is a guard.
        for _ in 0..64 {
            let due = self.settings.plan(&view.as_history()?).new_tokens;
            if due <= threshold {
                break;
            }
            let limit = view.tokens() - (due - threshold).min(view.tokens());
            let tighter = Budget {
                max_tokens: Some(limit),
                ..*self.budget
            };
            let next = WindowDrop::new().window(self.raw, &tighter);
            if next.messages.len() >= view.messages.len() {
                break;
            }
            view = next;
        }
        view.fits = self.budget.admits_tokens(view.tokens());
        if view.messages.len() != self.raw.len() {
            self.fell_back(&view, FallbackReason::Failed);
        }
        Ok(view)
    }

    /// The turn without a new summary: the remembered one's compacted
    /// history fitted to the budget, or the fallback when there is none, or
    /// when it does not fit this budget (it stays remembered, for a larger
    /// one).
    ///
    /// # Errors
    ///
    /// Never for results built by this crate.
    pub fn without_new(
        &self,
        known: Option<Known>,
        reason: FallbackReason,
    ) -> Result<TrimResult, MemoryError> {
        let Some(known) = known else {
            return Ok(self.fallback(reason));
        };
        match self.accept(known.into_result(), None)? {
            Some(result) => Ok(result),
            None => self.unsummarized(),
        }
    }
}
