//! Where the last replay stopped, so that the next trim of a history that
//! extends the same prefix takes it up there instead of replaying every
//! call since the replay's start.
//!
//! The replay (see [`calls`](crate::calls)) is a function of the history
//! alone; this only spares recomputing it. A kept state is used only while
//! the messages its call saw are still the same (see
//! [`MessageIndex::sync`](crate::message_index::MessageIndex::sync): [`Resume::keep_valid`] forgets
//! the others), under the same budget and replay span. Two states are
//! kept: before the newest call and at it, so that a history whose newest
//! message differs (another question asked of the same conversation)
//! still resumes. The state before the newest call is usually the newest
//! one's context without the step it appended: it is then kept as that
//! context's lengths before the append ([`ContextLengths`]) rather than as
//! a copy.

use std::ops::Range;

use memory_core::{Budget, TrimResult};

use crate::calls::Points;
use crate::trace::ThriftTrace;

/// A budget's token and rounds limits.
type Limits = (Option<usize>, Option<usize>);

/// One replayed call's state: the replay's start, the call, the length of
/// the history it saw, its context and trace.
#[derive(Debug, Clone)]
struct ReplayState {
    start: usize,
    call: usize,
    point: usize,
    result: KeptContext,
    trace: ThriftTrace,
}

/// A kept context: its own, or the next kept state's cut back to its
/// lengths before the next call appended to it.
#[derive(Debug, Clone)]
pub(crate) enum KeptContext {
    /// The context itself.
    Whole(TrimResult),
    /// The next kept state's context, cut back to these lengths.
    CutFromNext(ContextLengths),
}

/// The lengths of a context and whether it fitted, before steps were
/// appended to it: appending only pushes messages and sets it fitting.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ContextLengths {
    messages: usize,
    protected: usize,
    fits: bool,
}

impl ContextLengths {
    /// The lengths of `result` as it stands.
    pub fn of(result: &TrimResult) -> Self {
        Self {
            messages: result.messages.len(),
            protected: result.protected.len(),
            fits: result.fits,
        }
    }

    /// `result`, appended to since these lengths were taken, as it was
    /// then.
    pub fn cut(self, mut result: TrimResult) -> TrimResult {
        result.messages.truncate(self.messages);
        result.counts.truncate(self.messages);
        result.protected.truncate(self.protected);
        result.fits = self.fits;
        result
    }
}

/// The states kept, computed under `budget`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resume {
    budget: Option<Limits>,
    kept: Vec<ReplayState>,
}

/// A state to resume from: its call, the context shown there and its trace.
pub(crate) type ResumePoint = (usize, TrimResult, ThriftTrace);

fn limits(budget: &Budget) -> Limits {
    (budget.max_tokens, budget.max_rounds)
}

impl Resume {
    /// Forgets the states whose call saw more than the first `same`
    /// messages, the only ones still as they were.
    pub fn keep_valid(&mut self, same: usize) {
        // A state kept as a mark on the next one's context takes that
        // context, cut back, when only the next one is forgotten.
        if let [before, next] = &mut self.kept[..]
            && before.point <= same
            && next.point > same
            && let KeptContext::CutFromNext(mark) = before.result
            && let KeptContext::Whole(result) =
                std::mem::replace(&mut next.result, KeptContext::CutFromNext(mark))
        {
            before.result = KeptContext::Whole(mark.cut(result));
        }
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
        points: &Points,
    ) -> Option<ResumePoint> {
        if self.budget != Some(limits(budget)) {
            return None;
        }
        let at = self.kept.iter().rposition(|kept| {
            kept.start == start
                && calls.contains(&kept.call)
                && points.get(kept.call) == Some(kept.point)
        })?;
        let kept = self.kept.swap_remove(at);
        let result = match kept.result {
            KeptContext::Whole(result) => result,
            KeptContext::CutFromNext(mark) => {
                // The next call's context, cut back (the replay that takes
                // this state up keeps new ones).
                let next = self
                    .kept
                    .iter()
                    .position(|next| next.call == kept.call + 1)?;
                let next = self.kept.swap_remove(next);
                self.kept.clear();
                match next.result {
                    KeptContext::Whole(result) => mark.cut(result),
                    KeptContext::CutFromNext(_) => return None,
                }
            }
        };
        Some((kept.call, result, kept.trace))
    }

    /// Keeps the states of the replay that started at `start` under
    /// `budget`: before the newest call, when the replay reached it, and
    /// at it.
    pub fn keep(
        &mut self,
        budget: &Budget,
        start: usize,
        points: &Points,
        before: Option<(usize, KeptContext, ThriftTrace)>,
        now: ResumePoint,
    ) {
        self.kept.clear();
        let (call, result, trace) = now;
        let now = (call, KeptContext::Whole(result), trace);
        for (call, result, trace) in before.into_iter().chain([now]) {
            self.kept.push(ReplayState {
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

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{History, Message};

    fn context(messages: &[Message]) -> TrimResult {
        let counts = vec![1; messages.len()];
        let history = History::new(messages, &counts).unwrap();
        TrimResult::unchanged(&history, &Budget::tokens(100))
    }

    /// A replay of calls 0 to 2 whose last call appended two messages to
    /// the context of the one before.
    fn kept() -> (Resume, TrimResult, TrimResult) {
        let m = [
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
            Message::assistant("d"),
        ];
        let (before, now) = (context(&m[..2]), context(&m));
        let mut resume = Resume::default();
        let points = Points::new(&[1, 2], 4);
        let budget = Budget::tokens(100);
        let mark = (
            1,
            KeptContext::CutFromNext(ContextLengths::of(&before)),
            ThriftTrace::default(),
        );
        resume.keep(
            &budget,
            0,
            &points,
            Some(mark),
            (2, now.clone(), ThriftTrace::default()),
        );
        (resume, before, now)
    }

    #[test]
    fn a_state_kept_as_a_mark_is_the_next_context_cut_back() {
        let budget = Budget::tokens(100);
        let (mut resume, before, now) = kept();
        let (call, got, _) = resume
            .take(&budget, 0, 0..3, &Points::new(&[1, 2], 4))
            .unwrap();
        assert_eq!((call, got), (2, now));
        let (mut resume, ..) = kept();
        let (call, got, _) = resume
            .take(&budget, 0, 0..2, &Points::new(&[1, 2], 4))
            .unwrap();
        assert_eq!((call, got), (1, before));
    }

    #[test]
    fn a_marked_state_outlives_the_next_one_forgotten() {
        let budget = Budget::tokens(100);
        let (mut resume, before, _) = kept();
        // The newest message changed: only the first two are the same.
        resume.keep_valid(2);
        let (call, got, _) = resume
            .take(&budget, 0, 0..3, &Points::new(&[1, 2], 3))
            .unwrap();
        assert_eq!((call, got), (1, before));
        // Nothing is left of a state forgotten with the one it marks.
        let (mut resume, ..) = kept();
        resume.keep_valid(1);
        assert!(
            resume
                .take(&budget, 0, 0..3, &Points::new(&[1, 2], 4))
                .is_none()
        );
    }
}
