//! Head-and-tail cuts of long texts, with an explicit marker line.
//!
//! A cut keeps the beginning and the end of a text and puts one line in
//! place of the middle that says how many characters were removed and,
//! when the cut is of a message, the [recall handle](Handle) that brings
//! back what was cut (for a text longer than one part, the parts that
//! hold it, each one recall):
//!
//! ```text
//! first lines of the output
//! [... 18234 characters cut; recall r:5dfe0c1a2b#1-16 ...]
//! last lines of the output
//! ```
//!
//! Cutting is idempotent: a text already cut to a length is returned as it
//! is, byte for byte, and cutting it shorter merges into the one marker
//! (whose number then counts every character removed from the original,
//! and which keeps its handle).

use std::borrow::Cow;
use std::ops::Range;

use memory_core::recall::Handle;

const OPEN: &str = "[... ";
const CLOSE: &str = " characters cut ...]";
/// What a marker with a handle has between its count and [`END`].
const CUT_RECALL: &str = " characters cut; recall ";
const END: &str = " ...]";

/// A cut moves to a line break only within the last part (of this many)
/// of the head, or the first part of the tail. Why: whole lines read
/// better, and a quarter is the most a side gives up for one. Figure: none
/// recorded.
const SNAP_PARTS: usize = 4;

/// The marker line for `removed` characters (without its newlines).
///
/// ```
/// assert_eq!(memory_thrift::cut::marker(1234), "[... 1234 characters cut ...]");
/// ```
pub fn marker(removed: usize) -> String {
    format!("{OPEN}{removed}{CLOSE}")
}

/// The marker line for `removed` characters of the message with `handle`.
///
/// ```
/// use memory_core::{recall::Handle, Message};
/// let handle = Handle::of(&[Message::tool_result("c1", "...")]);
/// assert_eq!(
///     memory_thrift::cut::marker_with_handle(1234, handle),
///     format!("[... 1234 characters cut; recall {handle} ...]")
/// );
/// ```
pub fn marker_with_handle(removed: usize, handle: Handle) -> String {
    format!("{OPEN}{removed}{CUT_RECALL}{handle}{END}")
}

/// A text seen as the kept head, the marker's count and handle, and the
/// kept tail.
struct Parts<'t> {
    head: &'t str,
    removed: usize,
    handle: Option<Handle>,
    tail: &'t str,
}

/// Splits a cut text at its marker (the first line that is one).
fn parse(text: &str) -> Option<Parts<'_>> {
    // Looks for each `[` (a fast byte search), then for the newline before
    // it and the rest of the marker.
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(offset) = text[from..].find('[') {
        let open = from + offset;
        from = open + 1;
        if open == 0 || bytes[open - 1] != b'\n' || !text[open..].starts_with(OPEN) {
            continue;
        }
        let newline = open - 1;
        let digits_at = open + OPEN.len();
        let rest = &text[digits_at..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let Some((handle, after)) = marker_end(&rest[digits..]).filter(|_| digits > 0) else {
            continue;
        };
        let end = digits_at + digits + after;
        if text[end..].starts_with('\n')
            && let Ok(removed) = rest[..digits].parse()
        {
            return Some(Parts {
                head: &text[..newline],
                removed,
                handle,
                tail: &text[end + 1..],
            });
        }
    }
    None
}

/// After a marker's count: its handle, if it has one, and the length of
/// the rest of the marker; `None` when `rest` does not end a marker.
fn marker_end(rest: &str) -> Option<(Option<Handle>, usize)> {
    if rest.starts_with(CLOSE) {
        return Some((None, CLOSE.len()));
    }
    let named = rest.strip_prefix(CUT_RECALL)?;
    let line = &named[..named.find('\n').unwrap_or(named.len())];
    let at = line.find(END)?;
    let handle = Handle::parse(&line[..at]).ok()?;
    Some((Some(handle), CUT_RECALL.len() + at + END.len()))
}

/// Whether `text` carries a cut marker line.
///
/// ```
/// use memory_thrift::cut;
/// let long = "x".repeat(500);
/// assert!(cut::is_cut(&cut::cut_middle(&long, 100)));
/// assert!(!cut::is_cut(&long));
/// ```
pub fn is_cut(text: &str) -> bool {
    parse(text).is_some()
}

/// How many characters the markers of `text` say were removed (0 for a
/// text never cut).
///
/// ```
/// use memory_thrift::cut;
/// let text = "y".repeat(300);
/// assert_eq!(cut::removed(&cut::cut_middle(&text, 100)), 200);
/// ```
pub fn removed(text: &str) -> usize {
    parse(text).map_or(0, |p| p.removed)
}

