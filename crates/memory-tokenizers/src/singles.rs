//! Which byte strings are whole tokens of a vocabulary: a fast path for the
//! pieces that byte-pair encoding would turn into one token.
//!
//! In chat and agent text 85-98% of the pieces the pre-tokenizer cuts
//! are whole vocabulary entries (a word with its leading space, a run of
//! punctuation), and tiktoken encodes such a piece as that single token
//! without running the merges. Answering "is this a token?" with one hash
//! lookup, instead of setting up a full encoder per piece, is much of the
//! speed of [`Cl100k`](crate::Cl100k) and [`O200k`](crate::O200k).

use bpe_openai::byte_pair_encoding::BytePairEncoding;

/// Tokens of up to this many bytes are held inline, packed in their slot.
const SHORT: usize = 7;

/// A set of the tokens of a vocabulary.
///
/// Short tokens (up to 7 bytes, most of those in running text) are packed
/// with their length into an 8-byte slot, so finding one reads one slot.
/// Longer ones are held by id and confirmed against the vocabulary's bytes.
/// Both tables are at most half full: about 1.3 MiB for cl100k, 2.5 MiB for
/// o200k.
pub(crate) struct SingleTokens {
    bpe: &'static BytePairEncoding,
    short: Table<u64>,
    long: Table<u32>,
}

impl SingleTokens {
    pub(crate) fn new(bpe: &'static BytePairEncoding) -> Self {
        let tokens = bpe.num_tokens() as u32;
        let is_short = |id: u32| bpe.token_len(id) <= SHORT;
        let shorts = (0..tokens).filter(|&id| is_short(id)).count();
        let mut short = Table::with_room_for(shorts, 0);
        let mut long = Table::with_room_for(tokens as usize - shorts, u32::MAX);
        for id in 0..tokens {
            let bytes = bpe.token_bytes(id);
            if is_short(id) {
                let key = pack(bytes);
                short.insert(mix(key), key);
            } else {
                long.insert(hash(bytes), id);
            }
        }
        Self { bpe, short, long }
    }

    /// Whether `bytes` is exactly one token of the vocabulary.
    #[inline]
    pub(crate) fn contains(&self, bytes: &[u8]) -> bool {
        if bytes.is_empty() {
            false
        } else if bytes.len() <= SHORT {
            let key = pack(bytes);
            self.short.find(mix(key), |value| value == key)
        } else {
            self.long
                .find(hash(bytes), |id| self.bpe.token_bytes(id) == bytes)
        }
    }
}

/// Open addressing with linear probing, at most half full; `empty` marks a
/// free slot.
struct Table<T> {
    slots: Box<[T]>,
    shift: u32,
    empty: T,
}

impl<T: Copy + PartialEq> Table<T> {
    fn with_room_for(entries: usize, empty: T) -> Self {
        let len = (entries * 2).next_power_of_two().max(2);
        Self {
            slots: vec![empty; len].into_boxed_slice(),
            shift: 64 - len.trailing_zeros(),
            empty,
        }
    }

    fn insert(&mut self, hash: u64, value: T) {
        let mask = self.slots.len() - 1;
        let mut slot = (hash >> self.shift) as usize;
        while self.slots[slot] != self.empty {
            slot = (slot + 1) & mask;
        }
        self.slots[slot] = value;
    }

    /// Whether a slot probed from `hash`, before a free one, satisfies `hit`.
    #[inline]
    fn find(&self, hash: u64, hit: impl Fn(T) -> bool) -> bool {
        let mask = self.slots.len() - 1;
        let mut slot = (hash >> self.shift) as usize;
        loop {
            let value = self.slots[slot];
            if value == self.empty {
                return false;
            }
            if hit(value) {
                return true;
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// Up to eight bytes as a little-endian word, without a variable-length copy.
#[inline]
fn load(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    debug_assert!(n <= 8);
    let u32_at = |at: usize| {
        let mut word = [0u8; 4];
        word.copy_from_slice(&bytes[at..at + 4]);
        u64::from(u32::from_le_bytes(word))
    };
    match n {
        0 => 0,
        1..=3 => {
            // First, middle and last byte cover every position.
            u64::from(bytes[0])
                | u64::from(bytes[n / 2]) << (8 * (n / 2))
                | u64::from(bytes[n - 1]) << (8 * (n - 1))
        }
        // Two overlapping halves; the overlap ORs equal bytes.
        _ => u32_at(0) | u32_at(n - 4) << (8 * (n - 4)),
    }
}

/// `bytes` (1 to 7 of them) and their length in one word; never 0.
#[inline]
fn pack(bytes: &[u8]) -> u64 {
    load(bytes) | (bytes.len() as u64) << 56
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// Spreads a word over the top bits, which index the tables.
#[inline]
fn mix(word: u64) -> u64 {
    (word ^ (word >> 29)).wrapping_mul(K)
}

/// A multiplicative hash of `bytes`, eight at a time.
fn hash(bytes: &[u8]) -> u64 {
    let mut hash = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        hash = mix(hash.rotate_left(23) ^ load(chunk));
    }
    mix(hash.rotate_left(23) ^ load(chunks.remainder()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_is_found_and_its_neighbours_mostly_not() {
        let bpe = &bpe_openai::cl100k_base().bpe;
        let singles = SingleTokens::new(bpe);
        let mut extended_hits = 0;
        for id in 0..bpe.num_tokens() as u32 {
            let bytes = bpe.token_bytes(id);
            assert!(singles.contains(bytes), "token {id} {bytes:?}");
            let mut longer = bytes.to_vec();
            longer.push(0);
            extended_hits += usize::from(singles.contains(&longer));
        }
        assert_eq!(extended_hits, 0);
        assert!(!singles.contains(b""));
        assert!(!singles.contains(b"this is certainly not one token"));
        assert!(singles.contains(b" hello"));
        assert!(singles.contains(b" because"));
        assert!(!singles.contains(b" becausx"));
    }

    #[test]
    fn words_load_every_byte_in_place() {
        let bytes = *b"abcdefgh";
        for n in 0..=8 {
            let mut word = [0u8; 8];
            word[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(load(&bytes[..n]), u64::from_le_bytes(word), "{n}");
        }
        assert_ne!(pack(b"a"), pack(b"a\0"));
    }
}
