//! Answer words: whether a gold answer's content words are all in a
//! context.
//!
//! Text is split into *words* at every character that is not a letter or a
//! digit, and lowercased, so `Sweden.` and `sweden` are one word and
//! `7 May 2023` is the three words `7`, `may` and `2023`. An answer's
//! *content words* are its distinct words less [`STOP_WORDS`]. A context's
//! words are taken from every message's text, summaries included, with the
//! same split. An answer is *recalled* when every one of its content words
//! is among the context's words; an answer with no content word left (all
//! stop words, or empty) is not judged at all.

use std::collections::HashSet;
use std::sync::LazyLock;

use memory_core::Message;

/// Words that carry no answer on their own, separated by white space:
/// articles, pronouns and determiners, auxiliary verbs, the commonest
/// prepositions and conjunctions, and the pieces contractions leave (`'s`,
/// `n't`, `'m`).
///
/// `may` is deliberately not among them (it is a month: `7 May 2023` needs
/// it), nor are negations (`not`, `no`), numbers or words that place
/// things in time (`before`, `after`).
///
/// ```
/// use memory_cli::eval::answer::STOP_WORDS;
/// assert!(STOP_WORDS.split_whitespace().any(|w| w == "the"));
/// assert!(!STOP_WORDS.split_whitespace().any(|w| w == "may"));
/// ```
pub const STOP_WORDS: &str = "
    a an the
    i me my mine myself you your yours yourself he him his himself she her hers herself
    it its itself we us our ours ourselves they them their theirs themselves
    this that these those who whom whose which what
    am is are was were be been being do does did have has had having
    will would shall should can could might must
    of in on at to for from by with about into onto as
    and or but nor so if than
    s t m d ll re ve
";

/// Whether `word` (lowercase) is one of the [`STOP_WORDS`].
///
/// ```
/// use memory_cli::eval::answer::is_stop_word;
/// assert!(is_stop_word("was") && is_stop_word("s"));
/// assert!(!is_stop_word("may") && !is_stop_word("2023") && !is_stop_word("The"));
/// ```
pub fn is_stop_word(word: &str) -> bool {
    static SET: LazyLock<HashSet<&str>> = LazyLock::new(|| STOP_WORDS.split_whitespace().collect());
    SET.contains(word)
}

/// The words of `text`, in order: split at every character that is not a
/// letter or a digit, lowercased.
///
/// ```
/// use memory_cli::eval::answer::words;
/// let all: Vec<String> = words("Tomas's bike, 7 May 2023!").collect();
/// assert_eq!(all, ["tomas", "s", "bike", "7", "may", "2023"]);
/// ```
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    memory_text::lowercase_words(text, 1)
}

/// The distinct content words of `answer`, in order of first appearance:
/// its [`words`] less [`STOP_WORDS`].
///
/// ```
/// use memory_cli::eval::answer::content_words;
/// assert_eq!(content_words("A lemon tree, the lemon tree"), ["lemon", "tree"]);
/// assert_eq!(content_words("2022"), ["2022"]);
/// assert!(content_words("It was her.").is_empty());
/// ```
pub fn content_words(answer: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    words(answer)
        .filter(|w| !is_stop_word(w))
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// How much of one answer a context holds.
///
/// ```
/// use memory_core::Message;
/// use memory_cli::eval::answer::AnswerMatch;
/// let context = [Message::user("We met on 7 May 2023 in Lund.")];
/// let m = AnswerMatch::of("7 May, 2023", &context);
/// assert_eq!((m.words, m.found, m.recalled()), (3, 3, Some(true)));
/// assert_eq!(AnswerMatch::of("8 May 2023", &context).recalled(), Some(false));
/// assert_eq!(AnswerMatch::of("the", &context).recalled(), None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnswerMatch {
    /// The answer's distinct content words.
    pub words: usize,
    /// Of those, the ones among the context's words.
    pub found: usize,
}

