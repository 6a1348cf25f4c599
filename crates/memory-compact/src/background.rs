//! Compaction in the background: the summary is requested off the hot path
//! and spliced in later, only onto the messages it summarized.
//!
//! ```text
//! turn N    over budget, the window's cut due, as   -> spawn the request;
//!           much to fold as the foreground folds,      WindowDrop's view
//!           lasting a step more
//! turn M    over budget, summary not ready, or      -> WindowDrop's view
//!           the fit would not move
//! turn M+1  over budget, the fit would move,        -> splice if the summarized
//!           summary ready                              messages are unchanged,
//!                                                      else discard; then arm
//!                                                      again
//! ```
//!
//! A request is armed where the foreground would summarize (see
//! [`timing`](crate::timing): past a threshold set, or over the budget
//! with the window's cut due, as much to fold as the foreground folds and
//! a compacted history that lasts and is smaller than the cut's), past
//! the trigger, and only when that
//! history would also leave room for one more step like the newest: the
//! summary is spliced at a later call than the foreground's. A ready
//! summary waits, over the budget, for a call whose fit moves anyway.
//! Measured (chars counter, `anthropic` pricing, extractive summarizer,
//! `--background --turn-delay-ms 5`), cost per call at 4,000 and 8,000
//! tokens: SWE-Gym 1,378 and 2,061, SWE-smith 1,544 and 2,361 (window
//! drop's 1,450, 2,209, 1,559 and 2,542; the foreground's 1,257, 1,775,
//! 1,497 and 2,084), 3, 4, 4 and 5 requests; support recall 0.881,
//! 0.962, 0.737 and 0.868 (window drop's 0.839, 0.962, 0.694 and 0.858).
//! Before a summary had to be smaller than the cut's fit (the timing's
//! fourth rule), SWE-smith's were 1,552 and 2,447 (6 requests at 8,000).
//! Armed before the cut came due (as deep as the foreground's, past the
//! trigger: 1,599, 2,029, 1,635 and 2,422; 9, 6, 8 and 8 requests), a
//! request folded turns the foreground never folds, because by the time
//! the cut came due the compacted history no longer lasted: SWE-Gym at
//! 4,000 tokens paid for nine summaries against the foreground's three,
//! three of which never landed. Armed at the cut without the step more:
//! SWE-smith at 4,000 tokens 1,587 (five requests). Armed a call ahead
//! of the cut (the newest step's size taken as the next one's): 1,625.

use std::borrow::Cow;
use std::sync::Arc;

use memory_core::{Budget, History, MemoryError, TokenCounter, TrimResult, summary};

use crate::background_summary::{Permit, Ready, Taken};
use crate::call::{self, Job, Outcome};
use crate::compact_state::CompactState;
use crate::covering::{Covering, Fingerprint};
use crate::prepare::{Compaction, prepare};
use crate::settings::{Mode, Settings};
use crate::summary_state::{Base, FailedAt, SummaryState};
use crate::timing;
use crate::turn_fit::{Compacted, Report, TurnFit};
use crate::turns::Plan;
use crate::{CompactEvent, Failure, FallbackReason, body};

/// Background compaction: `settings`, shared with the task it spawns, and
/// the state that changes from turn to turn.
pub(crate) struct Background<'a> {
    settings: &'a Arc<Settings>,
    state: &'a CompactState,
}

impl<'a> Background<'a> {
    pub fn new(settings: &'a Arc<Settings>, state: &'a CompactState) -> Self {
        Background { settings, state }
    }

