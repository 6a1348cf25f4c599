//! Compaction in the foreground: the summary is made during the turn that
//! needs it, and on demand ([`compact_now`](crate::Compact::compact_now)).

use memory_core::{Budget, History, MemoryError, TokenCounter, TrimResult, summary};

use crate::call::{self, Job, Outcome};
use crate::covering::Covering;
use crate::prepare::{Compaction, prepare};
use crate::settings::{Mode, Settings, Trigger};
use crate::summary_state::{Base, FailedAt, SummaryState};
use crate::timing;
use crate::turn_fit::{Compacted, Report, TurnFit};
use crate::turns::Plan;
use crate::{CompactCost, CompactEvent, Failure, FallbackReason, body};

/// What one summary attempt came to.
enum Made {
    Compacted(Box<Compacted>),
    Declined,
    Failed,
}

/// Foreground compaction: `settings` and the summary state.
pub(crate) struct Foreground<'a> {
    settings: &'a Settings,
    summary_state: &'a SummaryState,
}

impl<'a> Foreground<'a> {
    pub fn new(settings: &'a Settings, summary_state: &'a SummaryState) -> Self {
        Foreground {
            settings,
            summary_state,
        }
    }

    /// One turn: a summary when one is due (see [`timing`]), then the fit.
    pub async fn trim(
        &self,
        raw: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let base = Base::new(raw, self.summary_state, counter).await?;
        let fit = TurnFit::new(self.settings, raw, budget);
        let mut reason = FallbackReason::NotDue;
        let mut cooldown = None;
        {
            let work = base.work()?;
            let plan = self.settings.plan(&work);
            let threshold = self.settings.summarize_at_tokens();
            let due = timing::due(self.settings, &work, &plan, budget);
            if due {
                cooldown = self.summary_state.cooldown(&work, &plan, threshold);
            }
            if due && cooldown.is_none() {
                let compaction = Compaction::threshold(Mode::Foreground);
                let settings = self.settings.for_budget(budget, &work);
                let scaled = Foreground::new(&settings, self.summary_state);
                match scaled
                    .summarize(&base, &work, &plan, compaction, counter)
                    .await?
                {
                    Made::Compacted(made) => return fit.land(*made, self.summary_state),
                    Made::Declined => reason = FallbackReason::Declined,
                    Made::Failed => {
                        reason = FallbackReason::Failed;
                        // The failure just recorded holds for this history.
                        cooldown = self.summary_state.cooldown(&work, &plan, threshold);
                    }
                }
            }
        }
        let result = fit.without_new(base.into_known(), reason)?;
        if let Some(cooldown) = cooldown {
            self.summary_state
                .shown_during_cooldown(&result, cooldown)?;
        }
        Ok(result)
    }

    /// See [`Compact::compact_now`](crate::Compact::compact_now).
    pub async fn compact_now(
        &self,
        history: &History<'_>,
        counter: &dyn TokenCounter,
        instructions: Option<&str>,
    ) -> Result<TrimResult, MemoryError> {
        let base = Base::new(history, self.summary_state, counter).await?;
        let unlimited = Budget::default();
        let fit = TurnFit::new(self.settings, history, &unlimited);
        {
            let work = base.work()?;
            let plan = self.settings.plan(&work);
            let compaction = Compaction {
                mode: Mode::Foreground,
                trigger: Trigger::Manual,
                extra: instructions,
            };
            if plan.has_new()
                && let Made::Compacted(made) = self
                    .summarize(&base, &work, &plan, compaction, counter)
                    .await?
            {
                return fit.land(*made, self.summary_state);
            }
        }
        Ok(match base.into_known() {
            Some(known) => known.into_result(),
            None => TrimResult::unchanged(history, &unlimited),
        })
    }

    /// Makes the summary for `plan` of `work` (`base`'s working history)
    /// and applies it.
    async fn summarize(
        &self,
        base: &Base<'_, '_>,
        work: &History<'_>,
        plan: &Plan,
        compaction: Compaction<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<Made, MemoryError> {
        let job = prepare(
            self.settings,
            self.summary_state,
            work,
            plan,
            compaction,
            counter,
        )
        .await?;
        self.settings.emit(CompactEvent::Started {
            tokens_before: base.raw().total(),
            messages: plan.folded(),
            tokens: plan.new_tokens,
            split: plan.is_split(),
            background: false,
        });
        let outcome = self.call(&job).await;
        // Only reports here: no budget applies.
        let unlimited = Budget::default();
        let fit = TurnFit::new(self.settings, base.raw(), &unlimited);
        let (text, cost, from_hook) = match outcome {
            Outcome::Summary {
                text,
                cost,
                from_hook,
            } => (text, cost, from_hook),
            other => return Ok(self.no_summary(other, base, &fit, FailedAt::of(work, plan))),
        };
        let files = job.preparation.files;
        let cap = self.settings.summary_max_tokens() as usize;
        let originals = summary::originals(work.messages(), &plan.region);
        let message = match body::fitted(&text, &files, originals, cap, counter).await? {
            Ok(message) => message,
            Err(rejection) => {
                fit.failed(Failure::Rejected(rejection), cost);
                self.summary_state.record_failure(FailedAt::of(work, plan));
                return Ok(Made::Failed);
            }
        };
        let covering = Covering::new(work, plan.region.clone(), message, files);
        let applied = covering.apply(work, counter).await?;
        // A summary no shorter than what it covers replaces nothing.
        if !fit.shrinks(work.total(), &applied.result, cost) {
            self.summary_state.record_failure(FailedAt::of(work, plan));
            return Ok(Made::Failed);
        }
        Ok(Made::Compacted(Box::new(Compacted {
            result: applied.result,
            report: report(cost, from_hook, plan),
            covering: base.restate(covering),
        })))
    }

    /// What a call that made no summary comes to: declined by the hook,
    /// or failed (reported, and `failed` recorded in the summary state).
    fn no_summary(
        &self,
        outcome: Outcome,
        base: &Base<'_, '_>,
        fit: &TurnFit<'_, '_>,
        failed: Option<FailedAt>,
    ) -> Made {
        match outcome {
            Outcome::Failed { failure, cost } => {
                fit.failed(failure, cost);
                self.summary_state.record_failure(failed);
                Made::Failed
            }
            _ => {
                self.settings.emit(CompactEvent::Declined {
                    tokens_before: base.raw().total(),
                });
                Made::Declined
            }
        }
    }

    /// Runs the hook and the requests of `job` under the foreground policy.
    async fn call(&self, job: &Job) -> Outcome {
        let policy = self.settings.policy(Mode::Foreground);
        let caller = call::Caller {
            provider: self.settings.provider(),
            policy,
            summary: self.settings.summary(),
        };
        call::run(job, caller, self.settings.hook()).await
    }
}

/// The report of a summary of `plan`.
fn report(cost: CompactCost, from_hook: bool, plan: &Plan) -> Report {
    Report {
        cost,
        from_hook,
        messages: plan.folded(),
    }
}
