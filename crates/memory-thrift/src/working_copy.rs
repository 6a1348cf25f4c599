//! The working copy of a trim: the history with the changes made so far.

use std::borrow::Cow;
use std::sync::Arc;

use memory_core::{History, MemoryError, Message, Selection, TokenCounter, TrimResult};

use crate::shrink_cache::ShrinkCache;

/// The history, the messages changed so far (with their new counts) and the
/// messages dropped.
///
/// A tool result replaced by its placeholder is only counted until the
/// end: the placeholder is written by [`finish`](WorkingCopy::finish), for the
/// messages kept (most replaced results of a long history are dropped
/// later). Until then [`message`](WorkingCopy::message) reads it as it was.
pub(crate) struct WorkingCopy<'h, 'a> {
    history: &'h History<'a>,
    /// For each message, its place in `changed` plus one (0: unchanged).
    slot: Vec<u32>,
    /// Shared with what the memo keeps (a cut output), so that a change
    /// costs no copy unless the message is kept.
    changed: Vec<Arc<Message>>,
    /// The history's counts until a message is changed: copied then (a
    /// chat's shed changes none, and the copy would cost a pass over
    /// the whole history on every shed, however little of it is within
    /// reach).
    counts: Cow<'a, [usize]>,
    dropped: Vec<bool>,
    /// Replaced by its placeholder (written at the end).
    replaced: Vec<bool>,
    total: usize,
    /// The messages dropped, as ascending runs, while they are dropped in
    /// order (else `None`): what [`finish`](WorkingCopy::finish) skips without
    /// looking at each message.
    runs: Option<Vec<std::ops::Range<usize>>>,
    /// Positions changed or replaced, in no order, possibly repeated.
    touched: Vec<usize>,
    /// Messages left out before any stage ran (see
    /// [`exclude`](WorkingCopy::exclude)): dropped, but not among `runs`;
    /// disjoint, ascending.
    excluded: Vec<std::ops::Range<usize>>,
}

impl<'h, 'a> WorkingCopy<'h, 'a> {
    pub fn new(history: &'h History<'a>) -> Self {
        Self {
            history,
            slot: vec![0; history.len()],
            changed: Vec::new(),
            counts: Cow::Borrowed(history.counts()),
            dropped: vec![false; history.len()],
            replaced: vec![false; history.len()],
            total: history.total(),
            runs: Some(Vec::new()),
            touched: Vec::new(),
            excluded: Vec::new(),
        }
    }

    /// Drops the messages `range`, none of which is dropped or changed
    /// yet, before any stage runs: the drops made later in order stay a
    /// cheap list of runs, whatever their place beside `range`. Returns
    /// their tokens: `tokens` when the caller knows them (summed here
    /// otherwise).
    pub fn exclude(&mut self, range: std::ops::Range<usize>, tokens: Option<usize>) -> usize {
        debug_assert!(!self.dropped[range.clone()].contains(&true));
        if range.is_empty() {
            return 0;
        }
        self.dropped[range.clone()].fill(true);
        debug_assert!(tokens.is_none_or(|t| t == self.counts[range.clone()].iter().sum::<usize>()));
        let tokens = tokens.unwrap_or_else(|| self.counts[range.clone()].iter().sum::<usize>());
        self.total -= tokens;
        let at = self.excluded.partition_point(|r| r.start < range.start);
        self.excluded.insert(at, range);
        tokens
    }

    pub fn history(&self) -> &'h History<'a> {
        self.history
    }

    /// Message `i` as it stands now.
    pub fn message(&self, i: usize) -> &Message {
        match self.slot[i] {
            0 => &self.history.messages()[i],
            k => &self.changed[k as usize - 1],
        }
    }

    /// Tokens of message `i` as it stands now.
    pub fn count(&self, i: usize) -> usize {
        self.counts[i]
    }

    /// Tokens of each message of `range` as it stands now.
    pub fn counts_of(&self, range: std::ops::Range<usize>) -> &[usize] {
        &self.counts[range]
    }

    /// Tokens of everything not dropped.
    pub fn total(&self) -> usize {
        self.total
    }

    pub fn is_dropped(&self, i: usize) -> bool {
        self.dropped[i]
    }

    /// Whether message `i` stands changed (shrunk; its reasoning replaced by its placeholder,
    /// its output cut, its media replaced: only the reasoning stage
    /// changes an assistant message).
    pub fn is_changed(&self, i: usize) -> bool {
        self.slot[i] != 0
    }

    /// Whether message `i` is replaced by its placeholder.
    pub fn is_replaced(&self, i: usize) -> bool {
        self.replaced[i]
    }

    /// Replaces tool result `i` by its placeholder, of `tokens` tokens.
    pub fn replace_with_placeholder(&mut self, i: usize, tokens: usize) {
        self.total = self.total - self.counts[i] + tokens;
        self.counts.to_mut()[i] = tokens;
        self.replaced[i] = true;
        self.touched.push(i);
    }

