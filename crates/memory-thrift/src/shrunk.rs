//! Shrunk messages made once per trim: a tool output cut head and tail,
//! with its count, and the count of a tool result's placeholder.
//!
//! Replaying a round (see [`settle`](crate::settle)) sheds several
//! prefixes of the same history afresh, and each pass would otherwise cut
//! and recount the same long outputs and count the same placeholders
//! again. Both depend only on the message (a placeholder names the
//! original length, which a cut keeps in its marker), so the passes of a
//! replay keep them here by the message's index; a single pass does not
//! keep them.

use std::collections::HashMap;

use memory_core::{MemoryError, Message, TokenCounter};

use crate::placeholder;

/// A shrunk message and its count; `None` when shrinking changes nothing.
type Made = Option<(Message, usize)>;

/// The cuts and placeholder counts made so far, by message index.
pub(crate) struct Shrunk {
    /// Whether to keep what is made (a single pass gains nothing by it).
    keep: bool,
    cuts: HashMap<usize, Made>,
    placeholders: HashMap<usize, usize>,
    /// A tool result whose strings are reused to count placeholders
    /// without allocating.
    scratch: Message,
}

impl Shrunk {
    /// A store for the passes of one replay.
    pub fn kept() -> Self {
        Self {
            keep: true,
            ..Self::once()
        }
    }

    /// For a single pass: makes each shrunk message without keeping it.
    pub fn once() -> Self {
        Self {
            keep: false,
            cuts: HashMap::new(),
            placeholders: HashMap::new(),
            scratch: Message::tool_result("", ""),
        }
    }

    /// Message `index` cut, made by `make` (and counted) the first time
    /// only.
    pub async fn cut(
        &mut self,
        index: usize,
        counter: &dyn TokenCounter,
        make: impl FnOnce() -> Option<Message>,
    ) -> Result<Made, MemoryError> {
        if let Some(made) = self.cuts.get(&index) {
            return Ok(made.clone());
        }
        let made = match make() {
            Some(message) => {
                let tokens = counter.count_message(&message).await?;
                Some((message, tokens))
            }
            None => None,
        };
        if self.keep {
            self.cuts.insert(index, made.clone());
        }
        Ok(made)
    }

    /// Tokens of the placeholder of tool result `message` (message
    /// `index`); `None` for any other message.
    pub async fn placeholder_tokens(
        &mut self,
        index: usize,
        message: &Message,
        counter: &dyn TokenCounter,
    ) -> Result<Option<usize>, MemoryError> {
        if let Some(&tokens) = self.placeholders.get(&index) {
            return Ok(Some(tokens));
        }
        let (
            Message::ToolResult {
                tool_call_id,
                content,
                name,
            },
            Message::ToolResult {
                tool_call_id: id,
                content: text,
                name: scratch_name,
            },
        ) = (message, &mut self.scratch)
        else {
            return Ok(None);
        };
        id.clear();
        id.push_str(tool_call_id);
        placeholder::write_tool_result(content, text);
        scratch_name.clone_from(name);
        let tokens = counter.count_message(&self.scratch).await?;
        if self.keep {
            self.placeholders.insert(index, tokens);
        }
        Ok(Some(tokens))
    }
}
