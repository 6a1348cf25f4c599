//! [`MessageIndex`]: what Thrift keeps, from one call to the next, of the messages
//! it has seen, so that a call's work grows with what the history added
//! since the last call rather than with the whole history.
//!
//! A [`Memory`](memory_core::Memory) hands its strategy the whole history
//! on every call, and it mostly only grows: the same messages, and new
//! ones after them. [`MessageIndex::sync`] finds how much of the history is the
//! one seen before and reads only the rest: each message's identity, its
//! role (where the model calls and the rounds are), the running token
//! total; its [terms](crate::term_index) are read when a call first scores
//! older turns (an agent loop that never does never reads them). What is
//! kept is used only for the
//! messages that are still the same: the length of that prefix is the
//! first position where a message's count or protection differs, unless
//! a message before it changed, which is checked at anchors (the last one
//! shared, the one before it, and from there back at gaps that grow four
//! times over, down to the first message) by their identity (a 64-bit hash
//! of every field); a changed anchor makes every message's identity be
//! checked. A short history (at most [`CHECK_ALL`] messages) has every
//! message checked, and every protected message is an anchor too (a
//! history's summaries are among them): a compaction rewrites its summary
//! in place, often to the same count (summaries are capped), with the
//! covered set growing before it. So a message rewritten in place is
//! noticed by its count, or at an anchor; one that is not protected,
//! rewritten to the same count between anchors, would be taken for the
//! one before.

use std::collections::HashMap;
use std::ops::Range;

use memory_core::{History, Message};

use crate::calls::Points;
use crate::kind_positions::KindPositions;
use crate::term_index::TermIndex;
use memory_core::identity::{message_key, text_key};

/// Histories of at most this many messages have every message checked.
/// Why: hashing a short history whole costs little, and catches a message
/// rewritten to the same count anywhere in it. Figure: none recorded.
pub(crate) const CHECK_ALL: usize = 64;

/// The gaps between the anchors checked grow this many times over, from
/// the last message shared back to the first. Why: a history of `n`
/// messages is checked at about `log4(n)` anchors. Figure: none recorded.
const ANCHOR_GAP_GROWTH: usize = 4;

/// The messages seen, by position.
#[derive(Debug, Clone, Default)]
pub(crate) struct MessageIndex {
    counts: Vec<usize>,
    /// Each message's identity.
    keys: Vec<u64>,
    /// The protected positions, as the last history given had them.
    protected: Vec<usize>,
    /// Tokens of the first `k` messages, at `k` (one more entry than
    /// messages).
    totals: Vec<usize>,
    /// Positions of the assistant messages after the first message.
    assistants: Vec<usize>,
    /// Each message's [`text_key`].
    text_keys: Vec<u64>,
    /// Positions by [`text_key`], ascending.
    by_text: HashMap<u64, Vec<u32>>,
    /// Where the messages each cheap stage looks at are.
    pub kinds: KindPositions,
    /// The terms, of the messages seen up to where a call last scored
    /// (see [`TermIndex::catch_up`]).
    pub terms: TermIndex,
}

