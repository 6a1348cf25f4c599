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
//! kept is used only for the messages that are still the same, as
//! [`SeenPrefix`] finds them.

use std::collections::HashMap;

use memory_core::{History, Message};

use crate::calls::Points;
use crate::kind_positions::KindPositions;
use crate::term_index::TermIndex;
use memory_core::identity::text_key;
use memory_core::seen::SeenPrefix;

/// The messages seen, by position.
#[derive(Debug, Clone, Default)]
pub(crate) struct MessageIndex {
    /// Each message's identity, count and protection.
    seen: SeenPrefix,
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
        self.seen.len()
    }

    /// Takes `history` in: keeps what holds of the messages seen before
    /// and reads the rest. Returns how many leading messages are the ones
    /// seen before (same message, count and protection).
    pub fn sync(&mut self, history: &History<'_>) -> usize {
        let (messages, counts) = (history.messages(), history.counts());
        let before = self.len();
        let same = self.seen.sync(history);
        // A change at the first message too: the terms of the messages
        // forgotten are kept for the catch-up (see `TermIndex::truncate`).
        if same < before {
            self.truncate(same);
        }
        for i in same..counts.len() {
            self.push(messages, i);
        }
        same
    }

    /// Forgets the messages from `len` on.
    fn truncate(&mut self, len: usize) {
        for i in len..self.text_keys.len() {
            let key = self.text_keys[i];
            if let Some(at) = self.by_text.get_mut(&key) {
                at.retain(|&j| (j as usize) < len);
                if at.is_empty() {
                    self.by_text.remove(&key);
                }
            }
        }
        self.text_keys.truncate(len);
        // Ascending: the ones kept lead.
        let kept = self.assistants.partition_point(|&i| i < len);
        self.assistants.truncate(kept);
        self.kinds.truncate(len);
        self.terms.truncate(len);
    }

    /// Reads message `i` of `messages`.
    fn push(&mut self, messages: &[Message], i: usize) {
        let message = &messages[i];
        if let Some(&key) = self.seen.keys().get(i) {
            self.terms.note(key);
        }
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
        self.seen.total(end)
    }

    /// The parts of `index`, when there is one, borrowed together: where
    /// each kind of message is, the terms, and the running token totals
    /// ([`SeenPrefix::total`]).
    pub fn parts(
        index: Option<&mut Self>,
    ) -> (
        Option<&KindPositions>,
        Option<&mut TermIndex>,
        Option<&SeenPrefix>,
    ) {
        match index {
            Some(index) => (
                Some(&index.kinds),
                Some(&mut index.terms),
                Some(&index.seen),
            ),
            None => (None, None, None),
        }
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

    /// Where the rounds of the first `len` messages start (their user
    /// messages), ascending.
    pub fn round_starts(&self, len: usize) -> &[usize] {
        KindPositions::within(&self.kinds.users, 0..len)
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
        assert_eq!(seen.seen.keys(), fresh.seen.keys());
        for end in 0..=m.len() {
            assert_eq!(seen.total(end), fresh.total(end));
        }
        assert_eq!(seen.replay_points(m.len()), crate::calls::replay_points(&m));
        assert_eq!(
            seen.replay_points(151),
            crate::calls::replay_points(&m[..151])
        );
        let starts = |m: &[Message]| -> Vec<usize> {
            structure::rounds(m)
                .rounds
                .iter()
                .map(|r| r.start)
                .collect()
        };
        assert_eq!(seen.round_starts(m.len()), starts(&m));
        assert_eq!(structure::round_starts(&m), starts(&m));
        assert_eq!(seen.round_starts(2), starts(&m[..2]));
        assert_eq!(seen.round_starts(1), starts(&m[..1]));
        assert_eq!(seen.round_starts(0), starts(&[]));
    }

    #[tokio::test]
    async fn terms_read_again_are_keyed_by_the_sync() {
        // The summary before the covered set replaced (after a system
        // prompt, or first without one), the rest the same, one message
        // more: the terms index reads only those two again, each message
        // keyed as the seen prefix keyed it, and the index is the one a
        // fresh sync makes.
        for (m, at) in [(chat(20), 1), (chat(20).split_off(1), 0)] {
            let mut seen = MessageIndex::default();
            synced(&mut seen, &m).await;
            seen.terms.catch_up(&m);
            let mut changed = m.clone();
            changed[at] = Message::user("a summary of the questions so far");
            changed.push(Message::user("question 20"));
            assert_eq!(synced(&mut seen, &changed).await, at);
            let (read, _) = seen.terms.reads_and_keys();
            seen.terms.catch_up(&changed);
            let (again, keys) = seen.terms.reads_and_keys();
            assert_eq!(again - read, 2, "replaced at {at}");
            assert_eq!(keys, seen.seen.keys());
            let mut fresh = MessageIndex::default();
            synced(&mut fresh, &changed).await;
            let n = changed.len();
            assert_eq!(seen.replay_points(n), fresh.replay_points(n));
            assert_eq!(seen.round_starts(n), fresh.round_starts(n));
            assert_eq!(seen.text_keys, fresh.text_keys);
            assert_eq!(seen.by_text, fresh.by_text);
        }
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
