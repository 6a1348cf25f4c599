//! [`BestFirst`]: ranks handed out best first, sorted only as far as the
//! caller goes.
//!
//! The drop stage keeps units in order of rank while they fit, and most
//! of a long history's units come after the point where nothing more fits.
//! Rather than sorting all of them, the best few are selected (in linear
//! time) and sorted, then the best of the rest, in chunks that grow four
//! times over; a caller that can tell which of the ranks not handed out
//! yet could still be kept forgets the others ([`BestFirst::retain`]).
//! The ranks handed out are exactly those of a full sort, in the same
//! order, less those forgotten.

/// The size of the first chunk. Why: most trims keep only the first
/// hundred or so units they rank, and sorting that many costs little.
/// Figure: none recorded (the ranks handed out are a full sort's whatever
/// the size).
const FIRST_CHUNK: usize = 128;

/// Each chunk is this many times the one before. Why: a caller that goes
/// far sorts in a few chunks, one that stops early sorts little. Figure:
/// none recorded.
const CHUNK_GROWTH: usize = 4;

/// Distinct ranks, handed out highest first.
pub(crate) struct BestFirst<'r> {
    rest: &'r mut [u128],
    chunk: usize,
}

impl<'r> BestFirst<'r> {
    /// Hands out `ranks` (distinct), highest first.
    pub fn new(ranks: &'r mut [u128]) -> Self {
        Self {
            rest: ranks,
            chunk: FIRST_CHUNK,
        }
    }

    /// Forgets the ranks not handed out yet that `keep` rejects (they are
    /// never handed out); those kept stay in no order.
    pub fn retain(&mut self, mut keep: impl FnMut(u128) -> bool) {
        let rest = std::mem::take(&mut self.rest);
        let mut kept = 0;
        for k in 0..rest.len() {
            if keep(rest[k]) {
                rest.swap(kept, k);
                kept += 1;
            }
        }
        self.rest = &mut rest[..kept];
    }

    /// The next highest ranks, highest first; `None` when all were handed
    /// out.
    pub fn next_chunk(&mut self) -> Option<&[u128]> {
        if self.rest.is_empty() {
            return None;
        }
        let take = self.chunk.min(self.rest.len());
        let rest = std::mem::take(&mut self.rest);
        if take < rest.len() {
            rest.select_nth_unstable_by(take - 1, |a, b| b.cmp(a));
        }
        let (head, tail) = rest.split_at_mut(take);
        head.sort_unstable_by(|a, b| b.cmp(a));
        self.rest = tail;
        self.chunk = self.chunk.saturating_mul(CHUNK_GROWTH);
        Some(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chunks_are_a_full_sort_in_pieces() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let ranks: Vec<u128> = (0..3_000)
            .map(|k| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (u128::from(state % 1_000) << 64) | k
            })
            .collect();
        let mut sorted = ranks.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let mut handed = Vec::new();
        let mut copy = ranks.clone();
        let mut best = BestFirst::new(&mut copy);
        let mut sizes = Vec::new();
        while let Some(chunk) = best.next_chunk() {
            sizes.push(chunk.len());
            handed.extend_from_slice(chunk);
        }
        assert_eq!(handed, sorted);
        assert_eq!(sizes, [128, 512, 2048, 312]);
        assert!(BestFirst::new(&mut []).next_chunk().is_none());
    }

    #[test]
    fn ranks_forgotten_are_never_handed_out() {
        let mut ranks: Vec<u128> = (0..1_000).collect();
        let mut best = BestFirst::new(&mut ranks);
        let first: Vec<u128> = best.next_chunk().unwrap().to_vec();
        assert_eq!(first, (872..1_000).rev().collect::<Vec<_>>());
        best.retain(|r| r % 3 == 0);
        let mut handed = Vec::new();
        while let Some(chunk) = best.next_chunk() {
            handed.extend_from_slice(chunk);
        }
        let want: Vec<u128> = (0..872).rev().filter(|r| r % 3 == 0).collect();
        assert_eq!(handed, want);
    }
}
