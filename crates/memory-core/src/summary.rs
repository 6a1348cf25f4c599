//! The summary recognizer: the one place that says whether a message is a
//! summary of earlier history.
//!
//! A summary is a [`Message::System`] whose text starts with [`PREFIX`].
//! Producers build summaries with [`message`], or with [`message_for`]
//! when they know the originals it stands for ([`originals`]): a line
//! after the prefix then names their [recall handle](crate::recall), so
//! that what the summary folded stays one recall (with a query, for a
//! long stretch) away. Every subtractive stage keeps what [`is_summary`]
//! recognizes. The defaults every summarizing strategy
//! shares are here too: [`DEFAULT_SUMMARY_MAX_TOKENS`] and
//! [`DEFAULT_SUMMARY_TEMPERATURE`].
//!
//! ```
//! use memory_core::{summary, Message};
//!
//! let s = summary::message("The user wants a CSV parser; tests pass.");
//! assert!(summary::is_summary(&s));
//! assert_eq!(summary::body(&s), Some("The user wants a CSV parser; tests pass."));
//! assert!(!summary::is_summary(&Message::system("You are terse.")));
//! ```

use std::ops::Range;

use crate::handle::Handle;
use crate::message::Message;
use crate::shrunk;

/// What every summary message starts with.
pub const PREFIX: &str = "Summary of prior context:\n";

/// What the line naming a summary's originals starts with, right after
/// [`PREFIX`].
const STANDS_FOR: &str = "[originals: recall ";

/// How the line naming a summary's originals ends.
const STANDS_FOR_END: &str = "]\n";

/// The default cap on a summary, in tokens, for every strategy that asks a
/// model for one: sent as the request's `max_tokens`, a reply cut off there
/// is rejected (`memory_summary_engine::accept_reply`), and where a strategy
/// keeps room for the summary in the budget, that room.
///
/// ```
/// assert_eq!(memory_core::summary::DEFAULT_SUMMARY_MAX_TOKENS, 1_024);
/// ```
pub const DEFAULT_SUMMARY_MAX_TOKENS: u32 = 1_024;

/// The default sampling temperature of a summary request: a summary should
/// restate, not invent, and the same history should give the same summary.
/// Strategies send it unless their options set another.
///
/// ```
/// assert_eq!(memory_core::summary::DEFAULT_SUMMARY_TEMPERATURE, 0.0);
/// ```
pub const DEFAULT_SUMMARY_TEMPERATURE: f32 = 0.0;

/// Builds the summary message for `body`.
///
/// ```
/// let s = memory_core::summary::message("done so far");
/// assert!(s.is_system());
/// ```
pub fn message(body: impl AsRef<str>) -> Message {
    Message::System(format!("{PREFIX}{}", body.as_ref()))
}

/// Builds the summary message for `body` standing for the originals
/// `handle` names (see [`originals`]); [`message`] when `None`.
///
/// ```
/// use memory_core::{recall::Handle, summary, Message};
/// let m = [Message::user("Lisbon or Porto?"), Message::assistant("Lisbon.")];
/// let s = summary::message_for("We chose Lisbon.", Some(Handle::of(&m)));
/// assert_eq!(summary::stands_for(&s), Some(Handle::of(&m)));
/// assert_eq!(summary::body(&s), Some("We chose Lisbon."));
/// assert_eq!(summary::message_for("x", None), summary::message("x"));
/// ```
pub fn message_for(body: impl AsRef<str>, handle: Option<Handle>) -> Message {
    match handle {
        Some(handle) => Message::System(format!(
            "{PREFIX}{STANDS_FOR}{handle}{STANDS_FOR_END}{}",
            body.as_ref()
        )),
        None => message(body),
    }
}

