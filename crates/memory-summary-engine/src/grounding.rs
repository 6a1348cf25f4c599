//! Whether a summary says something about what it covers: the salient terms
//! it shares with the text it was made from.
//!
//! A small model asked for a summary sometimes answers with chatter ("I'm
//! ready to assist with any code you'd like me to work on") or restates the
//! request's own framing. Such a reply is not blank, ended normally, and
//! would replace real history with nothing. [`check`] tells it apart by the
//! *salient terms* the reply shares with its source:
//!
//! - **Identifiers**: a token with `_`, `.`, `/`, `:`, `#`, `@` inside, a
//!   digit, or a case change inside (`parse_amount`, `src/lib.rs`,
//!   `HttpClient`, `v1.6`); whole, and each of its words.
//! - **Numbers** of two digits or more, **acronyms** (`CSV`, `API`) and
//!   **names** (a capitalized word inside a sentence).
//! - **Words** of three letters or more that are not on the list of
//!   function words and of words that any request for a summary, or any
//!   polite reply, uses (`summary`, `conversation`, `assistant`, `ready`,
//!   `help`...). English words lose a plural or verb ending (`issues` and
//!   `issue` are one term); other words are compared by their first five
//!   letters, which absorbs most inflection.
//! - **Chinese and Japanese** text, written without spaces, by pairs of
//!   adjacent characters.
//!
//! The first four kinds are *strong*. A summary is grounded when its source
//! has too few terms to judge (fewer than [`MIN_SOURCE_TERMS`]: a tiny span
//! may be summarized in other words), or when it shares at least
//! [`needed`]`(n)` of the source's `n` terms (1 below 10 terms, 2 below 40,
//! else 3) and, when the source has [`STRONG_SOURCE`] strong terms or more,
//! either one of them or two more terms than that. These are deliberately
//! low bars: any summary that restates anything of its source passes; what
//! fails shares next to nothing with it.
//!
//! ```
//! use memory_summary_engine::grounding;
//!
//! let covered = "user: The importer crashes on tests/fixtures/semicolon-2024-03.csv.\n\
//!     assistant: parse_amount splits on ',' but the file uses decimal commas; fixed it in tidyledger/importer.py.";
//! assert!(grounding::check(covered, "parse_amount now accepts decimal commas (tidyledger/importer.py).").is_ok());
//! assert!(grounding::check(covered, "I'm ready to assist with any code you'd like me to work on.").is_err());
//! // A tiny span has too little to judge by.
//! assert!(grounding::check("user: hi\nassistant: Hello! How can I help?", "Greetings exchanged.").is_ok());
//! ```

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::sync::LazyLock;

use memory_core::ChatRequest;
use memory_core::identity::WordHasher;

use crate::Rejection;

/// A map or set by word: words are short, and every word of a summary and
/// of its sources is looked up, hashed a word at a time.
type ByWord = BuildHasherDefault<WordHasher>;

/// Below this many salient terms a source is too small to judge a summary
/// by: any non-blank summary of it is grounded.
///
/// ```
/// assert_eq!(memory_summary_engine::grounding::MIN_SOURCE_TERMS, 3);
/// ```
pub const MIN_SOURCE_TERMS: usize = 3;

/// From this many strong terms in the source (identifiers, numbers,
/// acronyms, names), a summary that shares none of them needs two more
/// shared terms than [`needed`] says.
///
/// ```
/// assert_eq!(memory_summary_engine::grounding::STRONG_SOURCE, 8);
/// ```
pub const STRONG_SOURCE: usize = 8;

/// How many of a source's `terms` salient terms a summary must share: none
/// below [`MIN_SOURCE_TERMS`], 1 below 10, 2 below 40, else 3.
///
/// ```
/// use memory_summary_engine::grounding::needed;
/// assert_eq!((needed(2), needed(5), needed(25), needed(4_000)), (0, 1, 2, 3));
/// ```
pub fn needed(terms: usize) -> usize {
    match terms {
        t if t < MIN_SOURCE_TERMS => 0,
        t if t < 10 => 1,
        t if t < 40 => 2,
        _ => 3,
    }
}

/// What a summary shares with its source, counted.
///
/// ```
/// use memory_summary_engine::grounding::Grounding;
/// let g = Grounding::of("Melanie adopted a beagle named Oscar in May 2023.", "Melanie has a beagle, Oscar.");
/// // Shared: melanie, beagle, oscar; only "Oscar" stands inside a sentence.
/// assert_eq!((g.shared, g.strong_shared), (3, 1));
/// assert!(g.is_grounded());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grounding {
    /// Distinct salient terms of the source.
    pub source_terms: usize,
    /// Of them, the strong ones.
    pub strong_source: usize,
    /// Distinct salient terms the summary shares with the source.
    pub shared: usize,
    /// Of them, the ones strong in the source.
    pub strong_shared: usize,
}

