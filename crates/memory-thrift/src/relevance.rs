//! How relevant a piece of history is to the current question, without a
//! model or the network.
//!
//! Texts are reduced to **terms**: the words `[a-z][a-z0-9]{3,}` of the
//! lowercased text, each passed through a light [`stem`]mer so that
//! "clusters", "clustered" and "cluster" are one term. A document's score is
//! the share of the question's terms it holds, each term weighted by its
//! inverse document frequency over a corpus: a rare word of the question
//! that an old round shares counts for more than a word every round holds.
//! Without weights and stemming this is the plain word-overlap share
//! ([`overlap`]), the baseline it improves on.
//!
//! The work is linear: one pass over each text, one map from the
//! question's terms to their document frequency.
//!
//! ```
//! use memory_thrift::relevance::rank;
//!
//! let question = "Which kubernetes version did we pin for the staging cluster again?";
//! let rounds = [
//!     "We pinned Kubernetes 1.29 on the staging clusters.",
//!     "Again the tests failed; which version of the linter did we use again?",
//!     "Which version again? The version we use for the linter, again.",
//! ];
//! let scores = rank(question, &rounds);
//! assert!(scores[0] > scores[1] && scores[0] > scores[2]);
//! ```

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use memory_core::identity::WordHasher;
use memory_text::{MAX_STEM_CUT, stem_ascii};

/// Calls `f` with each term of `text`, in order (repeats included).
///
/// ```
/// let mut seen = Vec::new();
/// memory_thrift::relevance::for_each_term("Running 3 TESTS in src/main.rs", |t| seen.push(t.to_string()));
/// assert_eq!(seen, ["run", "test", "main"]);
/// ```
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    let mut word = Vec::new();
    for_each_word(text, |run| {
        lower_into(run, &mut word);
        stem_ascii(&mut word);
        f(as_str(&word));
    });
}

/// The terms of `text`, in order.
///
/// ```
/// assert_eq!(memory_thrift::relevance::terms("The flies were flying"), ["fly", "wer", "fly"]);
/// ```
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |t| out.push(t.to_string()));
    out
}

/// Calls `f` with each word `[a-z][a-z0-9]{3,}` of the lowercased text, as
/// the ASCII bytes of `text` (not yet lowercased).
fn for_each_word(text: &str, mut f: impl FnMut(&[u8])) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut i = 0;
    while i < n {
        let class = CLASS[usize::from(bytes[i])];
        i += 1;
        if class == OTHER {
            continue;
        }
        // A run of letters and digits; a match starts at its first letter
        // and takes the rest of it.
        let mut first = (class == LETTER).then_some(i - 1);
        while i < n {
            let class = CLASS[usize::from(bytes[i])];
            if class == OTHER {
                break;
            }
            if class == LETTER && first.is_none() {
                first = Some(i);
            }
            i += 1;
        }
        if let Some(first) = first
            && i - first >= MIN_WORD_BYTES
        {
            f(&bytes[first..i]);
        }
    }
}

/// The fewest bytes of a word that is a term. Why: shorter words ("the",
/// "did", "you") are mostly function words that every turn holds. Figure:
/// none recorded.
const MIN_WORD_BYTES: usize = 4;

const OTHER: u8 = 0;
const DIGIT: u8 = 1;
const LETTER: u8 = 2;

/// The class of each byte: an ASCII letter, an ASCII digit or other.
static CLASS: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = if c.is_ascii_alphabetic() {
            LETTER
        } else if c.is_ascii_digit() {
            DIGIT
        } else {
            OTHER
        };
        b += 1;
    }
    table
};

/// The bit of a word's first letter (any case) in [`TermScorer`]'s initials.
fn initial(letter: u8) -> u32 {
    1 << (letter.to_ascii_lowercase().wrapping_sub(b'a') % 32)
}

/// `run` lowercased into `word`.
fn lower_into(run: &[u8], word: &mut Vec<u8>) {
    word.clear();
    word.extend(run.iter().map(u8::to_ascii_lowercase));
}

