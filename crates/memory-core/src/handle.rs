//! [`Handle`]: the name of a stretch of a session's history, or of parts
//! of one message's text, that a recall brings back.
//!
//! A handle names a stretch by the identity of its first message
//! ([`message_key`]) and its length: `r:1a2b3c4d5e` for one message,
//! `r:1a2b3c4d5e+12` for twelve, `r:1a2b3c4d5e..5e4d3c2b1a` for the
//! messages from the first through the last named (a summary's originals:
//! [`Handle::through`]); `r:1a2b3c4d5e#3` for the third [`PART_CHARS`]
//! characters of a long message's text ([`part_text`]), `r:1a2b3c4d5e#2-9`
//! for its parts 2 to 9. It depends on nothing but the messages, so it is
//! the same in every call and every process, and it resolves against any
//! copy of the session's history ([`Handle::find`]); a handle of another
//! session's message is found nowhere in this one.
//!
//! ```
//! use memory_core::{recall::Handle, Message};
//! let history = [Message::user("a"), Message::assistant("b")];
//! let h = Handle::of(&history);
//! assert_eq!(Handle::parse(&h.to_string()).unwrap().find(&history), Some(0..2));
//! ```

use std::fmt;
use std::ops::Range;

use crate::error::MemoryError;
use crate::identity::message_key;
use crate::message::{Message, ToolCall};

/// Bits of a handle's key: 48, so that two messages of one session share
/// a key with odds of about one in ten billion for a session of 2,000
/// messages.
const KEY_BITS: u32 = 48;

/// Characters of a handle's key: its [`KEY_BITS`] in base 32 (`0-9a-v`,
/// five bits a character), ten characters where hexadecimal took twelve:
/// a handle costs a model half a token less, and an index names more
/// pieces in the same room. Figure (chars counter, Thrift on LoCoMo at
/// 2,000 tokens): reachable evidence recall 0.927 -> 0.951, 23.8 -> 28.5
/// handles a question.
const KEY_DIGITS: usize = 10;

/// Characters of a key as handles were written before (hexadecimal), still
/// read: a store keeps the summaries and cut markers that name them.
const HEX_KEY_DIGITS: usize = 12;

/// A stretch of a session's history: the key of its first message and how
/// many messages it holds.
///
/// ```
/// use memory_core::{recall::Handle, Message};
/// let h = Handle::of(&[Message::user("a"), Message::assistant("b")]);
/// assert_eq!(h.len(), 2);
/// assert_eq!(Handle::parse(&h.to_string()).unwrap(), h);
/// assert!(h.to_string().starts_with("r:") && h.to_string().ends_with("+2"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle {
    pub(crate) key: u64,
    len: usize,
    /// The first and last [`PART_CHARS`] parts named (1-based), for a
    /// handle of parts of one message's text.
    pub(crate) parts: Option<(usize, usize)>,
    /// The key of the stretch's last message, for a stretch named by its
    /// ends (its length is then what the history says).
    last: Option<u64>,
}

/// Characters of a message's text per part that a part handle names
/// (`r:KEY#3` is characters 2,400 to 3,600). Why: a part must come back
/// whole in one recall within a quarter of the smallest budgets agents
/// run with ([`REACHABLE_BUDGET_DIVISOR`](crate::recall::REACHABLE_BUDGET_DIVISOR)); 1,200 characters are 300
/// tokens by the character estimate and about 300 to 400 with the
/// OpenAI encodings on logs and code, within the 400 of a 1,600-token
/// budget's quarter. Fixed, not taken from the budget, so that a handle
/// is the same under any budget and needs only the text to be written.
pub const PART_CHARS: usize = 1_200;

impl Handle {
    /// The handle of `messages` (a stretch of the history, in order); an
    /// empty stretch is taken as one of length 1 at no message.
    pub fn of(messages: &[Message]) -> Handle {
        Handle {
            key: messages.first().map_or(0, key),
            len: messages.len().max(1),
            parts: None,
            last: None,
        }
    }

