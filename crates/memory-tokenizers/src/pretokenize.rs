//! Cutting text into the pieces OpenAI's encodings tokenize one by one.
//!
//! cl100k and o200k first split text with a regular expression (words with
//! their leading space, runs of up to three digits, runs of punctuation,
//! whitespace), then byte-pair encode each piece. Running that expression
//! is most of the cost of counting. For ASCII, which is most of what chat and
//! agents send, this module decides each piece with a few byte comparisons
//! instead; wherever a decision depends on a non-ASCII character (is it a
//! letter, a mark, a space?) it asks the encoding's own expression for that
//! one piece and carries on after it. The pieces are those of the expression,
//! exactly: the tests compare both on real and generated text.

use bpe_openai::Tokenizer;

/// Which expression to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// `cl100k_base`: contractions stand alone, a word is one run of letters.
    Cl100k,
    /// `o200k_base`: a word is upper case then lower case letters, with its
    /// contraction; punctuation runs also take trailing slashes.
    O200k,
}

/// The pieces of `text`, in order; they concatenate to `text`.
pub(crate) struct Pieces<'a> {
    text: &'a str,
    position: usize,
    pattern: Pattern,
    fallback: &'a Tokenizer,
}

impl<'a> Pieces<'a> {
    /// `fallback` is the tokenizer whose expression `pattern` mirrors.
    pub(crate) fn new(text: &'a str, pattern: Pattern, fallback: &'a Tokenizer) -> Self {
        Self {
            text,
            position: 0,
            pattern,
            fallback,
        }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let start = self.position;
        let bytes = self.text.as_bytes();
        if start >= bytes.len() {
            return None;
        }
        let decided = match self.pattern {
            Pattern::Cl100k => cl100k(bytes, start),
            Pattern::O200k => o200k(bytes, start),
        };
        let end = match decided {
            Some(end) => end,
            None => {
                // The expression matches every character, so this never
                // takes the rest of the text in practice.
                let rest = &self.text[start..];
                start + self.fallback.split(rest).next().unwrap_or(rest).len()
            }
        };
        self.position = end;
        Some(&self.text[start..end])
    }
}

/// What a byte is, as far as the expressions care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `A-Z`
    Upper,
    /// `a-z`
    Lower,
    /// `0-9`
    Digit,
    /// `\r` and `\n`
    Newline,
    /// Other ASCII white space: space, tab, vertical tab, form feed.
    Space,
    /// Any other ASCII: punctuation, symbols, control characters.
    Other,
    /// Part of a multi-byte character: undecided here.
    Wide,
}

const fn classify(b: u8) -> Class {
    match b {
        b'A'..=b'Z' => Class::Upper,
        b'a'..=b'z' => Class::Lower,
        b'0'..=b'9' => Class::Digit,
        b'\r' | b'\n' => Class::Newline,
        b' ' | b'\t' | 0x0B | 0x0C => Class::Space,
        0x80..=0xFF => Class::Wide,
        _ => Class::Other,
    }
}

const CLASSES: [Class; 256] = {
    let mut table = [Class::Other; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = classify(b as u8);
        b += 1;
    }
    table
};

/// The class of the byte at `i`, `None` past the end.
#[inline]
fn class_at(bytes: &[u8], i: usize) -> Option<Class> {
    bytes.get(i).map(|&b| CLASSES[b as usize])
}

