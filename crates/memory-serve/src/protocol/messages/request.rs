//! A Messages request: decoded from a client, encoded for an upstream.
//!
//! `system` (a string or text blocks) becomes the leading system message;
//! each user turn its tool results and its other blocks, each assistant
//! turn one assistant message. Every piece keeps its wire blocks as its
//! original, so that a same-protocol upstream gets the turns as they came
//! ([`crate::protocol::originals`]).

use memory_core::Message;
use memory_openai::wire;
use serde_json::{Map, Value, json};

use super::blocks::{self, Piece};
use crate::ApiError;
use crate::protocol::options::ToolSpec;
use crate::protocol::originals::{Original, Originals};
use crate::protocol::{Decoded, Protocol};
use crate::request::{flag, limit, object_body};

/// Decodes a request body.
pub(crate) fn decode(body: &[u8], keep: bool) -> Result<Decoded, ApiError> {
    let mut rest = object_body(body)?;
    let turns = match rest.remove("messages") {
        Some(Value::Array(turns)) => turns,
        None => {
            return Err(ApiError::bad_request(
                "field `messages` is missing",
                Some("messages"),
            ));
        }
        Some(other) => {
            return Err(ApiError::bad_request(
                format!(
                    "field `messages` must be an array, found {}",
                    wire::kind(&other)
                ),
                Some("messages"),
            ));
        }
    };
    let mut decoded = Decoded {
        front: Protocol::Messages,
        messages: Vec::new(),
        originals: Originals::new(keep),
        stream: flag(&rest, "stream")?,
        max_tokens: limit(&rest, "max_tokens")?,
        rest: Map::new(),
        stored: Vec::new(),
        asks: Default::default(),
    };
    if let Some(system) = rest.remove("system") {
        system_of(system, &mut decoded)?;
    }
    for (i, turn) in turns.into_iter().enumerate() {
        turn_of(turn, i, &mut decoded)?;
    }
    decoded.rest = rest;
    Ok(decoded)
}

fn system_of(system: Value, decoded: &mut Decoded) -> Result<(), ApiError> {
    let (text, string) = match &system {
        Value::String(s) => (s.clone(), true),
        Value::Array(blocks) => {
            let mut texts = Vec::new();
            for (k, b) in blocks.iter().enumerate() {
                texts.push(b["text"].as_str().ok_or_else(|| {
                    let at = format!("system[{k}].text");
                    ApiError::bad_request(format!("`{at}` must be a string"), Some(&at))
                })?);
            }
            (texts.join("\n"), false)
        }
        Value::Null => return Ok(()),
        other => {
            return Err(ApiError::bad_request(
                format!(
                    "field `system` must be a string or an array of text blocks, found {}",
                    wire::kind(other)
                ),
                Some("system"),
            ));
        }
    };
    let blocks = match system {
        Value::Array(blocks) => blocks,
        other => vec![json!({"type": "text", "text": other})],
    };
    let message = Message::system(text);
    let original = Original {
        blocks,
        string,
        fields: Map::new(),
        opens: true,
        in_system: true,
    };
    decoded.originals.push(&message, Some(original));
    decoded.messages.push(message);
    Ok(())
}

fn turn_of(turn: Value, i: usize, decoded: &mut Decoded) -> Result<(), ApiError> {
    let at = format!("messages[{i}]");
    let Value::Object(mut object) = turn else {
        return Err(ApiError::bad_request(
            format!("`{at}` must be an object, found {}", wire::kind(&turn)),
            Some(&at),
        ));
    };
    let (blocks, string) = match object.remove("content") {
        Some(Value::String(s)) => (vec![json!({"type": "text", "text": s})], true),
        Some(Value::Array(blocks)) => (blocks, false),
        _ => {
            let at = format!("{at}.content");
            return Err(ApiError::bad_request(
                format!("`{at}` must be a string or an array of content blocks"),
                Some(&at),
            ));
        }
    };
    let at = format!("{at}.content");
    let pieces = match object.get("role").and_then(Value::as_str) {
        Some("user") => blocks::user_pieces(blocks, &at)?,
        Some("assistant") => vec![Piece {
            message: blocks::assistant(&blocks, &at)?,
            blocks,
        }],
        // Instructions in the middle of a conversation (Claude Code sends
        // its environment so).
        Some("system") => vec![Piece {
            message: blocks::system(&blocks, &at)?,
            blocks,
        }],
        _ => {
            let at = format!("messages[{i}].role");
            return Err(ApiError::bad_request(
                format!("`{at}` must be `user`, `assistant` or `system`"),
                Some(&at),
            ));
        }
    };
    object.remove("role");
    let mut fields = object;
    for (k, piece) in pieces.into_iter().enumerate() {
        let original = Original {
            blocks: piece.blocks,
            string,
            fields: if k == 0 {
                std::mem::take(&mut fields)
            } else {
                Map::new()
            },
            opens: k == 0,
            in_system: false,
        };
        decoded.originals.push(&piece.message, Some(original));
        decoded.messages.push(piece.message);
    }
    Ok(())
}

