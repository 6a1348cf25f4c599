//! A fast 64-bit hash, [`WordHasher`], and the keys built with it: a
//! message's identity ([`message_key`], every field of it), by which a
//! strategy recognizes the messages it has seen before, and the key of its
//! text alone ([`text_key`]). Strategies share these rather than hashing
//! messages each their own way.
//!
//! ```
//! use memory_core::{identity, Message};
//! assert_eq!(identity::message_key(&Message::user("a")), identity::message_key(&Message::user("a")));
//! assert_ne!(identity::message_key(&Message::user("a")), identity::message_key(&Message::assistant("a")));
//! assert_eq!(identity::text_key(&Message::user("a")), identity::text_key(&Message::assistant("a")));
//! ```
//!
//! It reads eight bytes at a time and is not meant to resist crafted
//! collisions: the keys are words and messages of the conversation being
//! trimmed, and a message's identity is only ever compared with the
//! identity of the message that stood at the same position before.

use std::hash::{Hash, Hasher};

use crate::message::{ContentBlock, Message};

/// A multiplicative hash, eight bytes at a time: fast for short words
/// (a term index's keys), the same in every run.
///
/// ```
/// use std::hash::Hasher;
/// let mut h = memory_core::identity::WordHasher::default();
/// h.write(b"parser");
/// assert_ne!(h.finish(), 0);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct WordHasher(u64);

impl WordHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
}

/// The identity of `message`: a hash of every field, each string followed
/// by a marker, so that two messages have the same key only when they are
/// equal, barring a 64-bit collision and strings that differ only by
/// trailing NUL bytes ([`WordHasher`] pads a string's last word with
/// zeros). The keys stay as they are: recall handles are made from them,
/// and stored contexts hold handles.
///
/// ```
/// use memory_core::{identity::message_key, Message};
/// assert_ne!(message_key(&Message::tool_result("1", "a")), message_key(&Message::tool_result("2", "a")));
/// ```
pub fn message_key(message: &Message) -> u64 {
    let mut h = WordHasher::default();
    match message {
        Message::System(text) => {
            h.write_u8(0);
            text.hash(&mut h);
        }
        Message::User(blocks) => {
            h.write_u8(1);
            h.write_usize(blocks.len());
            for block in blocks {
                match block {
                    ContentBlock::Text(text) => {
                        h.write_u8(0);
                        text.hash(&mut h);
                    }
                    ContentBlock::Image(image) => {
                        h.write_u8(1);
                        // An image without a detail keeps the key it had
                        // before images had one.
                        image.mime_type.hash(&mut h);
                        image.data.hash(&mut h);
                        if let Some(detail) = &image.detail {
                            h.write_u8(1);
                            detail.hash(&mut h);
                        }
                    }
                    ContentBlock::Wire(value) => {
                        h.write_u8(2);
                        value.to_string().hash(&mut h);
                    }
                }
            }
        }
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => {
            h.write_u8(2);
            content.hash(&mut h);
            reasoning.hash(&mut h);
            tool_calls.hash(&mut h);
        }
        Message::ToolResult {
            tool_call_id,
            content,
            name,
        } => {
            h.write_u8(3);
            tool_call_id.hash(&mut h);
            content.hash(&mut h);
            name.hash(&mut h);
        }
    }
    avalanche(h.finish())
}

/// A key of `message`'s [text](Message::text) alone: messages with the
/// same text have the same key, whatever else differs.
///
/// ```
/// use memory_core::{identity::text_key, Message};
/// assert_eq!(text_key(&Message::system("a")), text_key(&Message::user("a")));
/// ```
pub fn text_key(message: &Message) -> u64 {
    let mut h = WordHasher::default();
    match message {
        Message::User(_) => message.text().hash(&mut h),
        Message::System(text)
        | Message::Assistant { content: text, .. }
        | Message::ToolResult { content: text, .. } => text.hash(&mut h),
    }
    avalanche(h.finish())
}

/// Spreads every input bit over the whole key (the finalizer of
/// MurmurHash3's 64-bit variant).
fn avalanche(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ImageContent, ToolCall};

    #[test]
    fn every_field_tells_messages_apart() {
        let messages = [
            Message::system("a"),
            Message::user("a"),
            Message::assistant("a"),
            Message::assistant_with_tools("a", vec![ToolCall::new("1", "ls", "{}")]),
            Message::assistant_with_tools("a", vec![ToolCall::new("1", "ls", "{ }")]),
            Message::Assistant {
                content: "a".into(),
                reasoning: Some(String::new()),
                tool_calls: Vec::new(),
            },
            Message::tool_result("1", "a"),
            Message::tool_result("2", "a"),
            Message::ToolResult {
                tool_call_id: "1".into(),
                content: "a".into(),
                name: Some("ls".into()),
            },
            Message::User(vec![
                ContentBlock::Text("a".into()),
                ContentBlock::Text("b".into()),
            ]),
            Message::User(vec![ContentBlock::Text("ab".into())]),
            Message::User(vec![ContentBlock::Image(ImageContent::new(
                "image/png",
                vec![1],
            ))]),
            Message::User(vec![ContentBlock::Image(
                ImageContent::new("image/png", vec![1]).with_detail("low"),
            )]),
            Message::User(vec![ContentBlock::Image(
                ImageContent::new("image/png", vec![1]).with_detail("high"),
            )]),
        ];
        let keys: std::collections::HashSet<u64> = messages.iter().map(message_key).collect();
        assert_eq!(keys.len(), messages.len());
        assert_eq!(
            message_key(&Message::user("same")),
            message_key(&Message::user("same"))
        );
    }

    #[test]
    fn an_image_without_a_detail_keeps_its_key() {
        let image = ImageContent::new("image/png", vec![1, 2, 3]);
        let mut h = WordHasher::default();
        h.write_u8(1);
        h.write_usize(1);
        h.write_u8(1);
        (image.mime_type.clone(), image.data.clone()).hash(&mut h);
        let before = avalanche(h.finish());
        assert_eq!(
            message_key(&Message::User(vec![ContentBlock::Image(image)])),
            before
        );
    }
}
