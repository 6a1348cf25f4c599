//! Dates: a question that names a month finds the turns said in that
//! month.
//!
//! A chat whose sessions are dated carries the date as a **time marker**:
//! a short system message (at most [`MAX_MARKER_BYTES`] bytes, not a
//! summary) that names a month and a year ("Session 3: 1:56 pm on 8 May,
//! 2023"; a short system prompt that says the date dates the chat from its
//! start). Every message from a marker on is dated by it, up to the next
//! one. A question that names a month ("what did she do in January
//! 2022?", "on March 16, 2022", "in June") asks about the turns of that
//! month, whatever their words: each older unit said in a month the
//! question names (in the year it names, when it names one) gains
//! [`DATE_LIFT`] on its score, in the drop stage and in the test of
//! whether a new question reaches back. A unit is said in the month of
//! the marker before it and of each marker it holds (a session that opens
//! with the assistant's turn starts inside the round before it, which
//! then holds the session's marker). A chat without markers, or a
//! question naming no month, is scored as before (and the markers are
//! only looked for when the question names a month).
//!
//! The size of the lift matters little: on LoCoMo (sessions dated by
//! markers, units then dated only by the marker before them), lifts of
//! 0.15 and 0.5 gave evidence recall within 0.003 of 0.3's.

use std::ops::Range;

use memory_core::{Message, summary};

/// What a unit dated in a month the question names adds to its score
/// (which runs from 0 to 1). Why: a question about a month needs the
/// turns said then, whatever their words. Figure: LoCoMo evidence recall
/// for thrift 0.750 / 0.800 at 1,000 / 2,000 tokens with it, 0.734 / 0.789
/// undated; lifts of 0.15 and 0.5 gave within 0.003 of 0.3's.
pub(crate) const DATE_LIFT: f64 = 0.3;

/// A time marker is at most this many bytes long. Why: a dated session's
/// marker ("Session 3: 1:56 pm on 8 May, 2023") is about 35 bytes, a
/// system prompt that happens to name a date is longer. Figure: none
/// recorded.
const MAX_MARKER_BYTES: usize = 120;

/// The years a four-digit number beside a month is taken for. Why: "May
/// 2023" names a year, "May 4711" is a count or an id. Figure: none
/// needed (a bound, not a tuning).
const YEARS: std::ops::Range<u16> = 1900..2100;

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

/// The months' names, January first.
const NAMES: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Their short forms ("sept" too), May's being its name.
const SHORT: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// The month `word` names, and whether it is a whole name that names it
/// alone: every name but May's (a verb too), capitalized (lower-case
/// "march" and "august" are other words).
fn month_of(word: &str) -> Option<(u8, bool)> {
    let named = |names: &[&str]| {
        names
            .iter()
            .position(|name| word.eq_ignore_ascii_case(name))
            .and_then(|k| u8::try_from(k + 1).ok())
    };
    if let Some(month) = named(&NAMES) {
        let alone = month != 5 && word.starts_with(|c: char| c.is_ascii_uppercase());
        return Some((month, alone));
    }
    if word.eq_ignore_ascii_case("sept") {
        return Some((9, false));
    }
    named(&SHORT).map(|month| (month, false))
}

fn year_of(word: &str) -> Option<u16> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| YEARS.contains(y))
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

/// The months `text` names: a month's name or short form with a year or a
/// day beside it ("May 2023", "8 May", "March 16, 2022", "May of 2023"),
/// or a capitalized month name alone ("in January"; not May, a verb too).
pub(crate) fn months(text: &str) -> Vec<Month> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for (k, word) in words.iter().enumerate() {
        let Some((month, alone)) = month_of(word) else {
            continue;
        };
        let before = k.checked_sub(1).map(|j| words[j]);
        // After the name: a day, then "of", then the year, each optional.
        let mut rest = words[k + 1..].iter().copied().peekable();
        let day_after = rest.next_if(|w| is_day(w)).is_some();
        rest.next_if(|w| w.eq_ignore_ascii_case("of"));
        let year = rest.next().and_then(year_of);
        let day = day_after || before.is_some_and(is_day);
        if year.is_some() || day || alone {
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

/// Adds [`DATE_LIFT`] to the score of each of `units` (message ranges of
/// `messages`, ascending and apart; `scores` by unit) said in a month
/// `question` names: dated so by the latest time marker before its first
/// message, or holding such a marker (a session that opens with the
/// assistant's turn starts inside the round before it). Nothing is looked
/// at when the question names no month.
pub(crate) fn lift(
    scores: &mut [f64],
    question: &str,
    messages: &[Message],
    units: impl Iterator<Item = Range<usize>>,
) {
    let asked = months(question);
    if asked.is_empty() {
        return;
    }
    let matches = |m: Option<Month>| m.is_some_and(|d| asked.iter().any(|a| a.holds(d)));
    let mut current = None;
    let mut next = 0;
    for (score, unit) in scores.iter_mut().zip(units) {
        while next < unit.start.min(messages.len()) {
            current = marker(&messages[next]).or(current);
            next += 1;
        }
        let mut dated = matches(current);
        while next < unit.end.min(messages.len()) {
            let m = marker(&messages[next]);
            dated |= matches(m);
            current = m.or(current);
            next += 1;
        }
        if dated {
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
    fn months_are_named_with_a_year_a_day_or_alone_capitalized() {
        assert_eq!(
            months("What did she do on March 16, 2022?"),
            [m(Some(2022), 3)]
        );
        assert_eq!(months("1:56 pm on 8 May, 2023"), [m(Some(2023), 5)]);
        assert_eq!(
            months("in the beginning of November 2022"),
            [m(Some(2022), 11)]
        );
        assert_eq!(months("in May of 2023"), [m(Some(2023), 5)]);
        assert_eq!(months("by Sept 3"), [m(None, 9)]);
        // A capitalized name alone, short ones too; not May.
        assert_eq!(months("What happened in January?"), [m(None, 1)]);
        assert_eq!(
            months("Did she go camping in June or July?"),
            [m(None, 6), m(None, 7)]
        );
        assert_eq!(months("She may come on the 3rd"), []);
        assert_eq!(months("In May we rest"), []);
        assert_eq!(months("You may be right, in 2022"), []);
        // Lower-case "march" and "august" are other words.
        assert_eq!(months("they march on with august patience"), []);
        assert_eq!(
            months("May 2023 and june 5th"),
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
    fn units_are_dated_by_the_marker_before_them_or_one_they_hold() {
        let messages = [
            Message::system("You are a friend."),
            Message::system("1 May, 2023"),
            Message::user("a"),
            Message::assistant("b"),
            Message::system("9 June, 2023"),
            // June's session opens with the assistant, inside May's last
            // round.
            Message::assistant("c"),
            Message::user("d"),
            Message::system("2 July, 2024"),
            Message::user("e"),
        ];
        let units = || [0..1, 2..6, 6..7, 8..9].into_iter();
        let lifted = |question: &str| {
            let mut scores = vec![0.1, 0.0, 0.9, 0.2];
            lift(&mut scores, question, &messages, units());
            scores
        };
        let l = DATE_LIFT;
        assert_eq!(lifted("in June 2023"), [0.1, l, 1.0, 0.2]);
        assert_eq!(lifted("on May 3"), [0.1, l, 0.9, 0.2]);
        assert_eq!(lifted("in July 2023"), [0.1, 0.0, 0.9, 0.2]);
        assert_eq!(lifted("in July 2024"), [0.1, 0.0, 0.9, 0.2 + l]);
        assert_eq!(lifted("in 2023"), [0.1, 0.0, 0.9, 0.2]);
    }
}
