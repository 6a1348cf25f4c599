//! What a shrunk message is: the one exception, besides summaries, to
//! "nothing is invented". A subtractive stage may show a message with some
//! of its content shed (its reasoning replaced by a placeholder, a long
//! output or text cut around a marker, a call's arguments cut inside their
//! strings); [`is_shrunk_from`] says whether a shown message is such a
//! form of the recorded one, and the [`audit`](crate::audit) holds every
//! stage to it.
//!
//! ```
//! use memory_core::{shrunk::is_shrunk_from, Message};
//! let output = Message::user(format!("head\n{}\ntail", "x".repeat(500)));
//! assert!(is_shrunk_from(&output, &Message::user("head\n[... 500 characters cut ...]\ntail")));
//! ```

use crate::counter::CharTokenCounter;
use crate::handle::Handle;
use crate::message::{ContentBlock, Message};

/// The longest a line put in place of a text's middle may be (see
/// [`is_shrunk_from`]).
const MAX_MARKER_CHARS: usize = 120;

/// Whether `shown` stands for all of `original` (the reasoning of
/// `message`): one bracketed marker line, at most [`MAX_MARKER_CHARS`],
/// shorter than it, that names `message`'s recall handle.
fn is_marker_for(message: &Message, original: &Option<String>, shown: &Option<String>) -> bool {
    let (Some(original), Some(shown)) = (original, shown) else {
        return false;
    };
    let own = Handle::of(std::slice::from_ref(message));
    is_marker_line(shown)
        && CharTokenCounter::estimate(shown) < CharTokenCounter::estimate(original)
        && Handle::all_in(shown).iter().any(|h| h.whole() == own)
}

/// Whether `line` may stand for what a stage removed: one line in
/// brackets, at most [`MAX_MARKER_CHARS`] bytes.
fn is_marker_line(line: &str) -> bool {
    line.starts_with('[')
        && line.ends_with(']')
        && !line.contains('\n')
        && line.len() <= MAX_MARKER_CHARS
}

/// Whether `shown` is `original` cut: a beginning of it, a marker line in
/// brackets (at most [`MAX_MARKER_CHARS`]) on a line of its own, and an end
/// of it, shorter than `original` and keeping some of it.
fn is_cut_from(original: &str, shown: &str) -> bool {
    is_cut_with(original, shown, "\n")
}

