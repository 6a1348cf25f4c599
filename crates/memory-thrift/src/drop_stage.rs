//! The drop stage: whole rounds and steps, chosen by relevance to the
//! current question and by recency.
//!
//! The candidates are everything outside the floor, in units that are kept
//! or dropped whole: each earlier round (its protected messages stay
//! whatever happens), each step of the newest round before the newest step,
//! and each step before the first user message. The stage fills the tokens
//! left beside the floor greedily, most valuable unit first, and keeps the
//! original order. An earlier round that does not fit whole may then keep
//! its request and its newest steps that fit (it counts as kept in the
//! trace, its dropped steps as saved). A unit is valuable when it is relevant (its score reaches
//! [`keep_floor`] of the pressure) and, among equals, when its score plus
//! the recency bonus is higher. A unit's score is its own relevance or a
//! share of its neighbours', whichever is higher, so that the turns around
//! a strongly relevant one come with it.

use std::ops::Range;

use memory_core::{Budget, structure};

use crate::layout::Layout;
use crate::neighbours::with_neighbours;
use crate::partial_sort::BestFirst;
use crate::relevance::keep_floor;
use crate::sticky;
use crate::term_index::{TermIndex, Units};
use crate::texts::texts_of;
use crate::trace::{Shed, Tally};
use crate::working_copy::WorkingCopy;
use crate::{Relevance, dates, reach};

/// One candidate: kept or dropped whole.
struct Unit {
    range: Range<usize>,
    /// Tokens of its messages outside the floor (what dropping it saves).
    cost: usize,
    /// An earlier round (else a step).
    round: bool,
    /// Keeping it adds a user message, so it counts against a rounds limit.
    counts_round: bool,
    /// A step of the newest round: scored, but not part of the corpus.
    newest: bool,
    /// None of its messages lies in the floor.
    whole: bool,
    /// The fewest tokens left with which it can still be kept: its cost,
    /// or for a round, what keeping it in part needs at least (its
    /// request and its last message; see [`partial`]).
    least: usize,
}

/// What the stage did.
pub(crate) struct Dropped {
    pub rounds: Shed,
    pub steps: Shed,
    /// The total it aimed at, when it dropped to meet the token limit.
    pub target: Option<usize>,
    /// Whether every step of the newest round it looked at was kept
    /// (nothing was dropped, or its newest-first run did not stop before
    /// the oldest of them).
    pub newest_all_kept: bool,
}

/// How the stage weighs and aims.
pub(crate) struct DropSettings {
    pub granule: usize,
    /// The sticky total the earlier stages shed down to, reached from the
    /// whole history's total: the drop stage aims at the same one, so that
    /// what it keeps moves only when that target does.
    pub target: Option<usize>,
    pub recency_weight: f64,
    /// Steps of the newest round left out before the stages ran (see
    /// [`horizon`](crate::horizon)): candidates like the steps the stage
    /// sees, so the recency bonus is scaled by all of them.
    pub skipped_steps: usize,
    /// Whether the stage stops going through its order once nothing left
    /// could be kept (see [`Shortcuts`](crate::shortcuts::Shortcuts)).
    pub stop_early: bool,
}

/// How the stage scores the units: by `relevance`, or, when `relevance`
/// is [`Lexical`](crate::Lexical) and the messages seen are at hand,
/// from their index (the same scores, without reading every text).
pub(crate) struct Scoring<'s> {
    pub relevance: &'s dyn Relevance,
    pub terms: Option<&'s mut TermIndex>,
}

/// Runs the stage when `run`, else only takes stock.
pub(crate) async fn drop_units(
    work: &mut WorkingCopy<'_, '_>,
    layout: &Layout<'_>,
    budget: &Budget,
    aim: &DropSettings,
    run: bool,
    scoring: Scoring<'_>,
) -> Dropped {
    let units = units(work, layout);
    let (rounds, steps) = tally(&units, |_| true);
    let mut dropped = Dropped {
        rounds: Shed {
            before: rounds,
            after: rounds,
        },
        steps: Shed {
            before: steps,
            after: steps,
        },
        target: None,
        newest_all_kept: true,
    };
    if !run || units.is_empty() {
        return dropped;
    }
    let Some(mut choice) = Choice::start(work, layout, budget, aim, &units, &mut dropped) else {
        return dropped;
    };
    dropped.newest_all_kept = choice.keep_newest();
    choice.keep_earlier(work, layout, aim, scoring).await;
    choice.apply(work, layout);
    (dropped.rounds.after, dropped.steps.after) =
        tally(&units, |k| choice.keep[k] || choice.partly[k].is_some());
    // What a round kept in part still costs.
    for (k, part) in choice.partly.iter().enumerate() {
        if let Some((_, kept_cost)) = part {
            dropped.rounds.after.tokens -= units[k].cost - kept_cost;
        }
    }
    dropped
}