/// The bytes of a word, which are ASCII.
fn as_str(word: &[u8]) -> &str {
    std::str::from_utf8(word).unwrap_or_default()
}

/// Reduces a lowercase word to its stem ([`memory_text::stem`], shared
/// with the index's ranking of left-out pieces).
///
/// ```
/// use memory_thrift::relevance::stem;
/// assert_eq!(stem("running"), "run");
/// assert_eq!(stem("clusters"), stem("cluster"));
/// ```
pub use memory_text::stem;

/// The baseline: the share of the question's distinct words (`[a-z][a-z0-9]{3,}`,
/// lowercased, not stemmed) that `text` holds, every word weighing the same.
///
/// ```
/// use memory_thrift::relevance::overlap;
/// assert_eq!(overlap("deploy the cluster", "the cluster is down"), 0.5);
/// assert_eq!(overlap("", "anything"), 0.0);
/// ```
pub fn overlap(query: &str, text: &str) -> f64 {
    let mut buffer = Vec::new();
    let mut index: HashMap<Vec<u8>, bool> = HashMap::new();
    for_each_word(query, |run| {
        lower_into(run, &mut buffer);
        index.entry(buffer.clone()).or_insert(false);
    });
    if index.is_empty() {
        return 0.0;
    }
    for_each_word(text, |run| {
        lower_into(run, &mut buffer);
        if let Some(seen) = index.get_mut(buffer.as_slice()) {
            *seen = true;
        }
    });
    index.values().filter(|&&s| s).count() as f64 / index.len() as f64
}

/// The least score a unit of history needs to count as relevant when
/// `pressure` (0 to 1) of the candidates must go: `0.125 + 0.305 * pressure²`.
/// Under light pressure a weak match counts; under heavy pressure only a
/// strong one does.
///
/// ```
/// use memory_thrift::relevance::keep_floor;
/// assert_eq!(keep_floor(0.0), 0.125);
/// assert!((keep_floor(1.0) - 0.43).abs() < 1e-9);
/// assert_eq!(keep_floor(7.0), keep_floor(1.0));
/// ```
pub fn keep_floor(pressure: f64) -> f64 {
    let p = if pressure.is_nan() {
        1.0
    } else {
        pressure.clamp(0.0, 1.0)
    };
    KEEP_FLOOR_AT_REST + KEEP_FLOOR_RISE * p * p
}

/// [`keep_floor`] without pressure. Why: a unit sharing an eighth of the
/// question's weighted terms is worth keeping when there is room. Figure:
/// none recorded (chosen by hand with the drop stage).
const KEEP_FLOOR_AT_REST: f64 = 0.125;

/// What [`keep_floor`] rises by under full pressure. Why: when most
/// candidates must go, only a strong match should outrank recency.
/// Figure: none recorded (chosen by hand with the drop stage).
const KEEP_FLOOR_RISE: f64 = 0.305;

/// The question's terms present in one text, as positions in the
/// question's term list (sorted, distinct).
///
/// ```
/// let mut rel = memory_thrift::relevance::TermScorer::new("disk quota exceeded");
/// let m = rel.matches(["the quota was raised"]);
/// assert_eq!(m.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Matches(Vec<u32>);

