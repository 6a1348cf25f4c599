//! Responses input and output items to and from [`Message`]s.
//!
//! A run of the model's items (`reasoning`, an assistant `message`,
//! `function_call`, `custom_tool_call`, and any other `…_call`) is one
//! assistant message; a `function_call_output` or `custom_tool_call_output`
//! a tool result; a user `message` a user message; a `system` or
//! `developer` one a system message. Each keeps the items it came from.

use base64::Engine;
use memory_core::{ContentBlock, ImageContent, Message, ToolCall};
use serde_json::{Value, json};

use crate::ApiError;

/// One message decoded from items, with the items it came from.
pub(crate) struct Piece {
    pub(crate) message: Message,
    pub(crate) items: Vec<Value>,
    /// The index of its first item.
    pub(crate) first: usize,
}

/// The text standing for a compaction item the server did not make (or,
/// until it is expanded, one it made).
pub(crate) const COMPACTED: &str = "[The conversation before this point was compacted.]";

/// What an item is, as far as decoding goes.
enum Kind {
    /// Part of the model's turn.
    Model,
    /// A message of its own.
    Own(Message),
}

/// The pieces of `items`; `at` names them in errors (`input`).
pub(crate) fn pieces(items: Vec<Value>, at: &str) -> Result<Vec<Piece>, ApiError> {
    let mut pieces: Vec<Piece> = Vec::new();
    // The model's items so far, and where they began.
    let mut run: Vec<Value> = Vec::new();
    let mut from = 0;
    for (i, item) in items.into_iter().enumerate() {
        let here = format!("{at}[{i}]");
        match kind(&item, &here)? {
            Kind::Model => {
                if run.is_empty() {
                    from = i;
                }
                run.push(item);
            }
            Kind::Own(message) => {
                close(&mut run, &mut pieces, at, from)?;
                pieces.push(Piece {
                    message,
                    items: vec![item],
                    first: i,
                });
            }
        }
    }
    close(&mut run, &mut pieces, at, from)?;
    Ok(pieces)
}

/// Ends a run of the model's items: one assistant message.
fn close(
    run: &mut Vec<Value>,
    pieces: &mut Vec<Piece>,
    at: &str,
    from: usize,
) -> Result<(), ApiError> {
    if run.is_empty() {
        return Ok(());
    }
    let items = std::mem::take(run);
    pieces.push(Piece {
        message: assistant(&items, at, from)?,
        items,
        first: from,
    });
    Ok(())
}

fn kind(item: &Value, at: &str) -> Result<Kind, ApiError> {
    if !item.is_object() {
        return Err(ApiError::bad_request(
            format!("`{at}` must be an object"),
            Some(at),
        ));
    }
    let kind = item["type"].as_str().unwrap_or("message");
    Ok(match kind {
        "message" => match item["role"].as_str() {
            Some("assistant") => Kind::Model,
            Some("user") => Kind::Own(Message::User(parts(&item["content"], at)?)),
            Some("system" | "developer") => Kind::Own(Message::system(text(&item["content"]))),
            _ => {
                let at = format!("{at}.role");
                return Err(ApiError::bad_request(
                    format!("`{at}` must be `user`, `assistant`, `system` or `developer`"),
                    Some(&at),
                ));
            }
        },
        "function_call_output" | "custom_tool_call_output" => {
            let id = string(item, "call_id", at)?;
            Kind::Own(Message::tool_result(id, text(&item["output"])))
        }
        "compaction" | "compaction_summary" => Kind::Own(Message::system(COMPACTED)),
        "reasoning" => Kind::Model,
        other if other.ends_with("_call") => Kind::Model,
        // An item of a kind this server does not know: passed on to an
        // upstream of this protocol, left out for another.
        _ => Kind::Own(Message::User(vec![ContentBlock::Wire(item.clone())])),
    })
}

