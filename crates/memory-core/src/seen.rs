//! [`SeenPrefix`]: how much of a history is the one seen on the last call.
//!
//! A [`Memory`](crate::Memory) hands its strategy the whole history on
//! every call, and it mostly only grows: the same messages, and new ones
//! after them. What a strategy (or the index of what a context leaves out)
//! keeps from one call to the next holds only for the messages that are
//! still the same; [`SeenPrefix::sync`] says how many those are, reading
//! only the new messages and a few anchors. The length of that prefix is
//! the first position where a message's count or protection differs (a
//! changed count is seen in the sum of the counts, which the history's
//! total gives, and at the anchors), unless a message before it changed,
//! which is checked at anchors (the
//! last one shared, the one before it, and from there back at gaps that
//! grow four times over, down to the first message) by their identity
//! ([`message_key`]); a changed anchor makes every message's identity be
//! checked. A short history (at most [`CHECK_ALL`] messages) has every
//! message checked, and every protected message is an anchor too (a
//! history's summaries are among them: a compaction rewrites its summary
//! in place, often to the same count). So a message rewritten in place is
//! noticed by its count, or at an anchor; one that is not protected,
//! rewritten to the same count between anchors, would be taken for the one
//! before.
//!
//! ```
//! use memory_core::{History, Message, seen::SeenPrefix};
//! let m = [Message::user("a"), Message::assistant("b"), Message::user("c")];
//! let mut seen = SeenPrefix::default();
//! assert_eq!(seen.sync(&History::new(&m[..2], &[1, 1]).unwrap()), 0);
//! assert_eq!(seen.sync(&History::new(&m, &[1, 1, 1]).unwrap()), 2);
//! let other = [Message::user("a"), Message::assistant("x"), Message::user("c")];
//! assert_eq!(seen.sync(&History::new(&other, &[1, 1, 1]).unwrap()), 1);
//! ```

use crate::history::History;
use crate::identity::message_key;
use crate::message::Message;

/// Histories of at most this many messages have every message checked.
/// Why: hashing a short history whole costs little, and catches a message
/// rewritten to the same count anywhere in it. Figure: none recorded.
pub const CHECK_ALL: usize = 64;

/// The gaps between the anchors checked grow this many times over, from
/// the last message shared back to the first. Why: a history of `n`
/// messages is checked at about `log4(n)` anchors. Figure: none recorded.
const ANCHOR_GAP_GROWTH: usize = 4;

/// The messages of the history last synced: each one's identity, count
/// and protection (see the [module docs](self)).
///
/// ```
/// use memory_core::{History, Message, seen::SeenPrefix};
/// let mut seen = SeenPrefix::default();
/// seen.sync(&History::new(&[Message::user("a")], &[1]).unwrap());
/// assert_eq!(seen.len(), 1);
/// ```
#[derive(Debug, Clone, Default)]
pub struct SeenPrefix {
    keys: Vec<u64>,
    counts: Vec<usize>,
    /// Tokens of the first `k` messages, at `k`.
    totals: Vec<usize>,
    protected: Vec<usize>,
}

impl SeenPrefix {
    /// Number of messages of the history last synced.
    ///
    /// ```
    /// assert_eq!(memory_core::seen::SeenPrefix::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the history last synced was empty (or none was).
    ///
    /// ```
    /// assert!(memory_core::seen::SeenPrefix::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Each message's count, as the history last synced has it.
    ///
    /// ```
    /// use memory_core::{History, Message, seen::SeenPrefix};
    /// let mut seen = SeenPrefix::default();
    /// seen.sync(&History::new(&[Message::user("a")], &[3]).unwrap());
    /// assert_eq!(seen.counts(), &[3]);
    /// ```
    pub fn counts(&self) -> &[usize] {
        &self.counts
    }

    /// Each message's identity ([`message_key`]), as the history last
    /// synced has it.
    ///
    /// ```
    /// use memory_core::{History, Message, identity::message_key, seen::SeenPrefix};
    /// let m = [Message::user("a")];
    /// let mut seen = SeenPrefix::default();
    /// seen.sync(&History::new(&m, &[1]).unwrap());
    /// assert_eq!(seen.keys(), &[message_key(&m[0])]);
    /// ```
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// Tokens of the first `end` messages of the history last synced.
    ///
    /// ```
    /// use memory_core::{History, Message, seen::SeenPrefix};
    /// let m = [Message::user("a"), Message::assistant("b")];
    /// let mut seen = SeenPrefix::default();
    /// seen.sync(&History::new(&m, &[2, 3]).unwrap());
    /// assert_eq!(seen.total(2), 5);
    /// assert_eq!(seen.total(0), 0);
    /// ```
    pub fn total(&self, end: usize) -> usize {
        self.totals.get(end).copied().unwrap_or(0)
    }

