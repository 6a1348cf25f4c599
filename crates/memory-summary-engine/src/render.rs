//! History as the text a summarizer reads, and text shortened to fit a
//! request.
//!
//! Messages are written by [`memory_core::transcript`] (reasoning left
//! out, tool calls by name and arguments). A request has a limit on its
//! input, so what does not fit is shortened in the middle, its beginning
//! and end kept, with a note of what was left out: [`clip`] fits one text
//! to a number of tokens, [`within`] fits a list of messages by giving
//! each the same share.
//!
//! ```
//! use memory_core::{CharTokenCounter, Message};
//! use memory_summary_engine::render;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let messages = [Message::user("rename foo"), Message::assistant("renamed")];
//! // Each message here is a step of its own.
//! assert_eq!(render::steps(&messages, &[0..2]), vec!["user: rename foo", "assistant: renamed"]);
//! let text = render::within(&messages, 100, &CharTokenCounter).await.unwrap();
//! assert_eq!(text, "user: rename foo\nassistant: renamed");
//! # });
//! ```

use std::ops::Range;

use memory_core::{MemoryError, Message, TokenCounter, structure, transcript};

/// No message is shortened by [`within`] below this many tokens: a shorter
/// share says too little to summarize.
const MIN_SHARE: usize = 100;

/// The transcript of each step of `messages` in `ranges`, in order: the
/// parts a long history is summarized by, one or more to a request.
///
/// ```
/// use memory_core::Message;
/// let m = [Message::user("a"), Message::assistant("b"), Message::user("c")];
/// assert_eq!(memory_summary_engine::render::steps(&m, &[0..1, 2..3]), vec!["user: a", "user: c"]);
/// ```
pub fn steps(messages: &[Message], ranges: &[Range<usize>]) -> Vec<String> {
    ranges
        .iter()
        .flat_map(|range| {
            let slice = &messages[range.clone()];
            structure::steps(slice).map(move |step| transcript::to_text(&slice[step]))
        })
        .collect()
}

/// `text` (of `tokens` tokens) cut in the middle to at most `room` tokens
/// of `counter`, with a marker saying how many characters were left out.
///
/// # Errors
///
/// Counting failed.
///
/// ```
/// use memory_core::{CharTokenCounter, TokenCounter};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let long = "x".repeat(4_000);
/// let clipped = memory_summary_engine::render::clip(&long, 1_000, 100, &CharTokenCounter).await.unwrap();
/// assert!(clipped.contains("characters omitted"));
/// assert!(CharTokenCounter.count(&clipped).await.unwrap() <= 100);
/// # });
/// ```
pub async fn clip(
    text: &str,
    tokens: usize,
    room: usize,
    counter: &dyn TokenCounter,
) -> Result<String, MemoryError> {
    let chars: Vec<char> = text.chars().collect();
    let total = chars.len();
    // A first guess from the text's own density, then halving until it fits.
    let mut keep = total.saturating_mul(room) / tokens.max(1) * 9 / 10;
    loop {
        let head = keep / 2;
        let tail = keep - head;
        let omitted = total.saturating_sub(keep);
        let clipped: String = chars[..head]
            .iter()
            .chain(std::iter::once(&'\n'))
            .copied()
            .chain(format!("[... {omitted} characters omitted ...]\n").chars())
            .chain(chars[total - tail..].iter().copied())
            .collect();
        if keep == 0 || counter.count(&clipped).await? <= room {
            return Ok(clipped);
        }
        keep /= 2;
    }
}

/// The transcript of `messages`, one line each, each message shortened to
/// its share of `room` tokens (at least 100) when the whole is
/// longer: every message is still seen.
///
/// # Errors
///
/// Counting failed.
///
/// ```
/// use memory_core::{CharTokenCounter, Message};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let long = format!("BEGIN{}END", "x".repeat(5_000));
/// let messages = [Message::tool_result("c1", long), Message::user("short")];
/// let text = memory_summary_engine::render::within(&messages, 250, &CharTokenCounter).await.unwrap();
/// assert!(text.contains("tool result (c1): BEGIN") && text.contains("END\nuser: short"));
/// assert!(text.contains("characters left out"));
/// # });
/// ```
pub async fn within(
    messages: &[Message],
    room: usize,
    counter: &dyn TokenCounter,
) -> Result<String, MemoryError> {
    let entries: Vec<String> = messages.iter().map(transcript::message_to_text).collect();
    let mut tokens = Vec::with_capacity(entries.len());
    for entry in &entries {
        tokens.push(counter.count(entry).await?);
    }
    if tokens.iter().sum::<usize>() <= room || entries.is_empty() {
        return Ok(entries.join("\n"));
    }
    let share = (room / entries.len()).max(MIN_SHARE);
    Ok(entries
        .iter()
        .zip(&tokens)
        .map(|(entry, &n)| {
            if n <= share {
                entry.clone()
            } else {
                // The entry's own characters per token say how many
                // characters its share holds.
                let chars = entry.chars().count();
                shorten(entry, chars * share / n)
            }
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// `text` cut to about `max` characters: its beginning (two thirds) and its
/// end, with a note of what was left out between.
///
/// ```
/// assert_eq!(
///     memory_summary_engine::render::shorten("abcdef", 3),
///     "ab\n[... 3 characters left out ...]\nf"
/// );
/// ```
pub fn shorten(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head = max * 2 / 3;
    let tail = max - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!(
        "{start}\n[... {} characters left out ...]\n{end}",
        n - head - tail
    )
}
