//! Where the last replay stopped, so that the next trim of a history that
//! extends the same prefix takes it up there instead of replaying every
//! call since the replay's start.
//!
//! The replay (see [`settle`](crate::settle)) is a function of the history
//! alone; this only spares recomputing it. A kept state is used only while
//! the messages its call saw are still the same (see
//! [`Seen::sync`](crate::seen::Seen::sync): [`Resume::keep_valid`] forgets
//! the others), under the same budget and replay span. Two states are
//! kept: before the newest call and at it, so that a history whose newest
//! message differs (another question asked of the same conversation)
//! still resumes.

use std::ops::Range;

use memory_core::{Budget, TrimResult};

use crate::trace::ThriftTrace;

/// A budget's token and rounds limits.
type Limits = (Option<usize>, Option<usize>);

/// One replayed call's state.
#[derive(Debug, Clone)]
struct Kept {
    start: usize,
    call: usize,
    point: usize,
    result: TrimResult,
    trace: ThriftTrace,
}

/// The states kept, computed under `budget`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resume {
    budget: Option<Limits>,
    kept: Vec<Kept>,
}

/// A state to resume from: its call, the context shown there and its trace.
pub(crate) type Found = (usize, TrimResult, ThriftTrace);

fn limits(budget: &Budget) -> Limits {
    (budget.max_tokens, budget.max_rounds)
}

impl Resume {
    /// Forgets the states whose call saw more than the first `same`
    /// messages, the only ones still as they were.
    pub fn keep_valid(&mut self, same: usize) {
        self.kept.retain(|kept| kept.point <= same);
    }

    /// The latest kept state of a call in `calls`, computed under `budget`
    /// for the replay that starts at `start`, taken out (the replay that
    /// takes it up keeps new ones when it ends).
    pub fn take(
        &mut self,
        budget: &Budget,
        start: usize,
        calls: Range<usize>,
        points: &[usize],
    ) -> Option<Found> {
        if self.budget != Some(limits(budget)) {
            return None;
        }
        let at = self.kept.iter().rposition(|kept| {
            kept.start == start
                && calls.contains(&kept.call)
                && points.get(kept.call) == Some(&kept.point)
        })?;
        let kept = self.kept.swap_remove(at);
        Some((kept.call, kept.result, kept.trace))
    }

    /// Keeps the states of the replay that started at `start` under
    /// `budget`: before the newest call, when the replay reached it, and
    /// at it.
    pub fn keep(
        &mut self,
        budget: &Budget,
        start: usize,
        points: &[usize],
        before: Option<Found>,
        now: Found,
    ) {
        self.kept.clear();
        for (call, result, trace) in before.into_iter().chain([now]) {
            self.kept.push(Kept {
                start,
                call,
                point: points[call],
                result,
                trace,
            });
        }
        self.budget = Some(limits(budget));
    }
}