    /// One turn: over the budget, a ready summary is spliced when it still
    /// fits the history; then the next request is armed.
    pub async fn trim(
        &self,
        raw: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let base = Base::new(raw, self.state.summary_state(), counter).await?;
        let fit = TurnFit::new(self.settings, raw, budget);
        let mut reason = FallbackReason::NotDue;
        let mut spliced = None;
        // A ready summary waits for a call whose fit moves anyway: spliced
        // where the previous fit takes the new step, it would break a
        // prefix the fit keeps (see `timing::cut_due`).
        let work = base.work()?;
        let over = !budget.admits_tokens(work.total()) && timing::cut_due(&work, budget);
        if over {
            match self.state.background_summary().take() {
                Taken::Ready(ready) => {
                    reason = FallbackReason::Failed;
                    spliced = self.splice(&base, &fit, *ready, counter).await?;
                }
                Taken::InFlight => reason = FallbackReason::Pending,
                Taken::Idle if tokio::runtime::Handle::try_current().is_err() => {
                    reason = FallbackReason::NoRuntime;
                }
                Taken::Idle => {}
            }
        }
        let result = match spliced {
            Some(result) => result,
            None => fit.without_new(base.into_known(), reason)?,
        };
        self.arm_after(&result, raw, budget, counter).await?;
        Ok(result)
    }

    /// Splices `ready` into `base`'s working history when it was made for
    /// it and makes it smaller; `None` when it may not be used.
    async fn splice(
        &self,
        base: &Base<'_, '_>,
        fit: &TurnFit<'_, '_>,
        ready: Ready,
        counter: &dyn TokenCounter,
    ) -> Result<Option<TrimResult>, MemoryError> {
        let work = base.work()?;
        if !ready.covering.fingerprint.matches(&work) {
            fit.failed(Failure::Stale, ready.cost);
            return Ok(None);
        }
        // Fitted to the cap here, where the turn's counter is.
        let mut ready = ready;
        let text = body::text(&ready.covering.message).unwrap_or_default();
        let cap = self.settings.summary_max_tokens() as usize;
        let originals = summary::originals(work.messages(), &ready.covering.region);
        match body::fitted(&text, &ready.covering.files, originals, cap, counter).await? {
            Ok(message) => ready.covering.message = message,
            Err(rejection) => {
                fit.failed(Failure::Rejected(rejection), ready.cost);
                let plan = self.settings.plan(&work);
                self.state
                    .summary_state()
                    .record_failure(FailedAt::of(&work, &plan));
                return Ok(None);
            }
        }
        let applied = ready.covering.apply(&work, counter).await?;
        if !fit.shrinks(work.total(), &applied.result, ready.cost) {
            // Not asked again until the threshold is passed again; the
            // turn falls back.
            let plan = self.settings.plan(&work);
            self.state
                .summary_state()
                .record_failure(FailedAt::of(&work, &plan));
            return Ok(None);
        }
        let report = Report {
            cost: ready.cost,
            from_hook: ready.from_hook,
            messages: ready.covering.region.iter().map(|r| r.len()).sum(),
        };
        let compacted = Compacted {
            result: applied.result,
            report,
            covering: base.restate(ready.covering),
        };
        fit.land(compacted, self.state.summary_state()).map(Some)
    }

