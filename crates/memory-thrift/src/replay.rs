//! The replay of a history's model calls (see [`calls`](crate::calls)):
//! each call appends to the context the call before showed while that
//! fits, sheds afresh when it does not, and chooses afresh for a question
//! that reaches back.

use std::ops::Range;

use memory_core::{Budget, History, MemoryError, TokenCounter, TrimResult, structure};

use crate::message_index::MessageIndex;
use crate::resume::{ContextLengths, KeptContext, Resume};
use crate::settings::Settings;
use crate::shed::{ShedTarget, finish};
use crate::shrink_cache::ShrinkCache;
use crate::trace::ThriftTrace;
use crate::{calls, reach};

impl Settings {
    /// The calls of `history` at `points` replayed (see `calls`): each
    /// sees its history as it was until the first over the budget; from
    /// there on, each appends to the one before while that fits, and
    /// sheds afresh when it does not.
    ///
    /// Even when the newest step's floor is over the budget as it is, the
    /// replay decides: the step may fit appended with its long outputs
    /// cut, as it was shown. When nothing fits, the last call sheds the
    /// whole history afresh (and says it does not fit), and so does
    /// trimming that result again: no append can fit beside a floor over
    /// the budget.
    pub(crate) async fn replay(
        &self,
        history: &History<'_>,
        budget: &Budget,
        fresh: ShedTarget,
        counter: &dyn TokenCounter,
        points: &calls::Points,
        kept: KeptState<'_>,
    ) -> Result<(TrimResult, ThriftTrace), MemoryError> {
        let KeptState {
            mut seen,
            shrunk,
            mut resume,
        } = kept;
        let last = points.len() - 1;
        // The replay starts at the last multiple of its span (see
        // `calls`); the calls before it are not looked at.
        let start = points.start();
        let totals = seen_totals(seen.as_deref(), history, points, start);
        let total = |k: usize| totals[k - start];
        let from = starting_call(budget, start..last + 1, total);
        let aim = fresh.at_call(from);
        // The replay of an earlier trim of the same prefix, when there is
        // one, is taken up where it stopped.
        let resumed = resume
            .as_deref_mut()
            .and_then(|resume| resume.take(budget, start, from..last + 1, points));
        let (begin, result, trace) = match resumed {
            Some(found) => found,
            None => {
                let prefix = calls::prefix(history, points[from], total(from))?;
                let index = seen.as_deref_mut();
                let (result, trace) = self
                    .shed(&prefix, budget, aim, counter, shrunk, index)
                    .await?;
                (from, result, trace)
            }
        };
        let mut replay = Replay {
            history,
            budget,
            fresh,
            counter,
            max: budget.max_tokens.unwrap_or(usize::MAX),
            seen,
            shrunk,
            result,
            trace,
            before_last: None,
        };
        for k in begin + 1..=last {
            replay
                .call(self, points[k - 1]..points[k], k, total(k), k == last)
                .await?;
        }
        Ok(replay.close(resume, start, points, last))
    }
}

/// The call a replay of `calls` starts from: the last one within the
/// budget (shown as it was), or the first of the span, shed afresh.
fn starting_call(budget: &Budget, calls: Range<usize>, total: impl Fn(usize) -> usize) -> usize {
    let start = calls.start;
    let last = calls.end - 1;
    let first = (start..=last)
        .find(|&k| !budget.admits_tokens(total(k)))
        .unwrap_or(last);
    if first > start { first - 1 } else { first }
}

/// Tokens each call of the replay saw, from its start on.
fn seen_totals(
    seen: Option<&MessageIndex>,
    history: &History<'_>,
    points: &calls::Points,
    start: usize,
) -> Vec<usize> {
    let mut totals = vec![0; points.len() - start];
    let mut sum = 0;
    let mut from = 0;
    for (k, total) in (start..).zip(&mut totals) {
        let end = points[k];
        *total = match seen {
            Some(seen) => seen.total(end),
            None => {
                sum += history.tokens(from..end);
                from = end;
                sum
            }
        };
    }
    totals
}

/// What earlier calls kept of a history, lent to a trim (see `Memo`).
pub(crate) struct KeptState<'m> {
    pub seen: Option<&'m mut MessageIndex>,
    pub shrunk: &'m mut ShrinkCache,
    pub resume: Option<&'m mut Resume>,
}

