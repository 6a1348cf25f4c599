//! [`Chain`]: the hash chain that finds a session by the history a client
//! sends.
//!
//! The link at position `k` hashes the link before it with message `k`, so
//! two histories share a link exactly when they share every message up to
//! it. What a message contributes is what a client echoes back: its role,
//! its texts and images, its tool calls and the call a result answers. Its
//! reasoning is left out (clients rarely send it back), and so is the name
//! of a tool result.

use memory_core::{ContentBlock, Message};

/// One link of a hash chain: 32 bytes, shown as 64 hex digits.
///
/// ```
/// use memory_core::Message;
/// use memory_serve::Chain;
/// let a = Chain::START.then(&Message::user("hi"));
/// let b = Chain::START.then(&Message::user("hi"));
/// assert_eq!(a, b);
/// assert_ne!(a.then(&Message::assistant("x")), a.then(&Message::assistant("y")));
/// assert_eq!(a.to_hex().len(), 64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chain([u8; 32]);

impl Chain {
    /// The link before the first message.
    pub const START: Chain = Chain([0; 32]);

    /// The link after `message`.
    ///
    /// ```
    /// use memory_core::Message;
    /// use memory_serve::Chain;
    /// // Reasoning is not part of what is matched.
    /// let with = Message::Assistant { content: "ok".into(), reasoning: Some("hm".into()), tool_calls: vec![] };
    /// assert_eq!(Chain::START.then(&with), Chain::START.then(&Message::assistant("ok")));
    /// ```
    pub fn then(&self, message: &Message) -> Chain {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&self.0);
        feed(&mut hasher, message);
        Chain(*hasher.finalize().as_bytes())
    }

    /// The links after each message of `messages`, starting from `self`.
    ///
    /// ```
    /// use memory_core::Message;
    /// use memory_serve::Chain;
    /// let links = Chain::START.links(&[Message::user("a"), Message::user("b")]);
    /// assert_eq!(links[1], links[0].then(&Message::user("b")));
    /// ```
    pub fn links(&self, messages: &[Message]) -> Vec<Chain> {
        let mut link = *self;
        messages
            .iter()
            .map(|m| {
                link = link.then(m);
                link
            })
            .collect()
    }

    /// The link as 64 lowercase hex digits.
    ///
    /// ```
    /// assert!(memory_serve::Chain::START.to_hex().chars().all(|c| c == '0'));
    /// ```
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses [`to_hex`](Chain::to_hex)'s form.
    ///
    /// ```
    /// use memory_serve::Chain;
    /// let link = Chain::START.then(&memory_core::Message::user("a"));
    /// assert_eq!(Chain::from_hex(&link.to_hex()), Some(link));
    /// assert_eq!(Chain::from_hex("xyz"), None);
    /// ```
    pub fn from_hex(hex: &str) -> Option<Chain> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Chain(bytes))
    }
}

/// Writes a field with its length, so that no two messages feed the same
/// bytes.
pub(crate) fn field(hasher: &mut blake3::Hasher, bytes: &[u8]) {
    hasher.update(&(bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

pub(crate) fn feed(hasher: &mut blake3::Hasher, message: &Message) {
    field(hasher, message.role().as_bytes());
    match message {
        Message::System(text) => field(hasher, text.as_bytes()),
        Message::User(blocks) => {
            for block in blocks {
                match block {
                    ContentBlock::Text(t) => {
                        field(hasher, b"text");
                        field(hasher, t.as_bytes());
                    }
                    ContentBlock::Image(image) => {
                        field(hasher, b"image");
                        field(hasher, image.mime_type.as_bytes());
                        field(hasher, &image.data);
                        // Without a detail, the link it had before images
                        // had one.
                        if let Some(detail) = &image.detail {
                            field(hasher, b"detail");
                            field(hasher, detail.as_bytes());
                        }
                    }
                    ContentBlock::Wire(value) => {
                        field(hasher, b"wire");
                        field(hasher, value.to_string().as_bytes());
                    }
                }
            }
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            field(hasher, content.as_bytes());
            for call in tool_calls {
                field(hasher, call.id.as_bytes());
                field(hasher, call.name.as_bytes());
                field(hasher, call.arguments.as_bytes());
            }
        }
        Message::ToolResult {
            tool_call_id,
            content,
            ..
        } => {
            field(hasher, tool_call_id.as_bytes());
            field(hasher, content.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ToolCall;

    #[test]
    fn fields_do_not_run_into_each_other() {
        let a = Message::assistant_with_tools("", vec![ToolCall::new("ab", "c", "{}")]);
        let b = Message::assistant_with_tools("", vec![ToolCall::new("a", "bc", "{}")]);
        assert_ne!(Chain::START.then(&a), Chain::START.then(&b));
        assert_ne!(
            Chain::START.then(&Message::user("x")),
            Chain::START.then(&Message::system("x"))
        );
    }

    #[test]
    fn a_link_depends_on_everything_before_it() {
        let one = Chain::START.links(&[Message::user("a"), Message::user("b")]);
        let two = Chain::START.links(&[Message::user("z"), Message::user("b")]);
        assert_ne!(one[1], two[1]);
    }
}
