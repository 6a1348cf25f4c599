//! Where the last replay stopped, so that the next trim of a history that
//! extends the same prefix takes it up there instead of replaying every
//! call since the replay's start.
//!
//! The replay (see [`settle`](crate::settle)) is a function of the history
//! alone; this only spares recomputing it. A kept state is used only when
//! the new history holds, message for message and count for count, the
//! prefix it was computed from (compared by a 64-bit hash of each message
//! and its count), under the same budget and replay span. Two states are
//! kept: before the newest call and at it, so that a history whose newest
//! message differs (another question asked of the same conversation)
//! still resumes.

use std::fmt::Write as _;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use memory_core::{Budget, History, TrimResult};

use crate::trace::ThriftTrace;

/// What identifies a history for resuming: a hash of each message with
/// its count, and the budget.
pub(crate) struct Keys {
    messages: Arc<[u64]>,
    budget: Limits,
}

/// A budget's token and rounds limits.
type Limits = (Option<usize>, Option<usize>);

/// Hashes a value's `Debug` form without building the string.
struct Writer<'h>(&'h mut DefaultHasher);

impl std::fmt::Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

/// The keys of `history` under `budget`.
pub(crate) fn keys(history: &History<'_>, budget: &Budget) -> Keys {
    let messages = history
        .messages()
        .iter()
        .zip(history.counts())
        .map(|(m, c)| {
            let mut hasher = DefaultHasher::new();
            c.hash(&mut hasher);
            // Every field of the message takes part.
            let _ = write!(Writer(&mut hasher), "{m:?}");
            hasher.finish()
        })
        .collect();
    Keys {
        messages,
        budget: (budget.max_tokens, budget.max_rounds),
    }
}

/// One replayed call's state.
#[derive(Debug, Clone)]
struct Kept {
    start: usize,
    call: usize,
    point: usize,
    result: TrimResult,
    trace: ThriftTrace,
}

#[derive(Debug, Default)]
struct Inner {
    keys: Option<(Arc<[u64]>, Limits)>,
    kept: Vec<Kept>,
}

/// The states kept, shared by clones of a [`Thrift`](crate::Thrift).
#[derive(Debug, Clone, Default)]
pub(crate) struct Resume(Arc<Mutex<Inner>>);

/// A state to resume from: its call, the context shown there and its trace.
pub(crate) type Found = (usize, TrimResult, ThriftTrace);

impl Resume {
    /// The latest kept state of a call in `calls` whose prefix `keys`
    /// holds, computed for the replay that starts at `start`.
    pub fn find(
        &self,
        keys: &Keys,
        start: usize,
        calls: Range<usize>,
        points: &[usize],
    ) -> Option<Found> {
        let inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (messages, budget) = inner.keys.as_ref()?;
        if *budget != keys.budget {
            return None;
        }
        inner
            .kept
            .iter()
            .rev()
            .find(|kept| {
                kept.start == start
                    && calls.contains(&kept.call)
                    && points.get(kept.call) == Some(&kept.point)
                    && kept.point <= messages.len()
                    && kept.point <= keys.messages.len()
                    && messages[..kept.point] == keys.messages[..kept.point]
            })
            .map(|kept| (kept.call, kept.result.clone(), kept.trace.clone()))
    }

    /// Keeps the states of the replay that started at `start`: before the
    /// newest call, when the replay reached it, and at it.
    pub fn keep(
        &self,
        keys: Keys,
        start: usize,
        points: &[usize],
        before: Option<Found>,
        now: Found,
    ) {
        let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        inner.kept.clear();
        for (call, result, trace) in before.into_iter().chain([now]) {
            inner.kept.push(Kept {
                start,
                call,
                point: points[call],
                result,
                trace,
            });
        }
        inner.keys = Some((keys.messages, keys.budget));
    }
}