/// The assistant message of the model's items: its text, its reasoning's
/// summary and text, its calls (a custom tool's input as `{"input": …}`);
/// `at[from + i]` names the `i`th in errors.
pub(crate) fn assistant(items: &[Value], at: &str, from: usize) -> Result<Message, ApiError> {
    let (mut content, mut reasoning, mut calls) = (String::new(), String::new(), Vec::new());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{at}[{}]", from + i);
        match item["type"].as_str().unwrap_or("message") {
            "message" => content.push_str(&text(&item["content"])),
            "reasoning" => {
                for part in ["summary", "content"] {
                    reasoning.push_str(&text(&item[part]));
                }
            }
            "function_call" => {
                let arguments = item["arguments"].as_str().unwrap_or_default();
                calls.push(ToolCall::new(
                    string(item, "call_id", &at)?,
                    string(item, "name", &at)?,
                    arguments,
                ));
            }
            "custom_tool_call" => {
                let input = json!({"input": item["input"].as_str().unwrap_or_default()});
                calls.push(ToolCall::new(
                    string(item, "call_id", &at)?,
                    string(item, "name", &at)?,
                    input.to_string(),
                ));
            }
            _ => {}
        }
    }
    Ok(Message::Assistant {
        content,
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        tool_calls: calls,
    })
}

fn string<'v>(item: &'v Value, field: &str, at: &str) -> Result<&'v str, ApiError> {
    item[field].as_str().ok_or_else(|| {
        let at = format!("{at}.{field}");
        ApiError::bad_request(format!("`{at}` must be a string"), Some(&at))
    })
}

/// The text of a content field: a string, or the text of its parts.
pub(crate) fn text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().or_else(|| p["refusal"].as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A user message's content: text parts as text, an inline image as an
/// image, an image by URL as a Chat Completions `image_url` part (the
/// neutral form of one), any other part passed through.
fn parts(content: &Value, at: &str) -> Result<Vec<ContentBlock>, ApiError> {
    match content {
        Value::String(s) => Ok(vec![ContentBlock::Text(s.clone())]),
        Value::Array(parts) => Ok(parts.iter().map(part).collect()),
        _ => {
            let at = format!("{at}.content");
            Err(ApiError::bad_request(
                format!("`{at}` must be a string or an array of content parts"),
                Some(&at),
            ))
        }
    }
}

fn part(part: &Value) -> ContentBlock {
    match part["type"].as_str() {
        Some("input_text" | "output_text" | "text") => {
            ContentBlock::Text(part["text"].as_str().unwrap_or_default().to_string())
        }
        Some("input_image") => match part["image_url"].as_str() {
            Some(url) => inline(url, part["detail"].as_str()).map_or_else(
                || {
                    let mut image = json!({"url": url});
                    if let Some(d) = part["detail"].as_str() {
                        image["detail"] = json!(d);
                    }
                    ContentBlock::Wire(json!({"type": "image_url", "image_url": image}))
                },
                ContentBlock::Image,
            ),
            None => ContentBlock::Wire(part.clone()),
        },
        _ => ContentBlock::Wire(part.clone()),
    }
}

/// An image in a `data:` URL, with its bytes.
fn inline(url: &str, detail: Option<&str>) -> Option<ImageContent> {
    let rest = url.strip_prefix("data:")?;
    let (mime, data) = rest.split_once(";base64,")?;
    let data = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    let mut image = ImageContent::new(mime, data);
    image.detail = detail.map(str::to_string);
    Some(image)
}

/// The items a message encodes to, for an upstream or a client of this
/// protocol (reasoning is written only where `reasoning` says: an
/// upstream refuses a reasoning item without its encrypted content).
pub(crate) fn of(message: &Message, reasoning: bool) -> Vec<Value> {
    match message {
        Message::System(text) => vec![json!({"type": "message", "role": "system",
            "content": [{"type": "input_text", "text": text}]})],
        Message::User(blocks) => {
            let content: Vec<Value> = blocks.iter().filter_map(part_of).collect();
            vec![json!({"type": "message", "role": "user", "content": content})]
        }
        Message::ToolResult {
            tool_call_id,
            content,
            ..
        } => vec![
            json!({"type": "function_call_output", "call_id": tool_call_id,
            "output": content}),
        ],
        Message::Assistant { .. } => of_assistant(message, reasoning, None, &[]),
    }
}

/// The items of an assistant message; `ids` gives each item an id (as a
/// reply's output items have), drawn from it; a call of one of the
/// `custom` tools (free-form input, offered to another protocol as a
/// function of one string, `input`) is a `custom_tool_call`.
pub(crate) fn of_assistant(
    message: &Message,
    reasoning: bool,
    mut ids: Option<&mut dyn FnMut(&str) -> String>,
    custom: &[String],
) -> Vec<Value> {
    let Message::Assistant {
        content,
        reasoning: thought,
        tool_calls,
    } = message
    else {
        return Vec::new();
    };
    let mut items = Vec::new();
    let mut push = |mut item: Value, prefix: &str| {
        if let Some(ids) = ids.as_mut() {
            item["id"] = json!(ids(prefix));
        }
        items.push(item);
    };
    if let Some(r) = thought.as_ref().filter(|_| reasoning) {
        push(
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": r}]}),
            "rs",
        );
    }
    if !content.is_empty() {
        push(
            json!({"type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": content, "annotations": []}]}),
            "msg",
        );
    }
    for call in tool_calls {
        if custom.contains(&call.name) {
            push(custom_call(&call.id, &call.name, &call.arguments), "ctc");
            continue;
        }
        push(
            json!({"type": "function_call", "call_id": call.id, "name": call.name,
            "arguments": call.arguments, "status": "completed"}),
            "fc",
        );
    }
    items
}

