//! Cutting a tool call's arguments and keeping them JSON: the middle of
//! their longest string value is replaced by a marker written inside that
//! string (its line breaks escaped), so that the call stays one a provider
//! accepts and the cut reads as a cut anywhere a text cut does.

use std::ops::Range;

/// The byte range of the inside of the longest string in the JSON text
/// `raw` (between its quotes, as written, escapes and all); `None` when it
/// holds no string, or its quotes do not pair.
pub(super) fn longest_string(raw: &str) -> Option<Range<usize>> {
    let mut best: Option<Range<usize>> = None;
    let mut bytes = raw.bytes().enumerate();
    while let Some((at, b)) = bytes.next() {
        if b != b'"' {
            continue;
        }
        let start = at + 1;
        let end = loop {
            match bytes.next()? {
                (_, b'\\') => {
                    bytes.next()?;
                }
                (end, b'"') => break end,
                _ => {}
            }
        };
        if best.as_ref().is_none_or(|b| end - start > b.len()) {
            best = Some(start..end);
        }
    }
    best
}

/// The byte offsets inside `inside` (a JSON string's inside, as written)
/// where a cut may fall: every character boundary but those within an
/// escape (`\n`, `\"`, `\u00e9`), the end included.
fn cut_points(inside: &str) -> Vec<usize> {
    let mut points = Vec::with_capacity(inside.len() + 1);
    let mut chars = inside.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        points.push(at);
        if c == '\\' {
            let escaped = chars.next().map(|(_, e)| e);
            if escaped == Some('u') {
                for _ in 0..4 {
                    chars.next();
                }
            }
        }
    }
    points.push(inside.len());
    points
}

/// `raw` with the middle of its string `inside` (a byte range of `raw`)
/// replaced by `\n[marker]\n` written as JSON escapes: about `keep`
/// characters of that string kept, two thirds from its head and a third
/// from its tail, the marker made by `marker(cut characters of raw)`;
/// `None` when nothing would be cut.
pub(super) fn cut_inside(
    raw: &str,
    inside: Range<usize>,
    keep: usize,
    marker: impl Fn(Range<usize>) -> String,
) -> Option<String> {
    let points = cut_points(&raw[inside.clone()]);
    // Points are at most one a character, so indexing them by kept
    // characters keeps at most that many.
    let head = keep * 2 / 3;
    let tail = keep - head;
    let last = points.len() - 1;
    if head + tail >= last {
        return None;
    }
    let head_end = inside.start + points[head];
    let tail_start = inside.start + points[last - tail];
    let chars_before = raw[..head_end].chars().count();
    let cut = chars_before..chars_before + raw[head_end..tail_start].chars().count();
    Some(format!(
        "{}\\n[{}]\\n{}",
        &raw[..head_end],
        marker(cut),
        &raw[tail_start..]
    ))
}

/// Whether `shown` is the JSON text `original` cut by [`cut_inside`]: a
/// beginning of it, a bracketed `marker` line written with escaped line
/// breaks, and an end of it; shorter, and JSON still when `original` is.
pub(crate) fn is_cut_from(
    original: &str,
    shown: &str,
    is_marker_line: impl Fn(&str) -> bool,
) -> bool {
    if shown.len() >= original.len() {
        return false;
    }
    let parses = |text: &str| serde_json::from_str::<serde_json::Value>(text).is_ok();
    shown.match_indices("\\n[").any(|(at, _)| {
        let rest = &shown[at + 2..];
        let Some(end) = rest.find("]\\n") else {
            return false;
        };
        let marker = &rest[..=end];
        let (head, tail) = (&shown[..at], &rest[end + 3..]);
        is_marker_line(marker)
            && original.starts_with(head)
            && original.ends_with(tail)
            && head.len() + tail.len() < original.len()
            && (parses(shown) || !parses(original))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_string_is_found_past_escaped_quotes() {
        let raw = r#"{"path": "a.py", "file_text": "say \"hi\"\nbye"}"#;
        let inside = longest_string(raw).unwrap();
        assert_eq!(&raw[inside], r#"say \"hi\"\nbye"#);
        assert_eq!(longest_string("{}"), None);
        assert_eq!(longest_string(r#"{"open"#), None);
    }

    #[test]
    fn a_cut_never_splits_an_escape_and_stays_json() {
        let text = "é\"\\\n".repeat(200);
        let raw = serde_json::json!({"path": "a.py", "file_text": text}).to_string();
        let inside = longest_string(&raw).unwrap();
        for keep in [0, 1, 2, 3, 10, 99] {
            let cut = cut_inside(&raw, inside.clone(), keep, |span| {
                format!("{} characters cut", span.len())
            })
            .unwrap();
            let value: serde_json::Value = serde_json::from_str(&cut).expect("still JSON");
            let shown = value["file_text"].as_str().unwrap();
            assert!(shown.contains("characters cut]\n"), "{shown}");
            assert!(text.starts_with(shown.split("\n[").next().unwrap()));
            assert!(is_cut_from(&raw, &cut, |m| m.ends_with("cut]")), "{cut}");
        }
        assert!(cut_inside(&raw, inside.clone(), 10_000, |_| String::new()).is_none());
    }

    #[test]
    fn a_cut_that_breaks_the_json_is_not_a_cut() {
        let raw = serde_json::json!({"file_text": "x".repeat(300)}).to_string();
        let broken = format!("{}\\n[cut]\\nxx", &raw[..40]);
        assert!(!is_cut_from(&raw, &broken, |_| true));
        let whole = format!("{}\\n[cut]\\n{}", &raw[..40], &raw[raw.len() - 10..]);
        assert!(is_cut_from(&raw, &whole, |_| true));
        assert!(!is_cut_from(&raw, &raw, |_| true));
    }
}