/// Whether `shown` is `original` cut, its lines broken by `line_break`:
/// `head`, `line_break`, a marker line, `line_break`, `tail`, where
/// `original` starts with `head` and ends with `tail`, `shown` is shorter
/// and keeps some of it.
fn is_cut_with(original: &str, shown: &str, line_break: &str) -> bool {
    if shown.len() >= original.len() {
        return false;
    }
    // `original` starts with the head, so the marker's line break stands
    // where `shown` still reads as `original` does: only that much of it
    // is searched (a message that is not the one cut differs at once).
    let common = original
        .bytes()
        .zip(shown.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let mut searched = (common + line_break.len()).min(shown.len());
    while !shown.is_char_boundary(searched) {
        searched += 1;
    }
    // Each line of `shown` that opens with `[` may be the marker.
    shown[..searched].match_indices(line_break).any(|(at, _)| {
        let rest = &shown[at + line_break.len()..];
        if !rest.starts_with('[') {
            return false;
        }
        let Some(end) = rest.find(line_break) else {
            return false;
        };
        let marker = &rest[..end];
        let (head, tail) = (&shown[..at], &rest[end + line_break.len()..]);
        is_marker_line(marker)
            && !(head.is_empty() && tail.is_empty())
            && head.len() + tail.len() < original.len()
            && original.starts_with(head)
            && original.ends_with(tail)
    })
}

/// Whether `shown` is `original` with some of its content shed, as a
/// subtractive stage may show it (the one exception, besides summaries, to
/// "nothing is invented"): the same message (same role, same tool call id
/// and name, same tool calls, same reply text, same text blocks) whose
/// reasoning was removed or replaced by a shorter bracketed marker line (at
/// most 120 characters: a placeholder naming the message's recall handle),
/// whose reply or a call's arguments were cut as the floor cut cuts them
/// (the arguments inside one of their strings, JSON still),
/// whose image or pass-through blocks were replaced by
/// text placeholders, whose tool result text was replaced by a shorter one
/// (cut with a truncation marker, or a placeholder), shorter as estimated by
/// [`CharTokenCounter`], or whose text blocks were cut (the same beginning
/// and end, a middle part replaced by a shorter bracketed marker, as a text-only
/// agent's long observation is cut). A message is shrunk from itself.
/// System messages (prompts, summaries) never are.
///
/// ```
/// use memory_core::{is_shrunk_from, Message, ToolCall};
/// let result = Message::tool_result("c1", "x".repeat(500));
/// assert!(is_shrunk_from(&result, &Message::tool_result("c1", "[500 characters omitted]")));
/// assert!(!is_shrunk_from(&result, &Message::tool_result("c2", "short")));
/// let thought = Message::Assistant {
///     content: "done".into(),
///     reasoning: Some("because".into()),
///     tool_calls: vec![ToolCall::new("c1", "ls", "{}")],
/// };
/// let plain = Message::assistant_with_tools("done", vec![ToolCall::new("c1", "ls", "{}")]);
/// assert!(is_shrunk_from(&thought, &plain));
/// assert!(!is_shrunk_from(&plain, &thought));
/// let with = |thought: String| Message::Assistant {
///     content: "done".into(),
///     reasoning: Some(thought),
///     tool_calls: vec![ToolCall::new("c1", "ls", "{}")],
/// };
/// let long = with("because ".repeat(20));
/// let handle = memory_core::recall::Handle::of(std::slice::from_ref(&long));
/// assert!(is_shrunk_from(&long, &with(format!("[omitted; recall {handle}]"))));
/// assert!(!is_shrunk_from(&long, &with("[omitted]".into()))); // names no handle
/// assert!(!is_shrunk_from(&thought, &with(format!("[omitted; recall {handle}]")))); // not shorter
/// let output = Message::user(format!("head\n{}\ntail", "x".repeat(500)));
/// assert!(is_shrunk_from(&output, &Message::user("head\n[... 500 characters cut ...]\ntail")));
/// assert!(!is_shrunk_from(&output, &Message::user("head\nsomething else entirely\nother tail")));
/// ```
pub fn is_shrunk_from(original: &Message, shown: &Message) -> bool {
    match (original, shown) {
        (Message::System(a), Message::System(b)) => a == b,
        (Message::User(a), Message::User(b)) => {
            a.len() == b.len()
                && a.iter().zip(b).all(|(x, y)| match (x, y) {
                    (ContentBlock::Text(x), ContentBlock::Text(y)) => x == y || is_cut_from(x, y),
                    (x, y) => x == y || matches!(y, ContentBlock::Text(_)),
                })
        }
        (
            Message::Assistant {
                content: c1,
                reasoning: r1,
                tool_calls: t1,
            },
            Message::Assistant {
                content: c2,
                reasoning: r2,
                tool_calls: t2,
            },
        ) => {
            (c1 == c2 || is_cut_from(c1, c2))
                && t1.len() == t2.len()
                && t1.iter().zip(t2).all(|(a, b)| {
                    a.id == b.id
                        && a.name == b.name
                        && (a.arguments == b.arguments
                            || is_arguments_cut_from(&a.arguments, &b.arguments))
                })
                && (r2.is_none() || r1 == r2 || is_marker_for(original, r1, r2))
        }
        (
            Message::ToolResult {
                tool_call_id: i1,
                content: c1,
                name: n1,
            },
            Message::ToolResult {
                tool_call_id: i2,
                content: c2,
                name: n2,
            },
        ) => {
            i1 == i2
                && n1 == n2
                && (c1 == c2 || CharTokenCounter::estimate(c2) < CharTokenCounter::estimate(c1))
        }
        _ => false,
    }
}

/// Whether `shown` may be what a stage showed of the recorded message
/// `handle` names (a handle of one message) without that message at hand:
/// the message itself, or a shrunk form of it whose marker line (a
/// placeholder for its reasoning or its output, the marker of a cut) names
/// it, whole or by parts, as the stages' markers name the message they
/// shrank. A shrunk message's own key is no recorded message's key.
pub(crate) fn shows_recorded(shown: &Message, handle: Handle) -> bool {
    if Handle::of(std::slice::from_ref(shown)) == handle {
        return true;
    }
    let names = |text: &str| {
        text.split('\n').any(|line| {
            is_marker_line(line) && Handle::all_in(line).iter().any(|h| h.whole() == handle)
        })
    };
    match shown {
        Message::System(_) => false,
        Message::User(blocks) => blocks
            .iter()
            .any(|block| matches!(block, ContentBlock::Text(text) if names(text))),
        Message::Assistant {
            content, reasoning, ..
        } => names(content) || reasoning.as_deref().is_some_and(names),
        Message::ToolResult { content, .. } => names(content),
    }
}

/// Whether `shown` is the JSON text `original` cut as the floor cut cuts a
/// call's arguments: a
/// beginning of it, a bracketed `marker` line written with escaped line
/// breaks, and an end of it; shorter, and JSON still when `original` is.
pub fn is_arguments_cut_from(original: &str, shown: &str) -> bool {
    is_cut_with(original, shown, "\\n") && (is_json(shown) || !is_json(original))
}

/// Whether `text` is JSON.
fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_cut_keeps_its_ends_and_says_so_in_brackets() {
        let original = format!("héad\n{}\ntäil", "é".repeat(300));
        let cut = "héad\n[... 600 characters cut ...]\ntäil";
        assert!(is_cut_from(&original, cut));
        assert!(!is_cut_from("éa", "è"));
        assert!(!is_cut_from(&original, "héad\nother words\ntäil"));
        assert!(!is_cut_from(&original, &original));
        let long_marker = format!("héad\n[{}]\ntäil", "x".repeat(MAX_MARKER_CHARS));
        assert!(!is_cut_from(&original, &long_marker));
        // A bracketed text of its own is not a cut of anything.
        assert!(!is_cut_from(&"x".repeat(200), "[ok] do something else"));
        assert!(!is_cut_from(&"x".repeat(200), "\n[ok]\n"));
        // Lines that open or close with brackets around the cut.
        let log: String = (0..40)
            .map(|i| format!("[INFO] test_{i} PASSED [{i:>3}%]\n"))
            .collect();
        let lines: Vec<&str> = log.lines().collect();
        let kept = format!(
            "{}\n\n[... 999 characters cut ...]\n{}\n",
            lines[..2].join("\n"),
            lines[38..].join("\n")
        );
        assert!(is_cut_from(&log, &kept));
        // A user message so cut is shrunk from the original.
        let shown = Message::user(cut);
        assert!(is_shrunk_from(&Message::user(original), &shown));
    }

    /// `is_cut_with` as it reads with every line break of `shown` tried.
    fn cut_with_every_break(original: &str, shown: &str, line_break: &str) -> bool {
        shown.len() < original.len()
            && shown.match_indices(line_break).any(|(at, _)| {
                let rest = &shown[at + line_break.len()..];
                let Some(end) = rest.find(line_break).filter(|_| rest.starts_with('[')) else {
                    return false;
                };
                let (head, tail) = (&shown[..at], &rest[end + line_break.len()..]);
                is_marker_line(&rest[..end])
                    && !(head.is_empty() && tail.is_empty())
                    && head.len() + tail.len() < original.len()
                    && original.starts_with(head)
                    && original.ends_with(tail)
            })
    }

    #[test]
    fn only_the_breaks_where_shown_still_reads_as_the_original_are_tried() {
        let pieces = [
            "héad",
            "\n",
            "\\n",
            "[cut]",
            "[... 9 characters cut ...]",
            "é",
            "e",
            "x",
            "täil",
            "[",
            "]",
        ];
        // Every text of up to five pieces, against every other: the same
        // answers as trying every line break.
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = texts
                .iter()
                .flat_map(|t| pieces.iter().map(move |p| format!("{t}{p}")))
                .collect();
            texts.extend(longer);
            texts.sort();
            texts.dedup();
            texts.truncate(3_000);
        }
        let originals: Vec<String> = texts
            .iter()
            .take(300)
            .map(|t| format!("{t}{}", "é".repeat(20)))
            .chain(
                texts
                    .iter()
                    .take(300)
                    .map(|t| format!("{t}\n{t}\nmore words here")),
            )
            .collect();
        let mut cuts = 0;
        for original in &originals {
            for shown in &texts {
                for line_break in ["\n", "\\n"] {
                    let want = cut_with_every_break(original, shown, line_break);
                    assert_eq!(
                        is_cut_with(original, shown, line_break),
                        want,
                        "{original:?} {shown:?}"
                    );
                    cuts += usize::from(want);
                }
            }
        }
        assert!(cuts > 0);
    }

    #[test]
    fn a_cut_that_breaks_the_json_is_not_a_cut() {
        let raw = serde_json::json!({"file_text": "x".repeat(300)}).to_string();
        let broken = format!("{}\\n[cut]\\nxx", &raw[..40]);
        assert!(!is_arguments_cut_from(&raw, &broken));
        let whole = format!("{}\\n[cut]\\n{}", &raw[..40], &raw[raw.len() - 10..]);
        assert!(is_arguments_cut_from(&raw, &whole));
        assert!(!is_arguments_cut_from(&raw, &raw));
    }
}
