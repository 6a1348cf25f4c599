//! How the workspace reads the words of a text: what a word is
//! ([`words`], [`lowercase_words`]) and a light stemmer ([`stem`]), so that
//! Thrift's relevance, the index of what a context leaves out, the recall
//! answer's ranking of lines, the offline summarizer and the `memory`
//! command's answer recall all split and compare words the same way.
//!
//! | item | what it is |
//! |---|---|
//! | [`words`], [`lowercase_words`], [`for_each_lowercase_word`] | the words of a text: its runs of letters and digits (the last without a string each) |
//! | [`stem()`], [`stem_ascii`], [`MAX_STEM_CUT`] | the light stemmer: plurals, `-ing`, `-ed`, `-ly` |
//! | [`for_each_stem`] | the stems of a text's words, without a string each |
//!
//! ```
//! use memory_text::{lowercase_words, stem};
//! let seen: Vec<String> = lowercase_words("Painting the Rooms", 3).map(|w| stem(&w)).collect();
//! assert_eq!(seen, ["paint", "the", "room"]);
//! ```

mod stem;
mod words;

pub use stem::{MAX_STEM_CUT, for_each_stem, stem, stem_ascii};
pub use words::{for_each_lowercase_word, lowercase_words, words};