/// The drop stage's choice as it is made: which units are kept, whole or
/// in part, and the room left.
struct Choice<'u> {
    units: &'u [Unit],
    keep: Vec<bool>,
    /// Rounds kept in part: where the kept steps start, and their cost.
    partly: Vec<Option<(usize, usize)>>,
    /// Tokens left for units.
    left: usize,
    /// Rounds a rounds limit still admits.
    rounds_left: usize,
}

impl<'u> Choice<'u> {
    /// The room the units have (noting the target in `dropped`); `None`
    /// when every unit fits, so that nothing is to be dropped.
    fn start(
        work: &WorkingCopy<'_, '_>,
        layout: &Layout<'_>,
        budget: &Budget,
        aim: &DropSettings,
        units: &'u [Unit],
        dropped: &mut Dropped,
    ) -> Option<Self> {
        let total_cost: usize = units.iter().map(|u| u.cost).sum();
        let beside = work.total() - total_cost;
        let mut fill = usize::MAX;
        if let Some(max) = budget.max_tokens
            && work.total() > max
        {
            let target = aim
                .target
                .unwrap_or_else(|| sticky::target(work.total(), max, aim.granule));
            dropped.target = Some(target);
            fill = target.saturating_sub(beside);
        }
        let rounds_left = budget.round_limit().map_or(usize::MAX, |limit| {
            limit.saturating_sub(
                usize::from(layout.question.is_some())
                    + layout.floor_users(work.history().messages()),
            )
        });
        let counting = units.iter().filter(|u| u.counts_round).count();
        if total_cost <= fill && counting <= rounds_left {
            return None;
        }
        Some(Self {
            units,
            keep: vec![false; units.len()],
            partly: vec![None; units.len()],
            left: fill,
            rounds_left,
        })
    }

    /// Keeps the steps of the newest round first, newest first, as long
    /// as they fit: they serve the current question, and the steps dropped
    /// are the oldest ones, so what is dropped only grows as the round
    /// does. Whether every one of them was kept.
    fn keep_newest(&mut self) -> bool {
        let units = self.units;
        for k in (0..units.len()).rev().filter(|&k| units[k].newest) {
            if units[k].cost > self.left {
                return false;
            }
            self.keep[k] = true;
            self.left -= units[k].cost;
        }
        true
    }

    /// Then the earlier rounds (and the head's steps), by relevance.
    async fn keep_earlier(
        &mut self,
        work: &WorkingCopy<'_, '_>,
        layout: &Layout<'_>,
        aim: &DropSettings,
        scoring: Scoring<'_>,
    ) {
        let units = self.units;
        let earlier: Vec<usize> = (0..units.len()).filter(|&k| !units[k].newest).collect();
        if earlier.is_empty() {
            return;
        }
        let mut order = self.order(work, layout, aim, &earlier, scoring).await;
        let skipped = self.hand_out(&mut order, aim.stop_early);
        self.keep_parts(work, layout, skipped);
    }

    /// The earlier units in the order they are kept in: relevant units
    /// first, then by value (relevance plus the recency bonus), then the
    /// newest.
    async fn order(
        &self,
        work: &WorkingCopy<'_, '_>,
        layout: &Layout<'_>,
        aim: &DropSettings,
        earlier: &[usize],
        scoring: Scoring<'_>,
    ) -> Vec<u128> {
        let units = self.units;
        let mut scores = scores(work, layout, units, earlier, scoring).await;
        // A question naming a month finds the turns said in it.
        if let Some(q) = layout.question {
            let messages = work.history().messages();
            let ranges = earlier.iter().map(|&k| units[k].range.clone());
            dates::lift(&mut scores, &messages[q].text(), messages, ranges);
        }
        let earlier_cost: usize = earlier.iter().map(|&k| units[k].cost).sum();
        let pressure = if earlier_cost == 0 {
            0.0
        } else {
            1.0 - self.left.min(earlier_cost) as f64 / earlier_cost as f64
        };
        let threshold = keep_floor(pressure);
        let m = (units.len() + aim.skipped_steps) as f64;
        earlier
            .iter()
            .zip(&scores)
            .map(|(&k, &score)| {
                let relevant = score > 0.0 && score >= threshold;
                let value = score + aim.recency_weight * (k + 1) as f64 / m;
                rank(relevant, value, k)
            })
            .collect()
    }

