//! A Responses request: decoded from a client, encoded for an upstream.
//!
//! `instructions` becomes the leading system message; `input` (a string,
//! or items) the rest, each piece keeping its items as its original. What
//! the request asks of the server itself (to continue a stored response,
//! to compact, to keep the response) is read into [`Asks`].

use memory_core::Message;
use memory_openai::wire;
use serde_json::{Map, Value, json};

use super::items::{self, Piece};
use crate::ApiError;
use crate::protocol::options::ToolSpec;
use crate::protocol::originals::{Original, Originals};
use crate::protocol::{Decoded, Protocol};
use crate::request::{flag, limit, object_body};

/// What a Responses request asks of the server besides a reply.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Asks {
    /// The stored response it continues (`previous_response_id`).
    pub(crate) previous: Option<String>,
    /// Its compaction items: the index of the message standing for each,
    /// the item's index in `input`, and its `encrypted_content`.
    pub(crate) compactions: Vec<(usize, usize, String)>,
    /// Whether its input ends in a `compaction_trigger`: it asks for a
    /// compaction instead of a reply.
    pub(crate) trigger: bool,
    /// Whether the response is to be kept (`store`, true unless said).
    pub(crate) store: bool,
    /// The context size past which a reply comes with a compaction
    /// (`context_management: [{"type": "compaction", "compact_threshold"}]`);
    /// `Some(None)` when it names no size: past the call's budget.
    pub(crate) threshold: Option<Option<u64>>,
    /// Whether the upstream compacts (`--compaction native`): the trigger
    /// and `context_management` go to it.
    pub(crate) native: bool,
    /// Whether it came to `/responses/compact`.
    pub(crate) compact_endpoint: bool,
    /// The session its history comes from, when a compaction or a stored
    /// response it holds names one.
    pub(crate) session: Option<String>,
    /// Its `instructions`, which its response repeats.
    pub(crate) instructions: Option<String>,
    /// The names of its custom tools (free-form input): a call of one
    /// from a model of another protocol goes back as a custom tool call.
    pub(crate) custom_tools: Vec<String>,
}

/// Decodes a request body.
pub(crate) fn decode(body: &[u8], keep: bool) -> Result<Decoded, ApiError> {
    let mut rest = object_body(body)?;
    let input = match rest.remove("input") {
        Some(Value::String(s)) => vec![json!({"role": "user", "content": s})],
        Some(Value::Array(items)) => items,
        None | Some(Value::Null) => Vec::new(),
        Some(other) => {
            return Err(ApiError::bad_request(
                format!(
                    "field `input` must be a string or an array of items, found {}",
                    wire::kind(&other)
                ),
                Some("input"),
            ));
        }
    };
    let mut decoded = Decoded {
        front: Protocol::Responses,
        messages: Vec::new(),
        originals: Originals::new(keep),
        stream: flag(&rest, "stream")?,
        max_tokens: limit(&rest, "max_output_tokens")?,
        rest: Map::new(),
        stored: Vec::new(),
        asks: asks(&rest)?,
    };
    match rest.remove("instructions") {
        Some(Value::String(text)) => {
            decoded.asks.instructions = Some(text.clone());
            let message = Message::system(text.clone());
            let original = Original {
                blocks: vec![Value::String(text)],
                string: true,
                fields: Map::new(),
                opens: true,
                in_system: true,
            };
            decoded.originals.push(&message, Some(original));
            decoded.messages.push(message);
        }
        None | Some(Value::Null) => {}
        Some(other) => {
            return Err(ApiError::bad_request(
                format!(
                    "field `instructions` must be a string, found {}",
                    wire::kind(&other)
                ),
                Some("instructions"),
            ));
        }
    }
    let input = trigger(input, &mut decoded.asks)?;
    let from = decoded.messages.len();
    for (k, piece) in items::pieces(input, "input")?.into_iter().enumerate() {
        push(&mut decoded, piece, from + k);
    }
    decoded.rest = rest;
    Ok(decoded)
}