/// The summary message for `body` with the line naming its originals at
/// its longest (a stretch named by its ends): what a summary costs
/// beyond its body, for a cap that must hold the whole message.
///
/// ```
/// use memory_core::summary;
/// let framing = summary::framing_for("");
/// assert!(summary::stands_for(&framing).is_some());
/// assert!(framing.text().len() > summary::message("").text().len());
/// ```
pub fn framing_for(body: impl AsRef<str>) -> Message {
    message_for(body, Handle::parse("r:0000000000..000000000000").ok())
}

/// The handle of the originals `message` stands for, when it is a summary
/// that names them ([`message_for`]).
///
/// ```
/// assert_eq!(memory_core::summary::stands_for(&memory_core::summary::message("x")), None);
/// ```
pub fn stands_for(message: &Message) -> Option<Handle> {
    Handle::parse(split(message)?.0?).ok()
}

/// A summary's text after the prefix, split into the handle its line
/// names (when it has the line) and the body; `None` for other messages.
fn split(message: &Message) -> Option<(Option<&str>, &str)> {
    let Message::System(text) = message else {
        return None;
    };
    let after = text.strip_prefix(PREFIX)?;
    let named = after.strip_prefix(STANDS_FOR).and_then(|line| {
        let end = line.find(STANDS_FOR_END)?;
        Some((&line[..end], &line[end + STANDS_FOR_END.len()..]))
    });
    Some(match named {
        Some((handle, body)) => (Some(handle), body),
        None => (None, after),
    })
}

/// The handle of what a summary replacing the `region` of `history`
/// (sorted ranges of its messages) stands for, named by its ends
/// ([`Handle::through`]): from its first original through the region's
/// last message. A summary folded into it that names its own originals
/// ([`stands_for`]) lends their start; else the stretch starts at the
/// region's first message that is not a summary. A region that folds
/// nothing new keeps the folded summary's handle, so that summarizing a
/// summarized history again names the same stretch; so does one whose
/// last message is the stretch's last shown again after the summary, as
/// recorded or shrunk by a stage ([`shrunk`]: a shrunk message's key is no
/// recorded message's, and would name no original). `None` for a region
/// without a message that is not a summary, nor a summary that names its
/// originals.
///
/// ```
/// use memory_core::{recall::Handle, summary, Message};
/// let all = [
///     Message::system("rules"),
///     Message::user("Lisbon or Porto?"),
///     Message::assistant("Lisbon."),
///     Message::user("Which hotel?"),
///     Message::assistant("The Alfama one."),
///     Message::user("And dinner?"),
/// ];
/// let handle = summary::originals(&all, &[1..3]).unwrap();
/// assert_eq!(handle.find(&all), Some(1..3));
/// // Folded again with the two turns after it: the stretch runs on.
/// let view = [all[0].clone(), summary::message_for("Lisbon.", Some(handle)), all[3].clone(), all[4].clone(), all[5].clone()];
/// assert_eq!(summary::originals(&view, &[1..4]).unwrap().find(&all), Some(1..5));
/// // Folded again alone: the same stretch.
/// assert_eq!(summary::originals(&view, &[1..2]), Some(handle));
/// ```
pub fn originals(m: &[Message], region: &[Range<usize>]) -> Option<Handle> {
    let folded = region.iter().flat_map(Clone::clone);
    let earlier = folded.clone().find_map(|i| stands_for(&m[i]));
    let mut new = folded.filter(|&i| !is_summary(&m[i]));
    let first = new.next();
    let last = new.next_back().or(first);
    let single = |i: usize| Handle::of(std::slice::from_ref(&m[i]));
    // The stretch's last message, or a shrunk form of it (whose own key no
    // recorded message has), folded again last.
    let ends_it = |earlier: Handle, i: usize| {
        earlier
            .end()
            .is_some_and(|end| shrunk::shows_recorded(&m[i], end))
    };
    match (earlier, first, last) {
        // A stretch folded again with its last message last, as recorded
        // or shrunk, is taken to be folding it again (covered originals
        // shown after the summary), not a newer message alike: the same
        // handle, whatever a stage shed of that message.
        (Some(earlier), _, Some(last)) if ends_it(earlier, last) => Some(earlier),
        (Some(earlier), _, Some(last)) => Some(earlier.through(&m[last])),
        (Some(earlier), _, None) => Some(earlier),
        (None, Some(first), Some(last)) if first == last => Some(single(first)),
        (None, Some(first), Some(last)) => Some(single(first).through(&m[last])),
        _ => None,
    }
}

