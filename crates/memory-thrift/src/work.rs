//! The working copy of a trim: the history with the changes made so far.

use std::collections::BTreeMap;

use memory_core::{History, MemoryError, Message, Selection, TokenCounter, TrimResult};

/// The history, the messages changed so far (with their new counts) and the
/// messages dropped.
pub(crate) struct Work<'h, 'a> {
    history: &'h History<'a>,
    changed: BTreeMap<usize, Message>,
    counts: Vec<usize>,
    dropped: Vec<bool>,
    total: usize,
}

impl<'h, 'a> Work<'h, 'a> {
    pub fn new(history: &'h History<'a>) -> Self {
        Self {
            history,
            changed: BTreeMap::new(),
            counts: history.counts().to_vec(),
            dropped: vec![false; history.len()],
            total: history.total(),
        }
    }

    pub fn history(&self) -> &'h History<'a> {
        self.history
    }

    /// Message `i` as it stands now.
    pub fn message(&self, i: usize) -> &Message {
        self.changed.get(&i).unwrap_or(&self.history.messages()[i])
    }

    /// Tokens of message `i` as it stands now.
    pub fn count(&self, i: usize) -> usize {
        self.counts[i]
    }

    /// Tokens of everything not dropped.
    pub fn total(&self) -> usize {
        self.total
    }

    pub fn is_dropped(&self, i: usize) -> bool {
        self.dropped[i]
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
        let before = self.counts[i];
        if tokens >= before {
            return Ok(None);
        }
        self.set(i, message, tokens);
        Ok(Some((before, tokens)))
    }

    /// Puts `message`, of `tokens` tokens, in place of message `i`.
    pub fn set(&mut self, i: usize, message: Message, tokens: usize) {
        self.total = self.total - self.counts[i] + tokens;
        self.counts[i] = tokens;
        self.changed.insert(i, message);
    }

    /// Drops message `i`.
    pub fn drop_message(&mut self, i: usize) {
        if !std::mem::replace(&mut self.dropped[i], true) {
            self.total -= self.counts[i];
        }
    }

    /// The messages not dropped, in order, as a projection.
    pub fn finish(self, fits: bool) -> TrimResult {
        let history = self.history;
        let n = history.len();
        let mut selection = Selection::new(history);
        let mut changed = self.changed;
        let mut run = 0;
        for i in 0..n {
            let keep_original = !self.dropped[i] && !changed.contains_key(&i);
            if keep_original {
                continue;
            }
            if run < i {
                selection.keep(run..i);
            }
            run = i + 1;
            if !self.dropped[i]
                && let Some(message) = changed.remove(&i)
            {
                // Protected messages are never changed, so this is not one.
                selection.push(message, self.counts[i], false);
            }
        }
        if run < n {
            selection.keep(run..n);
        }
        selection.finish(false, fits)
    }
}
