//! What a [`Compact`](crate::Compact) remembers of its summaries between
//! turns: the summary it last applied (re-applied while the result is not
//! written back), the attempt that last failed (not repeated until the
//! threshold is passed again), and the files of its last summary.
//!
//! [`SummaryState`] is shared with the background task; each method locks
//! it once.

use std::sync::{Arc, Mutex, MutexGuard};

use memory_core::{History, MemoryError, Message, TokenCounter, TrimResult};

use crate::FileOps;
use crate::covering::{Applied, Covering, Fingerprint, identity};
use crate::turns::Plan;

/// An attempt that made no usable summary: no other is made for the same
/// history until its new material has grown by the threshold again, nor
/// for the view shown meanwhile (trimmed again, or a history that goes on
/// from it) until the growth still allowed has been appended to it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FailedAt {
    /// The history up to the last message the attempt would have replaced.
    fingerprint: Fingerprint,
    /// Tokens of its new material.
    new_tokens: usize,
    /// The newest view shown of that history during its cooldown.
    shown: Option<Shown>,
}

/// A view shown while a failed attempt waits. Trimmed again it is the same
/// history with its oldest turns out of view, whose material is less than
/// the failed attempt's: it waits for what is appended to it, not for its
/// material to pass the failed attempt's.
#[derive(Debug, Clone, Copy)]
struct Shown {
    fingerprint: Fingerprint,
    /// Tokens of the view.
    total: usize,
    /// Tokens that may be appended to the view before an attempt is made.
    allowance: usize,
}

impl FailedAt {
    /// The attempt for `plan` of `history`; `None` when the plan folds
    /// nothing.
    pub fn of(history: &History<'_>, plan: &Plan) -> Option<FailedAt> {
        let last = plan.region.last()?;
        Some(FailedAt {
            fingerprint: Fingerprint::of(history, last.end),
            new_tokens: plan.new_tokens,
            shown: None,
        })
    }
}

/// The cooldown a failed attempt puts on a turn: how many more tokens the
/// turn's history may grow by before an attempt is made, and the attempt
/// (to remember the view shown with it, see
/// [`SummaryState::shown_during_cooldown`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cooldown {
    allowance: usize,
    failed: Fingerprint,
}

/// The summary remembered, applied to a turn's history.
#[derive(Debug)]
pub(crate) struct Known {
    covering: Covering,
    applied: Applied,
}

impl Known {
    /// The history with the summary applied.
    pub fn work(&self) -> Result<History<'_>, MemoryError> {
        self.applied.result.as_history()
    }

    /// The compacted history, materializing.
    pub fn into_result(self) -> TrimResult {
        self.applied.result
    }
}

/// A turn's history as given, and the summary remembered for it.
pub(crate) struct Base<'r, 'h> {
    raw: &'r History<'h>,
    known: Option<Known>,
}

impl<'r, 'h> Base<'r, 'h> {
    /// `raw` with what `summary_state` knows of it.
    ///
    /// # Errors
    ///
    /// Counting the summary failed.
    pub async fn new(
        raw: &'r History<'h>,
        summary_state: &SummaryState,
        counter: &dyn TokenCounter,
    ) -> Result<Self, MemoryError> {
        let known = summary_state.known(raw, counter).await?;
        Ok(Base { raw, known })
    }

    /// The history as given.
    pub fn raw(&self) -> &'r History<'h> {
        self.raw
    }

    /// The history a turn works on: the remembered summary applied, when
    /// there is one.
    pub fn work(&self) -> Result<History<'_>, MemoryError> {
        match &self.known {
            Some(known) => known.work(),
            None => Ok(self.raw.clone()),
        }
    }

    /// `covering`, made on [`work`](Self::work), restated for the history
    /// as given. `None` when it keeps the remembered summary (never the case
    /// for Compact's own plans).
    pub fn restate(&self, covering: Covering) -> Option<Covering> {
        match &self.known {
            Some(known) => covering.over(&known.covering, &known.applied, self.raw),
            None => Some(covering),
        }
    }

    /// The remembered summary applied, if any.
    pub fn into_known(self) -> Option<Known> {
        self.known
    }
}

