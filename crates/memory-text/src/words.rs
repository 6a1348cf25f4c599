//! The words of a text: its runs of letters and digits.

/// The words of `text`, in order: the runs of letters and digits between
/// the other characters, as they stand (not lowercased), none empty.
///
/// ```
/// let all: Vec<&str> = memory_text::words("Tomas's bike, 7 May 2023!").collect();
/// assert_eq!(all, ["Tomas", "s", "bike", "7", "May", "2023"]);
/// ```
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// The [`words`] of `text` of at least `min_chars` characters, lowercased,
/// in order.
///
/// ```
/// let long: Vec<String> = memory_text::lowercase_words("Go to Lisbon in May", 3).collect();
/// assert_eq!(long, ["lisbon", "may"]);
/// ```
pub fn lowercase_words(text: &str, min_chars: usize) -> impl Iterator<Item = String> + '_ {
    words(text)
        .filter(move |w| w.chars().count() >= min_chars)
        .map(str::to_lowercase)
}

/// Calls `f` with each of `text`'s words of at least `min_chars`
/// characters, lowercased, in order (repeats included): what
/// [`lowercase_words`] gives, without a string each for an ASCII word (an
/// ASCII text is split by its bytes).
///
/// ```
/// let mut seen = Vec::new();
/// memory_text::for_each_lowercase_word("Go to LISBON, Ärger", 3, |w| seen.push(w.to_string()));
/// assert_eq!(seen, ["lisbon", "ärger"]);
/// ```
pub fn for_each_lowercase_word(text: &str, min_chars: usize, mut f: impl FnMut(&str)) {
    let mut word = Vec::new();
    let mut ascii = |w: &[u8], f: &mut dyn FnMut(&str)| {
        if w.len() >= min_chars {
            word.clear();
            word.extend(w.iter().map(u8::to_ascii_lowercase));
            f(std::str::from_utf8(&word).unwrap_or_default());
        }
    };
    if text.is_ascii() {
        // Its words are its runs of ASCII letters and digits, as `words`
        // finds them, without decoding each character.
        for w in text.as_bytes().split(|b| !b.is_ascii_alphanumeric()) {
            ascii(w, &mut f);
        }
        return;
    }
    for w in words(text) {
        if w.is_ascii() {
            ascii(w.as_bytes(), &mut f);
        } else if w.chars().count() >= min_chars {
            f(&w.to_lowercase());
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_lowercase_word_is_what_lowercase_words_gives() {
        let texts = [
            "Go to LISBON in May, 2023!",
            "a_b c-d  e..f",
            "Ärger im ÖSTERREICH, naïve café",
            "",
            "x",
            "日本語のテキスト and ASCII",
        ];
        for text in texts {
            for min_chars in [1, 3, 4] {
                let want: Vec<String> = super::lowercase_words(text, min_chars).collect();
                let mut got = Vec::new();
                super::for_each_lowercase_word(text, min_chars, |w| got.push(w.to_string()));
                assert_eq!(got, want, "{text:?} at {min_chars}");
            }
        }
    }
}