    /// Keeps the units of `order`, best first, that fit; the rounds that
    /// did not, to keep in part. With `stop_early`, the units that can no
    /// longer be kept are passed over without being ranked.
    fn hand_out(&mut self, order: &mut [u128], stop_early: bool) -> Vec<usize> {
        let units = self.units;
        let need = |k: usize| units[k].least;
        let mut skipped = Vec::new();
        let mut best = BestFirst::new(order);
        let mut handed = false;
        loop {
            // A unit that cannot be kept now, whole or in part, never can
            // be (`left` only shrinks, here and below): once units were
            // handed out, the rest is passed over without being ranked.
            if handed && stop_early {
                let left = self.left;
                best.retain(|r| need(unit_of(r)) <= left);
            }
            handed = true;
            let Some(chunk) = best.next_chunk() else {
                break;
            };
            for k in chunk.iter().map(|&key| unit_of(key)) {
                let unit = &units[k];
                if unit.cost <= self.left && (!unit.counts_round || self.rounds_left > 0) {
                    self.keep[k] = true;
                    self.left -= unit.cost;
                    self.rounds_left -= usize::from(unit.counts_round);
                } else if unit.round {
                    skipped.push(k);
                }
            }
        }
        skipped
    }

    /// An earlier round too large to keep whole (a long agent round before
    /// a follow-up question) keeps its question and its newest steps that
    /// fit, rather than nothing, in the same order.
    fn keep_parts(&mut self, work: &WorkingCopy<'_, '_>, layout: &Layout<'_>, skipped: Vec<usize>) {
        for k in skipped {
            let unit = &self.units[k];
            if self.left == 0 || (unit.counts_round && self.rounds_left == 0) {
                continue;
            }
            if let Some(from) = partial(work, layout, &unit.range, self.left) {
                let kept_cost = outside_floor(work, layout, unit.range.start..unit.range.start + 1)
                    + outside_floor(work, layout, from..unit.range.end);
                self.left -= kept_cost;
                self.rounds_left -= usize::from(unit.counts_round);
                self.partly[k] = Some((from, kept_cost));
            }
        }
    }

    /// Drops what is not kept: runs of whole units together, the rest
    /// message by message outside the floor.
    fn apply(&self, work: &mut WorkingCopy<'_, '_>, layout: &Layout<'_>) {
        let mut run: Option<Range<usize>> = None;
        for (k, (unit, &kept)) in self.units.iter().zip(&self.keep).enumerate() {
            if kept {
                continue;
            }
            // A round kept in part loses the steps between its question
            // and `from`.
            let range = match self.partly[k] {
                Some((from, _)) => unit.range.start + 1..from,
                None => unit.range.clone(),
            };
            if unit.whole {
                // Runs of whole units dropped are dropped together.
                match &mut run {
                    Some(run) if run.end == range.start => run.end = range.end,
                    _ => {
                        if let Some(done) = run.replace(range) {
                            work.drop_range(done);
                        }
                    }
                }
                continue;
            }
            if let Some(done) = run.take() {
                work.drop_range(done);
            }
            for i in range {
                if !layout.in_floor(i) {
                    work.drop_message(i);
                }
            }
        }
        if let Some(done) = run {
            work.drop_range(done);
        }
    }
}

/// The rounds and the steps among `units` that `kept` says are kept:
/// their number and cost.
fn tally(units: &[Unit], kept: impl Fn(usize) -> bool) -> (Tally, Tally) {
    let (mut rounds, mut steps) = (Tally::default(), Tally::default());
    for (k, unit) in units.iter().enumerate() {
        if kept(k) {
            let tally = if unit.round { &mut rounds } else { &mut steps };
            tally.count += 1;
            tally.tokens += unit.cost;
        }
    }
    (rounds, steps)
}

