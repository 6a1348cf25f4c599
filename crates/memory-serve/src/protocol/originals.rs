//! [`Originals`]: the messages of a request as the client wrote them, for
//! the ones the neutral [`Message`] does not hold whole.
//!
//! A front decodes each wire message into [`Message`]s; where encoding
//! them back would not give what the client sent (a signature, a
//! `cache_control`, a block this server does not know), the wire form is
//! kept under the digest of the message it decoded to. The upstream's
//! encoder, in the same protocol, sends a context message whose digest it
//! finds as it came: what the pipeline kept unchanged reaches the upstream
//! JSON-equal, and what it cut or made (a shortened result, a summary)
//! has no original and is encoded afresh.

use std::collections::{HashMap, VecDeque};

use memory_core::Message;
use serde_json::{Map, Value};

/// The wire form of one decoded message.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Original {
    /// For a protocol that puts several messages in one (Anthropic's
    /// tool results and text in one user turn): its blocks, in order.
    /// For one that does not: the message itself, as one value.
    pub(crate) blocks: Vec<Value>,
    /// Whether the content came as a string (one text block).
    pub(crate) string: bool,
    /// The wire message's fields other than its role and content.
    pub(crate) fields: Map<String, Value>,
    /// Whether it opened its wire message (a later one continues it).
    pub(crate) opens: bool,
    /// Whether it came as the request's `system` field (Anthropic's), not
    /// as a turn.
    #[serde(default)]
    pub(crate) in_system: bool,
}

/// The originals of a request's messages, each under the digest of the
/// message it was decoded to (so that a transcript repaired since, its
/// messages moved, dropped or made, still finds each its own).
#[derive(Debug, Clone, Default)]
pub(crate) struct Originals {
    /// Whether they are kept at all (only an upstream of the front's
    /// protocol has a use for them).
    keeps: bool,
    list: Vec<([u8; 32], Original)>,
}

impl Originals {
    /// Originals to be kept, or (`keeps` false) none.
    pub(crate) fn new(keeps: bool) -> Self {
        Self {
            keeps,
            list: Vec::new(),
        }
    }

    /// Keeps the original of the next decoded message, `message` (`None`:
    /// it encodes back as it came).
    pub(crate) fn push(&mut self, message: &Message, original: Option<Original>) {
        if let Some(original) = original.filter(|_| self.keeps) {
            self.list.push((digest(message), original));
        }
    }

    /// The originals of `messages` that are kept, each with its message's
    /// digest (what a named session stores, for its later calls that do
    /// not send these messages again).
    pub(crate) fn kept_for(&self, messages: &[Message]) -> Vec<([u8; 32], &Original)> {
        if self.list.is_empty() || messages.is_empty() {
            return Vec::new();
        }
        let wanted: std::collections::HashSet<[u8; 32]> = messages.iter().map(digest).collect();
        self.list
            .iter()
            .filter(|(key, _)| wanted.contains(key))
            .map(|(key, o)| (*key, o))
            .collect()
    }

    /// The originals of `context`, in order (`None` for a message that has
    /// none), found by digest among this request's, then among `stored`
    /// (those a named session kept from earlier calls) for a message this
    /// request did not send; a message sent twice takes its originals in
    /// turn.
    pub(crate) fn of<'a>(
        &'a self,
        context: &[Message],
        stored: &'a [([u8; 32], Original)],
    ) -> Vec<Option<&'a Original>> {
        if self.list.is_empty() && stored.is_empty() {
            return vec![None; context.len()];
        }
        let mut by_digest: HashMap<[u8; 32], VecDeque<&Original>> = HashMap::new();
        for (key, o) in &self.list {
            by_digest.entry(*key).or_default().push_back(o);
        }
        for (key, o) in stored {
            if !self.list.iter().any(|(k, _)| k == key) {
                by_digest.entry(*key).or_default().push_back(o);
            }
        }
        let mut taken: HashMap<[u8; 32], usize> = HashMap::new();
        context
            .iter()
            .map(|m| {
                let key = digest(m);
                let list = by_digest.get(&key)?;
                let n = taken.entry(key).or_default();
                let original = list.get(*n).or_else(|| list.back()).copied();
                *n += 1;
                original
            })
            .collect()
    }
}

/// What identifies a message exactly: what the chain hashes of it
/// ([`crate::chain::feed`]), and what it leaves out (reasoning, a result's
/// tool name), hashed as they are, with no encoding on the way.
fn digest(message: &Message) -> [u8; 32] {
    use crate::chain::{feed, field};
    let mut hasher = blake3::Hasher::new();
    feed(&mut hasher, message);
    match message {
        Message::Assistant {
            reasoning: Some(r), ..
        } => {
            field(&mut hasher, b"reasoning");
            field(&mut hasher, r.as_bytes());
        }
        Message::ToolResult { name: Some(n), .. } => {
            field(&mut hasher, b"name");
            field(&mut hasher, n.as_bytes());
        }
        _ => {}
    }
    *hasher.finalize().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn original(tag: &str) -> Original {
        Original {
            blocks: vec![Value::String(tag.into())],
            string: false,
            fields: Map::new(),
            opens: true,
            in_system: false,
        }
    }

    #[test]
    fn what_the_chain_leaves_out_tells_messages_apart() {
        let thought = |r: Option<&str>| Message::Assistant {
            content: "ok".into(),
            reasoning: r.map(str::to_string),
            tool_calls: Vec::new(),
        };
        assert_ne!(digest(&thought(None)), digest(&thought(Some(""))));
        assert_ne!(digest(&thought(Some("a"))), digest(&thought(Some("b"))));
        let named = Message::ToolResult {
            tool_call_id: "c".into(),
            content: "x".into(),
            name: Some("ls".into()),
        };
        assert_ne!(digest(&named), digest(&Message::tool_result("c", "x")));
    }

    #[test]
    fn a_changed_message_has_no_original_and_repeats_take_theirs_in_turn() {
        let mut o = Originals::new(true);
        o.push(&Message::user("a"), Some(original("a1")));
        o.push(&Message::user("a"), Some(original("a2")));
        let stored = [
            (digest(&Message::user("a")), original("old")),
            (digest(&Message::user("c")), original("c0")),
        ];
        let found = o.of(
            &[
                Message::user("a"),
                Message::user("b"),
                Message::user("a"),
                Message::user("c"),
            ],
            &stored,
        );
        assert_eq!(found[0], Some(&original("a1")));
        assert_eq!(found[1], None);
        assert_eq!(found[2], Some(&original("a2")));
        // What the request sends wins over what an earlier call kept.
        assert_eq!(found[3], Some(&original("c0")));
    }
}