    /// Arms the next request on what will be stored: the compacted history
    /// when `result` materializes, else the history as given with the
    /// summaries already known applied.
    async fn arm_after(
        &self,
        result: &TrimResult,
        raw: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<(), MemoryError> {
        if let Some(stored) = result.to_store() {
            return self.arm(&stored.as_history()?, budget, counter).await;
        }
        match self.state.summary_state().known(raw, counter).await? {
            Some(known) => self.arm(&known.work()?, budget, counter).await,
            None => self.arm(raw, budget, counter).await,
        }
    }

    /// Starts a background summary of `stored` when it is due and none is
    /// running or waiting.
    async fn arm(
        &self,
        stored: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<(), MemoryError> {
        let Some(plan) = self.due(stored, budget) else {
            return Ok(());
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.warn_without_runtime();
            return Ok(());
        };
        let (summary_state, background) =
            (self.state.summary_state(), self.state.background_summary());
        let compaction = Compaction::threshold(Mode::Background);
        // The summary cap and input limit of this budget, for the request
        // and for the task that runs it.
        let settings = match self.settings.for_budget(budget, stored) {
            Cow::Borrowed(_) => self.settings.clone(),
            Cow::Owned(scaled) => Arc::new(scaled),
        };
        let job = prepare(&settings, summary_state, stored, &plan, compaction, counter).await?;
        let Some(last) = plan.region.last() else {
            return Ok(());
        };
        let target = Target {
            fingerprint: Fingerprint::of(stored, last.end),
            failed: FailedAt::of(stored, &plan),
            plan,
            tokens_before: stored.total(),
        };
        let Some(permit) = background.start() else {
            return Ok(());
        };
        self.settings.emit(CompactEvent::Started {
            tokens_before: target.tokens_before,
            messages: target.plan.folded(),
            tokens: target.plan.new_tokens,
            split: target.plan.is_split(),
            background: true,
        });
        background.keep_task(runtime.spawn(run(
            settings,
            summary_state.clone(),
            job,
            target,
            permit,
        )));
        Ok(())
    }

    /// The plan for `stored` when a request is due: past the trigger, the
    /// background summary idle, no cooldown in force, the foreground due
    /// to summarize on this call, and a compacted history that would last
    /// until the summary lands.
    fn due(&self, stored: &History<'_>, budget: &Budget) -> Option<Plan> {
        let max = budget.max_tokens?;
        let ratio = f64::from(self.settings.trigger_ratio());
        if (stored.total() as f64) <= ratio * max as f64
            || !self.state.background_summary().is_idle()
        {
            return None;
        }
        let plan = self.settings.plan(stored);
        let threshold = self.settings.summarize_at_tokens();
        let cooling_down = self
            .state
            .summary_state()
            .cooldown(stored, &plan, threshold)
            .is_some();
        // Where the foreground would summarize (see `timing::due`): as
        // deep, past a threshold set or over the budget with the window's
        // cut due. Armed before the cut came due, a request folded turns
        // the foreground never folds (its compacted history no longer
        // lasting by then): a summary paid for, and a cache break.
        if cooling_down || !timing::due(self.settings, stored, &plan, budget) {
            return None;
        }
        (timing::by_threshold(self.settings, &plan)
            || timing::lasts_until_it_lands(self.settings, stored, &plan, budget))
        .then_some(plan)
    }

    /// Says once that background mode needs a runtime.
    fn warn_without_runtime(&self) {
        if self.state.background_summary().first_without_runtime() {
            tracing::warn!(
                target: "memory_compact",
                "background compaction needs a tokio runtime and there is none here: every turn over the budget drops its oldest history from view instead; trim inside a runtime, or turn background mode off"
            );
        }
    }
}

/// How long a background request waits before it starts its work. The
/// turn that starts it has a little left to do (the stages after this
/// one, taking the context); a task woken at once may take that turn's
/// core away from it (measured: a summarizer run in-process, started
/// with no wait, added its own 0.8 ms to 1 in 10 turns). A summary takes
/// seconds from a model and a millisecond or more in-process, and a turn
/// of the agent's own model call far longer than this: the wait costs
/// the summary nothing it would be read before.
const START_DELAY: std::time::Duration = std::time::Duration::from_millis(2);

/// What a background request summarizes.
struct Target {
    fingerprint: Fingerprint,
    failed: Option<FailedAt>,
    plan: Plan,
    tokens_before: usize,
}

/// The background task: runs `job` and delivers its summary with `permit`,
/// or reports why there is none.
async fn run(
    settings: Arc<Settings>,
    summary_state: SummaryState,
    job: Job,
    target: Target,
    permit: Permit,
) {
    tokio::time::sleep(START_DELAY).await;
    let policy = settings.policy(Mode::Background);
    let caller = call::Caller {
        provider: settings.provider(),
        policy,
        summary: settings.summary(),
    };
    let outcome = call::run(&job, caller, settings.hook()).await;
    match outcome {
        Outcome::Summary {
            text,
            cost,
            from_hook,
        } => {
            let files = job.preparation.files;
            let covering = Covering {
                fingerprint: target.fingerprint,
                region: target.plan.region,
                message: body::message(&text, &files),
                files,
            };
            permit.fill(Ready {
                covering,
                cost,
                from_hook,
            });
        }
        Outcome::Declined => settings.emit(CompactEvent::Declined {
            tokens_before: target.tokens_before,
        }),
        Outcome::Failed { failure, cost } => {
            summary_state.record_failure(target.failed);
            settings.emit(CompactEvent::Failed {
                tokens_before: target.tokens_before,
                failure,
                cost,
            });
        }
    }
}
