//! [`ShrinkCache`]: shrunk messages, made once: a tool output cut head and tail, an
//! assistant message with a placeholder for its reasoning, each with its count, and the
//! count of a tool result's placeholder.
//!
//! Replaying a round (see [`calls`](crate::calls)) sheds several
//! prefixes of the same history afresh, and each call sheds the history
//! again; each pass would otherwise cut and recount the same long outputs
//! and count the same placeholders again. Both depend only on the message
//! (and its count, and Thrift's settings; a placeholder names the original
//! length, which a cut keeps in its marker) and on the counter, so they are
//! kept by the message's position: for the passes of one trim, and in the
//! [memo](crate::memo) from call to call while the message is the one seen
//! before (see [`ShrinkCache::truncate`]) and the counter is the same object
//! with the same framing (see [`ShrinkCache::counted_by`]). A single pass over
//! another history keeps nothing.

use std::sync::Arc;

use memory_core::recall::Handle;
use memory_core::{CounterId, MemoryError, Message, TokenCounter};

use crate::placeholder;

/// A shrunk message and its count; `None` when shrinking changes nothing.
pub(crate) type Made = Option<(Arc<Message>, usize)>;

/// The cuts and placeholder counts made so far, by message position.
#[derive(Debug)]
pub(crate) struct ShrinkCache {
    /// Whether to keep what is made (a single pass gains nothing by it).
    keep: bool,
    cuts: Vec<Option<Made>>,
    /// Assistant messages with a placeholder for their reasoning.
    bare: Vec<Option<Made>>,
    placeholders: Vec<Option<usize>>,
    /// Placeholder messages written for the results kept replaced.
    written: Vec<Option<Arc<Message>>>,
    /// The counter that counted them.
    counter: Option<CounterId>,
    /// A tool result whose strings are reused to count placeholders
    /// without allocating.
    scratch: Message,
    /// The steps of a range of messages, counted: its last count.
    steps: Option<(std::ops::Range<usize>, usize)>,
}

impl Default for ShrinkCache {
    fn default() -> Self {
        Self::kept()
    }
}