impl Matches {
    /// Number of distinct question terms matched.
    ///
    /// ```
    /// assert_eq!(memory_thrift::relevance::Matches::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no question term matched.
    ///
    /// ```
    /// assert!(memory_thrift::relevance::Matches::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Scores texts against a question, with term weights (inverse document
/// frequency) learned from the documents [added](TermScorer::add_document).
///
/// Use: [`matches`](TermScorer::matches) for every text, `add_document` for
/// those that form the corpus, then [`score`](TermScorer::score). Scores are
/// in `[0, 1]`: the weighted share of the question's terms a text holds,
/// counting only the terms some matched text holds (a word of the question
/// that nothing holds cannot tell texts apart, and would only shrink every
/// score alike).
///
/// ```
/// use memory_thrift::relevance::TermScorer;
///
/// let mut rel = TermScorer::new("what did the flaky parser test print");
/// let docs = [
///     "what did you print? what did it say?",
///     "what a day, what did the build print",
///     "the parser tests are flaky",
/// ];
/// let matches: Vec<_> = docs.iter().map(|d| rel.matches([*d])).collect();
/// for m in &matches {
///     rel.add_document(m);
/// }
/// let scores: Vec<f64> = matches.iter().map(|m| rel.score(m)).collect();
/// assert!(scores[2] > scores[0] && scores[2] > scores[1]);
/// ```
#[derive(Debug, Clone)]
pub struct TermScorer {
    index: HashMap<Vec<u8>, u32, BuildHasherDefault<WordHasher>>,
    /// Lengths of the words that may stem to a term of the question: a stem
    /// is never longer than its word, nor more than [`MAX_STEM_CUT`] shorter.
    lengths: std::ops::RangeInclusive<usize>,
    /// Bit `c - b'a'` is set for each first letter of a term (stemming keeps
    /// the first letter): other words are passed over unstemmed.
    initials: u32,
    df: Vec<usize>,
    seen: Vec<bool>,
    /// Per term, the number of the [`matches`](TermScorer::matches) call that
    /// last found it: what that call has found so far, without clearing.
    found_in: Vec<u32>,
    call: u32,
    /// Scratch space for the word being stemmed.
    word: Vec<u8>,
    documents: usize,
}

impl TermScorer {
    /// A scorer for `question`.
    ///
    /// ```
    /// assert_eq!(memory_thrift::relevance::TermScorer::new("Tests are failing, tests!").len(), 2);
    /// ```
    pub fn new(question: &str) -> Self {
        let mut index: HashMap<Vec<u8>, u32, BuildHasherDefault<WordHasher>> = HashMap::default();
        let (mut shortest, mut longest, mut initials) = (usize::MAX, 0, 0u32);
        for_each_term(question, |t| {
            let next = u32::try_from(index.len()).unwrap_or(u32::MAX);
            shortest = shortest.min(t.len());
            longest = longest.max(t.len());
            initials |= initial(t.as_bytes()[0]);
            index.entry(t.as_bytes().to_vec()).or_insert(next);
        });
        let df = vec![0; index.len()];
        let seen = vec![false; index.len()];
        let found_in = vec![0; index.len()];
        Self {
            index,
            lengths: shortest..=longest.saturating_add(MAX_STEM_CUT),
            initials,
            df,
            seen,
            found_in,
            call: 0,
            word: Vec::new(),
            documents: 0,
        }
    }

    /// Number of distinct terms of the question.
    ///
    /// ```
    /// assert_eq!(memory_thrift::relevance::TermScorer::new("").len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the question has no terms (then every score is 0).
    ///
    /// ```
    /// assert!(memory_thrift::relevance::TermScorer::new("ok?").is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The question's terms that `texts` hold, taken together. They count
    /// towards every score from now on.
    ///
    /// ```
    /// let mut rel = memory_thrift::relevance::TermScorer::new("parse the config");
    /// assert_eq!(rel.matches(["configs", "parsing"]).len(), 2);
    /// ```
    pub fn matches<'t>(&mut self, texts: impl IntoIterator<Item = &'t str>) -> Matches {
        let mut found = Vec::new();
        self.match_into(texts, &mut found);
        Matches(found)
    }