/// How many characters `text` had before it was cut: its own, less the
/// marker line, plus those the marker says were removed.
///
/// ```
/// use memory_thrift::cut;
/// let text = "y".repeat(300);
/// assert_eq!(cut::original_len(&cut::cut_middle(&text, 100)), 300);
/// assert_eq!(cut::original_len("abc"), 3);
/// ```
pub fn original_len(text: &str) -> usize {
    match parse(text) {
        Some(p) => p.head.chars().count() + p.removed + p.tail.chars().count(),
        None => text.chars().count(),
    }
}

/// Keeps at most `keep` characters of `text`, about half from its start and
/// half from its end, with a marker line in place of the middle.
///
/// The head ends, and the tail starts, at a line break when there is one
/// near the cut. A text of at most `keep` characters, or one that the cut
/// would not make shorter, is returned as it is. A text already cut keeps
/// its marker: its head and tail are shortened further if they hold more
/// than `keep` characters together, and the marker's count grows by what
/// was removed. So cutting twice at the same `keep` changes nothing.
///
/// ```
/// use memory_thrift::cut::cut_middle;
///
/// let log: String = (1..=400).map(|i| format!("line {i}\n")).collect();
/// let short = cut_middle(&log, 200);
/// assert!(short.starts_with("line 1\n"));
/// assert!(short.ends_with("line 400\n"));
/// assert!(short.contains("characters cut ...]"));
/// assert_eq!(cut_middle(&short, 200), short); // idempotent
/// assert_eq!(cut_middle("short text", 200), "short text");
/// ```
pub fn cut_middle(text: &str, keep: usize) -> Cow<'_, str> {
    cut(text, keep, None)
}

/// [`cut_middle`] of the text of the message with `handle`, whose marker
/// names the handle (a text already cut keeps its marker's handle): for a
/// text longer than one [part](memory_core::recall::PART_CHARS), the
/// parts that hold what was cut, each one recall.
///
/// ```
/// use memory_core::{recall::Handle, Message};
/// use memory_thrift::cut::cut_middle_with_handle;
///
/// let log: String = (1..=400).map(|i| format!("line {i}\n")).collect();
/// let handle = Handle::of(&[Message::tool_result("c1", log.clone())]);
/// let short = cut_middle_with_handle(&log, 200, handle);
/// let named = Handle::all_in(&short);
/// assert_eq!(named, vec![handle.covering(100..log.len() - 100, log.len())]);
/// assert_eq!(named[0].parts(), Some((1, 3)));
/// assert_eq!(cut_middle_with_handle(&short, 200, handle), short); // idempotent
/// assert_eq!(memory_thrift::cut::original_len(&short), log.chars().count());
/// ```
pub fn cut_middle_with_handle(text: &str, keep: usize, handle: Handle) -> Cow<'_, str> {
    cut(text, keep, Some(handle))
}

fn cut(text: &str, keep: usize, handle: Option<Handle>) -> Cow<'_, str> {
    let (head, removed, handle, tail) = match parse(text) {
        Some(p) => (p.head, p.removed, p.handle, p.tail),
        None => {
            let len = text.chars().count();
            if len <= keep {
                return Cow::Borrowed(text);
            }
            // The whole text is both the head and the tail to choose from.
            let tail_keep = keep / 2;
            let head_keep = keep - tail_keep;
            let head = prefix(text, head_keep);
            let tail = suffix(text, tail_keep);
            let (head, tail) = snap(head, head_keep, tail, tail_keep, true, true);
            let start = head.chars().count();
            let cut = start..len - tail.chars().count();
            let out = join(head, cut, len, handle, tail);
            return if out.chars().count() < len {
                Cow::Owned(out)
            } else {
                Cow::Borrowed(text)
            };
        }
    };
    let (h, t) = (head.chars().count(), tail.chars().count());
    if h + t <= keep {
        return Cow::Borrowed(text);
    }
    let mut tail_keep = t.min(keep / 2);
    let head_keep = h.min(keep - tail_keep);
    tail_keep = t.min(keep - head_keep);
    let new_head = prefix(head, head_keep);
    let new_tail = suffix(tail, tail_keep);
    let (new_head, new_tail) = snap(
        new_head,
        head_keep,
        new_tail,
        tail_keep,
        head_keep < h,
        tail_keep < t,
    );
    let (nh, nt) = (new_head.chars().count(), new_tail.chars().count());
    let removed = removed + (h - nh) + (t - nt);
    let out = join(
        new_head,
        nh..nh + removed,
        nh + removed + nt,
        handle,
        new_tail,
    );
    if out.chars().count() < text.chars().count() {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// `head`, the marker line for the characters `cut` of an original of
/// `chars` characters (naming the parts of `handle` that hold them), and
/// `tail`.
fn join(head: &str, cut: Range<usize>, chars: usize, handle: Option<Handle>, tail: &str) -> String {
    let marker = match handle {
        // The parts of a long original that hold what is cut.
        Some(handle) => marker_with_handle(cut.len(), handle.covering(cut, chars)),
        None => marker(cut.len()),
    };
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len() + 2);
    out.push_str(head);
    out.push('\n');
    out.push_str(&marker);
    out.push('\n');
    out.push_str(tail);
    out
}