    /// The stretch from this one's first message through `last`, a later
    /// message, named by its ends: what a summary stands for, whose length
    /// the context that shows it does not know. It ends at the first
    /// message like `last` after the start: when the same text stands
    /// earlier in the stretch (a short reply said twice), a recall ends
    /// there.
    ///
    /// ```
    /// use memory_core::{recall::Handle, Message};
    /// let m = [Message::user("go on"), Message::assistant("b"), Message::user("go on")];
    /// let h = Handle::of(&m[..1]).through(&m[2]);
    /// assert_eq!(h.find(&m), Some(0..3));
    /// assert_eq!(Handle::parse(&h.to_string()).unwrap(), h);
    /// assert!(h.to_string().contains(".."));
    /// ```
    pub fn through(self, last: &Message) -> Handle {
        let last = key(last);
        Handle {
            len: 1,
            parts: None,
            last: Some(last),
            ..self
        }
    }

    /// The handle of the stretch's last message, where this one names it:
    /// the message itself for a handle of one message, the end for a
    /// stretch named by its ends ([`through`](Self::through)); `None` for
    /// a stretch named by its length.
    pub(crate) fn end(self) -> Option<Handle> {
        match self.last {
            Some(last) => Some(Handle {
                key: last,
                len: 1,
                parts: None,
                last: None,
            }),
            None => (self.len == 1).then(|| self.whole()),
        }
    }

    /// The handle that brings back the characters `span` of `message`'s
    /// text ([`part_text`], `chars` characters long) in pieces a
    /// recall returns whole: the message's own handle when its text is at
    /// most one part, else the parts that cover `span`.
    ///
    /// ```
    /// use memory_core::{recall::{Handle, PART_CHARS}, Message};
    /// let long = Message::tool_result("c1", "x".repeat(5 * PART_CHARS));
    /// let h = Handle::for_span(&long, PART_CHARS + 1..3 * PART_CHARS, 5 * PART_CHARS);
    /// assert!(h.to_string().ends_with("#2-3"));
    /// let short = Message::tool_result("c2", "ok");
    /// assert_eq!(Handle::for_span(&short, 0..2, 2), Handle::of(std::slice::from_ref(&short)));
    /// ```
    pub fn for_span(message: &Message, span: Range<usize>, chars: usize) -> Handle {
        Handle::of(std::slice::from_ref(message)).covering(span, chars)
    }

    /// This message's handle, narrowed to the parts that cover the
    /// characters `span` of its text of `chars` characters (whole when the
    /// text is at most one part, or when this names several messages).
    ///
    /// ```
    /// use memory_core::{recall::{Handle, PART_CHARS}, Message};
    /// let h = Handle::of(&[Message::user("a")]);
    /// assert_eq!(h.covering(0..10, 10), h);
    /// assert_eq!(h.covering(0..PART_CHARS + 1, 3 * PART_CHARS).parts(), Some((1, 2)));
    /// ```
    pub fn covering(self, span: Range<usize>, chars: usize) -> Handle {
        let whole = self.whole();
        if self.len > 1 || self.last.is_some() || chars <= PART_CHARS || span.is_empty() {
            return whole;
        }
        let last = span.end.min(chars).max(span.start + 1);
        Handle {
            parts: Some((span.start / PART_CHARS + 1, (last - 1) / PART_CHARS + 1)),
            ..whole
        }
    }

    /// The handle of the whole stretch, without parts.
    ///
    /// ```
    /// use memory_core::{recall::Handle, Message};
    /// let h = Handle::of(&[Message::user("a")]);
    /// assert_eq!(h.covering(0..5_000, 9_000).whole(), h);
    /// ```
    pub fn whole(self) -> Handle {
        Handle {
            parts: None,
            ..self
        }
    }

