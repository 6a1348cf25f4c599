//! [`KindPositions`]: where the messages of each kind the cheap stages
//! look at are, so that a stage visits those rather than every message.

use std::ops::Range;

use memory_core::Message;

use crate::{cut, observation, placeholder};

/// Positions of the user messages (where the rounds start) and of the
/// messages the cheap stages look at, ascending: every other message is
/// passed over by them.
#[derive(Debug, Clone, Default)]
pub(crate) struct KindPositions {
    /// User messages.
    pub users: Vec<usize>,
    /// Tool results.
    pub results: Vec<usize>,
    /// Tool results not replaced by a placeholder already.
    pub replaceable: Vec<usize>,
    /// Of those, the ones not cut already.
    pub cuttable: Vec<usize>,
    /// Assistant messages with reasoning.
    pub reasoned: Vec<usize>,
    /// User messages with blocks other than text.
    pub media: Vec<usize>,
    /// Observations of text-only agents ([`observation::is_observation`]) not
    /// cut already.
    pub observations: Vec<usize>,
}

impl KindPositions {
    /// Lists message `i` of `messages`, whose messages before it are
    /// listed.
    pub fn push(&mut self, messages: &[Message], i: usize) {
        let message = &messages[i];
        if message.is_user() {
            self.users.push(i);
            if observation::is_observation(messages, i) && !cut::is_cut(&message.text()) {
                self.observations.push(i);
            }
        }
        match message {
            Message::ToolResult { content, .. } => {
                self.results.push(i);
                if !placeholder::is_placeholder(content) {
                    self.replaceable.push(i);
                    if !cut::is_cut(content) {
                        self.cuttable.push(i);
                    }
                }
            }
            Message::Assistant { .. } if placeholder::thought(message).is_some() => {
                self.reasoned.push(i);
            }
            Message::User(blocks) if blocks.iter().any(|b| b.as_text().is_none()) => {
                self.media.push(i);
            }
            _ => {}
        }
    }

    /// Forgets the messages from `len` on.
    pub fn truncate(&mut self, len: usize) {
        for list in [
            &mut self.users,
            &mut self.results,
            &mut self.replaceable,
            &mut self.cuttable,
            &mut self.reasoned,
            &mut self.media,
            &mut self.observations,
        ] {
            list.truncate(list.partition_point(|&i| i < len));
        }
    }

    /// The current question of the first `len` messages (as
    /// [`structure::current_question`](memory_core::structure::current_question)
    /// finds it).
    pub fn question(&self, len: usize) -> Option<usize> {
        Self::within(&self.users, 0..len).last().copied()
    }

    /// Of the positions in `list`, those in `range`.
    pub fn within(list: &[usize], range: Range<usize>) -> &[usize] {
        let from = list.partition_point(|&i| i < range.start);
        let to = list.partition_point(|&i| i < range.end).max(from);
        &list[from..to]
    }
}
