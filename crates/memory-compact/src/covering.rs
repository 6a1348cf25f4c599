//! A summary and the exact messages it stands for: where it may be spliced,
//! and how.
//!
//! A [`Covering`] names the messages a summary replaces by their indices in
//! one history, and carries a [`Fingerprint`] of that history up to the last
//! of them. It may be applied to any history that starts with the same
//! messages (same bytes, same protection), which is how a background
//! summary is spliced into a history that grew meanwhile and how a summary
//! not yet written back is re-applied: never to a history that changed.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::ops::Range;

use memory_core::covered;
use memory_core::identity::message_key;
use memory_core::{History, MemoryError, Message, Selection, TokenCounter, TrimResult};

use crate::FileOps;

/// Identity of a history's first `cut` messages and of their protection.
///
/// A 64-bit hash of each message's identity (`memory_core::identity`), its index and whether
/// it is protected, folded together; a cheap probe (the last message alone)
/// rejects most other histories before the whole prefix is hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    cut: usize,
    probe: u64,
    hash: u64,
}

impl Fingerprint {
    /// The fingerprint of `history[..cut]`; `cut` at least 1.
    pub fn of(history: &History<'_>, cut: usize) -> Fingerprint {
        let mut hasher = DefaultHasher::new();
        cut.hash(&mut hasher);
        let mut probe = 0;
        for i in 0..cut {
            probe = message_hash(history, i);
            probe.hash(&mut hasher);
        }
        Fingerprint {
            cut,
            probe,
            hash: hasher.finish(),
        }
    }

    /// Whether `history` starts with the fingerprinted messages.
    pub fn matches(&self, history: &History<'_>) -> bool {
        self.cut >= 1
            && self.cut <= history.len()
            && message_hash(history, self.cut - 1) == self.probe
            && Fingerprint::of(history, self.cut) == *self
    }
}

/// Hash of message `i` of `history`: index, identity, protection.
fn message_hash(history: &History<'_>, i: usize) -> u64 {
    let mut hasher = DefaultHasher::new();
    i.hash(&mut hasher);
    message_key(&history.messages()[i]).hash(&mut hasher);
    history.is_protected(i).hash(&mut hasher);
    hasher.finish()
}

/// A hash of one message, to recognize it later.
pub(crate) fn identity(message: &Message) -> u64 {
    message_key(message)
}

/// A summary message and the messages of one history it replaces.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Covering {
    /// The history's messages up to the last one replaced.
    pub fingerprint: Fingerprint,
    /// Sorted, merged, step-aligned ranges of the messages replaced.
    pub region: Vec<Range<usize>>,
    /// The summary.
    pub message: Message,
    /// The files the summary lists.
    pub files: FileOps,
}

/// A history with a covering applied, and where each of its messages came
/// from (`None` for the summary).
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    /// The compacted history, materializing (`replace: true`).
    pub result: TrimResult,
    /// For each message of `result`, its index in the original history.
    pub origin: Vec<Option<usize>>,
}

impl Covering {
    /// A covering of `region` (non-empty) of `history`.
    pub fn new(
        history: &History<'_>,
        region: Vec<Range<usize>>,
        message: Message,
        files: FileOps,
    ) -> Covering {
        let cut = region.last().map_or(0, |r| r.end);
        Covering {
            fingerprint: Fingerprint::of(history, cut),
            region,
            message,
            files,
        }
    }

