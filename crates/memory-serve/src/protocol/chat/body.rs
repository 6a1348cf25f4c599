//! [`Body`]: a Chat Completions request body for an upstream, written
//! directly: the JSON a `serde_json::Value` of it would be, without
//! building the value (each message's fields put into a map and taken out
//! again, then freed, on every call: it cost the server more than the fit
//! at an 8,000-token context). The messages are written by
//! [`Written`], their fields in one order whatever a map keeps.

use std::borrow::Cow;

use memory_core::Message;
use memory_openai::wire::Written;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

/// The field the messages go in.
const MESSAGES: &str = "messages";

/// A request body: the fields besides the messages, and the messages.
pub(crate) struct Body<'a> {
    rest: Map<String, Value>,
    messages: Vec<Item<'a>>,
}

/// One message of a body: as the client sent it, or as the neutral form
/// encodes it (borrowed, or made for this body).
pub(crate) enum Item<'a> {
    Sent(&'a Value),
    Message(Cow<'a, Message>),
}

impl<'a> Body<'a> {
    /// `messages` in the body of `rest`'s other fields (a `messages` field
    /// among them is replaced).
    pub fn new(rest: Map<String, Value>, messages: Vec<Item<'a>>) -> Self {
        Self { rest, messages }
    }

    /// The body as a value (what it serializes from).
    #[cfg(test)]
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = self.rest.len() + usize::from(!self.rest.contains_key(MESSAGES));
        let mut map = s.serialize_map(Some(fields))?;
        // Among the other fields where a sorted map puts it.
        let mut placed = false;
        for (name, value) in &self.rest {
            if !placed && name.as_str() >= MESSAGES {
                map.serialize_entry(MESSAGES, &Items(&self.messages))?;
                placed = true;
            }
            if name != MESSAGES {
                map.serialize_entry(name, value)?;
            }
        }
        if !placed {
            map.serialize_entry(MESSAGES, &Items(&self.messages))?;
        }
        map.end()
    }
}

/// The messages, in order.
struct Items<'b, 'a>(&'b [Item<'a>]);

impl Serialize for Items<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            match item {
                Item::Sent(value) => seq.serialize_element(value)?,
                Item::Message(message) => seq.serialize_element(&Written(message))?,
            }
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn is_the_value_it_stands_for() {
        let m = [Message::user("hi"), Message::assistant("hello")];
        for rest in [
            json!({}),
            json!({"model": "m"}),
            json!({"model": "m", "stream": true, "tools": [{"type": "function"}]}),
            json!({"max_tokens": 5, "messages": "replaced", "n": 1}),
            json!({"a": 1, "messagesz": 2, "messages0": 3, "message": 4}),
            json!({"z": {"nested": [1, "two", null]}}),
        ] {
            let Value::Object(rest) = rest else {
                unreachable!()
            };
            let sent = json!({"role": "user", "content": "as sent"});
            let items = vec![
                Item::Message(Cow::Borrowed(&m[0])),
                Item::Sent(&sent),
                Item::Message(Cow::Owned(m[1].clone())),
            ];
            let body = Body::new(rest.clone(), items);
            let mut value = rest;
            value.insert(
                MESSAGES.into(),
                json!([
                    memory_openai::wire::message_to_value(&m[0]),
                    {"role": "user", "content": "as sent"},
                    memory_openai::wire::message_to_value(&m[1]),
                ]),
            );
            let written = serde_json::to_string(&body).unwrap();
            let read: Value = serde_json::from_str(&written).unwrap();
            assert_eq!(read, Value::Object(value), "{written}");
        }
    }
}
