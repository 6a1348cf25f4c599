//! A text-only agent's observations: the user message after a step that
//! wrote its command in its text is that command's output.

use crate::message::Message;

/// Whether assistant message `step` writes a command in its text for the
/// agent's harness to run, as text-only agents do: a function tag, or a
/// fenced block of shell (or of no language named) that ends the message.
/// The user message after it is that command's output, however short and
/// whatever its words. (A reply that ends with code in another language is
/// an answer, not a command.)
///
/// ```
/// use memory_core::{structure::issues_a_command, Message};
/// assert!(issues_a_command(&Message::assistant("Listing.\n```bash\nls\n```")));
/// assert!(!issues_a_command(&Message::assistant("Here:\n```python\nprint(1)\n```")));
/// ```
pub fn issues_a_command(step: &Message) -> bool {
    let Message::Assistant { content, .. } = step else {
        return false;
    };
    if content.contains("<function=") {
        return true;
    }
    let Some(body) = content.trim_end().strip_suffix("```") else {
        return false;
    };
    let Some(open) = body.rfind("```") else {
        return false;
    };
    let info = body[open + 3..].lines().next().unwrap_or_default().trim();
    matches!(info, "" | "bash" | "sh" | "shell" | "console" | "zsh")
}

/// Whether message `i` of `messages` is a text-only agent's observation:
/// a user message of text alone, right after a step that wrote a command
/// in its text ([`issues_a_command`]). Its long output is cut like a tool
/// result's, and it is not a question however it ends.
///
/// ```
/// use memory_core::{structure::is_observation, Message};
/// let m = [Message::assistant("<function=bash>ls</function>"), Message::user("a.txt b.txt")];
/// assert!(is_observation(&m, 1));
/// assert!(!is_observation(&m, 0));
/// ```
pub fn is_observation(messages: &[Message], i: usize) -> bool {
    matches!(&messages[i], Message::User(blocks) if blocks.len() == 1 && blocks[0].as_text().is_some())
        && i.checked_sub(1)
            .is_some_and(|before| issues_a_command(&messages[before]))
}
