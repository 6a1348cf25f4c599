//! Cutting a tool call's arguments and keeping them JSON: the middle of
//! the arguments is replaced by a marker written inside a string (its line
//! breaks escaped), the cut starting inside one string value and ending
//! inside the same or a later one, so that the call stays one a provider
//! accepts and the cut reads as a cut anywhere a text cut does.

use std::ops::Range;

/// The string literals of the JSON text `raw`: the byte range of each
/// one's inside (between its quotes, as written, escapes and all) and
/// whether it is a value rather than a key; `None` when its quotes do not
/// pair.
fn strings(raw: &str) -> Option<Vec<(Range<usize>, bool)>> {
    let mut out = Vec::new();
    let mut bytes = raw.bytes().enumerate();
    while let Some((at, b)) = bytes.next() {
        if b != b'"' {
            continue;
        }
        let end = loop {
            match bytes.next()? {
                (_, b'\\') => {
                    bytes.next()?;
                }
                (end, b'"') => break end,
                _ => {}
            }
        };
        let key = raw[end + 1..].trim_start().starts_with(':');
        out.push((at + 1..end, !key));
    }
    Some(out)
}

/// Whether the JSON text `raw` holds a string value a cut may fall in.
pub(super) fn has_values(raw: &str) -> bool {
    strings(raw).is_some_and(|s| s.iter().any(|(inside, value)| *value && !inside.is_empty()))
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

/// `raw` with its middle replaced by `\n[marker]\n` written as JSON
/// escapes: about `keep` characters kept, two thirds from the head and a
/// third from the tail, the cut starting and ending inside string values
/// (never within an escape), the marker made by `marker(cut characters of
/// raw)`. Where a cut across values would not be JSON (values at
/// different depths), the cut stays inside the longest value. `None` when
/// the cut would not be shorter.
pub(super) fn cut(
    raw: &str,
    keep: usize,
    marker: impl Fn(Range<usize>) -> String,
) -> Option<String> {
    let values: Vec<Range<usize>> = strings(raw)?
        .into_iter()
        .filter_map(|(inside, value)| value.then_some(inside))
        .collect();
    let across = cut_between(raw, &points(raw, &values), keep, &marker)?;
    if is_json(&across) || !is_json(raw) {
        return Some(across);
    }
    let longest = values
        .into_iter()
        .max_by_key(|v| (v.len(), std::cmp::Reverse(v.start)))?;
    cut_between(raw, &points(raw, &[longest]), keep, &marker)
}

/// Whether `text` is JSON.
fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok()
}

/// The points a cut may start or end at inside the `values` of `raw`: each
/// a byte offset and the characters before it.
fn points(raw: &str, values: &[Range<usize>]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut chars = 0;
    let mut counted = 0;
    for value in values {
        for at in cut_points(&raw[value.clone()]) {
            let byte = value.start + at;
            chars += raw[counted..byte].chars().count();
            counted = byte;
            out.push((byte, chars));
        }
    }
    out
}

/// `raw` cut from one of `points` to a later one: the last that keeps at
/// most two thirds of `keep` characters before it, the first that keeps
/// at most the rest after it; `None` when those are the same or cross, or
/// the marker is longer than what it stands for.
fn cut_between(
    raw: &str,
    points: &[(usize, usize)],
    keep: usize,
    marker: &impl Fn(Range<usize>) -> String,
) -> Option<String> {
    let total = raw.chars().count();
    let head = keep * 2 / 3;
    let tail = keep - head;
    let from = points.iter().rposition(|&(_, c)| c <= head).unwrap_or(0);
    let to = points
        .iter()
        .position(|&(_, c)| total - c <= tail)
        .unwrap_or(points.len().checked_sub(1)?);
    if from >= to {
        return None;
    }
    let ((start, first), (end, last)) = (points[from], points[to]);
    let cut = format!(
        "{}\\n[{}]\\n{}",
        &raw[..start],
        marker(first..last),
        &raw[end..]
    );
    (cut.len() < raw.len()).then_some(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(span: Range<usize>) -> String {
        format!("{} characters cut", span.len())
    }

    #[test]
    fn strings_are_found_past_escaped_quotes_and_keys_told_from_values() {
        let raw = r#"{"path": "a.py", "file_text": "say \"hi\"\nbye"}"#;
        let found = strings(raw).unwrap();
        let texts: Vec<(&str, bool)> = found.iter().map(|(r, v)| (&raw[r.clone()], *v)).collect();
        assert_eq!(
            texts,
            [
                ("path", false),
                ("a.py", true),
                ("file_text", false),
                (r#"say \"hi\"\nbye"#, true)
            ]
        );
        assert!(has_values(raw));
        assert!(!has_values("{}"));
        assert_eq!(strings(r#"{"open"#), None);
    }

    #[test]
    fn a_cut_never_splits_an_escape_and_stays_json() {
        let text = "é\"\\\n".repeat(200);
        let raw = serde_json::json!({"path": "a.py", "file_text": text}).to_string();
        for keep in [0, 1, 2, 3, 10, 99, 400] {
            let shown = cut(&raw, keep, counted).unwrap();
            let value: serde_json::Value = serde_json::from_str(&shown).expect("still JSON");
            assert!(shown.chars().count() < raw.chars().count());
            assert!(
                memory_core::shrunk::is_arguments_cut_from(&raw, &shown),
                "{shown}"
            );
            // However little is kept, the cut starts and ends in a value.
            let shown = value.as_object().unwrap();
            assert!(
                shown
                    .values()
                    .any(|v| v.as_str().is_some_and(|s| s.contains("characters cut]\n")))
            );
        }
        assert!(cut(&raw, 10_000, counted).is_none());
    }

    #[test]
    fn a_cut_may_run_from_one_value_into_a_later_one() {
        let old = "a".repeat(1_000);
        let new = "b".repeat(800);
        let raw = format!(r#"{{"old_str": "{old}", "new_str": "{new}"}}"#);
        let across = cut(&raw, 60, counted).unwrap();
        let value: serde_json::Value = serde_json::from_str(&across).unwrap();
        // The head of the first value, the tail of the last, one marker.
        let shown = value["old_str"].as_str().unwrap();
        assert!(
            shown.starts_with("aaa") && shown.ends_with("bbb"),
            "{shown}"
        );
        assert!(value.get("new_str").is_none());
        assert!(across.len() < 120, "{across}");
        // Values at different depths: a cut across them would not be JSON,
        // so it stays in the longest.
        let raw = format!(
            r#"{{"a": ["{}"], "b": "{}"}}"#,
            "x".repeat(500),
            "y".repeat(900)
        );
        let inside = cut(&raw, 40, counted).unwrap();
        let value: serde_json::Value = serde_json::from_str(&inside).expect("JSON");
        assert_eq!(value["a"][0], "x".repeat(500));
        assert!(value["b"].as_str().unwrap().contains("characters cut]"));
    }
}
