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