/// The end of the first `cl100k_base` piece at `start`, or `None` when it
/// depends on a non-ASCII character.
///
/// The expression, alternatives in order of preference:
/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)`, `[^\r\n\p{L}\p{N}]?\p{L}+`, `\p{N}{1,3}`,
/// ` ?[^\s\p{L}\p{N}]+[\r\n]*`, `\s*[\r\n]+`, `\s+(?!\S)`, `\s+`.
fn cl100k(bytes: &[u8], start: usize) -> Option<usize> {
    let class = class_at(bytes, start)?;
    if bytes[start] == b'\'' {
        let n = contraction(bytes, start)?;
        if n > 0 {
            return Some(start + n);
        }
    }
    match class {
        Class::Wide => None,
        Class::Upper | Class::Lower => letters(bytes, start),
        Class::Digit => digits(bytes, start),
        Class::Other | Class::Space => {
            match class_at(bytes, start + 1) {
                Some(Class::Upper | Class::Lower) => return letters(bytes, start + 1),
                Some(Class::Wide) => return None,
                _ => {}
            }
            if class == Class::Other {
                return punctuation(bytes, start, b"\r\n");
            }
            if bytes[start] == b' ' && class_at(bytes, start + 1) == Some(Class::Other) {
                return punctuation(bytes, start + 1, b"\r\n");
            }
            whitespace(bytes, start)
        }
        Class::Newline => whitespace(bytes, start),
    }
}

/// The end of the first `o200k_base` piece at `start`, or `None` when it
/// depends on a non-ASCII character.
///
/// The expression, alternatives in order of preference:
/// `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
/// `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
/// `\p{N}{1,3}`, ` ?[^\s\p{L}\p{N}]+[\r\n/]*`, `\s*[\r\n]+`, `\s+(?!\S)`, `\s+`.
fn o200k(bytes: &[u8], start: usize) -> Option<usize> {
    let class = class_at(bytes, start)?;
    match class {
        Class::Wide => None,
        Class::Upper | Class::Lower => cased_word(bytes, start),
        Class::Digit => digits(bytes, start),
        Class::Other | Class::Space => {
            match class_at(bytes, start + 1) {
                Some(Class::Upper | Class::Lower) => return cased_word(bytes, start + 1),
                Some(Class::Wide) => return None,
                _ => {}
            }
            if class == Class::Other {
                return punctuation(bytes, start, b"\r\n/");
            }
            if bytes[start] == b' ' && class_at(bytes, start + 1) == Some(Class::Other) {
                return punctuation(bytes, start + 1, b"\r\n/");
            }
            whitespace(bytes, start)
        }
        Class::Newline => whitespace(bytes, start),
    }
}

/// The end of the run of `class` bytes from `i`.
#[inline]
fn run(bytes: &[u8], mut i: usize, accept: impl Fn(Class) -> bool) -> usize {
    while let Some(class) = class_at(bytes, i) {
        if !accept(class) {
            break;
        }
        i += 1;
    }
    i
}

/// `Some(end)` when the byte at `end` cannot continue a run that a
/// non-ASCII character could continue.
#[inline]
fn settled(bytes: &[u8], end: usize) -> Option<usize> {
    (class_at(bytes, end) != Some(Class::Wide)).then_some(end)
}

/// `\p{L}+` from `i` (at a letter).
fn letters(bytes: &[u8], i: usize) -> Option<usize> {
    settled(
        bytes,
        run(bytes, i, |c| matches!(c, Class::Upper | Class::Lower)),
    )
}

/// `\p{N}{1,3}` from `i` (at a digit).
fn digits(bytes: &[u8], i: usize) -> Option<usize> {
    let mut end = i;
    while end < i + 3 && class_at(bytes, end) == Some(Class::Digit) {
        end += 1;
    }
    if end < i + 3 {
        // A fourth-or-less character that is not an ASCII digit could still
        // be a number in another script.
        settled(bytes, end)
    } else {
        Some(end)
    }
}

/// `[^\s\p{L}\p{N}]+[tail]*` from `i` (at a punctuation byte).
fn punctuation(bytes: &[u8], i: usize, tail: &[u8]) -> Option<usize> {
    let end = settled(bytes, run(bytes, i, |c| c == Class::Other))?;
    let mut end = end;
    while bytes.get(end).is_some_and(|b| tail.contains(b)) {
        end += 1;
    }
    Some(end)
}

/// The o200k word from `i` (at a letter): upper-case letters then lower-case
/// ones (at least one of either), then a contraction if one follows.
fn cased_word(bytes: &[u8], i: usize) -> Option<usize> {
    let uppers = settled(bytes, run(bytes, i, |c| c == Class::Upper))?;
    let end = settled(bytes, run(bytes, uppers, |c| c == Class::Lower))?;
    // With no lower-case letter the second alternative matches the same
    // upper-case run; either way the word ends here.
    if end == i {
        return None;
    }
    if bytes.get(end) == Some(&b'\'') {
        return Some(end + contraction(bytes, end)?);
    }
    Some(end)
}