    /// The first and last parts named (1-based, [`PART_CHARS`] each), for
    /// a handle of parts.
    ///
    /// ```
    /// let h = memory_core::recall::Handle::parse("r:000000002a#2-4").unwrap();
    /// assert_eq!(h.parts(), Some((2, 4)));
    /// ```
    pub fn parts(&self) -> Option<(usize, usize)> {
        self.parts
    }

    /// Each part this handle names, as a handle of its own (the handle
    /// itself when it names no parts).
    ///
    /// ```
    /// let h = memory_core::recall::Handle::parse("r:000000002a#2-4").unwrap();
    /// assert_eq!(h.each_part().len(), 3);
    /// assert_eq!(h.each_part()[0].to_string(), "r:000000002a#2");
    /// ```
    pub fn each_part(&self) -> Vec<Handle> {
        match self.parts {
            None => vec![*self],
            Some((first, last)) => (first..=last)
                .map(|k| Handle {
                    parts: Some((k, k)),
                    ..*self
                })
                .collect(),
        }
    }

    /// The characters of the message's text the parts cover (cut to the
    /// text's `chars`); `None` for a handle of whole messages.
    ///
    /// ```
    /// let h = memory_core::recall::Handle::parse("r:000000002a#2").unwrap();
    /// assert_eq!(h.chars(10_000), Some(1_200..2_400));
    /// assert_eq!(h.chars(1_500), Some(1_200..1_500));
    /// ```
    pub fn chars(&self, chars: usize) -> Option<Range<usize>> {
        let (first, last) = self.parts?;
        let start = ((first - 1) * PART_CHARS).min(chars);
        Some(start..(last * PART_CHARS).min(chars))
    }

    /// How many messages the stretch holds (1 for a stretch named by its
    /// ends, [`through`](Self::through): [`find`](Self::find) tells).
    ///
    /// ```
    /// assert_eq!(memory_core::recall::Handle::of(&[memory_core::Message::user("a")]).len(), 1);
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Reads `r:KEY`, `r:KEY+N`, `r:KEY..KEY`, `r:KEY#P` or `r:KEY#P-Q`.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Recall`] naming what is wrong with the text.
    ///
    /// ```
    /// use memory_core::recall::Handle;
    /// assert!(Handle::parse("r:000000002a+3").is_ok());
    /// assert!(Handle::parse("r:000000002a#2-5").is_ok());
    /// assert!(Handle::parse("r:zz").is_err());
    /// assert!(Handle::parse("r:000000002a+0").is_err());
    /// assert!(Handle::parse("r:000000002a#3-2").is_err());
    /// assert!(Handle::parse("r:000000002a..000000002b").is_ok());
    /// assert!(Handle::parse("r:000000002a..2b").is_err());
    /// assert_eq!(Handle::all_in("see r:000000002a... then"), vec![Handle::parse("r:000000002a").unwrap()]);
    /// ```
    pub fn parse(text: &str) -> Result<Handle, MemoryError> {
        let text = text.trim();
        match scan(text) {
            Ok((handle, used)) if used == text.len() => Ok(handle),
            Ok(_) => Err(bad_handle(text, "has more after it")),
            Err(why) => Err(bad_handle(text, why)),
        }
    }

    /// Where the stretch is in `history`: the first message with the key
    /// and room for the length after it; `None` when the history has none
    /// (another session's handle, say).
    ///
    /// ```
    /// use memory_core::{recall::Handle, Message};
    /// let history = [Message::user("a"), Message::assistant("b"), Message::user("c")];
    /// assert_eq!(Handle::of(&history[1..3]).find(&history), Some(1..3));
    /// assert_eq!(Handle::of(&[Message::user("z")]).find(&history), None);
    /// ```
    pub fn find(&self, history: &[Message]) -> Option<Range<usize>> {
        let start = history.iter().position(|m| key(m) == self.key)?;
        self.from(history, start)
    }

