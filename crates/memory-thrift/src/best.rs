//! [`BestFirst`]: ranks handed out best first, sorted only as far as the
//! caller goes.
//!
//! The drop stage keeps units in order of rank while they fit, and most
//! of a long history's units come after the point where nothing more fits.
//! Rather than sorting all of them, the best few are selected (in linear
//! time) and sorted, then the best of the rest, in chunks that grow four
//! times over; a caller that can tell when nothing in [`rest`] could be
//! kept any more stops there. The ranks handed out are exactly those of
//! a full sort, in the same order.
//!
//! [`rest`]: BestFirst::rest

/// The size of the first chunk.
const FIRST_CHUNK: usize = 128;

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

    /// The ranks not handed out yet, in no order.
    pub fn rest(&self) -> &[u128] {
        self.rest
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
        self.chunk = self.chunk.saturating_mul(4);
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
}
