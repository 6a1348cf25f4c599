//! [`PiecesInCut`]: where the pieces one call lists stand in the memo's
//! cut, so that a question's words are found in the pieces the memo has
//! looked at before, and only the others are looked up among the
//! messages.

use std::ops::Range;

use super::memo::IndexMemo;
use super::{Entry, holding};

/// Where the pieces of the history a call lists stand in the memo's cut:
/// a word's final pieces are then read from what the memo keeps of the
/// last questions (see [`IndexMemo::held_by_final`]), and only the pieces
/// not yet final are looked up among the messages.
pub(super) struct PiecesInCut {
    /// For each piece of the cut, the entry (among the listed pieces)
    /// that is it, if listed.
    entry: Vec<u32>,
    /// The first listed piece that is not final.
    first_open: usize,
}

impl PiecesInCut {
    /// Where `listed` (pieces of the memo's last cut, in order) stand;
    /// `None` when one is not a piece of it.
    pub(super) fn of(memo: &IndexMemo, listed: &[Entry<'_>]) -> Option<Self> {
        let ranges: Vec<Range<usize>> = listed
            .iter()
            .map(|e| match e {
                Entry::Piece(r) => Some(r.clone()),
                Entry::Folded(_) => None,
            })
            .collect::<Option<_>>()?;
        let places = memo.places(&ranges)?;
        let len = places.last().map_or(0, |&k| k + 1);
        let mut entry = vec![u32::MAX; len];
        for (j, &k) in places.iter().enumerate() {
            entry[k] = u32::try_from(j).ok()?;
        }
        let finals = memo.final_pieces();
        let first_open = places.partition_point(|&k| k < finals);
        Some(Self { entry, first_open })
    }

    /// Adds to `held` the entries (after `offset` folded ones) of the
    /// `listed` pieces that hold a message where `word` was said, as
    /// [`holding`] finds them.
    pub(super) fn holding(
        &mut self,
        memo: &mut IndexMemo,
        word: u64,
        listed: &[Entry<'_>],
        held: &mut Vec<usize>,
        offset: usize,
    ) {
        #[cfg(test)]
        let before = held.len();
        let finals = memo.held_by_final(word);
        held.extend(
            finals
                .iter()
                .filter_map(|&k| self.entry.get(k as usize).copied())
                .filter(|&j| j != u32::MAX)
                .map(|j| offset + j as usize),
        );
        let open = &listed[self.first_open..];
        held.extend(
            holding(open, memo.said(word))
                .into_iter()
                .map(|k| offset + self.first_open + k),
        );
        // Tests check every call against a look at every piece.
        #[cfg(test)]
        assert_eq!(
            held[before..],
            holding(listed, memo.said(word))
                .into_iter()
                .map(|k| offset + k)
                .collect::<Vec<_>>()[..],
            "the pieces holding a word"
        );
    }
}