    /// Like [`matches`](TermScorer::matches), appending the positions found
    /// (sorted, distinct) to `out`.
    pub(crate) fn match_into<'t>(
        &mut self,
        texts: impl IntoIterator<Item = &'t str>,
        out: &mut Vec<u32>,
    ) {
        if self.index.is_empty() {
            return;
        }
        self.call = self.call.wrapping_add(1);
        if self.call == 0 {
            self.found_in.fill(0);
            self.call = 1;
        }
        let call = self.call;
        let start = out.len();
        let word = &mut self.word;
        for text in texts {
            for_each_word(text, |run| {
                if !self.lengths.contains(&run.len()) || initial(run[0]) & self.initials == 0 {
                    return;
                }
                lower_into(run, word);
                stem_ascii(word);
                if let Some(&k) = self.index.get(word.as_slice())
                    && std::mem::replace(&mut self.found_in[k as usize], call) != call
                {
                    out.push(k);
                }
            });
        }
        out[start..].sort_unstable();
        for &k in &out[start..] {
            self.seen[k as usize] = true;
        }
    }

    /// The question's terms, by position.
    pub(crate) fn question_terms(&self) -> Vec<&[u8]> {
        let mut out: Vec<&[u8]> = vec![&[]; self.index.len()];
        for (term, &k) in &self.index {
            out[k as usize] = term;
        }
        out
    }

    /// Counts one document given as positions found by
    /// [`match_into`](TermScorer::match_into).
    pub(crate) fn add_terms(&mut self, terms: &[u32]) {
        self.documents += 1;
        for &k in terms {
            self.df[k as usize] += 1;
        }
    }

    /// Scores documents given as positions, with the weights as they stand
    /// (computed once).
    pub(crate) fn scorer(&self) -> impl Fn(&[u32]) -> f64 + '_ {
        let (weights, total) = self.weights();
        move |terms: &[u32]| {
            let got: f64 = terms.iter().map(|&k| weights[k as usize]).sum();
            share(got, total, terms.is_empty())
        }
    }

    /// The weight of each of the question's terms as they stand, and the
    /// total of those some text holds.
    pub(crate) fn weights(&self) -> (Vec<f64>, f64) {
        let weights: Vec<f64> = (0..self.df.len()).map(|k| self.weight(k)).collect();
        let total: f64 = (0..self.df.len())
            .filter(|&k| self.seen[k])
            .map(|k| weights[k])
            .sum();
        (weights, total)
    }

    /// Takes the corpus as counted elsewhere: `documents` documents, of
    /// which `df[k]` hold the question's term `k` (as if each had been
    /// found and added).
    pub(crate) fn set_counts(&mut self, df: Vec<usize>, documents: usize) {
        debug_assert_eq!(df.len(), self.df.len());
        self.seen = df.iter().map(|&d| d > 0).collect();
        self.df = df;
        self.documents = documents;
    }

    /// Counts one document of the corpus the weights are learned from.
    ///
    /// ```
    /// let mut rel = memory_thrift::relevance::TermScorer::new("cache");
    /// let m = rel.matches(["the cache"]);
    /// rel.add_document(&m);
    /// assert_eq!(rel.documents(), 1);
    /// ```
    pub fn add_document(&mut self, matches: &Matches) {
        self.documents += 1;
        for &k in &matches.0 {
            self.df[k as usize] += 1;
        }
    }

    /// Number of documents added.
    ///
    /// ```
    /// assert_eq!(memory_thrift::relevance::TermScorer::new("x").documents(), 0);
    /// ```
    pub fn documents(&self) -> usize {
        self.documents
    }

    /// The weight of the question's term at position `k`: BM25's inverse
    /// document frequency, `ln(1 + (N - df + 0.5) / (df + 0.5))`, always
    /// positive; rare terms weigh more.
    fn weight(&self, k: usize) -> f64 {
        let n = self.documents as f64;
        let df = (self.df[k] as f64).min(n);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// The weighted share of the question's terms in `matches`, in `[0, 1]`
    /// (of the terms some matched text holds).
    ///
    /// ```
    /// let mut rel = memory_thrift::relevance::TermScorer::new("alpha beta gamma");
    /// let both = rel.matches(["alpha and beta"]);
    /// let one = rel.matches(["beta"]);
    /// let none = rel.matches(["delta"]);
    /// assert_eq!(rel.score(&both), 1.0); // nothing holds "gamma"
    /// assert_eq!(rel.score(&one), 0.5);
    /// assert_eq!(rel.score(&none), 0.0);
    /// ```
    pub fn score(&self, matches: &Matches) -> f64 {
        self.score_with_total(matches, self.total())
    }

    /// Like [`score`](TermScorer::score), with the total weight precomputed.
    pub(crate) fn score_with_total(&self, matches: &Matches, total: f64) -> f64 {
        if total <= 0.0 || matches.is_empty() {
            return 0.0;
        }
        let got: f64 = matches.0.iter().map(|&k| self.weight(k as usize)).sum();
        (got / total).clamp(0.0, 1.0)
    }

    /// The weights of the question's terms that some text holds, summed; a
    /// caller that scores many texts computes it once.
    pub(crate) fn total(&self) -> f64 {
        (0..self.df.len())
            .filter(|&k| self.seen[k])
            .map(|k| self.weight(k))
            .sum()
    }
}

