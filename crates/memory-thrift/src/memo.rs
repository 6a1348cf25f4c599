//! [`Memo`]: what a [`Thrift`](crate::Thrift) keeps between calls (the
//! messages it has seen, where its last replay stopped), lent to one trim
//! at a time.
//!
//! Clones of a `Thrift` share one memo. A trim takes it out for as long as
//! it runs and puts it back when it ends (however it ends); a trim that
//! runs meanwhile, on a clone, gets an empty one and reads its history
//! afresh. What is kept never changes a result, only how much a call must
//! read: see [`MessageIndex`] and [`Resume`].

use std::sync::{Arc, Mutex};

use memory_core::covered::Expanded;
use memory_core::{History, TokenCounter};

use crate::message_index::MessageIndex;
use crate::resume::Resume;
use crate::shrink_cache::ShrinkCache;

/// What one history's calls keep.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub seen: MessageIndex,
    pub resume: Resume,
    pub shrunk: ShrinkCache,
}

impl State {
    /// Takes `history`, counted by `counter`, in (see [`MessageIndex::sync`]) and
    /// forgets what was kept of the messages that changed: the replay
    /// states of the calls that saw them, and their shrunk forms.
    pub fn sync(&mut self, history: &History<'_>, counter: &dyn TokenCounter) {
        let same = self.seen.sync(history);
        self.resume.keep_valid(same);
        self.shrunk.truncate(same);
        self.shrunk.counted_by(counter);
    }
}

/// The memo shared by clones of a `Thrift`; `None` inside when lent out,
/// or when keeping nothing.
#[derive(Debug, Clone)]
pub(crate) struct Memo {
    slot: Arc<Mutex<Option<Box<State>>>>,
    /// The last call's view with its covered set placed, to build the
    /// next one from ([`Expanded::of_reusing`]).
    expanded: Arc<Mutex<Option<Expanded>>>,
    /// Whether anything is kept (else every call reads the whole history).
    on: bool,
}

impl Default for Memo {
    fn default() -> Self {
        Self::new(true)
    }
}

impl Memo {
    /// An empty memo that keeps what calls read when `keep`, else nothing
    /// (every call then reads the whole history: the reference that
    /// keeping must match).
    pub fn new(keep: bool) -> Self {
        Self {
            slot: Arc::default(),
            expanded: Arc::default(),
            on: keep,
        }
    }

    /// The expansion kept by the last call that placed a covered set, if
    /// any (taken: a trim running meanwhile builds its own).
    pub fn take_expanded(&self) -> Option<Expanded> {
        if !self.on {
            return None;
        }
        self.expanded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Keeps `expanded` for the next call.
    pub fn keep_expanded(&self, expanded: Expanded) {
        if self.on {
            *self.expanded.lock().unwrap_or_else(|e| e.into_inner()) = Some(expanded);
        }
    }

    /// The state, lent until the [`LentState`] is dropped.
    pub fn lend(&self) -> LentState<'_> {
        let state = self.on.then(|| {
            self.slot
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_default()
        });
        LentState { memo: self, state }
    }
}

/// The state lent to one trim; back in the memo when dropped.
pub(crate) struct LentState<'m> {
    memo: &'m Memo,
    state: Option<Box<State>>,
}

impl LentState<'_> {
    /// The state, unless the memo keeps nothing.
    pub fn state(&mut self) -> Option<&mut State> {
        self.state.as_deref_mut()
    }
}

impl Drop for LentState<'_> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            *self.memo.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(state);
        }
    }
}