    /// Takes `history` in: how many of its leading messages are the ones
    /// synced last (same message, count and protection), the rest read.
    ///
    /// ```
    /// use memory_core::{History, Message, seen::SeenPrefix};
    /// let m = [Message::user("a"), Message::assistant("b")];
    /// let mut seen = SeenPrefix::default();
    /// seen.sync(&History::new(&m, &[1, 1]).unwrap());
    /// // The same messages, counted otherwise: from the second on, new.
    /// assert_eq!(seen.sync(&History::new(&m, &[1, 2]).unwrap()), 1);
    /// ```
    pub fn sync(&mut self, history: &History<'_>) -> usize {
        let (messages, counts) = (history.messages(), history.counts());
        let common = self.len().min(messages.len());
        let mut same = if self.same_counts(history, common) {
            common
        } else {
            (0..common)
                .find(|&i| counts[i] != self.counts[i])
                .unwrap_or(common)
        };
        same = same.min(first_difference(history.protected(), &self.protected));
        same = self.checked(messages, same, history.protected());
        self.keys.truncate(same);
        self.counts.truncate(same);
        self.totals.truncate(same + 1);
        self.protected = history.protected().to_vec();
        if self.totals.is_empty() {
            self.totals.push(0);
        }
        for (message, &count) in messages.iter().zip(counts).skip(same) {
            self.keys.push(message_key(message));
            self.counts.push(count);
            self.totals.push(self.totals[self.totals.len() - 1] + count);
        }
        same
    }

    /// Whether the first `common` counts of `history` are the ones kept,
    /// as far as their sum (the history's total less its counts from
    /// `common` on) and the counts at the anchors tell: a count that
    /// changed changes the sum, unless another changed by as much the
    /// other way between anchors. Reading every count would make each
    /// call linear in the session (a fifth of a call's time at 100,000
    /// messages).
    fn same_counts(&self, history: &History<'_>, common: usize) -> bool {
        let counts = history.counts();
        let tail: usize = counts[common..].iter().sum();
        let kept = self.totals.get(common).copied().unwrap_or(0);
        if history.total().checked_sub(tail) != Some(kept) {
            return false;
        }
        let (mut at, mut gap) = (common, 1);
        while at > 0 {
            at = at.saturating_sub(gap);
            if counts[at] != self.counts[at] {
                return false;
            }
            gap = gap.saturating_mul(ANCHOR_GAP_GROWTH);
        }
        true
    }

    /// How many of the first `same` messages of `messages` are the ones
    /// kept: `same` when the anchors (every message, for a short history)
    /// are, else up to the first message whose identity differs.
    fn checked(&self, messages: &[Message], same: usize, protected: &[usize]) -> usize {
        let changed = |i: usize| message_key(&messages[i]) != self.keys[i];
        let rewritten = protected
            .iter()
            .take_while(|&&i| i < same)
            .any(|&i| changed(i));
        if same <= CHECK_ALL || rewritten {
            return (0..same).find(|&i| changed(i)).unwrap_or(same);
        }
        let (mut at, mut gap) = (same - 1, 1);
        loop {
            if changed(at) {
                return (0..same).find(|&i| changed(i)).unwrap_or(same);
            }
            if at == 0 {
                return same;
            }
            at = at.saturating_sub(gap);
            gap = gap.saturating_mul(ANCHOR_GAP_GROWTH);
        }
    }
}

/// The first value `a` and `b` differ at, as a position: where two sorted
/// lists of protected positions stop agreeing (`usize::MAX` when they
/// never do).
fn first_difference(a: &[usize], b: &[usize]) -> usize {
    match a.iter().zip(b).find(|(x, y)| x != y) {
        Some((x, y)) => *x.min(y),
        None => match a.len().cmp(&b.len()) {
            std::cmp::Ordering::Less => b[a.len()],
            std::cmp::Ordering::Greater => a[b.len()],
            std::cmp::Ordering::Equal => usize::MAX,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protected_message_rewritten_to_the_same_count_is_noticed() {
        let mut m: Vec<Message> = (0..200).map(|i| Message::user(format!("{i:03}"))).collect();
        let counts = vec![1; m.len()];
        let protected = [0, 100];
        let mut seen = SeenPrefix::default();
        seen.sync(&History::from_parts(&m, &counts, &protected, 200).unwrap());
        m[100] = Message::user("new");
        let history = History::from_parts(&m, &counts, &protected, 200).unwrap();
        assert_eq!(seen.sync(&history), 100);
        assert_eq!(seen.sync(&history), 200);
    }

    #[test]
    fn a_count_changed_between_anchors_ends_the_prefix_there() {
        let m: Vec<Message> = (0..300).map(|i| Message::user(format!("{i:03}"))).collect();
        let mut counts = vec![2; m.len()];
        let mut seen = SeenPrefix::default();
        seen.sync(&History::new(&m, &counts).unwrap());
        counts[150] = 3;
        assert_eq!(seen.sync(&History::new(&m, &counts).unwrap()), 150);
    }

    #[test]
    fn a_changed_protection_ends_the_prefix_there() {
        let m: Vec<Message> = (0..10).map(|i| Message::user(format!("{i}"))).collect();
        let counts = vec![1; 10];
        let mut seen = SeenPrefix::default();
        seen.sync(&History::from_parts(&m, &counts, &[2], 10).unwrap());
        assert_eq!(
            seen.sync(&History::from_parts(&m, &counts, &[5], 10).unwrap()),
            2
        );
    }
}
