//! The summarization request: [`DEFAULT_COMPACT_PROMPT`], the default
//! input limit [`DEFAULT_MAX_INPUT_TOKENS`], and how the messages to
//! summarize are sent.
//!
//! A request is standalone: the prompt as a system message, then one user
//! message holding the previous summary (to merge), the current request
//! (when its own steps are summarized), the transcript (rendered by
//! [`memory_core::transcript`], so reasoning is never sent) and the custom
//! instructions. When the request would be longer than the input limit (in
//! tokens of the strategy's counter), every message of the transcript longer
//! than its share of the room left is shortened in the middle, so each one
//! is still seen ([`memory_summary_engine::render::within`]).

use memory_core::{ChatRequest, MemoryError, Message, ModelOptions, TokenCounter};
use memory_summary_engine::render;
use memory_summary_engine::sections::{CONVERSATION, CURRENT_REQUEST, PREVIOUS_SUMMARY, Section};

/// What Compact's summarizer is asked to write: a summary under fixed
/// headings, merged with the previous one, which the request hands over
/// apart from the transcript.
///
/// It differs from the prompt of `memory-summarize`'s strategy because the
/// requests differ: Compact frames the material itself (the previous summary,
/// the current request and the transcript in their own sections) and rolls
/// one summary forward, headings and all, from compaction to compaction;
/// that strategy sends the bare transcript, the previous summary as its
/// first entry, so its prompt says how to treat a leading summary.
///
/// ```
/// assert!(memory_compact::DEFAULT_COMPACT_PROMPT.contains("## Goals"));
/// ```
pub const DEFAULT_COMPACT_PROMPT: &str = "\
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

/// The default limit on one summary request's input (prompt, previous
/// summary, instructions and transcript), in tokens of the strategy's
/// counter: about 48,000 characters of English text.
///
/// Lower than the default of `memory-summarize`'s strategy on purpose: a
/// compaction sends all its material in one request (two for a split turn),
/// shortening long messages to fit, where that strategy folds a long
/// transcript in chunks; so this limit must stay below the summarizer's
/// context window less the summary cap.
///
/// ```
/// assert_eq!(memory_compact::DEFAULT_MAX_INPUT_TOKENS, 12_000);
/// ```
pub const DEFAULT_MAX_INPUT_TOKENS: usize = 12_000;

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

/// How every request of a compaction is written.
#[derive(Debug, Clone)]
pub(crate) struct Template<'a> {
    /// The system message.
    pub prompt: &'a str,
    /// Custom instructions, after the transcript.
    pub instructions: Option<&'a str>,
    /// The limit on the whole request, in tokens.
    pub max_input_tokens: usize,
    /// What every request carries (the summary cap as `max_tokens`).
    pub options: ModelOptions,
}

impl Template<'_> {
    /// The request for `part`, its transcript fitted to the room the rest
    /// of the request leaves under the input limit.
    ///
    /// # Errors
    ///
    /// Counting failed.
    pub async fn request(
        &self,
        part: Part<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<ChatRequest, MemoryError> {
        let head = head(part);
        let tail = tail(part, self.instructions);
        let frame = counter.count(self.prompt).await?
            + counter.count(&head).await?
            + counter.count(&tail).await?;
        let room = self.max_input_tokens.saturating_sub(frame);
        let conversation = render::within(part.messages, room, counter).await?;
        let text = format!("{head}{conversation}{tail}");
        let mut request = ChatRequest::new(vec![Message::system(self.prompt), Message::user(text)]);
        request.options = self.options.clone();
        Ok(request)
    }
}

/// What comes before the transcript: the previous summary, the current
/// request, the opening tag.
fn head(part: Part<'_>) -> String {
    let mut text = String::new();
    if let Some(previous) = part.previous {
        text.push_str("Your previous summary, to merge with the new material:\n");
        push_section(&mut text, PREVIOUS_SUMMARY, previous);
    }
    if let Some(question) = part.question {
        text.push_str(
            "The user's current request, which stays in the context verbatim after your summary:\n",
        );
        push_section(&mut text, CURRENT_REQUEST, question);
    }
    text.push_str(CONVERSATION.open);
    text.push('\n');
    text
}

/// Appends `content` in `section`'s tags, then a blank line.
fn push_section(text: &mut String, section: Section, content: &str) {
    text.push_str(section.open);
    text.push('\n');
    text.push_str(content);
    text.push('\n');
    text.push_str(section.close);
    text.push_str("\n\n");
}

/// What comes after the transcript: the closing tag, the task, the custom
/// instructions.
fn tail(part: Part<'_>, instructions: Option<&str>) -> String {
    let mut text = format!("\n{}\n\n", CONVERSATION.close);
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
    text
}

#[cfg(test)]
mod tests {
    use memory_core::CharTokenCounter;

    use super::*;

    fn template(max_input_tokens: usize) -> Template<'static> {
        Template {
            prompt: DEFAULT_COMPACT_PROMPT,
            instructions: Some("mention every test name"),
            max_input_tokens,
            options: ModelOptions::default(),
        }
    }

    #[tokio::test]
    async fn the_request_holds_the_previous_summary_question_transcript_and_instructions() {
        let messages = [Message::user("rename foo"), Message::assistant("renamed")];
        let part = Part {
            messages: &messages,
            previous: Some("## Goals\nold"),
            question: Some("ship it"),
        };
        let request = template(1_000)
            .request(part, &CharTokenCounter)
            .await
            .unwrap();
        assert_eq!(request.messages[0], Message::system(DEFAULT_COMPACT_PROMPT));
        let text = request.messages[1].text();
        for part in [
            "<previous-summary>\n## Goals\nold\n</previous-summary>",
            "<current-request>\nship it\n</current-request>",
            "<conversation>\nuser: rename foo\nassistant: renamed\n</conversation>",
            "Additional instructions: mention every test name",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
    }

    #[tokio::test]
    async fn long_messages_are_shortened_in_the_middle_to_their_share() {
        let long = format!("BEGIN{}END", "x".repeat(5_000));
        let messages = [Message::tool_result("c1", long), Message::user("short")];
        let text = render::within(&messages, 250, &CharTokenCounter)
            .await
            .unwrap();
        assert!(text.contains("tool result (c1): BEGIN"));
        assert!(text.contains("END\nuser: short"));
        assert!(text.contains("characters left out"));
        assert!(text.chars().count() < 700);
        // Within the limit nothing changes.
        let short = render::within(&messages[1..], 250, &CharTokenCounter)
            .await
            .unwrap();
        assert_eq!(short, "user: short");
        assert_eq!(
            render::shorten("abcdef", 3),
            "ab\n[... 3 characters left out ...]\nf"
        );
    }

    #[tokio::test]
    async fn the_limit_covers_the_whole_request_not_only_the_transcript() {
        let long = "y".repeat(8_000);
        let messages = [Message::user(long)];
        let counter = CharTokenCounter;
        let frame = counter.count(DEFAULT_COMPACT_PROMPT).await.unwrap();
        // Room for the transcript: the limit less the prompt and the frame.
        let request = template(frame + 1_200)
            .request(
                Part {
                    messages: &messages,
                    previous: None,
                    question: None,
                },
                &counter,
            )
            .await
            .unwrap();
        let sent = counter.count(&request.messages[1].text()).await.unwrap();
        // Within the limit, give or take the note of what was left out.
        assert!((1_100..=1_220).contains(&sent), "{sent}");
        assert!(request.messages[1].text().contains("characters left out"));
    }
}
