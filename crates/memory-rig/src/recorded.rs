//! [`Recorded`]: what a conversation recorded, so that trimmed messages of
//! ours go back to Rig as the very messages Rig appended.

use std::collections::HashMap;

use memory_core::Message;
use rig_core::completion::Message as RigMessage;
use rig_core::message::{AssistantContent, AssistantMessage, UserContent};
use serde::{Deserialize, Serialize};

use crate::convert::{ConvertError, to_ours, to_rig};

/// What one message of ours carries of the Rig message it came from: its
/// place among the messages that Rig message became, and the Rig message
/// itself when the default conversion ([`to_rig`]) would not give it back.
///
/// ```
/// use rig_core::completion::Message as RigMessage;
/// let mut recorded = memory_rig::Recorded::new();
/// let parts = recorded.record(&RigMessage::user("hi"));
/// assert!(!parts[0].1.holds_original()); // plain text needs nothing carried
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Carry {
    part: usize,
    of: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rig: Option<RigMessage>,
}

impl Carry {
    /// Whether it holds the Rig original (the default conversion would lose
    /// something of it).
    ///
    /// ```
    /// let mut recorded = memory_rig::Recorded::new();
    /// let parts = recorded.record(&rig_core::completion::Message::assistant("ok"));
    /// assert!(!parts[0].1.holds_original());
    /// ```
    pub fn holds_original(&self) -> bool {
        self.rig.is_some()
    }
}

/// The messages of one conversation as recorded: each message of ours with
/// its [`Carry`], and the Rig originals.
///
/// [`restore`](Recorded::restore) turns a trimmed context of ours back into
/// Rig's messages: a message shown as it was recorded goes back as the Rig
/// message it came from, exactly (block order, provider items, origin and
/// stop reason included); a message a strategy made or shrank (a summary, a
/// truncated tool output) goes back by the default conversion, with what
/// is known of its tool calls and results (provider items, error flags,
/// origin) taken from the originals by call id.
///
/// ```
/// use rig_core::completion::Message as RigMessage;
/// let mut recorded = memory_rig::Recorded::new();
/// let rig = vec![RigMessage::user("hi"), RigMessage::assistant("hello")];
/// let ours: Vec<_> = rig.iter().flat_map(|m| recorded.record(m)).map(|(m, _)| m).collect();
/// assert_eq!(recorded.restore(&ours).unwrap(), rig);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    messages: Vec<Message>,
    carries: Vec<Carry>,
    /// For each message of ours, the index of its Rig original.
    original_of: Vec<usize>,
    originals: Vec<RigMessage>,
    /// Tool call id to the original holding the call or the result.
    calls: HashMap<String, usize>,
    results: HashMap<String, usize>,
}

impl Recorded {
    /// Nothing recorded yet.
    ///
    /// ```
    /// assert!(memory_rig::Recorded::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuilds what was recorded from the messages of ours and their
    /// carries, as a store kept them. Messages without a carry (a write
    /// cut short between the two) go back by the default conversion.
    ///
    /// # Errors
    ///
    /// [`ConvertError::BadCarry`] when a carry does not fit its messages.
    ///
    /// ```
    /// use rig_core::completion::Message as RigMessage;
    /// let mut recorded = memory_rig::Recorded::new();
    /// let (ours, carries): (Vec<_>, Vec<_>) = recorded.record(&RigMessage::user("hi")).into_iter().unzip();
    /// let again = memory_rig::Recorded::from_parts(ours, carries).unwrap();
    /// assert_eq!(again.originals(), &[RigMessage::user("hi")]);
    /// ```
    pub fn from_parts(messages: Vec<Message>, carries: Vec<Carry>) -> Result<Self, ConvertError> {
        let mut recorded = Self::new();
        let mut carries = carries.into_iter();
        let mut position = 0;
        while position < messages.len() {
            let carry = carries.next().unwrap_or(Carry {
                part: 0,
                of: 1,
                rig: None,
            });
            let bad = |what: &str| ConvertError::BadCarry {
                position,
                what: what.to_owned(),
            };
            if carry.part != 0 || carry.of == 0 || position + carry.of > messages.len() {
                return Err(bad("a group does not start here or runs past the messages"));
            }
            let group = &messages[position..position + carry.of];
            let original = match carry.rig.clone() {
                Some(rig) => rig,
                None => match to_rig(group)?.as_slice() {
                    [one] => one.clone(),
                    _ => return Err(bad("its messages are not one Rig message")),
                },
            };
            let mut group_carries = vec![carry];
            for part in 1..group.len() {
                let next = carries.next().ok_or_else(|| bad("a group is cut short"))?;
                if next.part != part || next.of != group.len() {
                    return Err(bad("a group's parts are out of order"));
                }
                group_carries.push(next);
            }
            recorded.push(original, group.to_vec(), group_carries);
            position += group.len();
        }
        Ok(recorded)
    }

    /// Records one Rig message: returns the messages of ours it becomes,
    /// each with its carry (to keep beside it in a store).
    ///
    /// ```
    /// use rig_core::completion::Message as RigMessage;
    /// let mut recorded = memory_rig::Recorded::new();
    /// assert_eq!(recorded.record(&RigMessage::user("hi")).len(), 1);
    /// assert_eq!(recorded.len(), 1);
    /// ```
    pub fn record(&mut self, message: &RigMessage) -> Vec<(Message, Carry)> {
        let ours = to_ours(message);
        let exact = matches!(to_rig(&ours).as_deref(), Ok([one]) if one == message);
        let carries: Vec<Carry> = (0..ours.len())
            .map(|part| Carry {
                part,
                of: ours.len(),
                rig: (part == 0 && !exact).then(|| message.clone()),
            })
            .collect();
        self.push(message.clone(), ours.clone(), carries.clone());
        ours.into_iter().zip(carries).collect()
    }

