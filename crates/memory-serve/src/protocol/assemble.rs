//! [`Assembled`]: the reply a stream's [`Event`]s spell, whatever
//! protocol they came in.

use memory_core::{Message, ToolCall};

use super::event::{Event, StopReason, Usage};

/// The reply assembled from a stream's events so far.
#[derive(Debug, Default, Clone)]
pub(crate) struct Assembled {
    pub(crate) id: String,
    pub(crate) model: String,
    content: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    pub(crate) usage: Usage,
    pub(crate) stop: Option<StopReason>,
    done: bool,
    failed: bool,
    /// The first tool called, when a call came before any text.
    first_tool: Option<String>,
    /// Whether text came before any call.
    text_first: bool,
}

impl Assembled {
    /// Takes one event.
    pub(crate) fn take(&mut self, event: &Event) {
        match event {
            Event::Start { id, model } => {
                self.id.clone_from(id);
                self.model.clone_from(model);
            }
            Event::Text(text) => {
                self.content.push_str(text);
                if !text.trim().is_empty() && self.first_tool.is_none() {
                    self.text_first = true;
                }
            }
            Event::Reasoning(text) => self.reasoning.push_str(text),
            Event::ToolStart { index, id, name } => {
                // A call's number comes from the upstream: one past the
                // calls so far at most, so that no number makes room for
                // calls that never come.
                let index = (*index).min(self.calls.len());
                if index == self.calls.len() {
                    self.calls.push(ToolCall::new("", "", String::new()));
                }
                // Some servers send a call's id and name with every piece
                // of it: taken once.
                let call = &mut self.calls[index];
                if call.id.is_empty() {
                    call.id.clone_from(id);
                }
                if call.name.is_empty() {
                    call.name.clone_from(name);
                }
                if !self.text_first && self.first_tool.is_none() && !name.is_empty() {
                    self.first_tool = Some(name.clone());
                }
            }
            Event::ToolArguments { index, json } => {
                if let Some(call) = self.calls.get_mut(*index) {
                    call.arguments.push_str(json);
                }
            }
            Event::Usage(usage) => {
                self.usage.input = usage.input.or(self.usage.input);
                self.usage.output = usage.output.or(self.usage.output);
            }
            Event::Stop(reason) => self.stop = Some(reason.clone()),
            Event::Done => self.done = true,
            Event::Error { .. } => self.failed = true,
        }
    }

    /// What the reply opens with, once known: `Some(None)` for text,
    /// `Some(Some(name))` for a call of tool `name`; `None` while neither
    /// came.
    pub(crate) fn opening(&self) -> Option<Option<&str>> {
        if self.text_first {
            Some(None)
        } else if let Some(name) = &self.first_tool {
            Some(Some(name))
        } else if self.is_finished() {
            Some(None)
        } else {
            None
        }
    }

    /// Whether the stream said it is over.
    pub(crate) fn is_done(&self) -> bool {
        self.done && !self.failed
    }

    /// Whether the reply is complete (its stop reason came, or the end),
    /// and the upstream did not fail.
    pub(crate) fn is_finished(&self) -> bool {
        (self.done || self.stop.is_some()) && !self.failed
    }

    /// The reply as an assistant message.
    pub(crate) fn message(&self) -> Message {
        Message::Assistant {
            content: self.content.clone(),
            reasoning: (!self.reasoning.is_empty()).then(|| self.reasoning.clone()),
            tool_calls: self.calls.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_then_text_opens_with_the_call() {
        let mut a = Assembled::default();
        assert_eq!(a.opening(), None);
        a.take(&Event::ToolStart {
            index: 0,
            id: "c1".into(),
            name: "recall".into(),
        });
        a.take(&Event::ToolArguments {
            index: 0,
            json: "{}".into(),
        });
        a.take(&Event::Text("x".into()));
        assert_eq!(a.opening(), Some(Some("recall")));
        a.take(&Event::Stop(StopReason::ToolUse));
        assert!(a.is_finished() && !a.is_done());
        assert_eq!(
            a.message().tool_calls()[0],
            ToolCall::new("c1", "recall", "{}")
        );
        a.take(&Event::Error {
            message: "gone".into(),
        });
        assert!(!a.is_finished());
    }
}
