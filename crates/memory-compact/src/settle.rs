//! How a turn's result is settled and reported: a compacted history is
//! fitted to the budget (or refused when the summary itself cannot fit),
//! a history without a summary falls back to `WindowDrop`'s projection,
//! and every step is told to the observer and to `tracing`.

use std::sync::Arc;

use memory_core::{Budget, History, MemoryError, TokenCounter, TrimResult, structure};
use memory_window::WindowDrop;

use crate::covering::{Applied, Covering, Fingerprint, identity};
use crate::state::{FailedAt, lock};
use crate::turns::Plan;
use crate::{Compact, CompactCost, CompactEvent, CompactObserver, Failure, FallbackReason};

/// What a compacted history cost, for its `Completed` event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Report {
    pub cost: CompactCost,
    pub from_hook: bool,
    pub messages: usize,
}

/// Tells `event` to the observer and to `tracing`.
pub(crate) fn emit(observer: Option<&Arc<dyn CompactObserver>>, event: CompactEvent) {
    match &event {
        CompactEvent::Started {
            tokens_before,
            messages,
            tokens,
            split,
            background,
        } => tracing::debug!(
            target: "memory_compact",
            tokens_before, messages, tokens, split, background,
            "summarizing older history"
        ),
        CompactEvent::Completed {
            tokens_before,
            tokens_after,
            messages,
            cost,
            from_hook,
        } => tracing::info!(
            target: "memory_compact",
            tokens_before, tokens_after, messages, from_hook,
            calls = cost.calls,
            input_tokens = cost.input_tokens,
            output_tokens = cost.output_tokens,
            "older history replaced by a summary"
        ),
        CompactEvent::Declined { tokens_before } => tracing::info!(
            target: "memory_compact",
            tokens_before,
            "a before_compaction hook declined the compaction"
        ),
        CompactEvent::Failed {
            tokens_before,
            failure,
            cost,
        } => tracing::warn!(
            target: "memory_compact",
            tokens_before,
            calls = cost.calls,
            input_tokens = cost.input_tokens,
            output_tokens = cost.output_tokens,
            "no summary used, history kept: {failure}"
        ),
        CompactEvent::Fallback {
            tokens_before,
            tokens_after,
            reason,
        } => tracing::debug!(
            target: "memory_compact",
            tokens_before, tokens_after, ?reason,
            "oldest history dropped from view"
        ),
    }
    if let Some(observer) = observer {
        observer.on_event(&event);
    }
}

impl Compact {
    /// Tells `event` to this strategy's observer.
    pub(crate) fn emit(&self, event: CompactEvent) {
        emit(self.observer.as_ref(), event);
    }