impl MessageIndex {
    /// Number of messages kept.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Takes `history` in: keeps what holds of the messages seen before
    /// and reads the rest. Returns how many leading messages are the ones
    /// seen before (same message, count and protection).
    pub fn sync(&mut self, history: &History<'_>) -> usize {
        let (messages, counts) = (history.messages(), history.counts());
        let common = self.len().min(messages.len());
        let mut same = if counts[..common] == self.counts[..common] {
            common
        } else {
            (0..common)
                .find(|&i| counts[i] != self.counts[i])
                .unwrap_or(common)
        };
        same = same.min(first_difference(history.protected(), &self.protected));
        same = self.checked(messages, same, history.protected());
        if same == 0 {
            *self = Self::default();
        } else {
            self.truncate(same);
        }
        self.protected = history.protected().to_vec();
        for (i, &count) in counts.iter().enumerate().skip(same) {
            self.push(messages, i, count);
        }
        same
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

    /// Forgets the messages from `len` on.
    fn truncate(&mut self, len: usize) {
        for i in len..self.len() {
            let key = self.text_keys[i];
            if let Some(at) = self.by_text.get_mut(&key) {
                at.retain(|&j| (j as usize) < len);
                if at.is_empty() {
                    self.by_text.remove(&key);
                }
            }
        }
        self.counts.truncate(len);
        self.keys.truncate(len);
        self.totals.truncate(len + 1);
        self.text_keys.truncate(len);
        // Ascending: the ones kept lead.
        let kept = self.assistants.partition_point(|&i| i < len);
        self.assistants.truncate(kept);
        self.kinds.truncate(len);
        self.terms.truncate(len);
    }

    /// Reads message `i` of `messages`, of `count` tokens.
    fn push(&mut self, messages: &[Message], i: usize, count: usize) {
        let message = &messages[i];
        if self.totals.is_empty() {
            self.totals.push(0);
        }
        let total = self.totals[i];
        self.totals.push(total + count);
        self.counts.push(count);
        self.keys.push(message_key(message));
        if message.is_assistant() && i > 0 {
            self.assistants.push(i);
        }
        let key = text_key(message);
        self.text_keys.push(key);
        self.by_text
            .entry(key)
            .or_default()
            .push(u32::try_from(i).unwrap_or(u32::MAX));
        self.kinds.push(messages, i);
    }

    /// Tokens of the first `end` messages.
    pub fn total(&self, end: usize) -> usize {
        self.totals[end]
    }

    /// The model calls of the first `len` messages that a replay looks
    /// at, as [`calls::replay_points`](crate::calls::replay_points)
    /// gives them.
    pub fn replay_points(&self, len: usize) -> Option<Points> {
        if self.kinds.users.first().is_none_or(|&u| u >= len) {
            return None;
        }
        let calls = self.assistants.partition_point(|&i| i < len);
        Some(Points::new(&self.assistants[..calls], len))
    }

    /// The rounds of the first `len` messages, as
    /// [`structure::rounds`](memory_core::structure::rounds) gives them.
    pub fn rounds(&self, len: usize) -> Vec<Range<usize>> {
        self.kinds.rounds(len).rounds
    }

    /// Positions among the first `len` messages whose text is that of one
    /// of `shown`, ascending.
    pub fn showing(&self, len: usize, shown: &[Message]) -> Vec<usize> {
        let mut keys: Vec<u64> = shown.iter().map(text_key).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut marked: Vec<usize> = keys
            .iter()
            .flat_map(|key| self.by_text.get(key).into_iter().flatten())
            .map(|&i| i as usize)
            .filter(|&i| i < len)
            .collect();
        marked.sort_unstable();
        marked
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
    use memory_core::{CharTokenCounter, count_messages, structure};

    fn chat(n: usize) -> Vec<Message> {
        let mut m = vec![Message::system("rules")];
        for i in 0..n {
            m.push(Message::user(format!("question {i}")));
            m.push(Message::assistant(format!("answer {i}")));
        }
        m
    }

    async fn synced(seen: &mut MessageIndex, m: &[Message]) -> usize {
        let counts = count_messages(&CharTokenCounter, m).await.unwrap();
        let history = History::new(m, &counts).unwrap();
        seen.sync(&history)
    }

    #[tokio::test]
    async fn an_extended_history_keeps_what_was_seen() {
        let m = chat(100);
        let mut seen = MessageIndex::default();
        assert_eq!(synced(&mut seen, &m[..150]).await, 0);
        assert_eq!(synced(&mut seen, &m).await, 150);
        assert_eq!(seen.len(), m.len());
        let mut fresh = MessageIndex::default();
        synced(&mut fresh, &m).await;
        assert_eq!(seen.keys, fresh.keys);
        assert_eq!(seen.totals, fresh.totals);
        assert_eq!(seen.replay_points(m.len()), crate::calls::replay_points(&m));
        assert_eq!(
            seen.replay_points(151),
            crate::calls::replay_points(&m[..151])
        );
        assert_eq!(seen.kinds.rounds(m.len()), structure::rounds(&m));
        assert_eq!(seen.kinds.rounds(1), structure::rounds(&m[..1]));
        assert_eq!(seen.kinds.rounds(0), structure::rounds(&[]));
    }

    #[tokio::test]
    async fn a_change_is_found_by_its_count_or_at_an_anchor() {
        let m = chat(100);
        let mut seen = MessageIndex::default();
        synced(&mut seen, &m).await;
        // Another count.
        let mut changed = m.clone();
        changed[40] = Message::user("a longer question than before");
        assert_eq!(synced(&mut seen, &changed).await, 40);
        // The same count, at the last message shared.
        synced(&mut seen, &m).await;
        let mut changed = m[..150].to_vec();
        changed[149] = Message::user("question 7X");
        assert_eq!(synced(&mut seen, &changed).await, 149);
        // A shorter history, then another question.
        synced(&mut seen, &m).await;
        assert_eq!(synced(&mut seen, &m[..120]).await, 120);
        let mut other = m[..120].to_vec();
        other.push(Message::user("something else"));
        assert_eq!(synced(&mut seen, &other).await, 120);
    }

    #[tokio::test]
    async fn a_summary_rewritten_to_the_same_count_is_found() {
        // A long history with a summary between anchors, rewritten in
        // place to the same count, as a compaction rewrites it.
        let mut m = chat(100);
        m.insert(90, memory_core::summary::message("earlier: A"));
        let mut seen = MessageIndex::default();
        synced(&mut seen, &m).await;
        let mut changed = m.clone();
        changed[90] = memory_core::summary::message("earlier: B");
        assert_eq!(synced(&mut seen, &changed).await, 90);
    }

    #[tokio::test]
    async fn short_histories_are_checked_message_by_message() {
        let m = chat(10);
        let mut seen = MessageIndex::default();
        synced(&mut seen, &m).await;
        let mut changed = m.clone();
        changed[5] = Message::user("question X");
        assert_eq!(synced(&mut seen, &changed).await, 5);
    }
}
