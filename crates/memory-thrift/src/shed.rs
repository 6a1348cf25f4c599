//! A shed: one pass of every stage over a history, aiming at one target,
//! repeated while the floor does not fit and a pass still changes
//! something (see [`Thrift`](crate::Thrift) for the stages).

use std::ops::Range;
use std::sync::atomic::Ordering;

use memory_core::{Budget, History, MemoryError, TokenCounter, TrimResult, structure};

use crate::drop_stage::{DropSettings, Scoring, drop_units};
use crate::layout::Layout;
use crate::message_index::MessageIndex;
use crate::settings::Settings;
use crate::shrink_cache::ShrinkCache;
use crate::trace::{Tally, ThriftTrace};
use crate::working_copy::WorkingCopy;
use crate::{horizon, observation, past_reach, shrink_stages, sticky};

/// Where a fresh shed aims.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ShedTarget {
    /// The sticky level of the whole history's total (see [`sticky`]): for
    /// a new question, whose context is chosen afresh anyway, and for a
    /// first call already over the budget.
    StickyLevel,
    /// The low watermark: for a call of a round whose new step no longer
    /// fits after the previous call's context, so that the next steps can
    /// append again, and for a tool-calling agent's steps after a summary.
    LowWatermark,
    /// The budget itself: for a new question that reaches into the span a
    /// summary covers, whose covered turns compete for every token.
    WholeBudget,
}

impl ShedTarget {
    /// Where a replay that starts at call `call` sheds first: at `self` for
    /// the history's first call, at the low watermark for a later one
    /// (the calls before it were within the budget).
    pub fn at_call(self, call: usize) -> Self {
        if call == 0 { self } else { Self::LowWatermark }
    }
}

impl Settings {
    /// Sheds `history` afresh, aiming at `aim`: one pass of every stage,
    /// repeated while the floor does not fit and a pass still changes
    /// something.
    pub(crate) async fn shed(
        &self,
        history: &History<'_>,
        budget: &Budget,
        aim: ShedTarget,
        counter: &dyn TokenCounter,
        shrunk: &mut ShrinkCache,
        index: Option<&mut MessageIndex>,
    ) -> Result<(TrimResult, ThriftTrace), MemoryError> {
        let (mut result, mut trace) = self
            .pass(history, budget, aim, counter, shrunk, index)
            .await?;
        // When even the floor does not fit, a pass over a result that lost
        // whole steps can see a different newest round (fewer results, so
        // other recent ones) and shed more. Passes repeat until one changes
        // nothing, so that trimming the result again is a no-op too. Each
        // pass only sheds, so this ends; the bound is a guard.
        for _ in 0..MAX_PASSES {
            if result.fits {
                break;
            }
            let (next, next_trace) = {
                // Another history: its indices name other messages.
                let again = result.as_history()?;
                let mut fresh = ShrinkCache::once();
                self.pass(&again, budget, aim, counter, &mut fresh, None)
                    .await?
            };
            if next.messages == result.messages {
                break;
            }
            trace.absorb(&next_trace);
            result = next;
        }
        Ok(finish(result, trace))
    }

    /// One pass of every stage: first with the older steps of a long
    /// newest round skipped (see [`horizon`](crate::horizon)), again over
    /// every step when skipping them could change what it gives.
    async fn pass(
        &self,
        history: &History<'_>,
        budget: &Budget,
        aim: ShedTarget,
        counter: &dyn TokenCounter,
        shrunk: &mut ShrinkCache,
        mut index: Option<&mut MessageIndex>,
    ) -> Result<(TrimResult, ThriftTrace), MemoryError> {
        let mut skip = self.shortcuts.skip_long_round;
        loop {
            let index = index.as_deref_mut();
            let passed = self
                .pass_once(history, budget, aim, counter, shrunk, index, skip)
                .await?;
            if let Some(passed) = passed {
                return Ok(passed);
            }
            self.shortcuts.skips.redone.fetch_add(1, Ordering::Relaxed);
            skip = false;
        }
    }