/// The replay of a history's calls, call by call: what the last call
/// showed, and the state before the newest call (for the next trim).
struct Replay<'r, 'h> {
    history: &'r History<'h>,
    budget: &'r Budget,
    /// What a question that reaches back aims at.
    fresh: ShedTarget,
    counter: &'r dyn TokenCounter,
    max: usize,
    seen: Option<&'r mut MessageIndex>,
    shrunk: &'r mut ShrinkCache,
    result: TrimResult,
    trace: ThriftTrace,
    before_last: Option<(usize, KeptContext, ThriftTrace)>,
}

impl Replay<'_, '_> {
    /// The last call's result and trace; the state before it kept for the
    /// next trim.
    fn close(
        self,
        resume: Option<&mut Resume>,
        start: usize,
        points: &calls::Points,
        last: usize,
    ) -> (TrimResult, ThriftTrace) {
        let Replay {
            history,
            budget,
            seen,
            result,
            mut trace,
            before_last,
            ..
        } = self;
        if let Some(resume) = resume {
            resume.keep(
                budget,
                start,
                points,
                before_last,
                (last, result.clone(), trace.clone()),
            );
        }
        trace.tokens_before = history.total();
        trace.messages_before = history.len();
        let question = match seen.as_deref() {
            Some(seen) => seen.kinds.question(history.len()),
            None => structure::current_question(history.messages()),
        };
        trace.floor_tokens = structure::floor_at(history, question).tokens;
        finish(result, trace)
    }

    /// Call `k`, which adds `step`: a question that reaches back chooses
    /// afresh; otherwise the step is appended while it fits, and the call
    /// sheds to the watermark when it does not.
    async fn call(
        &mut self,
        settings: &Settings,
        step: Range<usize>,
        k: usize,
        total: usize,
        newest: bool,
    ) -> Result<(), MemoryError> {
        // The state before the newest call is kept for the next trim (see
        // `Resume`): marked here, and taken whole only when the newest call
        // does not just append to it.
        let mark = newest.then(|| (ContextLengths::of(&self.result), self.trace.clone()));
        let mut afresh = self.reach_back(settings, step.clone(), total).await?;
        if afresh.is_none() {
            afresh = self.append(settings, step, total).await?;
        }
        match (afresh, mark) {
            (Some((shed, shed_trace)), mark) => {
                let before = std::mem::replace(&mut self.result, shed);
                self.trace = shed_trace;
                if let Some((mark, kept_trace)) = mark {
                    self.before_last =
                        Some((k - 1, KeptContext::Whole(mark.cut(before)), kept_trace));
                }
            }
            (None, Some((mark, kept_trace))) => {
                self.before_last = Some((k - 1, KeptContext::CutFromNext(mark), kept_trace));
            }
            (None, None) => {}
        }
        Ok(())
    }

    /// The history up to the end of `step` shed afresh, when `step` opens
    /// a round whose question reaches back past what is shown.
    async fn reach_back(
        &mut self,
        settings: &Settings,
        step: Range<usize>,
        total: usize,
    ) -> Result<Option<(TrimResult, ThriftTrace)>, MemoryError> {
        if !calls::new_round(self.history.messages(), step.clone()) {
            return Ok(None);
        }
        let prefix = calls::prefix(self.history, step.end, total)?;
        if !reach::reaches_back(&prefix, &self.result, self.seen.as_deref_mut(), self.budget) {
            return Ok(None);
        }
        let index = self.seen.as_deref_mut();
        let (shed, mut shed_trace) = settings
            .shed(
                &prefix,
                self.budget,
                self.fresh,
                self.counter,
                self.shrunk,
                index,
            )
            .await?;
        shed_trace.reached_back = true;
        Ok(Some((shed, shed_trace)))
    }

    /// Appends `step` to the shown result when it fits (`None`), or sheds
    /// the history up to its end to the watermark.
    async fn append(
        &mut self,
        settings: &Settings,
        step: Range<usize>,
        total: usize,
    ) -> Result<Option<(TrimResult, ThriftTrace)>, MemoryError> {
        let end = step.end;
        let max_output = settings.max_tool_output_tokens;
        let appended = calls::append(
            &mut self.result,
            self.history,
            step,
            self.max,
            max_output,
            self.counter,
        )
        .await?
        // A round appended may be one too many for a rounds limit.
        .filter(|_| self.budget.admits_rounds(&self.result.messages));
        if let Some(appended) = appended {
            self.trace.append(appended.tokens, appended.cut);
            return Ok(None);
        }
        let prefix = calls::prefix(self.history, end, total)?;
        let index = self.seen.as_deref_mut();
        let shed = settings
            .shed(
                &prefix,
                self.budget,
                ShedTarget::LowWatermark,
                self.counter,
                self.shrunk,
                index,
            )
            .await?;
        Ok(Some(shed))
    }
}