/// Whether `message` is a summary.
///
/// ```
/// use memory_core::{summary, Message};
/// assert!(!summary::is_summary(&Message::user(summary::PREFIX)));
/// ```
pub fn is_summary(message: &Message) -> bool {
    matches!(message, Message::System(text) if text.starts_with(PREFIX))
}

/// The text of a summary without its prefix and the line naming its
/// originals; `None` for other messages.
///
/// ```
/// use memory_core::{summary, Message};
/// assert_eq!(summary::body(&Message::system("x")), None);
/// ```
pub fn body(message: &Message) -> Option<&str> {
    split(message).map(|(_, body)| body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A region of one range.
    fn one(range: Range<usize>) -> Vec<Range<usize>> {
        vec![range]
    }

    #[test]
    fn originals_whose_ends_read_alike_are_found_whole() {
        let m = [
            Message::system("rules"),
            Message::user("go on"),
            Message::assistant("ok"),
            Message::user("go on"),
            Message::assistant("done"),
        ];
        let handle = originals(&m, &one(1..4)).unwrap();
        assert_eq!(handle.find(&m), Some(1..4));
        // Folded once more, with nothing new: the same handle.
        let view = [
            m[0].clone(),
            message_for("so far", Some(handle)),
            m[4].clone(),
        ];
        assert_eq!(originals(&view, &one(1..2)), Some(handle));
        assert_eq!(originals(&view, &one(1..3)).unwrap().find(&m), Some(1..5));
    }

    #[test]
    fn originals_shown_again_shrunk_keep_the_handle() {
        let thought = Message::Assistant {
            content: "Lisbon.".into(),
            reasoning: Some("because of the weather ".repeat(4)),
            tool_calls: Vec::new(),
        };
        let m = [Message::user("Lisbon or Porto?"), thought.clone()];
        let handle = originals(&m, &one(0..2)).unwrap();
        assert_eq!(handle.find(&m), Some(0..2));
        // Shown again after the summary, the reasoning shed as a stage
        // sheds it (a marker naming the message), and folded again.
        let own = Handle::of(std::slice::from_ref(&thought));
        let shrunk = Message::Assistant {
            content: "Lisbon.".into(),
            reasoning: Some(format!("[reasoning omitted: 92 characters; recall {own}]")),
            tool_calls: Vec::new(),
        };
        assert!(crate::is_shrunk_from(&thought, &shrunk));
        let view = [message_for("so far", Some(handle)), m[0].clone(), shrunk];
        assert_eq!(originals(&view, &one(0..3)), Some(handle));
        // A tool result's placeholder or cut marker names its message too.
        let output = Message::tool_result("c1", "x".repeat(300));
        let at = Handle::of(std::slice::from_ref(&output));
        let calls = [
            Message::assistant_with_tools("", vec![crate::ToolCall::new("c1", "ls", "{}")]),
            output,
        ];
        let handle = originals(&calls, &one(0..2)).unwrap();
        for shown in [
            format!("[earlier tool result omitted: 300 characters; recall {at}]"),
            format!("xx\n[... 296 characters cut; recall {at} ...]\nxx"),
        ] {
            let view = [
                message_for("so far", Some(handle)),
                calls[0].clone(),
                Message::tool_result("c1", shown),
            ];
            assert_eq!(originals(&view, &one(0..3)), Some(handle));
        }
        // A newer message after them still extends the stretch.
        let newer = [
            message_for("so far", Some(handle)),
            Message::user("And dinner?"),
        ];
        assert_ne!(originals(&newer, &one(0..2)), Some(handle));
    }
}