    /// One pass of every stage, skipping the older steps of a long newest
    /// round when `skip`; `None` when they were skipped and that could
    /// change what the pass gives.
    #[allow(clippy::too_many_arguments)]
    async fn pass_once(
        &self,
        history: &History<'_>,
        budget: &Budget,
        aim: ShedTarget,
        counter: &dyn TokenCounter,
        shrunk: &mut ShrinkCache,
        index: Option<&mut MessageIndex>,
        skip: bool,
    ) -> Result<Option<(TrimResult, ThriftTrace)>, MemoryError> {
        let mut trace = ThriftTrace::of(history, budget);
        if history.is_empty() || history.fits(budget) {
            let result = TrimResult::unchanged(history, budget);
            trace.floor_tokens = structure::floor(history).tokens;
            return Ok(Some(finish(result, trace)));
        }
        let (kinds, terms, totals) = MessageIndex::parts(index);
        let mut layout = Layout::new(history, self.keep_recent_results, kinds);
        trace.floor_tokens = layout.floor.tokens;
        let mut work = WorkingCopy::new(history);
        let past = past_reach::leave_out(&mut layout, &mut work, budget, totals);
        let over = !budget.admits_tokens(work.total());
        let stop_at = self.stop_at(budget, aim, history.total(), over);
        trace.target = stop_at;
        let skipped = match (stop_at, budget.max_tokens) {
            (Some(_), Some(max)) if skip && budget.round_limit().is_none() => {
                let share = self.shortcuts.horizon_share;
                skip_steps(&mut layout, &mut work, (max, share), counter, shrunk).await?
            }
            _ => None,
        };
        let mut pass = Pass::new(budget, counter, layout, stop_at, trace);
        pass.past = past;
        // Stages 1-4: every message stays, some shrink.
        self.shrink_stages(&mut pass, &mut work, shrunk).await?;
        if skipped.is_some() && !pass.over(&work) {
            // A stage stopped at its aim: the skipped steps' tokens would
            // have kept it going.
            return Ok(None);
        }
        // Stage 5: whole rounds and steps.
        let terms = terms.filter(|_| self.relevance.is_lexical());
        if !self
            .drop_stage(&mut pass, &mut work, skipped, shrunk, terms)
            .await
        {
            return Ok(None);
        }
        // Stage 6: the floor's outputs (the newest step's among them).
        let last_resort = budget.max_tokens.filter(|_| pass.over(&work));
        pass.trace.newest_outputs_cut =
            shrink_stages::floor_outputs(&mut work, &pass.layout, last_resort, counter).await?;
        let fits = !pass.over(&work);
        Ok(Some(finish(work.finish(fits, shrunk), pass.trace)))
    }

    /// The total stages 1-4 shed down to, when the history is `over` the
    /// budget: the sticky level, the low watermark, or the budget itself,
    /// as `aim` says.
    fn stop_at(&self, budget: &Budget, aim: ShedTarget, total: usize, over: bool) -> Option<usize> {
        budget.max_tokens.filter(|_| over).map(|max| match aim {
            ShedTarget::StickyLevel => {
                let granule = sticky::granule(max, self.low_watermark);
                sticky::target(total, max, granule)
            }
            ShedTarget::LowWatermark => sticky::watermark(max, self.low_watermark),
            ShedTarget::WholeBudget => max,
        })
    }

    /// Stages 1-4, each while the total is over the aim: reasoning, long
    /// tool outputs, earlier results, media.
    async fn shrink_stages(
        &self,
        pass: &mut Pass<'_, '_>,
        work: &mut WorkingCopy<'_, '_>,
        shrunk: &mut ShrinkCache,
    ) -> Result<(), MemoryError> {
        let (layout, counter) = (&pass.layout, pass.counter);
        let stage = pass.active(work);
        pass.trace.reasoning =
            shrink_stages::reasoning(work, layout, stage, counter, shrunk).await?;
        let (stage, max) = (pass.active(work), self.max_tool_output_tokens);
        pass.trace.tool_outputs_cut =
            shrink_stages::long_outputs(work, layout, max, stage, counter, shrunk).await?;
        let stage = pass.active(work);
        pass.trace.tool_results_replaced =
            shrink_stages::earlier_results(work, layout, stage, counter, shrunk).await?;
        let stage = pass.active(work);
        pass.trace.media_replaced = shrink_stages::media(work, layout, stage, counter).await?;
        Ok(())
    }

