//! Compaction in the background: the summary is requested off the hot path
//! and spliced in later, only onto the messages it summarized.
//!
//! ```text
//! turn N    history passes trigger_ratio x budget  -> spawn the request
//! turn N+1  within budget                          -> unchanged, no wait
//! turn M    over budget, summary not ready         -> WindowDrop's view
//! turn M+1  over budget, summary ready             -> splice if the summarized
//!           messages are unchanged, else discard; then arm again
//! ```

use memory_core::{Budget, History, MemoryError, TokenCounter, TrimResult};

use crate::call::{self, Outcome};
use crate::covering::{Covering, Fingerprint};
use crate::settle::{Report, emit};
use crate::state::{FailedAt, Phase, Ready, Shared, lock};
use crate::turns::Plan;
use crate::{Compact, CompactEvent, Failure, FallbackReason, body};

/// Frees the background slot when the task ends without a summary, however
/// it ends: a failure, a timeout, a panic, or the task being dropped.
struct SlotGuard {
    state: Shared,
    generation: u64,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let mut state = lock(&self.state);
        if matches!(state.phase, Phase::InFlight(g) if g == self.generation) {
            state.phase = Phase::Idle;
        }
    }
}

impl Compact {
    /// One turn in background mode.
    pub(crate) async fn trim_background(
        &self,
        raw: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let known = self.known(raw, counter).await?;
        let work = Self::work(raw, &known)?;
        let mut reason = FallbackReason::NotDue;
        let mut spliced = None;
        if !budget.admits_tokens(work.total()) {
            let ready = {
                let mut state = lock(&self.state);
                match std::mem::replace(&mut state.phase, Phase::Idle) {
                    Phase::Ready(ready) => Some(ready),
                    other => {
                        reason = match other {
                            Phase::InFlight(_) => FallbackReason::Pending,
                            _ if tokio::runtime::Handle::try_current().is_err() => {
                                FallbackReason::NoRuntime
                            }
                            _ => FallbackReason::NotDue,
                        };
                        state.phase = other;
                        None
                    }
                }
            };
            if let Some(ready) = ready {
                reason = FallbackReason::Failed;
                if ready.covering.fingerprint.matches(&work) {
                    let applied = ready.covering.apply(&work, counter).await?;
                    if self.shrinks(raw, work.total(), &applied.result, ready.cost) {
                        let report = Report {
                            cost: ready.cost,
                            from_hook: ready.from_hook,
                            messages: ready.covering.region.iter().map(|r| r.len()).sum(),
                        };
                        let accepted = self.accept(raw, applied.result, budget, Some(report))?;
                        // Remembered even when it cannot be shown at this
                        // budget: it is not paid for again.
                        let restated = match &known {
                            Some((base, base_applied)) => {
                                ready.covering.over(base, base_applied, raw)
                            }
                            None => Some(ready.covering),
                        };
                        self.remember(restated);
                        spliced = Some(match accepted {
                            Some(result) => result,
                            None => self.fallback_unsummarized(raw, budget)?,
                        });
                    } else {
                        // Not asked again until the threshold is passed
                        // again; the turn falls back below.
                        self.back_off(&work, &Plan::new(&work, self.keep_verbatim));
                    }
                } else {
                    self.emit(CompactEvent::Failed {
                        tokens_before: raw.total(),
                        failure: Failure::Stale,
                        cost: ready.cost,
                    });
                }
            }
        }
        let result = match spliced {
            Some(result) => result,
            None => self.settle_known(raw, known, budget, reason)?,
        };
        // The next request summarizes what will be stored: the compacted
        // history when this result materializes, else the history as given
        // with the summaries already known applied.
        match result.to_store() {
            Some(stored) => self.arm(&stored.as_history()?, budget),
            None => match self.known(raw, counter).await? {
                Some((_, applied)) => self.arm(&applied.result.as_history()?, budget),
                None => self.arm(raw, budget),
            },
        }
        Ok(result)
    }

    /// Starts a background summary of `stored` when it is past the trigger,
    /// has enough new material and the slot is free.
    fn arm(&self, stored: &History<'_>, budget: &Budget) {
        let Some(max) = budget.max_tokens else {
            return;
        };
        if (stored.total() as f64) <= f64::from(self.trigger_ratio) * max as f64 {
            return;
        }
        if !matches!(lock(&self.state).phase, Phase::Idle) {
            return;
        }
        let plan = Plan::new(stored, self.keep_verbatim);
        let least = self.summarise_at_tokens.min(max / 4).max(1);
        if !plan.has_new() || plan.new_tokens < least || self.backed_off(stored, &plan) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let mut state = lock(&self.state);
            if !state.warned_no_runtime {
                state.warned_no_runtime = true;
                tracing::warn!(
                    target: "memory_compact",
                    "background compaction needs a tokio runtime and there is none here: every turn over the budget drops its oldest history from view instead; trim inside a runtime, or turn background mode off"
                );
            }
            return;
        };
        let job = self.prepare(stored, &plan, None, false, true);
        let Some(last) = plan.region.last() else {
            return;
        };
        let fingerprint = Fingerprint::of(stored, last.end);
        let region = plan.region.clone();
        let new_tokens = plan.new_tokens;
        let tokens_before = stored.total();

        let generation = {
            let mut state = lock(&self.state);
            if !matches!(state.phase, Phase::Idle) {
                return;
            }
            state.generation += 1;
            state.phase = Phase::InFlight(state.generation);
            state.generation
        };
        self.emit(CompactEvent::Started {
            tokens_before,
            messages: plan.folded(),
            tokens: new_tokens,
            split: plan.is_split(),
            background: true,
        });

        let provider = self.provider.clone();
        let hook = self.hook.clone();
        let observer = self.observer.clone();
        let state = self.state.clone();
        let policy = self.policy(true);
        let task = runtime.spawn(async move {
            let _slot = SlotGuard {
                state: state.clone(),
                generation,
            };
            let outcome = call::run(&job, &*provider, hook.as_deref(), policy).await;
            match outcome {
                Outcome::Summary {
                    text,
                    cost,
                    from_hook,
                } => {
                    let files = job.preparation.files;
                    let covering = Covering {
                        fingerprint,
                        region,
                        message: body::message(&text, &files),
                        files,
                    };
                    let mut state = lock(&state);
                    if matches!(state.phase, Phase::InFlight(g) if g == generation) {
                        state.phase = Phase::Ready(Box::new(Ready {
                            covering,
                            cost,
                            from_hook,
                        }));
                    }
                }
                Outcome::Declined => {
                    emit(observer.as_ref(), CompactEvent::Declined { tokens_before });
                }
                Outcome::Failed { failure, cost } => {
                    lock(&state).failed = Some(FailedAt {
                        fingerprint,
                        new_tokens,
                    });
                    emit(
                        observer.as_ref(),
                        CompactEvent::Failed {
                            tokens_before,
                            failure,
                            cost,
                        },
                    );
                }
            }
        });
        lock(&self.state).task = Some(task);
    }
}