    /// Puts `message` in place of message `i` if the counter finds it
    /// smaller; returns the counts before and after when it did.
    pub async fn shrink(
        &mut self,
        i: usize,
        message: Message,
        counter: &dyn TokenCounter,
    ) -> Result<Option<(usize, usize)>, MemoryError> {
        let tokens = counter.count_message(&message).await?;
        Ok(self.set_if_smaller(i, message, tokens))
    }

    /// Puts `message`, of `tokens` tokens, in place of message `i` if it is
    /// smaller; returns the counts before and after when it did.
    pub fn set_if_smaller(
        &mut self,
        i: usize,
        message: impl Into<Arc<Message>>,
        tokens: usize,
    ) -> Option<(usize, usize)> {
        let before = self.counts[i];
        if tokens >= before {
            return None;
        }
        self.set(i, message, tokens);
        Some((before, tokens))
    }

    /// Puts `message`, of `tokens` tokens, in place of message `i`.
    pub fn set(&mut self, i: usize, message: impl Into<Arc<Message>>, tokens: usize) {
        let message = message.into();
        self.total = self.total - self.counts[i] + tokens;
        self.counts.to_mut()[i] = tokens;
        self.touched.push(i);
        match self.slot[i] {
            0 => {
                self.changed.push(message);
                self.slot[i] = u32::try_from(self.changed.len()).unwrap_or(u32::MAX);
            }
            k => self.changed[k as usize - 1] = message,
        }
    }

    /// Drops message `i`.
    pub fn drop_message(&mut self, i: usize) {
        if std::mem::replace(&mut self.dropped[i], true) {
            return;
        }
        self.total -= self.counts[i];
        if let Some(runs) = &mut self.runs {
            match runs.last_mut() {
                Some(last) if last.end == i => last.end = i + 1,
                Some(last) if last.end > i => self.runs = None,
                _ => runs.push(i..i + 1),
            }
        }
    }

    /// The positions [`finish`](WorkingCopy::finish) must look at, ascending: the
    /// first of each run dropped and each message changed or replaced;
    /// every position when the drops were not made in order.
    fn marks(&mut self) -> Vec<usize> {
        let n = self.history.len();
        let Some(runs) = &mut self.runs else {
            return (0..n).collect();
        };
        // The ranges excluded are runs like the others (they are disjoint).
        for excluded in std::mem::take(&mut self.excluded) {
            let at = runs.partition_point(|r| r.start < excluded.start);
            runs.insert(at, excluded);
        }
        let mut marks = std::mem::take(&mut self.touched);
        // A message changed and then dropped is passed over with its run.
        marks.retain(|&i| !self.dropped[i]);
        marks.extend(runs.iter().map(|r| r.start));
        marks.sort_unstable();
        marks.dedup();
        marks
    }

    /// Drops the messages `range`, none of which is dropped yet.
    pub fn drop_range(&mut self, range: std::ops::Range<usize>) {
        if range.is_empty() {
            return;
        }
        if self.dropped[range.clone()].iter().any(|&d| d) {
            for i in range {
                self.drop_message(i);
            }
            return;
        }
        self.dropped[range.clone()].fill(true);
        self.total -= self.counts[range.clone()].iter().sum::<usize>();
        if let Some(runs) = &mut self.runs {
            match runs.last_mut() {
                Some(last) if last.end == range.start => last.end = range.end,
                Some(last) if last.end > range.start => self.runs = None,
                _ => runs.push(range),
            }
        }
    }

    /// Whether no message is changed or replaced yet.
    pub fn is_untouched(&self) -> bool {
        self.touched.is_empty()
    }

    /// The messages not dropped, in order, as a projection; placeholders
    /// are written by `shrunk` (once for each position it keeps).
    pub fn finish(mut self, fits: bool, shrunk: &mut ShrinkCache) -> TrimResult {
        let history = self.history;
        let n = history.len();
        let marks = self.marks();
        let mut selection = Selection::new(history);
        let mut changed = self.changed;
        let empty = Arc::new(Message::System(String::new()));
        let mut run = 0;
        for i in marks {
            if i < run {
                // Inside a run dropped already passed over.
                continue;
            }
            let slot = self.slot[i];
            if !self.dropped[i] && slot == 0 && !self.replaced[i] {
                continue;
            }
            if run < i {
                selection.keep(run..i);
            }
            run = i + 1;
            if self.dropped[i] {
                // A run dropped is passed over whole (every message of it
                // is dropped).
                if let Some(runs) = &self.runs
                    && let Ok(k) = runs.binary_search_by_key(&i, |r| r.start)
                {
                    run = runs[k].end;
                }
                continue;
            }
            let message = if self.replaced[i] {
                let current = match slot {
                    0 => &history.messages()[i],
                    k => &*changed[k as usize - 1],
                };
                shrunk.placeholder(i, current, &history.messages()[i])
            } else {
                // Taken out (copied only when the memo shares it).
                let taken = std::mem::replace(&mut changed[slot as usize - 1], empty.clone());
                Arc::try_unwrap(taken).unwrap_or_else(|shared| (*shared).clone())
            };
            // Protected messages are never changed, so this is not one.
            selection.push(message, self.counts[i], false);
        }
        if run < n {
            selection.keep(run..n);
        }
        selection.finish(false, fits)
    }
}