/// A unit's place in the order the stage keeps units in, as one number:
/// higher for a relevant unit, then for a higher value (as
/// [`f64::total_cmp`] orders values), then for a newer unit `k`.
fn rank(relevant: bool, value: f64, k: usize) -> u128 {
    // `total_cmp`'s order of the bits, made unsigned.
    let bits = value.to_bits() as i64;
    let ordered = bits ^ ((((bits >> 63) as u64) >> 1) as i64);
    let unsigned = (ordered as u64) ^ (1 << 63);
    (u128::from(relevant) << 127) | (u128::from(unsigned) << 63) | (k as u128 & UNIT)
}

/// The bits of [`rank`] that hold the unit.
const UNIT: u128 = (1 << 63) - 1;

/// The unit a [`rank`] is of.
fn unit_of(rank: u128) -> usize {
    usize::try_from(rank & UNIT).unwrap_or(usize::MAX)
}

/// Tokens of `range` outside the floor.
fn outside_floor(work: &WorkingCopy<'_, '_>, layout: &Layout<'_>, range: Range<usize>) -> usize {
    let counts = work.counts_of(range.clone());
    layout
        .in_floor_of(range)
        .iter()
        .zip(counts)
        .filter(|(floor, _)| !**floor)
        .map(|(_, count)| count)
        .sum()
}

/// Where the kept part of an earlier `round` starts when its question and
/// its newest steps must fit in `left` tokens: the start of the oldest
/// step kept, or `None` when not even one step fits beside the question.
fn partial(
    work: &WorkingCopy<'_, '_>,
    layout: &Layout<'_>,
    round: &Range<usize>,
    left: usize,
) -> Option<usize> {
    let messages = work.history().messages();
    let body = round.start + 1..round.end;
    let question = outside_floor(work, layout, round.start..round.start + 1);
    let mut room = left.checked_sub(question)?;
    let mut from = None;
    let steps: Vec<Range<usize>> = structure::steps(&messages[body.clone()])
        .map(|s| body.start + s.start..body.start + s.end)
        .collect();
    for step in steps.iter().rev() {
        let cost = outside_floor(work, layout, step.clone());
        if cost > room {
            break;
        }
        room -= cost;
        from = Some(step.start);
    }
    from
}

/// The candidates, in order.
fn units(work: &WorkingCopy<'_, '_>, layout: &Layout) -> Vec<Unit> {
    let messages = work.history().messages();
    let n = messages.len();
    let starts = layout.round_starts(messages);
    // Every earlier round is a unit unless all of it lies in the floor.
    let mut units = Vec::with_capacity(starts.len());
    let mut push = |range: Range<usize>, round: bool, newest: bool| {
        units.extend(unit(work, layout, range, round, newest));
    };
    let steps_of = |range: Range<usize>| {
        let base = range.start;
        structure::steps(&messages[range]).map(move |s| base + s.start..base + s.end)
    };
    match (layout.question, starts.first()) {
        (Some(q), Some(&first)) => {
            for step in steps_of(0..first) {
                push(step, false, false);
            }
            // The rounds past reach are no candidates (see `past_reach`):
            // the earlier rounds from the first within reach, each ending
            // where the next starts (the last, at the question).
            let past = layout.past();
            let within = starts.partition_point(|&s| past.contains(&s));
            for pair in starts[within..].windows(2).filter(|p| p[0] < q) {
                push(pair[0]..pair[1], true, false);
            }
            let end = layout.newest_step.max(q + 1).min(n);
            // The steps skipped lead the round's (see `horizon`).
            let skipped = layout.skipped();
            let from = if skipped.start == q + 1 {
                skipped.end.max(q + 1)
            } else {
                q + 1
            };
            for step in steps_of(from.min(end)..end) {
                push(step, false, true);
            }
        }
        _ => {
            for step in steps_of(0..layout.newest_step) {
                push(step, false, true);
            }
        }
    }
    units
}

