//! `context_management.applied_edits`: what the server's pipeline changed
//! in a request's context, in the shape Anthropic reports its own context
//! edits in, on the final message (or the stream's `message_delta`).

use std::collections::HashMap;

use memory_core::Message;
use serde_json::{Value, json};

/// What the pipeline took out of the context a client sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cleared {
    /// Tool results left out or shortened.
    pub(crate) tool_uses: usize,
    /// Assistant turns whose thinking was left out.
    pub(crate) thinking_turns: usize,
}

impl Cleared {
    /// What of `sent` the `context` does not hold as it was sent.
    pub(crate) fn between(sent: &[Message], context: &[Message]) -> Self {
        let kept: HashMap<&str, &Message> = context
            .iter()
            .filter_map(|m| m.tool_call_id().map(|id| (id, m)))
            .collect();
        let tool_uses = sent
            .iter()
            .filter(|m| m.tool_call_id().is_some_and(|id| kept.get(id) != Some(m)))
            .count();
        let thinking = |messages: &[Message]| {
            messages
                .iter()
                .filter(|m| {
                    matches!(
                        m,
                        Message::Assistant {
                            reasoning: Some(_),
                            ..
                        }
                    )
                })
                .count()
        };
        Self {
            tool_uses,
            thinking_turns: thinking(sent).saturating_sub(thinking(context)),
        }
    }

    /// The `context_management` field reporting it, with the tokens the
    /// fitted context holds fewer than the history (`saved`); `None` when
    /// nothing was cleared.
    pub(crate) fn field(self, saved: usize) -> Option<Value> {
        let mut edits = Vec::new();
        if self.tool_uses > 0 || (saved > 0 && self.thinking_turns == 0) {
            edits.push(json!({"type": "clear_tool_uses_20250919",
                "cleared_tool_uses": self.tool_uses, "cleared_input_tokens": saved}));
        }
        if self.thinking_turns > 0 {
            let tokens = if edits.is_empty() { saved } else { 0 };
            edits.push(json!({"type": "clear_thinking_20251015",
                "cleared_thinking_turns": self.thinking_turns, "cleared_input_tokens": tokens}));
        }
        (!edits.is_empty()).then(|| json!({"applied_edits": edits}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ToolCall;

    #[test]
    fn shed_and_shortened_results_are_cleared() {
        let sent = vec![
            Message::user("go"),
            Message::assistant_with_tools("", vec![ToolCall::new("a", "ls", "{}")]),
            Message::tool_result("a", "long output"),
            Message::assistant_with_tools("", vec![ToolCall::new("b", "ls", "{}")]),
            Message::tool_result("b", "other output"),
        ];
        let context = vec![
            Message::user("go"),
            Message::assistant_with_tools("", vec![ToolCall::new("b", "ls", "{}")]),
            Message::tool_result("b", "other [cut]"),
        ];
        let cleared = Cleared::between(&sent, &context);
        assert_eq!(cleared.tool_uses, 2);
        let field = cleared.field(40).unwrap();
        assert_eq!(field["applied_edits"][0]["cleared_tool_uses"], 2);
        assert_eq!(field["applied_edits"][0]["cleared_input_tokens"], 40);
        assert_eq!(Cleared::between(&sent, &sent).field(0), None);
    }
}