    /// Replaces the covered messages of `history` (which it must match) by
    /// the summary, placed where the first of them was.
    ///
    /// # Errors
    ///
    /// Counting the summary failed.
    pub async fn apply(
        &self,
        history: &History<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<Applied, MemoryError> {
        let tokens = counter.count_message(&self.message).await?;
        let mut selection = Selection::new(history);
        let mut origin = Vec::with_capacity(history.len());
        let mut next = 0;
        for (k, range) in self.region.iter().enumerate() {
            if next < range.start {
                selection.keep(next..range.start);
                origin.extend((next..range.start).map(Some));
            }
            if k == 0 {
                selection.push(self.message.clone(), tokens, true);
                origin.push(None);
            }
            next = range.end;
        }
        if next < history.len() {
            selection.keep(next..history.len());
            origin.extend((next..history.len()).map(Some));
        }
        let mut result = selection.finish(true, true);
        // All of it: the turn cuts it to the budget's horizon.
        result.covered = covered::after_folding(history, &self.region, covered::UNLIMITED_HORIZON);
        Ok(Applied { result, origin })
    }

    /// This covering, made on `applied` (the result of applying `base` to
    /// `original`), restated for `original`: what applying both in turn
    /// does, in one step. `None` when this covering keeps `base`'s summary
    /// (never the case for Compact's own plans, which fold every earlier
    /// summary of theirs).
    pub fn over(
        self,
        base: &Covering,
        applied: &Applied,
        original: &History<'_>,
    ) -> Option<Covering> {
        let mut ranges: Vec<Range<usize>> = Vec::new();
        let mut folded_base = false;
        for range in &self.region {
            for i in range.clone() {
                match applied.origin.get(i).copied().flatten() {
                    Some(j) => ranges.push(j..j + 1),
                    None => {
                        folded_base = true;
                        ranges.extend(base.region.iter().cloned());
                    }
                }
            }
        }
        if !folded_base {
            return None;
        }
        ranges.sort_by_key(|r| r.start);
        let mut region: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match region.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => region.push(r),
            }
        }
        Some(Covering::new(original, region, self.message, self.files))
    }
}

#[cfg(test)]
mod tests {
    use memory_core::{CharTokenCounter, History, Message, summary};

    use super::*;

    fn history<'a>(messages: &'a [Message], counts: &'a [usize]) -> History<'a> {
        History::new(messages, counts).unwrap()
    }

    fn chat(n: usize) -> Vec<Message> {
        (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    Message::user(format!("u{i}"))
                } else {
                    Message::assistant(format!("a{i}"))
                }
            })
            .collect()
    }

    #[test]
    fn a_fingerprint_matches_longer_histories_with_the_same_prefix_only() {
        let m = chat(6);
        let counts = [1; 6];
        let f = Fingerprint::of(&history(&m[..4], &counts[..4]), 3);
        assert!(f.matches(&history(&m, &counts)));
        assert!(f.matches(&history(&m[..3], &counts[..3])));
        assert!(!f.matches(&history(&m[..2], &counts[..2])));
        let mut edited = m.clone();
        edited[0] = Message::user("U0");
        assert!(!f.matches(&history(&edited, &counts)));
        // Protection is part of the identity.
        assert!(!f.matches(&history(&m, &counts).protect(&[1])));
    }

    #[tokio::test]
    async fn applying_puts_the_summary_where_the_first_covered_message_was() {
        let m = chat(6);
        let counts = [1; 6];
        let h = history(&m, &counts).protect(&[2]);
        let c = Covering::new(&h, vec![0..2, 3..4], summary::message("s"), FileOps::new());
        let applied = c.apply(&h, &CharTokenCounter).await.unwrap();
        assert_eq!(
            applied.result.messages,
            vec![
                summary::message("s"),
                m[2].clone(),
                m[4].clone(),
                m[5].clone()
            ]
        );
        assert_eq!(applied.result.protected, vec![0, 1]);
        assert_eq!(applied.origin, vec![None, Some(2), Some(4), Some(5)]);
        assert!(applied.result.replace);
    }

    #[tokio::test]
    async fn a_covering_over_an_applied_one_is_the_same_as_both() {
        let m = chat(8);
        let counts = [1; 8];
        let h = history(&m, &counts).protect(&[1]);
        let first = Covering::new(&h, vec![0..1, 2..4], summary::message("s1"), FileOps::new());
        let applied = first.apply(&h, &CharTokenCounter).await.unwrap();
        // applied: s1 a1 u4 a5 u6 a7; fold s1, u4, a5.
        let step = applied.result.as_history().unwrap();
        let second = Covering::new(
            &step,
            vec![0..1, 2..4],
            summary::message("s2"),
            FileOps::new(),
        );
        let twice = second
            .clone()
            .apply(&step, &CharTokenCounter)
            .await
            .unwrap()
            .result;
        let once = second.over(&first, &applied, &h).unwrap();
        assert_eq!(once.region, vec![0..1, 2..6]);
        let direct = once.apply(&h, &CharTokenCounter).await.unwrap().result;
        assert_eq!(direct.messages, twice.messages);
        assert_eq!(direct.protected, twice.protected);
    }
}