/// The body for a Messages upstream: `rest`, the leading system messages
/// as `system`, the others as turns (each piece as it came where it has
/// an original), and `extra` tools besides the client's.
pub(crate) fn encode(
    mut rest: Map<String, Value>,
    context: &[Message],
    originals: &[Option<&Original>],
    extra: &[ToolSpec],
) -> Value {
    // The leading system messages the client sent as `system` (or the
    // server made); one the client sent as a turn goes back as a turn.
    let lead = context
        .iter()
        .zip(originals)
        .take_while(|(m, o)| m.is_system() && o.as_ref().is_none_or(|o| o.in_system))
        .count();
    if let Some(system) = system(&context[..lead], &originals[..lead]) {
        rest.insert("system".into(), system);
    }
    let mut turns = Turns::default();
    for (message, original) in context[lead..].iter().zip(&originals[lead..]) {
        turns.push(message, *original);
    }
    rest.insert("messages".into(), Value::Array(turns.finish()));
    for spec in extra {
        offer(&mut rest, spec);
    }
    Value::Object(rest)
}

/// The `system` field of the leading system messages: as the client sent
/// it when it alone leads, text blocks otherwise.
fn system(lead: &[Message], originals: &[Option<&Original>]) -> Option<Value> {
    match (lead, originals) {
        ([], _) => None,
        ([_], [Some(o)]) if o.string => o.blocks.first().map(|b| b["text"].clone()),
        ([m], [None]) => Some(Value::String(m.text())),
        _ => Some(Value::Array(
            lead.iter()
                .zip(originals)
                .flat_map(|(m, o)| match o {
                    Some(o) => o.blocks.clone(),
                    None => vec![json!({"type": "text", "text": m.text()})],
                })
                .collect(),
        )),
    }
}

/// Turns being built: pieces of one role go in one turn, unless a piece's
/// original opened a turn of its own.
#[derive(Default)]
struct Turns {
    done: Vec<Value>,
    role: &'static str,
    blocks: Vec<Value>,
    fields: Map<String, Value>,
    /// Whether the turn is one piece whose content came as a string.
    string: bool,
    pieces: usize,
}

impl Turns {
    fn push(&mut self, message: &Message, original: Option<&Original>) {
        let role = match message {
            Message::Assistant { .. } => "assistant",
            // Sent as the client sent it; one the server made (a summary
            // placed later) as a user's text, which every model takes.
            Message::System(_) if original.is_some() => "system",
            _ => "user",
        };
        if role != self.role || original.is_some_and(|o| o.opens) {
            self.close();
            self.role = role;
        }
        self.pieces += 1;
        match original {
            Some(o) => {
                self.blocks.extend(o.blocks.iter().cloned());
                self.fields.extend(o.fields.clone());
                self.string = o.string && self.pieces == 1;
            }
            None => {
                self.string = false;
                let fresh = if message.is_assistant() {
                    blocks::of_assistant(message, false)
                } else {
                    blocks::of_user(message)
                };
                // Anthropic refuses an empty text block.
                self.blocks
                    .extend(fresh.into_iter().filter(|b| b["text"] != ""));
            }
        }
    }

    fn close(&mut self) {
        // A turn left with no content (a reply that was only reasoning, a
        // message of parts the protocol cannot take) is left out:
        // Anthropic refuses an empty one.
        let mut turn = std::mem::take(&mut self.fields);
        if self.pieces > 0 && !self.blocks.is_empty() {
            let content = match (self.string, self.blocks.as_slice()) {
                (true, [one]) => one["text"].clone(),
                _ => Value::Array(std::mem::take(&mut self.blocks)),
            };
            turn.insert("role".into(), json!(self.role));
            turn.insert("content".into(), content);
            self.done.push(Value::Object(turn));
        }
        self.blocks.clear();
        self.pieces = 0;
        self.string = false;
    }

    fn finish(mut self) -> Vec<Value> {
        self.close();
        self.done
    }
}

/// A tool in Messages' shape.
pub(crate) fn tool(spec: &ToolSpec) -> Value {
    let mut tool = json!({"name": spec.name, "input_schema": spec.schema});
    if let Some(d) = &spec.description {
        tool["description"] = json!(d);
    }
    tool
}

fn offer(rest: &mut Map<String, Value>, spec: &ToolSpec) {
    let tools = rest
        .entry("tools")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(tools) = tools.as_array_mut()
        && !tools.iter().any(|t| t["name"].as_str() == Some(&spec.name))
    {
        tools.push(tool(spec));
    }
}