/// A document's score: `got`, the weights of the question's terms it
/// holds summed by ascending position, as a share of `total`; 0 when it
/// holds none (`empty`).
pub(crate) fn share(got: f64, total: f64, empty: bool) -> f64 {
    if total <= 0.0 || empty {
        return 0.0;
    }
    (got / total).clamp(0.0, 1.0)
}

/// Scores each of `documents` against `question`, the documents being the
/// corpus too.
///
/// ```
/// let scores = memory_thrift::relevance::rank("rotate the signing keys", &["keys rotated", "hello"]);
/// assert!(scores[0] > 0.0 && scores[1] == 0.0);
/// ```
pub fn rank(question: &str, documents: &[&str]) -> Vec<f64> {
    let mut rel = TermScorer::new(question);
    let matches: Vec<Matches> = documents.iter().map(|d| rel.matches([*d])).collect();
    for m in &matches {
        rel.add_document(m);
    }
    let total = rel.total();
    matches
        .iter()
        .map(|m| rel.score_with_total(m, total))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_the_pattern() {
        assert_eq!(
            terms("a abc abcd 12ab 1abcd x9yz"),
            ["abcd", "abcd", "x9yz"]
        );
        assert_eq!(
            terms("CamelCase and snake_case"),
            ["camelcas", "snak", "cas"]
        );
        assert!(terms("日本語のテキスト").is_empty());
    }

    #[test]
    fn forms_of_a_word_meet() {
        for group in [
            ["test", "tests", "tested", "testing"],
            ["deploy", "deploys", "deployed", "deploying"],
            ["stop", "stops", "stopped", "stopping"],
            ["move", "moves", "moved", "moving"],
            ["query", "queries", "queried", "query"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            assert!(
                stems.windows(2).all(|w| w[0] == w[1]),
                "{group:?} -> {stems:?}"
            );
        }
    }

    #[test]
    fn rare_terms_weigh_more_than_common_ones() {
        let mut rel = TermScorer::new("common rare");
        let common = rel.matches(["common"]);
        let rare = rel.matches(["rare"]);
        for _ in 0..9 {
            rel.add_document(&common);
        }
        rel.add_document(&rare);
        assert!(rel.score(&rare) > 0.7, "{}", rel.score(&rare));
        assert!(rel.score(&common) < 0.3, "{}", rel.score(&common));
        assert!((rel.score(&rare) + rel.score(&common) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn without_a_corpus_every_term_weighs_the_same() {
        let mut rel = TermScorer::new("alpha beta gamma delta");
        let half = rel.matches(["alpha beta"]);
        rel.matches(["gamma delta"]);
        assert_eq!(rel.score(&half), 0.5);
    }

    #[test]
    fn terms_nothing_holds_do_not_count() {
        let mut rel = TermScorer::new("alpha omega");
        let m = rel.matches(["alpha"]);
        assert_eq!(rel.score(&m), 1.0);
    }

    #[test]
    fn idf_with_stemming_beats_plain_overlap_on_a_rare_word() {
        // The question's rare word ("postgres", as "Postgres") appears in
        // one old round only; its common words appear everywhere.
        let question = "What did we say about the postgres migrations? What did we say?";
        let evidence = "I ran the Postgres migration last night.";
        let chatter = "What did you say about lunch? We said what we say every day.";
        let mut docs = vec![evidence];
        docs.extend(std::iter::repeat_n(chatter, 6));
        let weighted = rank(question, &docs);
        assert!(weighted[0] > weighted[1], "{weighted:?}");
        // The plain share prefers the chatter.
        assert!(overlap(question, chatter) > overlap(question, evidence));
    }
}
