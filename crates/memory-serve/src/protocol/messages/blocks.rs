//! Anthropic content blocks to and from [`Message`]s: what a user turn's
//! blocks decode to (tool results, then text, images and pass-through
//! blocks), what an assistant turn's do (text, thinking, tool uses), and
//! the blocks each message encodes to.

use base64::Engine;
use memory_core::{ContentBlock, ImageContent, Message, ToolCall};
use serde_json::{Value, json};

use crate::ApiError;
use crate::protocol::options::left_out;

/// One message decoded from a wire message, with the blocks it came from.
pub(crate) struct Piece {
    pub(crate) message: Message,
    pub(crate) blocks: Vec<Value>,
}

/// The pieces of a user turn's blocks: each tool result its own, each run
/// of other blocks one user message. `at` names the blocks in errors.
pub(crate) fn user_pieces(blocks: Vec<Value>, at: &str) -> Result<Vec<Piece>, ApiError> {
    let mut pieces: Vec<Piece> = Vec::new();
    for (k, block) in blocks.into_iter().enumerate() {
        let at = format!("{at}[{k}]");
        let kind = block_type(&block, &at)?;
        if kind == "tool_result" {
            pieces.push(Piece {
                message: tool_result(&block, &at)?,
                blocks: vec![block],
            });
            continue;
        }
        let content = user_block(kind, &block, &at)?;
        match pieces.last_mut() {
            Some(Piece {
                message: Message::User(list),
                blocks,
            }) => {
                list.push(content);
                blocks.push(block);
            }
            _ => pieces.push(Piece {
                message: Message::User(vec![content]),
                blocks: vec![block],
            }),
        }
    }
    Ok(pieces)
}

/// The assistant message of an assistant turn's blocks: its text, its
/// thinking as reasoning, its tool uses as calls; other blocks (redacted
/// thinking, server tools, kinds this server does not know) have no place
/// in it and live on in the turn's original.
pub(crate) fn assistant(blocks: &[Value], at: &str) -> Result<Message, ApiError> {
    let (mut content, mut reasoning, mut calls) = (String::new(), String::new(), Vec::new());
    for (k, block) in blocks.iter().enumerate() {
        let at = format!("{at}[{k}]");
        match block_type(block, &at)? {
            "text" => content.push_str(text_of(block, "text", &at)?),
            "thinking" => reasoning.push_str(block["thinking"].as_str().unwrap_or_default()),
            "tool_use" => {
                let id = text_of(block, "id", &at)?;
                let name = text_of(block, "name", &at)?;
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(ToolCall::new(id, name, input.to_string()));
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

/// The system message of a system turn's text blocks.
pub(crate) fn system(blocks: &[Value], at: &str) -> Result<Message, ApiError> {
    let mut texts = Vec::new();
    for (k, block) in blocks.iter().enumerate() {
        texts.push(text_of(block, "text", &format!("{at}[{k}]"))?);
    }
    Ok(Message::system(texts.join("\n")))
}

/// The blocks of an assistant message: its text, then a `tool_use` for
/// each call. Reasoning is sent only where `thinking` says (to a client;
/// an Anthropic upstream refuses thinking without its signature).
pub(crate) fn of_assistant(message: &Message, thinking: bool) -> Vec<Value> {
    let Message::Assistant {
        content,
        reasoning,
        tool_calls,
    } = message
    else {
        return Vec::new();
    };
    let mut blocks = Vec::new();
    if let Some(r) = reasoning.as_ref().filter(|_| thinking) {
        blocks.push(json!({"type": "thinking", "thinking": r, "signature": ""}));
    }
    if !content.is_empty() {
        blocks.push(json!({"type": "text", "text": content}));
    }
    for call in tool_calls {
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name,
            "input": input_of(&call.arguments)}));
    }
    blocks
}

/// A call's arguments as the object Anthropic's `input` is; arguments that
/// are not an object are kept under `arguments`.
pub(crate) fn input_of(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ if arguments.trim().is_empty() => json!({}),
        _ => json!({"arguments": arguments}),
    }
}

/// The blocks of a user message or tool result, as a user turn holds them.
pub(crate) fn of_user(message: &Message) -> Vec<Value> {
    match message {
        Message::User(blocks) => blocks.iter().filter_map(user_block_of).collect(),
        Message::ToolResult {
            tool_call_id,
            content,
            ..
        } => vec![json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content})],
        Message::System(text) => vec![json!({"type": "text", "text": text})],
        Message::Assistant { .. } => Vec::new(),
    }
}

fn user_block_of(block: &ContentBlock) -> Option<Value> {
    match block {
        ContentBlock::Text(text) => Some(json!({"type": "text", "text": text})),
        ContentBlock::Image(image) => {
            let data = base64::engine::general_purpose::STANDARD.encode(&image.data);
            Some(json!({"type": "image", "source": {"type": "base64",
                "media_type": image.mime_type, "data": data}}))
        }
        ContentBlock::Wire(part) => from_chat_part(part),
    }
}

/// A pass-through block for a Messages upstream: Anthropic's own as it
/// is, a Chat Completions image by URL as an image by URL, any other
/// Chat Completions part left out.
fn from_chat_part(part: &Value) -> Option<Value> {
    match part["type"].as_str() {
        Some("image_url") => {
            let url = part["image_url"]["url"].as_str()?;
            Some(json!({"type": "image", "source": {"type": "url", "url": url}}))
        }
        Some(kind @ ("input_audio" | "file")) => {
            left_out(&format!("a `{kind}` content part"));
            None
        }
        _ => Some(part.clone()),
    }
}

fn block_type<'v>(block: &'v Value, at: &str) -> Result<&'v str, ApiError> {
    block["type"].as_str().ok_or_else(|| {
        ApiError::bad_request(
            format!("`{at}.type` is missing: every content block names its type"),
            Some(&format!("{at}.type")),
        )
    })
}

fn text_of<'v>(block: &'v Value, field: &str, at: &str) -> Result<&'v str, ApiError> {
    block[field].as_str().ok_or_else(|| {
        ApiError::bad_request(
            format!("`{at}.{field}` must be a string"),
            Some(&format!("{at}.{field}")),
        )
    })
}

fn user_block(kind: &str, block: &Value, at: &str) -> Result<ContentBlock, ApiError> {
    Ok(match kind {
        "text" => ContentBlock::Text(text_of(block, "text", at)?.to_string()),
        "image" => {
            image(block).map_or_else(|| ContentBlock::Wire(block.clone()), ContentBlock::Image)
        }
        _ => ContentBlock::Wire(block.clone()),
    })
}

/// An image sent inline (base64), with its bytes; one by URL or file
/// stays a pass-through block.
fn image(block: &Value) -> Option<ImageContent> {
    let source = &block["source"];
    if source["type"] != "base64" {
        return None;
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(source["data"].as_str()?)
        .ok()?;
    Some(ImageContent::new(source["media_type"].as_str()?, data))
}

/// A tool result: its text (an error's marked, so that any model sees
/// it failed).
fn tool_result(block: &Value, at: &str) -> Result<Message, ApiError> {
    let id = text_of(block, "tool_use_id", at)?;
    let text = match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let text = if block["is_error"] == true {
        format!("Error: {text}")
    } else {
        text
    };
    Ok(Message::tool_result(id, text))
}
