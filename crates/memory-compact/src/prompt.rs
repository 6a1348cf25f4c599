//! The summarization request: [`DEFAULT_PROMPT`] and how the messages to
//! summarize are sent.
//!
//! A request is standalone: the prompt as a system message, then one user
//! message holding the previous summary (to merge), the current request
//! (when its own steps are summarized), the transcript (rendered by
//! [`memory_core::transcript`], so reasoning is never sent) and the custom
//! instructions. When the transcript is longer than the input limit, every
//! message longer than its share is shortened in the middle, so each one is
//! still seen.

use memory_core::{ChatRequest, Message, ModelOptions, transcript};

/// What the summarizer is asked to write.
pub const DEFAULT_PROMPT: &str = "\
You keep the working memory of a conversation between a user and an assistant that uses tools. \
The older part of the conversation is about to leave the assistant's context; what you write \
takes its place, so it must hold everything the assistant needs to carry on without it.

Write plain text under these headings, leaving out a heading only when nothing belongs under it:
## Goals
What the user wants, in their words where possible, and the constraints they set.
## Decisions
What was decided or ruled out, and why.
## State
What has been done, what works, what is in progress.
## Open questions
What is unresolved, and the next steps.
## Files and values
The files, paths, commands, identifiers, numbers and settings that matter.

Keep exact names, paths and values: copy them, never paraphrase them. Prefer short factual lines. \
When a previous summary is given, merge it with the new material into one summary: keep what \
still holds, update what changed, and drop nothing that may matter later. Reply with the summary \
only.";

/// Default cap on the characters of one request's transcript.
pub const DEFAULT_MAX_INPUT_CHARS: usize = 48_000;

/// No message is shortened below this many characters.
const MIN_SHARE: usize = 400;

/// What one request summarizes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Part<'a> {
    /// The messages, oldest first.
    pub messages: &'a [Message],
    /// The previous summary's text, to merge.
    pub previous: Option<&'a str>,
    /// The current request's text, when `messages` are its older steps.
    pub question: Option<&'a str>,
}

/// Builds the request for `part`.
pub(crate) fn request(
    prompt: &str,
    part: Part<'_>,
    instructions: Option<&str>,
    max_input_chars: usize,
    options: &ModelOptions,
) -> ChatRequest {
    let mut text = String::new();
    if let Some(previous) = part.previous {
        text.push_str(
            "Your previous summary, to merge with the new material:\n<previous-summary>\n",
        );
        text.push_str(previous);
        text.push_str("\n</previous-summary>\n\n");
    }
    if let Some(question) = part.question {
        text.push_str(
            "The user's current request, which stays in the context verbatim after your summary:\n<current-request>\n",
        );
        text.push_str(question);
        text.push_str("\n</current-request>\n\n");
    }
    text.push_str("<conversation>\n");
    text.push_str(&render(part.messages, max_input_chars));
    text.push_str("\n</conversation>\n\n");
    text.push_str(match (part.question.is_some(), part.previous.is_some()) {
        (true, false) => {
            "Summarize the steps above, the earlier work on the current request, so that the assistant can continue from its newest steps."
        }
        (true, true) => {
            "Merge your previous summary and the steps above, the earlier work on the current request, into one summary, so that the assistant can continue from its newest steps."
        }
        (false, true) => {
            "Merge your previous summary and the conversation above into one summary."
        }
        (false, false) => "Summarize the conversation above.",
    });
    if let Some(instructions) = instructions {
        text.push_str("\n\nAdditional instructions: ");
        text.push_str(instructions);
    }
    let mut request = ChatRequest::new(vec![Message::system(prompt), Message::user(text)]);
    request.options = options.clone();
    request
}

/// The transcript of `messages`, each message shortened to its share of
/// `max_chars` when the whole is longer.
fn render(messages: &[Message], max_chars: usize) -> String {
    let entries: Vec<String> = messages.iter().map(transcript::message_to_text).collect();
    let total: usize = entries.iter().map(|e| e.chars().count()).sum();
    if total <= max_chars || entries.is_empty() {
        return entries.join("\n");
    }
    let share = (max_chars / entries.len()).max(MIN_SHARE);
    entries
        .iter()
        .map(|e| shorten(e, share))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` cut to about `max` characters: its beginning and its end, with a
/// note of what was left out between.
fn shorten(text: &str, max: usize) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn user_text(request: &ChatRequest) -> String {
        request.messages[1].text()
    }

    #[test]
    fn the_request_holds_the_previous_summary_question_transcript_and_instructions() {
        let messages = [Message::user("rename foo"), Message::assistant("renamed")];
        let request = request(
            DEFAULT_PROMPT,
            Part {
                messages: &messages,
                previous: Some("## Goals\nold"),
                question: Some("ship it"),
            },
            Some("mention every test name"),
            1_000,
            &ModelOptions::default(),
        );
        assert_eq!(request.messages[0], Message::system(DEFAULT_PROMPT));
        let text = user_text(&request);
        for part in [
            "<previous-summary>\n## Goals\nold\n</previous-summary>",
            "<current-request>\nship it\n</current-request>",
            "<conversation>\nuser: rename foo\nassistant: renamed\n</conversation>",
            "Additional instructions: mention every test name",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
    }

    #[test]
    fn long_messages_are_shortened_in_the_middle_to_their_share() {
        let long = format!("BEGIN{}END", "x".repeat(5_000));
        let messages = [Message::tool_result("c1", long), Message::user("short")];
        let text = render(&messages, 1_000);
        assert!(text.contains("tool result (c1): BEGIN"));
        assert!(text.contains("END\nuser: short"));
        assert!(text.contains("characters left out"));
        assert!(text.chars().count() < 700);
        // Within the limit nothing changes.
        assert_eq!(render(&messages[1..], 1_000), "user: short");
        assert_eq!(
            shorten("abcdef", 3),
            "ab\n[... 3 characters left out ...]\nf"
        );
    }
}