/// A call of a custom tool: its input, the `input` of the arguments a
/// model of another protocol wrote (or the arguments as they are).
pub(crate) fn custom_call(id: &str, name: &str, arguments: &str) -> Value {
    let parsed = serde_json::from_str::<Value>(arguments).ok();
    let input = match parsed.as_ref().map(|v| &v["input"]) {
        Some(Value::String(input)) => input.clone(),
        _ => arguments.to_string(),
    };
    json!({"type": "custom_tool_call", "call_id": id, "name": name, "input": input,
        "status": "completed"})
}

/// The names of the custom tools in a request's `tools`.
pub(crate) fn custom_tools(tools: Option<&Value>) -> Vec<String> {
    tools
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| t["type"] == "custom")
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

fn part_of(block: &ContentBlock) -> Option<Value> {
    match block {
        ContentBlock::Text(text) => Some(json!({"type": "input_text", "text": text})),
        ContentBlock::Image(image) => {
            let data = base64::engine::general_purpose::STANDARD.encode(&image.data);
            let mut part = json!({"type": "input_image",
                "image_url": format!("data:{};base64,{data}", image.mime_type)});
            if let Some(d) = &image.detail {
                part["detail"] = json!(d);
            }
            Some(part)
        }
        ContentBlock::Wire(part) => wire_part(part),
    }
}

/// A pass-through part for this protocol: a Chat Completions image by URL
/// or an Anthropic image by URL as an `input_image`; this protocol's own
/// as it is; any other left out.
fn wire_part(part: &Value) -> Option<Value> {
    let url = match part["type"].as_str() {
        Some("image_url") => part["image_url"]["url"].as_str(),
        Some("image") => part["source"]["url"].as_str(),
        Some(kind) if kind.starts_with("input_") => return Some(part.clone()),
        _ => None,
    };
    match url {
        Some(url) => Some(json!({"type": "input_image", "image_url": url})),
        None => {
            let kind = part["type"].as_str().unwrap_or("?");
            crate::protocol::options::left_out(&format!("a `{kind}` content part"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_of_items_is_one_assistant_message_and_outputs_are_results() {
        let items = vec![
            json!({"type": "message", "role": "developer", "content": "rules"}),
            json!({"role": "user", "content": [{"type": "input_text", "text": "hi"}]}),
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "xyz"}),
            json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}),
            json!({"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "a b"}),
            json!({"type": "custom_tool_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "done"}]}),
        ];
        let pieces = pieces(items, "input").unwrap();
        let messages: Vec<Message> = pieces.iter().map(|p| p.message.clone()).collect();
        assert_eq!(messages[0], Message::system("rules"));
        assert_eq!(messages[1], Message::user("hi"));
        let Message::Assistant {
            reasoning,
            tool_calls,
            ..
        } = &messages[2]
        else {
            panic!("{:?}", messages[2]);
        };
        assert_eq!(reasoning.as_deref(), Some("think"));
        assert_eq!(tool_calls[1].arguments, r#"{"input":"*** Begin"}"#);
        assert_eq!(pieces[2].items.len(), 3);
        assert_eq!(messages[3], Message::tool_result("c1", "a b"));
        assert_eq!(messages[4], Message::tool_result("c2", "done"));
    }

    #[test]
    fn errors_name_the_item() {
        let e = pieces(vec![json!({"type": "function_call", "name": "x"})], "input")
            .err()
            .unwrap();
        assert!(e.to_string().contains("input[0].call_id"), "{e}");
        let e = pieces(vec![json!({"role": "tool", "content": "x"})], "input")
            .err()
            .unwrap();
        assert!(e.to_string().contains("input[0].role"), "{e}");
    }
}