    /// The stretch in `history` when its first message stands at `start`.
    pub(crate) fn from(&self, history: &[Message], start: usize) -> Option<Range<usize>> {
        match self.last {
            // A stretch whose ends read alike ends at the next such one.
            Some(last) => history
                .get(start + 1..)?
                .iter()
                .position(|m| key(m) == last)
                .map(|end| start..start + end + 2),
            None => Some(start..start + self.len).filter(|range| range.end <= history.len()),
        }
    }

    /// Every handle written in `text`, in order: `r:` and a key, not
    /// inside a word (`color:darkorange` holds none).
    ///
    /// ```
    /// use memory_core::{recall::Handle, Message};
    /// let h = Handle::of(&[Message::user("a")]);
    /// let text = format!("[12 lines omitted; recall {h}]");
    /// assert_eq!(Handle::all_in(&text), vec![h]);
    /// assert!(Handle::all_in("color:darkorange").is_empty());
    /// ```
    pub fn all_in(text: &str) -> Vec<Handle> {
        let mut found = Vec::new();
        for (at, _) in text.match_indices("r:") {
            let in_word = text[..at]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric);
            if let (false, Ok((handle, _))) = (in_word, scan(&text[at..])) {
                found.push(handle);
            }
        }
        found
    }
}

/// The error for a handle `text` that is not one, and why.
fn bad_handle(text: &str, why: &str) -> MemoryError {
    MemoryError::Recall(format!(
        "handle {text:?} {why}: a handle is r: and a key of {KEY_DIGITS} characters (0-9, a-v), then +N for N messages, ..KEY for the messages through that one, or #P, #P-Q for parts of one"
    ))
}

/// The key `text` starts with, and its length: [`KEY_DIGITS`] base-32
/// characters, or [`HEX_KEY_DIGITS`] hexadecimal ones as handles were
/// written before; `None` for anything else (a longer or shorter run of
/// letters and digits is prose, not a key).
fn read_key(text: &str) -> Option<(u64, usize)> {
    let run = text.bytes().take_while(u8::is_ascii_alphanumeric).count();
    let radix = match run {
        KEY_DIGITS => 32,
        HEX_KEY_DIGITS => 16,
        _ => return None,
    };
    u64::from_str_radix(&text[..run], radix)
        .ok()
        .filter(|&key| key < 1 << KEY_BITS)
        .map(|key| (key, run))
}

/// `key` as a handle writes it: [`KEY_DIGITS`] base-32 characters.
pub(crate) struct Key(pub(crate) u64);

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DIGITS: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
        let mut out = [b'0'; KEY_DIGITS];
        let mut rest = self.0;
        for digit in out.iter_mut().rev() {
            *digit = DIGITS[(rest % 32) as usize];
            rest /= 32;
        }
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

/// Reads the handle `text` starts with: the handle and how many bytes
/// it took, or why there is none.
fn scan(text: &str) -> Result<(Handle, usize), &'static str> {
    let rest = text.strip_prefix("r:").ok_or("does not start with r:")?;
    let (key, digits) = read_key(rest).ok_or("has no key")?;
    if rest[digits..].starts_with(|c: char| c.is_alphanumeric()) {
        return Err("has no key");
    }
    let after = &rest[digits..];
    let number = |s: &str| -> (Option<usize>, usize) {
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        (s[..digits].parse().ok(), digits)
    };
    let mut handle = Handle {
        key,
        len: 1,
        parts: None,
        last: None,
    };
    let mut used = 2 + digits;
    let last_key = after.strip_prefix("..").and_then(read_key);
    if let Some((last, digits)) = last_key {
        // Two dots without a key after them are prose ("see r:KEY..."):
        // the handle ends before them.
        handle.last = Some(last);
        used += 2 + digits;
    } else if let Some(count) = after.strip_prefix('+') {
        let (n, digits) = number(count);
        handle.len = n.filter(|&n| n > 0).ok_or("has no count after +")?;
        used += 1 + digits;
    } else if let Some(parts) = after.strip_prefix('#') {
        let (first, digits) = number(parts);
        let first = first.filter(|&n| n > 0).ok_or("has no part after #")?;
        used += 1 + digits;
        let mut last = first;
        if let Some(to) = parts[digits..].strip_prefix('-')
            && let (Some(n), more) = number(to)
        {
            last = n;
            used += 1 + more;
        }
        if last < first {
            return Err("names its parts backwards");
        }
        handle.parts = Some((first, last));
    }
    Ok((handle, used))
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r:{}", Key(self.key))?;
        if let Some(last) = self.last {
            write!(f, "..{}", Key(last))?;
        } else if self.len > 1 {
            write!(f, "+{}", self.len)?;
        }
        match self.parts {
            Some((first, last)) if first == last => write!(f, "#{first}"),
            Some((first, last)) => write!(f, "#{first}-{last}"),
            None => Ok(()),
        }
    }
}