/// The first `n` characters.
fn prefix(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The last `n` characters.
fn suffix(text: &str, n: usize) -> &str {
    if n == 0 {
        return &text[text.len()..];
    }
    match text.char_indices().rev().nth(n - 1) {
        Some((at, _)) => &text[at..],
        None => text,
    }
}

/// Moves the head's end back to a line break in its last quarter, and the
/// tail's start forward past a line break in its first quarter, where the
/// side was shortened and such a break exists. Only ever shortens.
fn snap<'t>(
    head: &'t str,
    head_keep: usize,
    tail: &'t str,
    tail_keep: usize,
    snap_head: bool,
    snap_tail: bool,
) -> (&'t str, &'t str) {
    let head = if snap_head {
        match head.rfind('\n') {
            Some(at) if head[..at].chars().count() * SNAP_PARTS >= head_keep * (SNAP_PARTS - 1) => {
                &head[..at]
            }
            _ => head,
        }
    } else {
        head
    };
    let tail = if snap_tail {
        match tail.find('\n') {
            Some(at) if tail[..at].chars().count() * SNAP_PARTS < tail_keep => &tail[at + 1..],
            _ => tail,
        }
    } else {
        tail
    };
    (head, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_are_left_alone() {
        assert!(matches!(cut_middle("abc", 3), Cow::Borrowed("abc")));
        // Cutting 10 of 40 characters would not pay for the marker line.
        let text = "z".repeat(40);
        assert_eq!(cut_middle(&text, 30), text);
    }

    #[test]
    fn a_cut_keeps_head_and_tail_and_counts_what_it_removed() {
        let text: String = ('a'..='z').cycle().take(1000).collect();
        let out = cut_middle(&text, 100);
        let p = parse(&out).unwrap();
        assert_eq!(p.head.chars().count() + p.tail.chars().count(), 100);
        assert_eq!(p.removed, 900);
        assert!(text.starts_with(p.head) && text.ends_with(p.tail));
    }

    #[test]
    fn cutting_again_is_byte_identical_at_any_keep_at_least_the_first() {
        let text: String = (0..300)
            .map(|i| format!("row {i}: {}\n", "v".repeat(i % 17)))
            .collect();
        for keep in [0, 1, 7, 64, 500, 2000] {
            let once = cut_middle(&text, keep).into_owned();
            assert_eq!(cut_middle(&once, keep), once, "keep {keep}");
            assert_eq!(cut_middle(&once, keep + 50), once, "keep {keep}+50");
        }
    }

    #[test]
    fn cutting_shorter_merges_into_one_marker() {
        let text = "q".repeat(5000);
        let first = cut_middle(&text, 1000).into_owned();
        let second = cut_middle(&first, 100).into_owned();
        assert_eq!(second.matches("characters cut").count(), 1);
        assert_eq!(removed(&second), 4900);
        assert_eq!(second, cut_middle(&text, 100));
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let text = "記憶".repeat(400);
        let out = cut_middle(&text, 11);
        let p = parse(&out).unwrap();
        assert_eq!(p.head.chars().count() + p.tail.chars().count(), 11);
        assert_eq!(p.removed, 789);
    }

    #[test]
    fn line_breaks_near_the_cut_are_preferred() {
        let text: String = (0..100).map(|i| format!("{i:04} abcdefghij\n")).collect();
        let out = cut_middle(&text, 160);
        let p = parse(&out).unwrap();
        assert!(p.head.ends_with("abcdefghij"), "{:?}", p.head);
        assert!(
            p.tail.starts_with(|c: char| c.is_ascii_digit()),
            "{:?}",
            p.tail
        );
    }

    #[test]
    fn zero_keep_leaves_only_the_marker() {
        let text = "w".repeat(100);
        let out = cut_middle(&text, 0);
        assert_eq!(out, format!("\n{}\n", marker(100)));
    }
}