    /// Stage 5: whole rounds and steps dropped by relevance and recency;
    /// false when the older steps of the newest round were `skipped` and
    /// the run of its newest steps might have gone on among them.
    async fn drop_stage(
        &self,
        pass: &mut Pass<'_, '_>,
        work: &mut WorkingCopy<'_, '_>,
        skipped: Option<Range<usize>>,
        shrunk: &mut ShrinkCache,
        terms: Option<&mut crate::term_index::TermIndex>,
    ) -> bool {
        let history = work.history();
        let budget = pass.budget;
        let skipped_steps = match &skipped {
            Some(range) => shrunk.steps(history.messages(), range.clone()),
            None => 0,
        };
        let target = DropSettings {
            granule: budget
                .max_tokens
                .map_or(1, |max| sticky::granule(max, self.low_watermark)),
            target: pass.stop_at,
            recency_weight: f64::from(match pass.layout.question {
                Some(q) if observation::is_observation(history.messages(), q) => {
                    self.loop_recency_weight
                }
                _ => self.recency_weight,
            }),
            skipped_steps,
            stop_early: self.shortcuts.stop_early,
        };
        let run = pass.over(work) || !budget.admits_rounds(history.messages());
        let scoring = Scoring {
            relevance: &*self.relevance,
            // The index holds the messages of `history`, a prefix of the
            // history it was brought up to date with.
            terms,
        };
        let dropped = drop_units(work, &pass.layout, budget, &target, run, scoring).await;
        if skipped.is_some() && dropped.newest_all_kept {
            return false;
        }
        let trace = &mut pass.trace;
        trace.rounds_dropped = dropped.rounds;
        trace.rounds_dropped.before.count += pass.past.count;
        trace.rounds_dropped.before.tokens += pass.past.tokens;
        trace.steps_dropped = dropped.steps;
        if let Some(range) = skipped {
            self.shortcuts.skips.kept.fetch_add(1, Ordering::Relaxed);
            trace.steps_dropped.before.count += skipped_steps;
            trace.steps_dropped.before.tokens += history.tokens(range);
        }
        if dropped.target.is_some() {
            trace.target = dropped.target;
        }
        true
    }
}

/// Leaves the older steps of a long newest round out of `layout` and
/// `work` (see [`horizon`](crate::horizon)) under a budget of `max` tokens,
/// once the newest steps hold `share` of it; which, if any.
async fn skip_steps(
    layout: &mut Layout<'_>,
    work: &mut WorkingCopy<'_, '_>,
    (max, share): (usize, f64),
    counter: &dyn TokenCounter,
    shrunk: &mut ShrinkCache,
) -> Result<Option<Range<usize>>, MemoryError> {
    let history = work.history();
    let skipped = horizon::horizon(history, layout, max, share, counter, shrunk).await?;
    if let Some(range) = &skipped {
        layout.skip(range.clone());
        work.exclude(range.clone(), None);
    }
    Ok(skipped)
}

/// What one pass of the stages works with.
struct Pass<'p, 'h> {
    budget: &'p Budget,
    counter: &'p dyn TokenCounter,
    layout: Layout<'h>,
    /// The total stages 1-4 shed down to.
    stop_at: Option<usize>,
    trace: ThriftTrace,
    /// The earlier rounds past reach, dropped before the stages ran.
    past: Tally,
}

impl<'p, 'h> Pass<'p, 'h> {
    fn new(
        budget: &'p Budget,
        counter: &'p dyn TokenCounter,
        layout: Layout<'h>,
        stop_at: Option<usize>,
        trace: ThriftTrace,
    ) -> Self {
        Self {
            budget,
            counter,
            layout,
            stop_at,
            trace,
            past: Tally::default(),
        }
    }

    /// Whether `work` is over the budget.
    fn over(&self, work: &WorkingCopy<'_, '_>) -> bool {
        !self.budget.admits_tokens(work.total())
    }

    /// The aim of the next shrinking stage: `stop_at`, while `work` is
    /// over the budget.
    fn active(&self, work: &WorkingCopy<'_, '_>) -> Option<usize> {
        self.stop_at.filter(|_| self.over(work))
    }
}

/// Most extra passes a shed makes when the floor does not
/// fit. Why: a guard only: each pass sheds, so the passes end once one
/// changes nothing. Figure: none recorded.
const MAX_PASSES: usize = 8;

pub(crate) fn finish(result: TrimResult, mut trace: ThriftTrace) -> (TrimResult, ThriftTrace) {
    trace.tokens_after = result.tokens();
    trace.messages_after = result.messages.len();
    trace.fits = result.fits;
    tracing::debug!(
        tokens_before = trace.tokens_before,
        tokens_after = trace.tokens_after,
        fits = trace.fits,
        "thrift trimmed"
    );
    (result, trace)
}