impl Grounding {
    /// Counts what `summary` shares with `source`.
    ///
    /// ```
    /// let g = memory_summary_engine::grounding::Grounding::of("", "anything");
    /// assert_eq!(g.source_terms, 0);
    /// ```
    pub fn of(source: &str, summary: &str) -> Self {
        let source = terms(source);
        let summary = terms(summary);
        let mut grounding = Grounding {
            source_terms: source.len(),
            strong_source: source.values().filter(|&&s| s).count(),
            shared: 0,
            strong_shared: 0,
        };
        for term in summary.keys() {
            if let Some(&strong) = source.get(term) {
                grounding.shared += 1;
                grounding.strong_shared += usize::from(strong);
            }
        }
        grounding
    }

    /// The shared terms a summary needs: [`needed`] of the source's terms,
    /// two more when the source has [`STRONG_SOURCE`] strong terms and the
    /// summary shares none of them.
    ///
    /// ```
    /// use memory_summary_engine::grounding::Grounding;
    /// let g = Grounding { source_terms: 50, strong_source: 9, shared: 4, strong_shared: 0 };
    /// assert_eq!(g.needed(), 5);
    /// ```
    pub fn needed(&self) -> usize {
        let base = needed(self.source_terms);
        if base > 0 && self.strong_source >= STRONG_SOURCE && self.strong_shared == 0 {
            base + 2
        } else {
            base
        }
    }

    /// Whether the summary shares enough to say something about its source.
    ///
    /// ```
    /// use memory_summary_engine::grounding::Grounding;
    /// assert!(!Grounding { source_terms: 12, strong_source: 0, shared: 1, strong_shared: 0 }.is_grounded());
    /// ```
    pub fn is_grounded(&self) -> bool {
        self.shared >= self.needed()
    }
}

/// Whether `summary` is grounded in `source` (see the [module](self)).
///
/// # Errors
///
/// [`Rejection::Ungrounded`] when it shares too few salient terms.
///
/// ```
/// use memory_summary_engine::{grounding, Rejection};
/// let source = "assistant: Ran pytest: 13 passed, test_importer.py::test_decimal_commas fails on '1.234,56'.";
/// let err = grounding::check(source, "The changes look good overall.").unwrap_err();
/// assert!(matches!(err, Rejection::Ungrounded { shared: 0, .. }));
/// ```
pub fn check(source: &str, summary: &str) -> Result<(), Rejection> {
    let grounding = Grounding::of(source, summary);
    if grounding.is_grounded() {
        Ok(())
    } else {
        Err(Rejection::Ungrounded {
            shared: grounding.shared,
            needed: grounding.needed(),
            source_terms: grounding.source_terms,
        })
    }
}

/// What a summary request asks to be summarized: the text of its
/// messages other than the system ones (the instructions), in order.
///
/// ```
/// use memory_core::{ChatRequest, Message};
/// use memory_summary_engine::grounding;
/// let request = ChatRequest::new(vec![Message::system("Summarize."), Message::user("user: fix src/lib.rs")]);
/// assert_eq!(grounding::source_of(&request), "user: fix src/lib.rs");
/// ```
pub fn source_of(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .filter(|m| !m.is_system())
        .map(|m| m.text())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Characters that may stand inside a token (identifiers, paths, dates).
fn joins(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | ':' | '#' | '@' | '-')
}

/// Characters that make a token an identifier when inside it.
fn marks(c: char) -> bool {
    matches!(c, '_' | '.' | '/' | ':' | '#' | '@')
}

/// Chinese characters and Japanese kana: scripts written without spaces.
fn unspaced(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
}

/// The salient terms of `text`, each with whether it is strong anywhere.
fn terms(text: &str) -> HashMap<String, bool, ByWord> {
    let mut out: HashMap<String, bool, ByWord> = HashMap::default();
    let mut add = |term: String, strong: bool| {
        let entry = out.entry(term).or_insert(false);
        *entry |= strong;
    };
    let mut sentence_start = true;
    for chunk in text.split_whitespace() {
        let mut first = true;
        for piece in chunk.split(|c: char| !joins(c)) {
            let token = piece.trim_matches(|c: char| !c.is_alphanumeric());
            if !token.is_empty() {
                token_terms(token, first && sentence_start, &mut add);
                first = false;
            }
        }
        sentence_start = chunk.ends_with(['.', '!', '?', ':', '\u{3002}']);
    }
    out
}