    /// The summaries of the last materializing result applied to `raw`,
    /// when it starts with the messages they replaced (that result was not
    /// written back).
    ///
    /// # Errors
    ///
    /// Counting the summary failed.
    pub(crate) async fn known(
        &self,
        raw: &History<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<Option<(Covering, Applied)>, MemoryError> {
        let covering = {
            let state = lock(&self.state);
            match &state.covered {
                Some(c) if c.fingerprint.matches(raw) => c.clone(),
                _ => return Ok(None),
            }
        };
        let applied = covering.apply(raw, counter).await?;
        Ok(Some((covering, applied)))
    }

    /// The history a turn works on: `raw` with the summary already known
    /// applied, when there is one.
    pub(crate) fn work<'w>(
        raw: &History<'w>,
        known: &'w Option<(Covering, Applied)>,
    ) -> Result<History<'w>, MemoryError> {
        match known {
            Some((_, applied)) => applied.result.as_history(),
            None => Ok(raw.clone()),
        }
    }

    /// Remembers the summaries of a materializing result (restated for the
    /// history the call was given) and the files of the newest.
    pub(crate) fn remember(&self, covering: Option<Covering>) {
        let mut state = lock(&self.state);
        if let Some(c) = &covering {
            state.files = Some((identity(&c.message), c.files.clone()));
        }
        state.covered = covering;
        state.failed = None;
    }

    /// Whether an attempt for `plan` of `work` must wait: the last one, for
    /// the same messages, failed, and the new material has not grown by the
    /// threshold since.
    pub(crate) fn backed_off(&self, work: &History<'_>, plan: &Plan) -> bool {
        let state = lock(&self.state);
        state.failed.is_some_and(|f| {
            plan.new_tokens < f.new_tokens.saturating_add(self.summarise_at_tokens)
                && f.fingerprint.matches(work)
        })
    }

    /// Records a failed attempt for `plan` of `work`.
    pub(crate) fn back_off(&self, work: &History<'_>, plan: &Plan) {
        let Some(last) = plan.region.last() else {
            return;
        };
        lock(&self.state).failed = Some(FailedAt {
            fingerprint: Fingerprint::of(work, last.end),
            new_tokens: plan.new_tokens,
        });
    }

    /// Whether `compacted` is smaller than the `before` tokens it was made
    /// from; a summary no shorter than what it covers is refused, and the
    /// refusal reported.
    pub(crate) fn shrinks(
        &self,
        raw: &History<'_>,
        before: usize,
        compacted: &TrimResult,
        cost: CompactCost,
    ) -> bool {
        let after = compacted.tokens();
        if after < before {
            return true;
        }
        self.emit(CompactEvent::Failed {
            tokens_before: raw.total(),
            failure: Failure::NotSmaller { before, after },
            cost,
        });
        false
    }

    /// Fits a compacted history (made from `raw`) to `budget`: as it is when
    /// it fits, else `WindowDrop`'s projection of it with the compacted
    /// history to store. `None` (reported as a failure) when the summary
    /// makes what may never be shed exceed a budget that `raw`'s floor fits:
    /// shown, the summary would then push out what must stay.
    ///
    /// # Errors
    ///
    /// Never for results built by this crate.
    pub(crate) fn accept(
        &self,
        raw: &History<'_>,
        mut compacted: TrimResult,
        budget: &Budget,
        report: Option<Report>,
    ) -> Result<Option<TrimResult>, MemoryError> {
        let view = {
            let history = compacted.as_history()?;
            if let Some(max) = budget.max_tokens {
                let floor = structure::floor(&history).tokens;
                if floor > max && structure::floor(raw).tokens <= max {
                    self.emit(CompactEvent::Failed {
                        tokens_before: raw.total(),
                        failure: Failure::TooLarge { floor, budget: max },
                        cost: report.map(|r| r.cost).unwrap_or_default(),
                    });
                    return Ok(None);
                }
            }
            WindowDrop::new().window(&history, budget)
        };
        compacted.replace = true;
        let result = if view.messages == compacted.messages {
            compacted.fits = view.fits;
            compacted
        } else {
            compacted.fits = budget.admits_tokens(compacted.tokens());
            let mut view = view;
            view.write_back = Some(Box::new(compacted));
            view
        };
        if let Some(report) = report {
            self.emit(CompactEvent::Completed {
                tokens_before: raw.total(),
                tokens_after: result.tokens(),
                messages: report.messages,
                cost: report.cost,
                from_hook: report.from_hook,
            });
        }
        Ok(Some(result))
    }

    /// `raw` as it is when it fits, else `WindowDrop`'s projection of it:
    /// nothing replaced, nothing stored.
    pub(crate) fn fallback(
        &self,
        raw: &History<'_>,
        budget: &Budget,
        reason: FallbackReason,
    ) -> TrimResult {
        let view = WindowDrop::new().window(raw, budget);
        if view.messages.len() != raw.len() {
            self.emit(CompactEvent::Fallback {
                tokens_before: raw.total(),
                tokens_after: view.tokens(),
                reason,
            });
        }
        view
    }

    /// `known`'s compacted history fitted to `budget`, or `raw`'s fallback
    /// when there is none, or when its summary does not fit this budget (it
    /// stays known, for a larger one).
    /// The view when a summary cannot be shown beside the floor at this
    /// budget: `WindowDrop`'s projection, with its older, not yet
    /// summarized part held to the threshold. Trimmed again, such a view
    /// is then not summarized (a summary of the smaller view could fit, and
    /// would change what was shown).
    ///
    /// # Errors
    ///
    /// Never for results built by this crate.
    pub(crate) fn fallback_unsummarized(
        &self,
        raw: &History<'_>,
        budget: &Budget,
    ) -> Result<TrimResult, MemoryError> {
        let mut view = WindowDrop::new().window(raw, budget);
        // Each round drops at least one more step; the bound is a guard.
        for _ in 0..64 {
            let due = {
                let shown = view.as_history()?;
                Plan::new(&shown, self.keep_verbatim).new_tokens
            };
            if due <= self.summarise_at_tokens {
                break;
            }
            let limit = view.tokens() - (due - self.summarise_at_tokens).min(view.tokens());
            let tighter = Budget {
                max_tokens: Some(limit),
                ..*budget
            };
            let next = WindowDrop::new().window(raw, &tighter);
            if next.messages.len() >= view.messages.len() {
                break;
            }
            view = next;
        }
        view.fits = budget.admits_tokens(view.tokens());
        if view.messages.len() != raw.len() {
            self.emit(CompactEvent::Fallback {
                tokens_before: raw.total(),
                tokens_after: view.tokens(),
                reason: FallbackReason::Failed,
            });
        }
        Ok(view)
    }

    pub(crate) fn settle_known(
        &self,
        raw: &History<'_>,
        known: Option<(Covering, Applied)>,
        budget: &Budget,
        reason: FallbackReason,
    ) -> Result<TrimResult, MemoryError> {
        if let Some((_, applied)) = known {
            if let Some(result) = self.accept(raw, applied.result, budget, None)? {
                return Ok(result);
            }
            return self.fallback_unsummarized(raw, budget);
        }
        Ok(self.fallback(raw, budget, reason))
    }
}
