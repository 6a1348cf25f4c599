//! What a request is made of, kept so that a request too large for the
//! model's context can be split: its messages are summarized in two halves,
//! cut between steps, the first half's summary carried into the second's
//! request as the summary to merge.

use memory_core::{CharTokenCounter, ChatRequest, MemoryError, Message, ModelOptions};
use memory_summary_engine::split;

use crate::prompt::{Part, Template};

/// The owned makings of one request: what it summarizes and how requests
/// are written.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
    /// The summary to merge.
    pub previous: Option<String>,
    /// The current request's text, when the messages are its older steps.
    pub question: Option<String>,
    /// The system prompt.
    pub prompt: String,
    /// Custom instructions.
    pub instructions: Option<String>,
    /// The limit on a whole request, in tokens.
    pub max_input_tokens: usize,
    /// What every request carries.
    pub options: ModelOptions,
}

impl Piece {
    /// The makings of the request for `part` written by `template`.
    pub fn of(part: Part<'_>, template: &Template<'_>) -> Self {
        Self {
            messages: part.messages.to_vec(),
            previous: part.previous.map(str::to_string),
            question: part.question.map(str::to_string),
            prompt: template.prompt.to_string(),
            instructions: template.instructions.map(str::to_string),
            max_input_tokens: template.max_input_tokens,
            options: template.options.clone(),
        }
    }

    /// The two halves of this piece, cut at the step boundary nearest the
    /// middle; `None` when it holds a single step. The second half's
    /// summary to merge is filled in once the first is summarized.
    pub fn halves(&self) -> Option<(Piece, Piece)> {
        let cut = split::step_cut(&self.messages)?;
        let first = Piece {
            messages: self.messages[..cut].to_vec(),
            ..self.clone()
        };
        let second = Piece {
            messages: self.messages[cut..].to_vec(),
            previous: None,
            ..self.clone()
        };
        Some((first, second))
    }

    /// The request for this piece (sizes estimated by characters: the
    /// split is a fallback, and the model's own limit is what it answers).
    ///
    /// # Errors
    ///
    /// Counting failed (the estimate does not fail).
    pub async fn request(&self) -> Result<ChatRequest, MemoryError> {
        let template = Template {
            prompt: &self.prompt,
            instructions: self.instructions.as_deref(),
            max_input_tokens: self.max_input_tokens,
            options: self.options.clone(),
        };
        let part = Part {
            messages: &self.messages,
            previous: self.previous.as_deref(),
            question: self.question.as_deref(),
        };
        template.request(part, &CharTokenCounter).await
    }
}

#[cfg(test)]
mod tests {
    use memory_core::ToolCall;

    use super::*;

    fn piece(messages: Vec<Message>) -> Piece {
        Piece {
            messages,
            previous: Some("before".into()),
            question: None,
            prompt: "prompt".into(),
            instructions: None,
            max_input_tokens: 10_000,
            options: ModelOptions::default(),
        }
    }

    #[test]
    fn halves_are_cut_between_steps_near_the_middle() {
        let messages = vec![
            Message::user("a"),
            Message::assistant_with_tools("", vec![ToolCall::new("c1", "read", "{}")]),
            Message::tool_result("c1", "x"),
            Message::assistant("b"),
            Message::user("c"),
            Message::assistant("d"),
        ];
        let (first, second) = piece(messages.clone()).halves().unwrap();
        assert_eq!(first.messages.len() + second.messages.len(), messages.len());
        assert!(memory_core::validate(&first.messages).is_empty());
        assert!(memory_core::validate(&second.messages).is_empty());
        assert_eq!(first.previous.as_deref(), Some("before"));
        assert_eq!(second.previous, None);
        assert!(piece(vec![Message::user("only")]).halves().is_none());
    }
}