    fn push(&mut self, original: RigMessage, ours: Vec<Message>, carries: Vec<Carry>) {
        let index = self.originals.len();
        match &original {
            RigMessage::Assistant(turn) => {
                for call in turn.tool_calls() {
                    self.calls.insert(call.id.wire().into_owned(), index);
                }
            }
            RigMessage::User { content } => {
                for item in content {
                    if let UserContent::ToolResult(result) = item {
                        self.results.insert(result.call.wire().into_owned(), index);
                    }
                }
            }
            RigMessage::System { .. } => {}
        }
        self.original_of
            .extend(std::iter::repeat_n(index, ours.len()));
        self.messages.extend(ours);
        self.carries.extend(carries);
        self.originals.push(original);
    }

    /// Number of messages of ours recorded.
    ///
    /// ```
    /// assert_eq!(memory_rig::Recorded::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether nothing is recorded.
    ///
    /// ```
    /// assert!(memory_rig::Recorded::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Every Rig message recorded, in order.
    ///
    /// ```
    /// assert!(memory_rig::Recorded::new().originals().is_empty());
    /// ```
    pub fn originals(&self) -> &[RigMessage] {
        &self.originals
    }

    /// A context of ours (a trimmed view of what was recorded) as Rig's
    /// messages; see the type's documentation.
    ///
    /// # Errors
    ///
    /// [`ConvertError`] from the default conversion.
    ///
    /// ```
    /// use memory_core::summary;
    /// let recorded = memory_rig::Recorded::new();
    /// let rig = recorded.restore(&[summary::message("earlier turns")]).unwrap();
    /// assert_eq!(rig.len(), 1);
    /// ```
    pub fn restore(&self, messages: &[Message]) -> Result<Vec<RigMessage>, ConvertError> {
        let matched = self.match_positions(messages);
        let mut out = Vec::new();
        let mut loose: Vec<Message> = Vec::new();
        let mut j = 0;
        while j < messages.len() {
            if let Some(len) = self.whole_group_at(&matched, j) {
                self.flush(&mut loose, &mut out)?;
                let position = matched[j].expect("a whole group is matched");
                out.push(self.originals[self.original_of[position]].clone());
                j += len;
            } else {
                loose.push(messages[j].clone());
                j += 1;
            }
        }
        self.flush(&mut loose, &mut out)?;
        Ok(out)
    }

    /// For each message, the recorded position it is shown unchanged from:
    /// matched from the newest back, since trimming keeps order.
    fn match_positions(&self, messages: &[Message]) -> Vec<Option<usize>> {
        let mut bound = self.messages.len();
        let mut matched = vec![None; messages.len()];
        for (j, message) in messages.iter().enumerate().rev() {
            if let Some(p) = self.messages[..bound].iter().rposition(|m| m == message) {
                matched[j] = Some(p);
                bound = p;
            }
        }
        matched
    }

    /// The length of the group starting at `j` when all of it is shown
    /// unchanged and in one piece.
    fn whole_group_at(&self, matched: &[Option<usize>], j: usize) -> Option<usize> {
        let start = matched[j]?;
        let carry = &self.carries[start];
        let whole = carry.part == 0
            && (1..carry.of).all(|t| matched.get(j + t).copied().flatten() == Some(start + t));
        whole.then_some(carry.of)
    }

    /// Converts messages a strategy made or changed, with what the originals
    /// know of their tool calls and results.
    fn flush(
        &self,
        loose: &mut Vec<Message>,
        out: &mut Vec<RigMessage>,
    ) -> Result<(), ConvertError> {
        if loose.is_empty() {
            return Ok(());
        }
        for message in to_rig(&std::mem::take(loose))? {
            out.push(self.enrich(message));
        }
        Ok(())
    }

    fn enrich(&self, message: RigMessage) -> RigMessage {
        match message {
            RigMessage::Assistant(turn) => RigMessage::Assistant(self.enrich_turn(turn)),
            RigMessage::User { mut content } => {
                for item in &mut content {
                    if let UserContent::ToolResult(result) = item
                        && let Some(RigMessage::User { content: original }) = self
                            .results
                            .get(&*result.call.wire())
                            .map(|&i| &self.originals[i])
                        && let Some(UserContent::ToolResult(was)) = original.iter().find(
                            |o| matches!(o, UserContent::ToolResult(r) if r.call == result.call),
                        )
                    {
                        result.is_error = was.is_error;
                        result.name = was.name.clone();
                    }
                }
                RigMessage::User { content }
            }
            system => system,
        }
    }

    /// A changed assistant turn keeps its origin and stop reason, and each
    /// of its tool calls the provider item it came with.
    fn enrich_turn(&self, turn: AssistantMessage) -> AssistantMessage {
        let Some(RigMessage::Assistant(original)) = turn
            .tool_calls()
            .find_map(|call| self.calls.get(&*call.id.wire()))
            .map(|&i| &self.originals[i])
        else {
            return turn;
        };
        let content = turn
            .content
            .iter()
            .map(|block| match block {
                AssistantContent::ToolCall(call) => original
                    .tool_calls()
                    .find(|was| was.id == call.id && was.function == call.function)
                    .map_or_else(
                        || block.clone(),
                        |was| AssistantContent::ToolCall(was.clone()),
                    ),
                other => other.clone(),
            })
            .collect();
        AssistantMessage::new(content)
            .with_origin(original.origin.clone())
            .with_stop(original.stop.clone())
    }
}
