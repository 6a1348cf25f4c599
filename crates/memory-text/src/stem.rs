//! A light stemmer, so that the forms of one word meet when texts are
//! matched by their words: Thrift's relevance and the index's ranking of
//! left-out pieces by a question read words the same way.
//!
//! Plurals (`-s`, `-es`, `-ies`), `-ing`, `-ed` and `-ly` are removed, a
//! doubled final consonant left by them is undoubled and a final `e`
//! dropped. It is deliberately light: consistent rather than
//! linguistically exact, and only ASCII suffixes are touched.
//!
//! ```
//! use memory_text::stem;
//! assert_eq!(stem("painting"), stem("painted"));
//! assert_eq!(stem("activities"), "activity");
//! ```

/// Most bytes [`stem_ascii`] removes from a word. Why: a bound on the
/// words that may stem to a given term, so that a matcher can pass over
/// others unstemmed. Figure: none needed (a bound, not a tuning).
pub const MAX_STEM_CUT: usize = 8;

/// Reduces a word to its stem (lowercased first).
///
/// ```
/// use memory_text::stem;
/// assert_eq!(stem("running"), "run");
/// assert_eq!(stem("runs"), "run");
/// assert_eq!(stem("clusters"), stem("cluster"));
/// assert_eq!(stem("deployed"), stem("deploying"));
/// assert_eq!(stem("quickly"), "quick");
/// assert_eq!(stem("replies"), stem("replied"));
/// assert_eq!(stem("status"), "status");
/// assert_eq!(stem("Ärger"), "ärger");
/// ```
pub fn stem(word: &str) -> String {
    let lower = word.to_lowercase();
    if !lower.is_ascii() {
        // Suffixes are English and ASCII; another script's word is its
        // own stem (cutting bytes could split a character).
        return lower;
    }
    let mut w = lower.into_bytes();
    stem_ascii(&mut w);
    // Stemming only removes ASCII suffixes and appends ASCII letters.
    String::from_utf8(w).unwrap_or_default()
}

/// Calls `f` with the [`stem`] of each of `text`'s words of at least
/// `min_chars` characters, in order (repeats included): what
/// [`lowercase_words`](crate::lowercase_words) and [`stem`] give, without
/// a string each for an ASCII word (the words of
/// [`for_each_lowercase_word`](crate::for_each_lowercase_word)).
///
/// ```
/// let mut seen = Vec::new();
/// memory_text::for_each_stem("Painting the Rooms, Ärger", 3, |s| seen.push(s.to_string()));
/// assert_eq!(seen, ["paint", "the", "room", "ärger"]);
/// ```
pub fn for_each_stem(text: &str, min_chars: usize, mut f: impl FnMut(&str)) {
    let mut word = Vec::new();
    crate::for_each_lowercase_word(text, min_chars, |lower| {
        if lower.is_ascii() {
            word.clear();
            word.extend_from_slice(lower.as_bytes());
            stem_ascii(&mut word);
            f(std::str::from_utf8(&word).unwrap_or_default());
        } else {
            f(&stem(lower));
        }
    });
}

/// [`stem`] in place, for a lowercase ASCII word held as bytes (what a
/// matcher that reads bytes has at hand).
///
/// ```
/// let mut w = b"flies".to_vec();
/// memory_text::stem_ascii(&mut w);
/// assert_eq!(w, b"fly");
/// ```
pub fn stem_ascii(w: &mut Vec<u8>) {
    let n = w.len();
    if n > 4 && w.ends_with(b"ies") {
        w.truncate(n - 3);
        w.push(b'y');
    } else if w.ends_with(b"sses") {
        w.truncate(n - 2);
    } else if n > 3
        && w.ends_with(b"s")
        && !w.ends_with(b"ss")
        && !w.ends_with(b"us")
        && !w.ends_with(b"is")
    {
        w.truncate(n - 1);
    }
    let n = w.len();
    if n >= 6 && w.ends_with(b"ing") {
        w.truncate(n - 3);
        undouble(w);
    } else if n >= 5 && w.ends_with(b"ied") {
        w.truncate(n - 3);
        w.push(b'y');
    } else if n >= 5 && w.ends_with(b"ed") {
        w.truncate(n - 2);
        undouble(w);
    } else if n >= 6 && w.ends_with(b"ly") {
        w.truncate(n - 2);
        if w.ends_with(b"i") {
            w.pop();
            w.push(b'y');
        }
    }
    if w.len() > 3 && w.ends_with(b"e") {
        w.pop();
    }
}

/// Drops one of a doubled final consonant ("runn" -> "run").
fn undouble(w: &mut Vec<u8>) {
    let n = w.len();
    if n >= 4 && w[n - 1] == w[n - 2] && !b"aeioulsz".contains(&w[n - 1]) {
        w.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stem_is_a_lowercase_word_stemmed() {
        let texts = [
            "Running 3 TESTS in src/main.rs, flies flying; CLUSTERS clustered",
            "Ünïcode wörds: Straße, ÉCOLE, naïve café, İstanbul",
            "\u{212a}elvin and \u{212b}ngstrom signs lowercase to ASCII",
            "ab abc ABCD a1b2 9lives x_y_z 中文字符 テスト",
            "",
        ];
        for min_chars in [1, 3, 4] {
            for text in texts {
                let want: Vec<String> = crate::lowercase_words(text, min_chars)
                    .map(|w| stem(&w))
                    .collect();
                let mut got = Vec::new();
                for_each_stem(text, min_chars, |s| got.push(s.to_string()));
                assert_eq!(got, want, "{text} ({min_chars})");
            }
        }
    }

    #[test]
    fn never_cuts_more_than_the_bound() {
        for word in ["flying", "stopped", "happily", "classes", "studies", "e"] {
            let s = stem(word);
            assert!(s.len() <= word.len() && word.len() - s.len() <= MAX_STEM_CUT);
        }
    }
}