/// The length of the contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`,
/// `'d`, any case) at the apostrophe at `i`, 0 if there is none, `None` if
/// it depends on a non-ASCII character (`ſ` is an `s` without case).
fn contraction(bytes: &[u8], i: usize) -> Option<usize> {
    let ascii = |at: usize| match bytes.get(at) {
        Some(&b) if b >= 0x80 => None,
        other => Some(other.map(u8::to_ascii_lowercase)),
    };
    match ascii(i + 1)? {
        Some(b's' | b't' | b'm' | b'd') => Some(2),
        Some(first @ (b'r' | b'v' | b'l')) => {
            let second = if first == b'l' { b'l' } else { b'e' };
            Some(if ascii(i + 2)? == Some(second) { 3 } else { 0 })
        }
        _ => Some(0),
    }
}

/// The white-space alternatives from `i` (at white space):
/// `\s*[\r\n]+` (up to the last line break of the run), `\s+$`,
/// `\s+(?!\S)` (all but the last character of the run) and `\s+`.
fn whitespace(bytes: &[u8], i: usize) -> Option<usize> {
    let mut end = i;
    let mut last_break = None;
    while let Some(class) = class_at(bytes, end) {
        match class {
            Class::Newline => last_break = Some(end),
            Class::Space => {}
            _ => break,
        }
        end += 1;
    }
    let end = settled(bytes, end)?;
    Some(match last_break {
        Some(at) => at + 1,
        None if end == bytes.len() => end,
        None if end - i >= 2 => end - 1,
        None => end,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn both(text: &str) {
        for (pattern, tokenizer) in [
            (Pattern::Cl100k, bpe_openai::cl100k_base()),
            (Pattern::O200k, bpe_openai::o200k_base()),
        ] {
            let ours: Vec<&str> = Pieces::new(text, pattern, tokenizer).collect();
            let theirs: Vec<&str> = tokenizer.split(text).collect();
            assert_eq!(ours, theirs, "{pattern:?} on {text:?}");
        }
    }

    #[test]
    fn pieces_of_the_expression_on_chosen_text() {
        for text in [
            "",
            "a",
            " ",
            "  ",
            "hello world",
            "  hello",
            "\thello",
            "\n hello",
            " \n \n x",
            "trailing   ",
            "x \n",
            " 123 4567 89",
            "12345678",
            "don't I'LL we've they'RE 'sup 'llama ' s '",
            "'",
            "'r",
            "'re",
            "'l",
            "HTTPServer iPhone ABC's abc'S McDonald'S",
            "(hello ((hello)) !\n/ a/b //\n",
            "path/to/file.rs:12:3",
            "{\"a\": [1, 2, 3], \"b\": null}\r\n",
            "\x00\x01\x1f\x7f control",
            "\x0b\x0c vertical\x0btab",
            "café naïve résumé",
            "über Öl ÄRGER",
            "a\u{a0}b \u{a0} \u{3000}x",
            "emoji 🙂👍🏽 text",
            "x\u{301} combining",
            "'ſ 'K '\u{17f}t 'r\u{e9}",
            "²³ ٣٤٥ 12٣",
            "—dash— «quote»",
            "end with newline\n",
            "\r\n\r\n",
            "a\u{85}b",
        ] {
            both(text);
        }
    }

    fn texts() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "a", "Z", "hello", "World", "ABC", "iPhone", "0", "42", "1234", " ", "  ", "\t", "\n",
            "\r\n", "\n\n", "'", "'s", "'t", "'RE", "'ll", "'Ve", "'d", "'m", ".", ",", "!", "?",
            "(", ")", "/", "//", "-", "_", "\"", "{", "}", ":", "\x00", "\x0b", "\u{7f}", "é", "É",
            "ſ", "\u{a0}", "\u{3000}", "\u{85}", "🙂", "\u{301}", "²", "٣", "—", "中文", "ß",
        ]);
        prop::collection::vec(pieces, 0..24).prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        #[test]
        fn pieces_of_the_expression_on_generated_text(text in texts()) {
            both(&text);
        }
    }
}