/// The terms of one token: an identifier whole (strong) and its words, or
/// the words of an ordinary token.
fn token_terms(token: &str, sentence_start: bool, add: &mut impl FnMut(String, bool)) {
    // Digits and marks are ASCII: a byte of another character is none.
    let has_digit = token.bytes().any(|b| b.is_ascii_digit());
    let marked = token.bytes().any(|b| b.is_ascii() && marks(char::from(b)));
    let identifier = marked || has_digit || case_change(token);
    if identifier {
        if token.chars().count() >= 2 {
            add(token.to_lowercase(), true);
        }
        for word in split_words(token) {
            word_terms(&word, false, add);
        }
    } else {
        for (i, word) in token.split('-').filter(|w| !w.is_empty()).enumerate() {
            word_terms(word, sentence_start && i == 0, add);
        }
    }
}

/// Whether a lower-case letter is followed by an upper-case one inside
/// `token` (`parseAmount`, `HttpClient`).
fn case_change(token: &str) -> bool {
    let mut lower_before = false;
    token.chars().any(|c| {
        let change = lower_before && c.is_uppercase();
        lower_before = c.is_lowercase();
        change
    })
}

/// The words of an identifier: split at non-alphanumerics, at letter/digit
/// boundaries and at lower-to-upper case changes.
fn split_words(token: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in token.chars() {
        let boundary = match previous {
            _ if !c.is_alphanumeric() => true,
            Some(p) => {
                (p.is_lowercase() && c.is_uppercase()) || (p.is_ascii_digit() != c.is_ascii_digit())
            }
            None => false,
        };
        if boundary && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        if c.is_alphanumeric() {
            current.push(c);
        }
        previous = Some(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// The terms of one word (letters or digits only).
fn word_terms(word: &str, sentence_start: bool, add: &mut impl FnMut(String, bool)) {
    if word.bytes().all(|b| b.is_ascii_digit()) {
        if word.len() >= 2 {
            add(word.to_string(), true);
        }
        return;
    }
    // An ASCII word (most) is read by its bytes: the same counts and case.
    let ascii = word.is_ascii();
    if !ascii && word.chars().any(unspaced) {
        let chars: Vec<char> = word.chars().collect();
        for pair in chars.windows(2) {
            add(pair.iter().collect(), false);
        }
        return;
    }
    let (count, upper, lower) = if ascii {
        let upper = word.bytes().filter(u8::is_ascii_uppercase).count();
        (word.len(), upper, word.to_ascii_lowercase())
    } else {
        let upper = word.chars().filter(|c| c.is_uppercase()).count();
        (word.chars().count(), upper, word.to_lowercase())
    };
    let stop = is_stop(&lower);
    if upper == count && count >= 2 && !stop {
        // An acronym: CSV, API, SQL.
        add(lower, true);
        return;
    }
    if count < 3 || stop {
        return;
    }
    let name = !sentence_start && word.chars().next().is_some_and(char::is_uppercase);
    add(stem(&lower), name);
}

/// A word without its English plural or verb ending (ASCII words), or its
/// first five letters (others).
fn stem(word: &str) -> String {
    if !word.is_ascii() {
        return word.chars().take(5).collect();
    }
    let mut stem = word;
    for suffix in ["ing", "ies", "ied", "es", "ed", "ly", "s"] {
        if let Some(rest) = stem.strip_suffix(suffix)
            && rest.len() >= 3
        {
            stem = rest;
            break;
        }
    }
    let stem = stem
        .strip_suffix('e')
        .filter(|r| r.len() >= 3)
        .unwrap_or(stem);
    stem.chars().take(8).collect()
}

/// Whether `lower` is one of [`STOP`]: a set, as every word of a summary
/// and of its sources is looked up.
fn is_stop(lower: &str) -> bool {
    static SET: LazyLock<HashSet<&'static str, ByWord>> =
        LazyLock::new(|| STOP.iter().copied().collect());
    SET.contains(lower)
}

/// Function words, and words that any summary request or polite reply
/// uses whatever it is about: sharing them says nothing.
const STOP: &[&str] = &[
    // function words
    "the",
    "and",
    "for",
    "are",
    "was",
    "were",
    "but",
    "not",
    "any",
    "can",
    "had",
    "has",
    "have",
    "her",
    "his",
    "him",
    "she",
    "its",
    "our",
    "out",
    "who",
    "how",
    "why",
    "all",
    "one",
    "two",
    "get",
    "got",
    "did",
    "does",
    "done",
    "may",
    "yes",
    "use",
    "used",
    "now",
    "too",
    "let",
    "see",
    "you",
    "your",
    "yours",
    "they",
    "them",
    "their",
    "there",
    "then",
    "than",
    "that",
    "this",
    "these",
    "those",
    "what",
    "when",
    "where",
    "which",
    "while",
    "with",
    "within",
    "without",
    "from",
    "into",
    "onto",
    "over",
    "under",
    "about",
    "above",
    "below",
    "after",
    "before",
    "again",
    "also",
    "just",
    "only",
    "very",
    "much",
    "many",
    "more",
    "most",
    "some",
    "such",
    "each",
    "every",
    "other",
    "same",
    "both",
    "few",
    "own",
    "off",
    "per",
    "via",
    "will",
    "would",
    "could",
    "should",
    "shall",
    "might",
    "must",
    "been",
    "being",
    "here",
    "well",
    "yet",
    "still",
    "even",
    "ever",
    "never",
    "because",
    "since",
    "until",
    "though",
    "although",
    "however",
    "whether",
    "either",
    "neither",
    "nor",
    "anything",
    "something",
    "nothing",
    "everything",
    "someone",
    "anyone",
    "everyone",
    "way",
    "thing",
    "things",
    "like",
    "make",
    "made",
    "take",
    "took",
    "give",
    "gave",
    "know",
    "knew",
    "think",
    "thought",
    "say",
    "said",
    "tell",
    "told",
    "want",
    "wanted",
    "need",
    "needs",
    "needed",
    "feel",
    "free",
    "sure",
    "okay",
    "yeah",
    "hey",
    "hello",
    "hi",
    "thanks",
    "thank",
    "please",
    "really",
    "great",
    "good",
    "nice",
    "glad",
    "happy",
    "able",
    "going",
    "come",
    "came",
    // what a summary request or an empty polite reply says of any content
    "summary",
    "summaries",
    "summarize",
    "summarized",
    "summarizing",
    "conversation",
    "conversations",
    "assistant",
    "user",
    "users",
    "previous",
    "merge",
    "merged",
    "material",
    "request",
    "requests",
    "current",
    "step",
    "steps",
    "newest",
    "earlier",
    "older",
    "continue",
    "continues",
    "carry",
    "ready",
    "assist",
    "assistance",
    "help",
    "helping",
    "helpful",
    "work",
    "working",
    "code",
    "task",
    "tasks",
    "question",
    "questions",
    "answer",
    "answers",
    "information",
    "provide",
    "provided",
    "details",
    "detail",
    "point",
    "points",
    "part",
    "parts",
    "following",
    "above",
    "below",
    "new",
    "first",
    "second",
    "next",
    "last",
    "tool",
    "tools",
    "result",
    "results",
    "call",
    "called",
    "calls",
    "message",
    "messages",
    "context",
    "heading",
    "headings",
    "goals",
    "decisions",
    "state",
    "open",
    "files",
    "values",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        let mut k: Vec<String> = terms(text).into_keys().collect();
        k.sort();
        k
    }

    #[test]
    fn identifiers_count_whole_and_by_their_words() {
        let t = terms("Edit tidyledger/importer.py: parse_amount and HttpClient v1.6");
        for strong in [
            "tidyledger/importer.py",
            "parse_amount",
            "httpclient",
            "v1.6",
        ] {
            assert_eq!(t.get(strong), Some(&true), "{strong}: {t:?}");
        }
        for word in [
            "tidyledger",
            "importer",
            "parse",
            "amount",
            "http",
            "client",
        ] {
            assert!(t.contains_key(&stem(word)), "{word}: {t:?}");
        }
    }

    #[test]
    fn names_inside_a_sentence_are_strong_and_sentence_starts_are_not() {
        let t = terms("Yesterday Caroline met Melanie. Painting was fun.");
        assert_eq!(t.get(&stem("caroline")), Some(&true));
        assert_eq!(t.get(&stem("melanie")), Some(&true));
        assert_eq!(t.get(&stem("yesterday")), Some(&false));
        assert_eq!(t.get(&stem("painting")), Some(&false));
    }

    #[test]
    fn function_and_framing_words_are_not_terms() {
        assert!(keys("I'm ready to assist with any code you'd like me to work on").is_empty());
        assert!(
            keys("Merge your previous summary and the conversation above into one summary.")
                .is_empty()
        );
    }

    #[test]
    fn endings_and_inflections_meet() {
        assert_eq!(stem("issues"), stem("issue"));
        assert_eq!(stem("adopted"), stem("adopting"));
        assert_eq!(stem("hiking"), stem("hike"));
        assert_eq!(keys("программы"), keys("программа"));
    }

    #[test]
    fn unspaced_scripts_are_compared_by_character_pairs() {
        let g = Grounding::of(
            "ユーザーは東京の天気予報を確認したいと言いました。明日は雨です。",
            "東京の天気予報：明日は雨。",
        );
        assert!(g.shared >= 3, "{g:?}");
        assert!(g.is_grounded());
    }
}
