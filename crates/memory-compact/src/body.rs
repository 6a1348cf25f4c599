//! The rolling summary as a message: how [`Compact`](crate::Compact) writes
//! it and recognizes its own.
//!
//! The summary is a core summary message ([`memory_core::summary::message_for`],
//! so every stage recognizes and keeps it, with the recall handle of the
//! turns it stands for) whose body is [`HEADER`], the summary text, and
//! the [file sections](crate::files). The header tells
//! Compact's own summaries, which it folds into the next one, from other
//! summaries (another strategy's, an imported one), which it keeps in place
//! like any protected message.
//!
//! ```
//! use memory_compact::{body, FileOps};
//! use memory_core::summary;
//!
//! let mut files = FileOps::new();
//! files.modified.insert("src/lib.rs".into());
//! let message = body::message("## Goals\nShip the parser.", &files);
//! assert!(summary::is_summary(&message) && body::is_compact_summary(&message));
//! assert_eq!(body::text(&message).as_deref(), Some("## Goals\nShip the parser."));
//! assert_eq!(body::files(&message), Some(files));
//! assert!(!body::is_compact_summary(&summary::message("someone else's")));
//! ```

use memory_core::recall::Handle;
use memory_core::{MemoryError, Message, TokenCounter, summary};
use memory_summary_engine::{Rejection, cap};

use crate::FileOps;

/// The first line of the body of every summary Compact writes.
pub const HEADER: &str = "[rolling summary: earlier turns, folded in as the conversation grew]";

/// The body of a summary: the header, the text, the file sections.
///
/// ```
/// let body = memory_compact::body::compose("Done.", &memory_compact::FileOps::new());
/// assert_eq!(body, format!("{}\nDone.", memory_compact::body::HEADER));
/// ```
pub fn compose(text: &str, files: &FileOps) -> String {
    compose_rendered(text, &files.render())
}

/// The body of a summary with `files` already rendered.
fn compose_rendered(text: &str, files: &str) -> String {
    let text = FileOps::strip(text);
    if files.is_empty() {
        format!("{HEADER}\n{text}")
    } else {
        format!("{HEADER}\n{text}\n\n{files}")
    }
}

/// The summary message for `text` and `files`, without the line naming the
/// turns it stands for (which Compact adds when it fits a summary to its
/// cap, knowing them): a summary to parse or compare bodies with.
///
/// ```
/// let m = memory_compact::body::message("x", &memory_compact::FileOps::new());
/// assert!(m.is_system());
/// ```
pub fn message(text: &str, files: &FileOps) -> Message {
    summary::message(compose(text, files))
}

/// A summary message with everything but a text: the prefix, the line
/// naming its originals (with a handle of the longest kind) and the
/// header, for what every summary costs beyond its text.
pub(crate) fn framing() -> Message {
    summary::framing_for(compose("", &FileOps::new()))
}

/// The summary message for `text` and `files`, standing for the turns
/// `originals` names ([`summary::originals`]), within `cap` tokens of
/// `counter`, the whole message counted: the file list keeps the most
/// recently touched paths that fit ([`FileOps::render_newest`]), saying how
/// many it left out. A text whose message alone exceeds the cap keeps its
/// first whole lines that fit: the summarizer counted its reply with its
/// own tokenizer (the extractive one by characters), and a summary a few
/// tokens over by `counter`'s count loses its last lines, not its all
/// (SWE-smith at 8,000 tokens of cl100k: six of seven extractive
/// summaries were 2 to 79 tokens over a cap of 633, and each was thrown
/// away after its request was paid). `Err` when not even its first two
/// lines fit beside the prefix, the line naming the originals and the
/// header: a summary's first line is often a heading (or the extractive
/// summarizer's own header), which alone would say nothing.
///
/// # Errors
///
/// Counting failed.
pub(crate) async fn fitted(
    text: &str,
    files: &FileOps,
    originals: Option<Handle>,
    cap: usize,
    counter: &dyn TokenCounter,
) -> Result<Result<Message, Rejection>, MemoryError> {
    let text = match first_lines_within(text, originals, cap, counter).await? {
        Ok(text) => text,
        Err(over) => return Ok(Err(over)),
    };
    let text = text.as_str();
    let with = |keep: usize| {
        summary::message_for(
            compose_rendered(text, &files.render_newest(keep)),
            originals,
        )
    };
    let bare = summary::message_for(compose(text, &FileOps::new()), originals);
    let all = files.len();
    let full = with(all);
    if counter.count_message(&full).await? <= cap {
        return Ok(Ok(full));
    }
    if counter.count_message(&with(0)).await? > cap {
        return Ok(Ok(bare));
    }
    let fit = most_within(0, all, cap, counter, with).await?;
    Ok(Ok(with(fit)))
}

/// The most of something (paths, lines) whose message `make` gives within
/// `cap`: at least `fit`, whose message is within it, and less than
/// `over`, whose message is not; a binary search, the counts growing with
/// what is kept.
async fn most_within(
    mut fit: usize,
    mut over: usize,
    cap: usize,
    counter: &dyn TokenCounter,
    make: impl Fn(usize) -> Message,
) -> Result<usize, MemoryError> {
    while over - fit > 1 {
        let middle = fit + (over - fit) / 2;
        if counter.count_message(&make(middle)).await? <= cap {
            fit = middle;
        } else {
            over = middle;
        }
    }
    Ok(fit)
}

/// `text`, or its longest run of first whole lines (two at least), whose
/// summary message without files is within `cap`; the rejection of the
/// whole text when not even its first two lines are.
async fn first_lines_within(
    text: &str,
    originals: Option<Handle>,
    cap: usize,
    counter: &dyn TokenCounter,
) -> Result<Result<String, Rejection>, MemoryError> {
    let lines: Vec<&str> = text.lines().collect();
    let bare = |keep: usize| {
        summary::message_for(
            compose(&lines[..keep].join("\n"), &FileOps::new()),
            originals,
        )
    };
    let tokens = counter.count_message(&bare(lines.len())).await?;
    let Err(over) = cap::within_cap(tokens, cap) else {
        return Ok(Ok(text.to_string()));
    };
    if lines.len() <= 2 || counter.count_message(&bare(2)).await? > cap {
        return Ok(Err(over));
    }
    let fit = most_within(2, lines.len(), cap, counter, bare).await?;
    Ok(Ok(lines[..fit].join("\n")))
}

/// Whether `message` is a summary Compact wrote.
///
/// ```
/// use memory_core::Message;
/// assert!(!memory_compact::body::is_compact_summary(&Message::system(memory_compact::body::HEADER)));
/// ```
pub fn is_compact_summary(message: &Message) -> bool {
    summary::body(message).is_some_and(|body| body.starts_with(HEADER))
}

/// The text of a summary Compact wrote, without the header and the file
/// sections; `None` for other messages.
///
/// ```
/// use memory_core::Message;
/// assert_eq!(memory_compact::body::text(&Message::user("hi")), None);
/// ```
pub fn text(message: &Message) -> Option<String> {
    let body = summary::body(message)?.strip_prefix(HEADER)?;
    Some(FileOps::strip(body))
}

/// The files listed in a summary Compact wrote; `None` for other messages.
///
/// ```
/// use memory_core::Message;
/// assert_eq!(memory_compact::body::files(&Message::assistant("x")), None);
/// ```
pub fn files(message: &Message) -> Option<FileOps> {
    is_compact_summary(message).then(|| FileOps::parse(summary::body(message).unwrap_or("")))
}