/// A message's key, cut to the handle's digits.
pub(crate) fn key(message: &Message) -> u64 {
    message_key(message) & ((1 << KEY_BITS) - 1)
}

/// The text of `message` whose characters parts count: its text
/// ([`Message::text`]), and for an assistant message its reasoning and
/// each tool call's name and arguments after it, a line apart (a step
/// that writes a file holds it in its call's arguments).
///
/// ```
/// use memory_core::{recall::part_text, Message, ToolCall};
/// let m = Message::assistant_with_tools("Writing it.", vec![ToolCall::new("c1", "write", "{\"path\": \"a.py\"}")]);
/// assert_eq!(part_text(&m), "Writing it.\nwrite {\"path\": \"a.py\"}");
/// assert_eq!(part_text(&Message::tool_result("c1", "ok")), "ok");
/// ```
pub fn part_text(message: &Message) -> String {
    let mut text = message.text();
    if let Message::Assistant {
        reasoning,
        tool_calls,
        ..
    } = message
    {
        if let Some(extra) = reasoning {
            text.push('\n');
            text.push_str(extra);
        }
        for call in tool_calls {
            text.push('\n');
            text.push_str(&call.name);
            text.push(' ');
            text.push_str(&call.arguments);
        }
    }
    text
}

/// Where `message`'s reasoning stands in its [`part_text`], in
/// characters, and that text's length in characters, without writing it;
/// `None` for a message without reasoning.
///
/// ```
/// use memory_core::{recall::{part_text, reasoning_span}, Message, ToolCall};
/// let m = Message::Assistant {
///     content: "Writing it.".into(),
///     reasoning: Some("The test wants a.py.".into()),
///     tool_calls: vec![ToolCall::new("c1", "write", "{}")],
/// };
/// let (span, total) = reasoning_span(&m).unwrap();
/// let text: Vec<char> = part_text(&m).chars().collect();
/// assert_eq!(text[span].iter().collect::<String>(), "The test wants a.py.");
/// assert_eq!(total, text.len());
/// assert_eq!(reasoning_span(&Message::assistant("ok")), None);
/// ```
pub fn reasoning_span(message: &Message) -> Option<(Range<usize>, usize)> {
    let Message::Assistant {
        reasoning: Some(thought),
        tool_calls,
        ..
    } = message
    else {
        return None;
    };
    let start = message.text().chars().count() + 1;
    let end = start + thought.chars().count();
    let calls: usize = tool_calls
        .iter()
        .map(|call| 2 + call.name.chars().count() + call.arguments.chars().count())
        .sum();
    Some((start..end, end + calls))
}