/// The candidate of `range` (a round, or a step), unless all of it lies
/// in the floor.
fn unit(
    work: &WorkingCopy<'_, '_>,
    layout: &Layout,
    range: Range<usize>,
    round: bool,
    newest: bool,
) -> Option<Unit> {
    let mut cost = 0;
    let mut outside = 0;
    let counts = work.counts_of(range.clone());
    for (&floor, &count) in layout.in_floor_of(range.clone()).iter().zip(counts) {
        if !floor {
            outside += 1;
            cost += count;
        }
    }
    if outside == 0 {
        return None;
    }
    let whole = outside == range.len();
    let least = if round && range.len() >= 2 {
        let part = outside_floor(work, layout, range.start..range.start + 1)
            + outside_floor(work, layout, range.end - 1..range.end);
        cost.min(part)
    } else {
        cost
    };
    let counts_round = round && !layout.in_floor(range.start);
    Some(Unit {
        range,
        cost,
        round,
        counts_round,
        newest,
        whole,
        least,
    })
}

/// The relevance of each of the units `which` (earlier rounds and the
/// head's steps, the corpus term weights are learned from) to the current
/// question, with their neighbours' share. A failing scorer leaves
/// recency to decide (every score 0).
async fn scores(
    work: &WorkingCopy<'_, '_>,
    layout: &Layout<'_>,
    units: &[Unit],
    which: &[usize],
    scoring: Scoring<'_>,
) -> Vec<f64> {
    let question = layout
        .question
        .map(|q| reach::query(work.history(), q))
        .unwrap_or_default();
    let relevance = scoring.relevance;
    if let Some(terms) = scoring.terms {
        return with_neighbours(&indexed_scores(
            work, layout, units, which, terms, &question,
        ));
    }
    let texts: Vec<Vec<&str>> = which
        .iter()
        .map(|&k| {
            let mut texts = Vec::new();
            for i in units[k].range.clone() {
                // A placeholder's words are Thrift's, not the conversation's.
                if !layout.in_floor(i) && !work.is_replaced(i) {
                    texts_of(work.message(i), &mut texts);
                }
            }
            texts
        })
        .collect();
    match relevance.score(&question, &texts).await {
        Ok(own) if own.len() == which.len() => with_neighbours(&own),
        Ok(own) => {
            tracing::warn!(
                scorer = relevance.name(),
                scores = own.len(),
                units = which.len(),
                "relevance scorer returned the wrong number of scores; recency decides"
            );
            vec![0.0; which.len()]
        }
        Err(error) => {
            tracing::warn!(scorer = relevance.name(), %error, "relevance scorer failed; recency decides");
            vec![0.0; which.len()]
        }
    }
}

/// [`scores`] from the term index: each unit as it is shown, placeholders
/// left out (the same scores as reading every text).
fn indexed_scores(
    work: &WorkingCopy<'_, '_>,
    layout: &Layout<'_>,
    units: &[Unit],
    which: &[usize],
    terms: &mut TermIndex,
    question: &str,
) -> Vec<f64> {
    terms.catch_up(work.history().messages());
    let mut shown = Units::skipping(work.history().len(), which.len(), layout.past());
    for (u, &k) in which.iter().enumerate() {
        if units[k].whole && work.is_untouched() {
            // Every message as it is.
            shown.add_range(units[k].range.clone(), u);
            continue;
        }
        for i in units[k].range.clone() {
            // As with the texts: what the unit shows, placeholders left out.
            if layout.in_floor(i) || work.is_replaced(i) {
                continue;
            }
            if work.is_changed(i) {
                shown.add_changed(i, u, work.message(i));
            } else {
                shown.add(i, u);
            }
        }
    }
    terms.score(question, &shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_order_as_relevance_then_value_then_recency() {
        let values = [
            (true, 0.5, 3),
            (true, 0.5, 7),
            (true, 0.9, 1),
            (false, 2.0, 9),
            (false, 0.0, 4),
            (false, -0.0, 5),
            (false, -1.5, 6),
            (false, f64::NAN, 8),
            (false, f64::INFINITY, 2),
        ];
        let mut by_tuple = values.to_vec();
        by_tuple.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| b.1.total_cmp(&a.1))
                .then_with(|| b.2.cmp(&a.2))
        });
        let mut by_rank: Vec<u128> = values.iter().map(|&(r, v, k)| rank(r, v, k)).collect();
        by_rank.sort_unstable_by(|a, b| b.cmp(a));
        let units: Vec<usize> = by_rank.into_iter().map(unit_of).collect();
        assert_eq!(units, by_tuple.iter().map(|t| t.2).collect::<Vec<_>>());
    }
}