fn push(decoded: &mut Decoded, piece: Piece, index: usize) {
    if let [item] = piece.items.as_slice()
        && matches!(
            item["type"].as_str(),
            Some("compaction" | "compaction_summary")
        )
    {
        let handle = item["encrypted_content"].as_str().unwrap_or_default();
        let at = piece.first;
        decoded
            .asks
            .compactions
            .push((index, at, handle.to_string()));
    }
    let original = Original {
        blocks: piece.items,
        string: false,
        fields: Map::new(),
        opens: true,
        in_system: false,
    };
    decoded.originals.push(&piece.message, Some(original));
    decoded.messages.push(piece.message);
}

/// The input without its closing `compaction_trigger`, noted in `asks`;
/// one anywhere else is refused.
fn trigger(mut input: Vec<Value>, asks: &mut Asks) -> Result<Vec<Value>, ApiError> {
    let is_trigger = |item: &Value| item["type"] == "compaction_trigger";
    if input.last().is_some_and(is_trigger) {
        input.pop();
        asks.trigger = true;
    }
    if let Some(i) = input.iter().position(is_trigger) {
        let at = format!("input[{i}]");
        return Err(ApiError::bad_request(
            format!("`{at}`: a `compaction_trigger` must be the last input item"),
            Some(&at),
        ));
    }
    Ok(input)
}

fn asks(rest: &Map<String, Value>) -> Result<Asks, ApiError> {
    let previous = match rest.get("previous_response_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(other) => {
            return Err(ApiError::bad_request(
                format!(
                    "field `previous_response_id` must be a string, found {}",
                    wire::kind(other)
                ),
                Some("previous_response_id"),
            ));
        }
    };
    let threshold = rest
        .get("context_management")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|e| e["type"] == "compaction")
        .map(|e| e["compact_threshold"].as_u64());
    Ok(Asks {
        previous,
        compactions: Vec::new(),
        trigger: false,
        store: rest.get("store").and_then(Value::as_bool).unwrap_or(true),
        threshold,
        native: false,
        compact_endpoint: false,
        session: None,
        instructions: None,
        custom_tools: super::items::custom_tools(rest.get("tools")),
    })
}

/// The body for a Responses upstream: `rest`, the leading system message
/// the client sent as `instructions` as that, the others as items (each
/// piece as it came where it has an original; one made afresh for a call
/// of one of the `custom` tools, or its result, in their kind), and
/// `extra` tools besides the client's.
pub(crate) fn encode(
    mut rest: Map<String, Value>,
    context: &[Message],
    originals: &[Option<&Original>],
    extra: &[ToolSpec],
    custom: &[String],
) -> Value {
    // What the server answers itself, and what it holds for the client.
    rest.remove("previous_response_id");
    let customs = custom_calls(context, originals, custom);
    let mut input = Vec::new();
    for (message, original) in context.iter().zip(originals) {
        match (original, message) {
            (Some(o), _) if o.in_system => {
                let text = o.blocks.first().cloned().unwrap_or_default();
                rest.insert("instructions".into(), text);
            }
            (Some(o), _) => input.extend(o.blocks.iter().cloned()),
            (None, Message::Assistant { .. }) => {
                input.extend(items::of_assistant(message, false, None, custom));
            }
            (
                None,
                Message::ToolResult {
                    tool_call_id,
                    content,
                    ..
                },
            ) if customs.contains(tool_call_id.as_str()) => {
                input.push(json!({"type": "custom_tool_call_output",
                    "call_id": tool_call_id, "output": content}));
            }
            (None, _) => input.extend(items::of(message, false)),
        }
    }
    rest.insert("input".into(), Value::Array(input));
    for spec in extra {
        offer(&mut rest, spec);
    }
    Value::Object(rest)
}