/// Where the arguments of `message`'s call `call` start in its
/// [`part_text`] of `total` characters, in characters, without writing it:
/// that text ends with each call's line break, name, space and arguments.
///
/// ```
/// use memory_core::{recall::{arguments_start, part_text}, Message, ToolCall};
/// let m = Message::assistant_with_tools("Reading.", vec![ToolCall::new("c1", "read", "{}")]);
/// let total = part_text(&m).chars().count();
/// assert_eq!(&part_text(&m)[arguments_start(&m, 0, total)..], "{}");
/// ```
pub fn arguments_start(message: &Message, call: usize, total: usize) -> usize {
    let Message::Assistant { tool_calls, .. } = message else {
        return 0;
    };
    let line = |c: &ToolCall| 1 + c.name.chars().count() + 1;
    let from_call: usize = tool_calls[call..]
        .iter()
        .map(|c| line(c) + c.arguments.chars().count())
        .sum();
    total - from_call + line(&tool_calls[call])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_handles_read_and_write_back_the_same_and_prose_around_them_is_not_taken() {
        let h = Handle::parse("r:000000002a#2-5").unwrap();
        assert_eq!(h.to_string(), "r:000000002a#2-5");
        assert_eq!(
            Handle::parse(&h.each_part()[3].to_string())
                .unwrap()
                .parts(),
            Some((5, 5))
        );
        let text = "see r:000000002a#2-5. Or r:000000002a#7, r:000000002a+3-based, r:000000002ab";
        let found = Handle::all_in(text);
        assert_eq!(found.len(), 3);
        assert_eq!(found[0], h);
        assert_eq!(found[1].parts(), Some((7, 7)));
        assert_eq!(found[2].len(), 3);
        for bad in [
            "r:000000002a#0",
            "r:000000002a#",
            "r:000000002a#4-2",
            "r:000000002a#1x",
        ] {
            assert!(Handle::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn handles_are_found_in_text_and_ranges_past_the_end_are_not() {
        let history = [Message::user("a"), Message::user("b")];
        let stretch = Handle {
            key: key(&history[1]),
            len: 2,
            parts: None,
            last: None,
        };
        assert_eq!(stretch.find(&history), None);
        let text = format!(
            "see {} and r:nothex, r:{}+2.",
            Handle::of(&history[..1]),
            "0".repeat(10)
        );
        assert_eq!(Handle::all_in(&text).len(), 2);
    }

    #[test]
    fn a_calls_arguments_are_found_where_the_whole_text_holds_them() {
        let m = Message::Assistant {
            content: "Réading both.".into(),
            reasoning: Some("Thé plan.".into()),
            tool_calls: vec![
                ToolCall::new("c1", "read", r#"{"path": "é.py"}"#),
                ToolCall::new("c2", "grep", r#"{"pattern": "fn"}"#),
            ],
        };
        let whole: Vec<char> = part_text(&m).chars().collect();
        for (k, args) in [(0, r#"{"path": "é.py"}"#), (1, r#"{"pattern": "fn"}"#)] {
            let at = arguments_start(&m, k, whole.len());
            let found: String = whole[at..at + args.chars().count()].iter().collect();
            assert_eq!(found, args);
        }
    }

    #[test]
    fn keys_are_written_in_base_32_and_read_in_hexadecimal_as_handles_were_written_before() {
        // 42 is "1a" in base 32 and "2a" in hexadecimal.
        let written = Handle::parse("r:000000001a+3").unwrap();
        assert_eq!(Handle::parse("r:00000000002a+3").unwrap(), written);
        assert_eq!(written.to_string(), "r:000000001a+3");
        let m = [Message::user("a"), Message::assistant("b")];
        let h = Handle::of(&m);
        let text = h.to_string();
        assert_eq!(text.len(), "r:".len() + KEY_DIGITS + "+2".len(), "{text}");
        let hex = format!("r:{:012x}+2", h.key);
        assert_eq!(Handle::parse(&hex).unwrap().find(&m), Some(0..2));
        // The widest key reads back; one past 48 bits, or another length, is none.
        let widest = Handle {
            key: (1 << KEY_BITS) - 1,
            len: 1,
            parts: None,
            last: None,
        };
        assert_eq!(Handle::parse(&widest.to_string()).unwrap(), widest);
        for bad in [
            "r:vvvvvvvvvv",
            "r:000000001",
            "r:00000000001a1",
            "r:000000001w",
        ] {
            assert!(Handle::parse(bad).is_err(), "{bad}");
        }
    }
}