impl AnswerMatch {
    /// Matches `answer`'s content words against the words of every
    /// message of `context` (summaries included). Only the answer's words
    /// are looked for: the context's are read, not collected.
    ///
    /// ```
    /// use memory_core::{summary, Message};
    /// use memory_cli::eval::answer::AnswerMatch;
    /// let context = [summary::message("A black dog."), Message::user("a cat")];
    /// assert_eq!(AnswerMatch::of("a black cat", &context).found, 2);
    /// assert_eq!(AnswerMatch::of("Black", &context[1..]).found, 0);
    /// ```
    pub fn of(answer: &str, context: &[Message]) -> Self {
        let words = content_words(answer);
        let mut found = vec![false; words.len()];
        let mut left = words.len();
        for message in context {
            if left == 0 {
                break;
            }
            // The same words as `words` gives, lowercase.
            memory_text::for_each_lowercase_word(&message.text(), 1, |word| {
                if let Some(k) = words.iter().position(|w| w == word)
                    && !found[k]
                {
                    found[k] = true;
                    left -= 1;
                }
            });
        }
        Self {
            words: words.len(),
            found: words.len() - left,
        }
    }

    /// Whether every content word was found; `None` when the answer has no
    /// content word to look for (such an answer is not judged).
    ///
    /// ```
    /// use memory_cli::eval::answer::AnswerMatch;
    /// assert_eq!(AnswerMatch { words: 2, found: 1 }.recalled(), Some(false));
    /// assert_eq!(AnswerMatch::default().recalled(), None);
    /// ```
    pub fn recalled(&self) -> Option<bool> {
        (self.words > 0).then_some(self.found == self.words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::summary;

    fn recalled(answer: &str, context: &[Message]) -> Option<bool> {
        AnswerMatch::of(answer, context).recalled()
    }

    #[test]
    fn an_answer_found_only_inside_a_summary_counts() {
        let context = [
            summary::message("Caroline moved from Sweden four years ago."),
            Message::user("How is the new job going?"),
        ];
        assert_eq!(recalled("Sweden", &context), Some(true));
        assert_eq!(recalled("Sweden", &context[1..]), Some(false));
    }

    #[test]
    fn punctuation_and_case_are_ignored() {
        let context = [Message::assistant("I'm off to SWEDEN... on 7-May-2023!")];
        assert_eq!(recalled("Sweden", &context), Some(true));
        assert_eq!(recalled("sweden.", &context), Some(true));
        assert_eq!(recalled("7 May 2023", &context), Some(true));
        assert_eq!(recalled("May 7, 2023", &context), Some(true));
    }

    #[test]
    fn a_missing_word_fails_and_is_counted() {
        let context = [Message::user("We hiked the Alps in June 2022.")];
        let m = AnswerMatch::of("the Alps in July 2022", &context);
        assert_eq!((m.words, m.found, m.recalled()), (3, 2, Some(false)));
        // A word is whole: `2022` does not match `20222` nor `202`.
        assert_eq!(
            recalled("202", &[Message::user("year 2022 and 20222")]),
            Some(false)
        );
    }

    #[test]
    fn stop_words_and_possessives_are_not_looked_for() {
        assert_eq!(content_words("Tomas's neighbour"), ["tomas", "neighbour"]);
        assert_eq!(
            content_words("She doesn't like it"),
            ["doesn", "like"],
            "`doesn` is what `doesn't` leaves; only the `t` is dropped"
        );
        assert_eq!(content_words("not in May"), ["not", "may"]);
        assert_eq!(recalled("It is", &[Message::user("it is")]), None);
        assert_eq!(recalled("", &[]), None);
    }

    #[test]
    fn numbers_keep_their_digits() {
        assert_eq!(
            content_words("1,000 km in 3.5 days"),
            ["1", "000", "km", "3", "5", "days"]
        );
        let context = [Message::user("It took 3.5 days to ride 1,000 km.")];
        assert_eq!(recalled("1,000 km in 3.5 days", &context), Some(true));
    }
}