#[derive(Debug, Default)]
struct Inner {
    covered: Option<Covering>,
    failed: Option<FailedAt>,
    files: Option<(u64, FileOps)>,
}

/// What is remembered of the summaries between turns, shared with the
/// background task.
#[derive(Debug, Clone, Default)]
pub(crate) struct SummaryState {
    inner: Arc<Mutex<Inner>>,
}

impl SummaryState {
    /// A panic elsewhere while the lock was held leaves nothing half-written
    /// that matters (each field is replaced whole), so a poisoned lock is
    /// used as it is rather than wedging every later turn.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The summaries of the last materializing result applied to `raw`,
    /// when it starts with the messages they replaced (that result was not
    /// written back).
    ///
    /// # Errors
    ///
    /// Counting the summary failed.
    pub async fn known(
        &self,
        raw: &History<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<Option<Known>, MemoryError> {
        let covering = match &self.lock().covered {
            Some(c) if c.fingerprint.matches(raw) => c.clone(),
            _ => return Ok(None),
        };
        let applied = covering.apply(raw, counter).await?;
        Ok(Some(Known { covering, applied }))
    }

    /// Remembers the summaries of a materializing result (restated for the
    /// history the call was given) and the files of the newest.
    pub fn remember(&self, covering: Option<Covering>) {
        let mut inner = self.lock();
        if let Some(c) = &covering {
            inner.files = Some((identity(&c.message), c.files.clone()));
        }
        inner.covered = covering;
        inner.failed = None;
    }

    /// Whether an attempt for `plan` of `work` must wait: the last one
    /// failed, for the same messages, and the new material has not grown
    /// by `threshold` since; or `work` goes on from a view shown while it
    /// waited, by fewer tokens than that view was allowed.
    pub fn cooldown(&self, work: &History<'_>, plan: &Plan, threshold: usize) -> Option<Cooldown> {
        let f = self.lock().failed?;
        let cooldown = |allowance| Cooldown {
            allowance,
            failed: f.fingerprint,
        };
        let wanted = f.new_tokens.saturating_add(threshold);
        if plan.new_tokens < wanted && f.fingerprint.matches(work) {
            return Some(cooldown(wanted - plan.new_tokens));
        }
        let shown = f.shown.filter(|s| s.fingerprint.matches(work))?;
        let grown = work.total().saturating_sub(shown.total);
        (grown < shown.allowance).then(|| cooldown(shown.allowance - grown))
    }

    /// Remembers `view`, shown during `cooldown`, so that a history that
    /// starts with it waits too, for the growth `cooldown` still allows.
    /// Nothing is remembered when another attempt has failed since.
    ///
    /// # Errors
    ///
    /// `view` is not a history (never for results built by this crate).
    pub fn shown_during_cooldown(
        &self,
        view: &TrimResult,
        cooldown: Cooldown,
    ) -> Result<(), MemoryError> {
        if view.messages.is_empty() {
            return Ok(());
        }
        let history = view.as_history()?;
        let shown = Shown {
            fingerprint: Fingerprint::of(&history, view.messages.len()),
            total: history.total(),
            allowance: cooldown.allowance,
        };
        if let Some(failed) = self.lock().failed.as_mut()
            && failed.fingerprint == cooldown.failed
        {
            failed.shown = Some(shown);
        }
        Ok(())
    }

    /// Records a failed attempt, whose cooldown then starts.
    pub fn record_failure(&self, failed: Option<FailedAt>) {
        if let Some(failed) = failed {
            self.lock().failed = Some(failed);
        }
    }

    /// The files of the last summary made, when it is among `previous`.
    pub fn files_of<'m>(&self, mut previous: impl Iterator<Item = &'m Message>) -> Option<FileOps> {
        let inner = self.lock();
        let (made, files) = inner.files.as_ref()?;
        previous
            .any(|m| identity(m) == *made)
            .then(|| files.clone())
    }

    /// The files listed in the last summary made.
    pub fn files(&self) -> FileOps {
        self.lock()
            .files
            .as_ref()
            .map(|(_, files)| files.clone())
            .unwrap_or_default()
    }
}