/// The ids of the calls of custom tools in `context`: those sent as
/// `custom_tool_call` items, and those of the `custom` tools made afresh.
fn custom_calls<'a>(
    context: &'a [Message],
    originals: &'a [Option<&Original>],
    custom: &[String],
) -> std::collections::HashSet<&'a str> {
    let mut ids = std::collections::HashSet::new();
    for (message, original) in context.iter().zip(originals) {
        match original {
            Some(o) => ids.extend(
                o.blocks
                    .iter()
                    .filter(|i| i["type"] == "custom_tool_call")
                    .filter_map(|i| i["call_id"].as_str()),
            ),
            None => ids.extend(
                message
                    .tool_calls()
                    .iter()
                    .filter(|c| custom.contains(&c.name))
                    .map(|c| c.id.as_str()),
            ),
        }
    }
    ids
}

/// A function tool in Responses' shape.
pub(crate) fn tool(spec: &ToolSpec) -> Value {
    let mut tool = json!({"type": "function", "name": spec.name, "parameters": spec.schema});
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_pipeline_keeps_goes_back_as_it_came() {
        let body = json!({"model": "m", "instructions": "be brief", "store": false,
        "include": ["reasoning.encrypted_content"],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}", "id": "fc_1"},
            {"type": "function_call_output", "call_id": "c1", "output": "a"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "mystery", "x": 1},
        ]});
        let bytes = serde_json::to_vec(&body).unwrap();
        let decoded = decode(&bytes, true).unwrap();
        assert!(!decoded.asks.store);
        let originals = decoded.originals.of(&decoded.messages, &[]);
        let out = encode(
            decoded.rest.clone(),
            &decoded.messages,
            &originals,
            &[],
            &[],
        );
        assert_eq!(out, body);
    }

    #[test]
    fn a_trigger_is_taken_out_and_noted_and_asks_are_read() {
        let body = json!({"input": [{"role": "user", "content": "x"},
            {"type": "compaction", "encrypted_content": "h"},
            {"type": "compaction_trigger"}],
            "previous_response_id": "resp_1",
            "context_management": [{"type": "compaction", "compact_threshold": 900}]});
        let decoded = decode(&serde_json::to_vec(&body).unwrap(), false).unwrap();
        assert!(decoded.asks.trigger);
        assert_eq!(decoded.asks.previous.as_deref(), Some("resp_1"));
        assert_eq!(decoded.asks.threshold, Some(Some(900)));
        assert_eq!(decoded.asks.compactions, vec![(1, 1, "h".to_string())]);
        assert_eq!(decoded.messages.len(), 2);
        let early =
            json!({"input": [{"type": "compaction_trigger"}, {"role": "user", "content": "x"}]});
        let e = decode(&serde_json::to_vec(&early).unwrap(), false).unwrap_err();
        assert!(e.to_string().contains("input[0]"), "{e}");
    }

    #[test]
    fn a_custom_tools_result_made_afresh_keeps_its_kind() {
        let body = json!({"input": [
            {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin"},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "long output"}]});
        let decoded = decode(&serde_json::to_vec(&body).unwrap(), true).unwrap();
        let mut originals = decoded.originals.of(&decoded.messages, &[]);
        // The pipeline shortened the output: it has no original.
        let context = [
            decoded.messages[0].clone(),
            Message::tool_result("c1", "[shortened]"),
        ];
        originals[1] = None;
        let out = encode(Map::new(), &context, &originals, &[], &[]);
        assert_eq!(out["input"][1]["type"], "custom_tool_call_output");
        assert_eq!(out["input"][1]["output"], "[shortened]");
        // Made afresh too: a call of a custom tool and its result.
        let out = encode(
            Map::new(),
            &context,
            &[None, None],
            &[],
            &["apply_patch".into()],
        );
        assert_eq!(out["input"][0]["type"], "custom_tool_call");
        assert_eq!(out["input"][0]["input"], "*** Begin");
        assert_eq!(out["input"][1]["type"], "custom_tool_call_output");
    }

    #[test]
    fn a_string_input_is_one_user_message() {
        let decoded = decode(br#"{"input": "hello", "instructions": "sys"}"#, false).unwrap();
        assert_eq!(
            decoded.messages,
            vec![Message::system("sys"), Message::user("hello")]
        );
    }
}
