//! Dates: a question that names a month finds the turns said in that
//! month.
//!
//! A chat whose sessions are dated carries the date as a **time marker**:
//! a short system message (at most [`MAX_MARKER_BYTES`] bytes, not a
//! summary) that names a month and a year ("Session 3: 1:56 pm on 8 May,
//! 2023"; a short system prompt that says the date dates the chat from its
//! start). Every message from a marker on is dated by it, up to the next
//! one. A question that names a month ("what did she do in January
//! 2022?", "on March 16, 2022") asks about the turns of that month,
//! whatever their words: each older unit that starts in a month the
//! question names (in the year it names, when it names one) gains
//! [`DATE_LIFT`] on its score, in the drop stage and in the test of
//! whether a new question reaches back. A chat without markers, or a
//! question naming no month, is scored as before (and the markers are
//! only looked for when the question names a month).
//!
//! Measured on LoCoMo (sessions dated by markers): a lift of 0.15, 0.3 or
//! 0.5 gives evidence recall within 0.003 of each other.

use memory_core::{Message, summary};

/// What a unit dated in a month the question names adds to its score
/// (which runs from 0 to 1).
pub(crate) const DATE_LIFT: f64 = 0.3;

/// A time marker is at most this many bytes long.
const MAX_MARKER_BYTES: usize = 120;

/// A month, and its year when one is named beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Month {
    pub year: Option<u16>,
    pub month: u8,
}

impl Month {
    /// Whether a unit dated `dated` lies in this month (in its year, when
    /// it has one).
    fn holds(self, dated: Month) -> bool {
        self.month == dated.month && self.year.is_none_or(|y| dated.year == Some(y))
    }
}

const MONTHS: [(&str, u8); 23] = [
    ("january", 1),
    ("jan", 1),
    ("february", 2),
    ("feb", 2),
    ("march", 3),
    ("mar", 3),
    ("april", 4),
    ("apr", 4),
    ("may", 5),
    ("june", 6),
    ("jun", 6),
    ("july", 7),
    ("jul", 7),
    ("august", 8),
    ("aug", 8),
    ("september", 9),
    ("sep", 9),
    ("sept", 9),
    ("october", 10),
    ("oct", 10),
    ("november", 11),
    ("nov", 11),
    ("december", 12),
];

fn month_of(word: &str) -> Option<u8> {
    if word.eq_ignore_ascii_case("dec") {
        return Some(12);
    }
    MONTHS
        .iter()
        .find(|(name, _)| word.eq_ignore_ascii_case(name))
        .map(|&(_, m)| m)
}

fn year_of(word: &str) -> Option<u16> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| (1900..2100).contains(y))
}

fn is_day(word: &str) -> bool {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    !digits.is_empty()
        && digits.len() <= 2
        && digits.bytes().all(|b| b.is_ascii_digit())
        && matches!(suffix, "" | "st" | "nd" | "rd" | "th")
        && digits.parse::<u8>().is_ok_and(|d| (1..=31).contains(&d))
}

/// The months `text` names: a month's name with a year or a day beside it
/// ("May 2023", "8 May", "March 16, 2022"), or a long month name alone
/// ("in January"). "May" alone is a verb, not a month.
pub(crate) fn months(text: &str) -> Vec<Month> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for (k, word) in words.iter().enumerate() {
        let Some(month) = month_of(word) else {
            continue;
        };
        let before = k.checked_sub(1).map(|j| words[j]);
        let after: Vec<&str> = words[k + 1..].iter().take(2).copied().collect();
        let year = after
            .iter()
            .take(if after.first().is_some_and(|w| is_day(w)) {
                2
            } else {
                1
            })
            .find_map(|w| year_of(w));
        let day = before.is_some_and(is_day) || after.first().is_some_and(|w| is_day(w));
        let long = word.len() > 4;
        if year.is_some() || day || long {
            let found = Month { year, month };
            if !out.contains(&found) {
                out.push(found);
            }
        }
    }
    out
}

/// The month `message` dates the messages after it in, when it is a time
/// marker: a short system message, not a summary, naming a month with its
/// year.
pub(crate) fn marker(message: &Message) -> Option<Month> {
    let Message::System(text) = message else {
        return None;
    };
    if text.len() > MAX_MARKER_BYTES || summary::is_summary(message) {
        return None;
    }
    months(text).into_iter().find(|m| m.year.is_some())
}

/// For each of the positions `starts` (ascending), the month of the
/// latest time marker of `messages` before it.
pub(crate) fn dated(
    messages: &[Message],
    starts: impl Iterator<Item = usize>,
) -> Vec<Option<Month>> {
    let mut out = Vec::new();
    let mut current = None;
    let mut next = 0;
    for start in starts {
        while next < start.min(messages.len()) {
            if let Some(m) = marker(&messages[next]) {
                current = Some(m);
            }
            next += 1;
        }
        out.push(current);
    }
    out
}

/// Adds [`DATE_LIFT`] to the score of each unit dated in a month the
/// question names; `dates` are the units' months, by unit.
pub(crate) fn lift(scores: &mut [f64], asked: &[Month], dates: &[Option<Month>]) {
    if asked.is_empty() {
        return;
    }
    for (score, date) in scores.iter_mut().zip(dates) {
        if date.is_some_and(|d| asked.iter().any(|a| a.holds(d))) {
            *score = (*score + DATE_LIFT).min(1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(year: Option<u16>, month: u8) -> Month {
        Month { year, month }
    }

    #[test]
    fn months_are_named_with_a_year_a_day_or_their_long_name() {
        assert_eq!(
            months("What did she do on March 16, 2022?"),
            [m(Some(2022), 3)]
        );
        assert_eq!(months("1:56 pm on 8 May, 2023"), [m(Some(2023), 5)]);
        assert_eq!(
            months("in the beginning of November 2022"),
            [m(Some(2022), 11)]
        );
        assert_eq!(months("What happened in January?"), [m(None, 1)]);
        assert_eq!(months("She may come on the 3rd"), []);
        assert_eq!(months("You may be right, in 2022"), []);
        assert_eq!(
            months("May 2023 and June 5th"),
            [m(Some(2023), 5), m(None, 6)]
        );
    }

    #[test]
    fn markers_are_short_system_messages_with_a_year() {
        assert_eq!(
            marker(&Message::system("7:11 pm on 17 March, 2022")),
            Some(m(Some(2022), 3))
        );
        assert_eq!(marker(&Message::user("17 March, 2022")), None);
        assert_eq!(marker(&Message::system("Meet in March")), None);
        assert_eq!(
            marker(&Message::system(format!(
                "{} 17 March, 2022",
                "x".repeat(200)
            ))),
            None
        );
    }

    #[test]
    fn units_are_dated_by_the_marker_before_them() {
        let messages = [
            Message::system("You are a friend."),
            Message::system("1 May, 2023"),
            Message::user("a"),
            Message::assistant("b"),
            Message::system("9 June, 2023"),
            Message::user("c"),
        ];
        let d = dated(&messages, [0, 2, 5].into_iter());
        assert_eq!(d, [None, Some(m(Some(2023), 5)), Some(m(Some(2023), 6))]);
        let mut scores = vec![0.1, 0.0, 0.9];
        lift(&mut scores, &months("in June 2023"), &d);
        assert_eq!(scores, [0.1, 0.0, 1.0]);
        // A month without a year: that month of any year.
        lift(&mut scores, &months("what happened on May 3?"), &d);
        assert_eq!(scores, [0.1, DATE_LIFT, 1.0]);
    }
}