impl ShrinkCache {
    /// A store for the passes of one replay, or for the memo.
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
            cuts: Vec::new(),
            bare: Vec::new(),
            placeholders: Vec::new(),
            written: Vec::new(),
            counter: None,
            scratch: Message::tool_result("", ""),
            steps: None,
        }
    }

    /// Forgets what was made of the messages from `len` on.
    pub fn truncate(&mut self, len: usize) {
        self.cuts.truncate(len);
        self.bare.truncate(len);
        self.placeholders.truncate(len);
        self.written.truncate(len);
        if self
            .steps
            .as_ref()
            .is_some_and(|(range, _)| range.end > len)
        {
            self.steps = None;
        }
    }

    /// How many steps the messages `range` of `messages` hold, as
    /// [`structure::steps`](memory_core::structure::steps) splits them;
    /// `range` ends where a step starts. A range that goes on from the one
    /// counted before (the same start, a later end) counts only what it
    /// adds.
    pub fn steps(&mut self, messages: &[Message], range: std::ops::Range<usize>) -> usize {
        let (from, before) = match &self.steps {
            Some((known, count)) if known.start == range.start && known.end <= range.end => {
                (known.end, *count)
            }
            _ => (range.start, 0),
        };
        let count = before + memory_core::structure::steps(&messages[from..range.end]).count();
        if self.keep {
            self.steps = Some((range, count));
        }
        count
    }

    /// Forgets every count unless `counter` is the one that made them
    /// (the same object, with the same framing).
    pub fn counted_by(&mut self, counter: &dyn TokenCounter) {
        let id = CounterId::of(counter);
        if self.counter != Some(id) {
            self.cuts.clear();
            self.bare.clear();
            self.placeholders.clear();
            self.counter = Some(id);
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
        once(self.keep, &mut self.cuts, index, counter, make).await
    }

    /// Assistant message `message` (message `index`, the history's) with
    /// its reasoning replaced by [its placeholder](placeholder::reasoning),
    /// and its count, made the first time only; `None` for a message
    /// without reasoning, or whose placeholder would not be shorter than
    /// its reasoning (a short thought, kept: removed, it would leave no
    /// handle).
    pub async fn bare(
        &mut self,
        index: usize,
        message: &Message,
        counter: &dyn TokenCounter,
    ) -> Result<Made, MemoryError> {
        let make = || match message {
            Message::Assistant {
                content,
                reasoning: Some(_),
                tool_calls,
            } => {
                let with = |reasoning| Message::Assistant {
                    content: content.clone(),
                    reasoning,
                    tool_calls: tool_calls.clone(),
                };
                // A placeholder no shorter than the reasoning (a short
                // thought) is no shrinking, and reasoning removed without
                // one would leave no handle: a short thought stays.
                let marked = with(placeholder::reasoning(message));
                memory_core::is_shrunk_from(message, &marked).then_some(marked)
            }
            _ => None,
        };
        once(self.keep, &mut self.bare, index, counter, make).await
    }

    /// The placeholder message of tool result `message` (message `index`,
    /// as it stands: a cut output names the original's length too), with
    /// the recall handle of `original` (the history's message `index`),
    /// written the first time only.
    pub fn placeholder(&mut self, index: usize, message: &Message, original: &Message) -> Message {
        if !message.is_tool_result() {
            return message.clone();
        }
        if let Some(Some(made)) = self.written.get(index) {
            return Message::clone(made);
        }
        let made = placeholder::tool_result_message(message, handle_of(original));
        if self.keep {
            if self.written.len() <= index {
                self.written.resize(index + 1, None);
            }
            self.written[index] = Some(Arc::new(made.clone()));
        }
        made
    }

    /// Tokens of the placeholder of tool result `message` (message
    /// `index`, whose original in the history is `original`); `None` for
    /// any other message.
    pub async fn placeholder_tokens(
        &mut self,
        index: usize,
        message: &Message,
        original: &Message,
        counter: &dyn TokenCounter,
    ) -> Result<Option<usize>, MemoryError> {
        if let Some(&Some(tokens)) = self.placeholders.get(index) {
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
        placeholder::write_tool_result(content, handle_of(original), text);
        scratch_name.clone_from(name);
        let tokens = counter.count_message(&self.scratch).await?;
        if self.keep {
            if self.placeholders.len() <= index {
                self.placeholders.resize(index + 1, None);
            }
            self.placeholders[index] = Some(tokens);
        }
        Ok(Some(tokens))
    }
}

/// The recall handle of the history's message `original`.
fn handle_of(original: &Message) -> Handle {
    Handle::of(std::slice::from_ref(original))
}

/// What `made` holds for message `index`, made by `make` (and counted)
/// the first time only, and kept there when `keep`.
async fn once(
    keep: bool,
    made: &mut Vec<Option<Made>>,
    index: usize,
    counter: &dyn TokenCounter,
    make: impl FnOnce() -> Option<Message>,
) -> Result<Made, MemoryError> {
    if let Some(Some(known)) = made.get(index) {
        return Ok(known.clone());
    }
    let new = match make() {
        Some(message) => {
            let tokens = counter.count_message(&message).await?;
            Some((Arc::new(message), tokens))
        }
        None => None,
    };
    if keep {
        if made.len() <= index {
            made.resize(index + 1, None);
        }
        made[index] = Some(new.clone());
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{CharTokenCounter, ToolCall};

    fn reasoned(content: &str) -> Message {
        Message::Assistant {
            content: content.into(),
            reasoning: Some("a long thought about it, ".repeat(8)),
            tool_calls: vec![ToolCall::new("c1", "read", "{}")],
        }
    }

    #[tokio::test]
    async fn what_is_made_is_forgotten_with_the_message() {
        let counter = CharTokenCounter;
        let mut shrunk = ShrinkCache::kept();
        shrunk.counted_by(&counter);
        let old = reasoned("old words");
        let (bare, _) = shrunk.bare(3, &old, &counter).await.unwrap().unwrap();
        assert_eq!(bare.text(), "old words");
        // Kept: the same position gives what was made, whatever is asked.
        let new = reasoned("new words");
        let (again, _) = shrunk.bare(3, &new, &counter).await.unwrap().unwrap();
        assert_eq!(again.text(), "old words");
        // Forgotten from the first message that changed on.
        shrunk.truncate(3);
        let (bare, count) = shrunk.bare(3, &new, &counter).await.unwrap().unwrap();
        assert_eq!(bare.text(), "new words");
        assert!(count < counter.count_message(&new).await.unwrap());
        let Message::Assistant { reasoning, .. } = &*bare else {
            panic!("an assistant message");
        };
        assert_eq!(
            reasoning.as_deref(),
            placeholder::reasoning(&new).as_deref()
        );
        assert_eq!(
            memory_core::recall::Handle::all_in(reasoning.as_deref().unwrap()),
            vec![handle_of(&new)]
        );
        assert!(
            shrunk
                .bare(4, &Message::user("q"), &counter)
                .await
                .unwrap()
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_thought_shorter_than_its_placeholder_stays() {
        let counter = CharTokenCounter;
        let short = Message::Assistant {
            content: "ok".into(),
            reasoning: Some("fine".into()),
            tool_calls: vec![],
        };
        let made = ShrinkCache::once().bare(0, &short, &counter).await.unwrap();
        assert!(made.is_none());
    }

    #[test]
    fn steps_are_counted_on_from_the_range_counted_before() {
        let m: Vec<Message> = (0..6)
            .flat_map(|k| {
                let id = format!("c{k}");
                [
                    Message::assistant_with_tools("", vec![ToolCall::new(&id, "ls", "{}")]),
                    Message::tool_result(&id, "out"),
                ]
            })
            .collect();
        let mut shrunk = ShrinkCache::kept();
        assert_eq!(shrunk.steps(&m, 0..4), 2);
        assert_eq!(shrunk.steps(&m, 0..10), 5);
        // Messages from 6 on changed: the count made up to 10 is gone.
        shrunk.truncate(6);
        let mut other = m.clone();
        other[6] = Message::assistant("no calls");
        other[7] = Message::assistant("nor here");
        assert_eq!(shrunk.steps(&other, 0..10), 6);
        // Another start is counted afresh.
        assert_eq!(shrunk.steps(&other, 2..10), 5);
    }
}
