//! Messages from Rig's types to ours ([`to_ours`]) and back ([`to_rig`]).
//!
//! Ours keep what the strategies work on: text, reasoning, tool calls and
//! their results. A Rig message maps to one or more of ours: a Rig user
//! message that carries tool results becomes one [`Message::ToolResult`]
//! per result, followed by a user message with the rest of its content.
//! Content our model has no variant for (audio, video, documents, images
//! that are not inline bytes, text with provider data) rides in a user
//! message as a [`ContentBlock::Wire`] block holding Rig's own JSON, so it
//! comes back unchanged. What only Rig's assistant turns hold (block order,
//! provider items, origin, stop reason, images, opaque items) is kept by
//! [`Recorded`](crate::Recorded), which records the originals.
//!
//! [`to_rig`] is the default way back: consecutive tool results become one
//! Rig user message (the shape Rig's runtime appends and its transcript
//! check asks for), and a result without a tool name takes the name of the
//! call it answers.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use memory_core::{ContentBlock, ImageContent, Message, ToolCall};
use rig_core::completion::Message as RigMessage;
use rig_core::message::{
    AssistantContent, AssistantMessage, CallId, Document, DocumentSourceKind, Image, ImageDetail,
    ImageMediaType, MimeType, Reasoning, Text, ToolFunction, ToolName, ToolResult,
    ToolResultContent, UserContent,
};
use serde_json::{Value, json};

/// The key of a wire block that holds one of Rig's user content items.
const RIG_KEY: &str = "rig";
/// The key under which a wire block of ours rides in a Rig document.
const WIRE_KEY: &str = "memory_wire";

/// Why messages of ours could not become Rig's.
///
/// ```
/// use memory_core::Message;
/// let err = memory_rig::to_rig(&[Message::tool_result("c9", "ok")]).unwrap_err();
/// assert!(err.to_string().contains("c9"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// A tool call with an empty name (Rig requires one).
    #[error("message {index}: tool call `{call_id}` has an empty name; Rig requires a tool name")]
    EmptyToolName {
        /// Position of the message.
        index: usize,
        /// The call's id.
        call_id: String,
    },
    /// A tool result without a name, answering no call in the messages.
    #[error(
        "message {index}: tool result `{call_id}` has no tool name and answers no call in the messages; record results with their tool's name"
    )]
    UnnamedResult {
        /// Position of the message.
        index: usize,
        /// The call id it answers.
        call_id: String,
    },
    /// A stored carry does not fit the messages it sits beside.
    #[error(
        "carry at message {position}: {what}; the conversation's carries were not written by this crate"
    )]
    BadCarry {
        /// Position of the message.
        position: usize,
        /// What does not fit.
        what: String,
    },
}

/// One Rig message as ours, in order.
///
/// ```
/// use rig_core::completion::Message as RigMessage;
/// let ours = memory_rig::to_ours(&RigMessage::user("hello"));
/// assert_eq!(ours, vec![memory_core::Message::user("hello")]);
/// ```
pub fn to_ours(message: &RigMessage) -> Vec<Message> {
    match message {
        RigMessage::System { content } => vec![Message::system(content.clone())],
        RigMessage::User { content } => user_to_ours(content),
        RigMessage::Assistant(turn) => vec![assistant_to_ours(turn)],
    }
}

fn user_to_ours(content: &[UserContent]) -> Vec<Message> {
    let mut out = Vec::new();
    let mut rest = Vec::new();
    for item in content {
        match item {
            UserContent::ToolResult(result) => out.push(Message::ToolResult {
                tool_call_id: result.call.wire().into_owned(),
                content: result_text(&result.content),
                name: Some(result.name.as_str().to_owned()),
            }),
            other => rest.push(content_to_ours(other)),
        }
    }
    if !rest.is_empty() || out.is_empty() {
        out.push(Message::User(rest));
    }
    out
}

/// What the model reads of a tool result: its texts, and its JSON as text.
fn result_text(content: &[ToolResultContent]) -> String {
    content
        .iter()
        .filter_map(|part| match part {
            ToolResultContent::Text(text) => Some(text.text.clone()),
            ToolResultContent::Json { value } => Some(value.to_string()),
            ToolResultContent::Image(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One user content item as a block of ours: the block that goes back to
/// the same item, or else Rig's JSON in a wire block.
fn content_to_ours(item: &UserContent) -> ContentBlock {
    let candidate = match item {
        UserContent::Text(text) => Some(ContentBlock::Text(text.text.clone())),
        UserContent::Image(image) => inline_image(image),
        UserContent::Document(document) => document
            .additional_params
            .as_ref()
            .and_then(|params| params.get(WIRE_KEY))
            .map(|value| unwire_image(ContentBlock::Wire(value.clone()))),
        _ => None,
    };
    match candidate {
        Some(block) if block_to_rig(&block) == *item => block,
        _ => {
            let value = serde_json::to_value(item).unwrap_or(Value::Null);
            ContentBlock::Wire(json!({ RIG_KEY: value }))
        }
    }
}

/// An inline image as bytes.
fn inline_image(image: &Image) -> Option<ContentBlock> {
    let DocumentSourceKind::Base64(data) = &image.data else {
        return None;
    };
    let mime = image.media_type.as_ref()?.to_mime_type();
    let ours = ImageContent::new(mime, STANDARD.decode(data).ok()?);
    Some(ContentBlock::Image(match &image.detail {
        Some(detail) => ours.with_detail(detail_name(detail)),
        None => ours,
    }))
}

/// Rig's image detail as the word OpenAI's wire format has for it.
fn detail_name(detail: &ImageDetail) -> &'static str {
    match detail {
        ImageDetail::Low => "low",
        ImageDetail::High => "high",
        ImageDetail::Auto => "auto",
    }
}

/// A detail of ours as Rig's: the outer `None` when Rig has no word for
/// it.
fn rig_detail(detail: Option<&str>) -> Option<Option<ImageDetail>> {
    Some(match detail {
        None => None,
        Some("low") => Some(ImageDetail::Low),
        Some("high") => Some(ImageDetail::High),
        Some("auto") => Some(ImageDetail::Auto),
        Some(_) => return None,
    })
}

fn assistant_to_ours(turn: &AssistantMessage) -> Message {
    let mut texts = Vec::new();
    let mut reasoning: Option<Vec<&str>> = None;
    let mut tool_calls = Vec::new();
    for block in &turn.content {
        match block {
            AssistantContent::Text(text) => texts.push(text.text.as_str()),
            AssistantContent::Reasoning(r) => reasoning.get_or_insert_default().push(&r.text),
            AssistantContent::ToolCall(call) => tool_calls.push(ToolCall::new(
                call.id.wire(),
                call.function.name.as_str(),
                arguments_text(&call.function),
            )),
            // Images and provider-only items have no place in ours: the
            // original is kept by `Recorded`.
            _ => {}
        }
    }
    Message::Assistant {
        content: texts.join("\n"),
        reasoning: reasoning.map(|r| r.join("\n")),
        tool_calls,
    }
}

/// The arguments as the model sent them.
fn arguments_text(function: &ToolFunction) -> String {
    function.invalid_arguments.clone().unwrap_or_else(|| {
        serde_json::to_string(&function.arguments).unwrap_or_else(|_| "{}".to_owned())
    })
}

/// Messages of ours as Rig's.
///
/// # Errors
///
/// [`ConvertError`] when a tool name Rig requires is missing.
///
/// ```
/// use memory_core::{Message, ToolCall};
/// let rig = memory_rig::to_rig(&[
///     Message::user("list src"),
///     Message::assistant_with_tools("", vec![
///         ToolCall::new("c1", "ls", r#"{"path":"src"}"#),
///         ToolCall::new("c2", "ls", r#"{"path":"tests"}"#),
///     ]),
///     Message::tool_result("c1", "lib.rs"),
///     Message::tool_result("c2", "it.rs"),
/// ]).unwrap();
/// assert_eq!(rig.len(), 3); // both results in one Rig user message
/// assert!(rig_core::transcript::validate_canonical(&rig).is_ok());
/// ```
pub fn to_rig(messages: &[Message]) -> Result<Vec<RigMessage>, ConvertError> {
    let mut out: Vec<RigMessage> = Vec::new();
    let mut results: Vec<UserContent> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if let Message::ToolResult {
            tool_call_id,
            content,
            name,
        } = message
        {
            let name = match name {
                Some(name) => ToolName::new(name.clone()).ok(),
                None => call_name(messages, tool_call_id),
            }
            .ok_or_else(|| ConvertError::UnnamedResult {
                index,
                call_id: tool_call_id.clone(),
            })?;
            results.push(UserContent::ToolResult(ToolResult {
                call: CallId::from_wire(tool_call_id.clone()),
                name,
                content: vec![ToolResultContent::Text(Text::new(content.clone()))],
                is_error: false,
            }));
            continue;
        }
        if !results.is_empty() {
            out.push(RigMessage::User {
                content: std::mem::take(&mut results),
            });
        }
        out.push(one_to_rig(message, index)?);
    }
    if !results.is_empty() {
        out.push(RigMessage::User { content: results });
    }
    Ok(out)
}

/// The name of the call `id` among `messages`.
fn call_name(messages: &[Message], id: &str) -> Option<ToolName> {
    messages
        .iter()
        .flat_map(Message::tool_calls)
        .find(|call| call.id == id)
        .and_then(|call| ToolName::new(call.name.clone()).ok())
}

fn one_to_rig(message: &Message, index: usize) -> Result<RigMessage, ConvertError> {
    Ok(match message {
        Message::System(content) => RigMessage::System {
            content: content.clone(),
        },
        Message::User(blocks) => RigMessage::User {
            content: blocks.iter().map(block_to_rig).collect(),
        },
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => {
            let mut blocks = Vec::new();
            if let Some(reasoning) = reasoning {
                blocks.push(AssistantContent::Reasoning(Reasoning::new(
                    reasoning.clone(),
                )));
            }
            if !content.is_empty() || (reasoning.is_none() && tool_calls.is_empty()) {
                blocks.push(AssistantContent::Text(Text::new(content.clone())));
            }
            for call in tool_calls {
                let name =
                    ToolName::new(call.name.clone()).map_err(|_| ConvertError::EmptyToolName {
                        index,
                        call_id: call.id.clone(),
                    })?;
                blocks.push(AssistantContent::ToolCall(
                    rig_core::message::ToolCall::new(
                        CallId::from_wire(call.id.clone()),
                        ToolFunction::parse(name, &call.arguments),
                    ),
                ));
            }
            RigMessage::Assistant(AssistantMessage::new(blocks))
        }
        // Tool results are gathered by `to_rig`.
        Message::ToolResult { .. } => unreachable!("tool results are converted in runs"),
    })
}

fn block_to_rig(block: &ContentBlock) -> UserContent {
    match block {
        ContentBlock::Text(text) => UserContent::Text(Text::new(text.clone())),
        ContentBlock::Image(image) => image_to_rig(image)
            .map(UserContent::Image)
            .unwrap_or_else(|| as_document(&image_as_wire(image))),
        ContentBlock::Wire(_) => wire_to_rig(block).unwrap_or_else(|| as_document(block)),
    }
}

/// An image of ours as Rig's inline image, when Rig knows its type and
/// its detail.
fn image_to_rig(image: &ImageContent) -> Option<Image> {
    Some(Image {
        data: DocumentSourceKind::Base64(STANDARD.encode(&image.data)),
        media_type: Some(ImageMediaType::from_mime_type(&image.mime_type)?),
        detail: rig_detail(image.detail.as_deref())?,
        ..Image::default()
    })
}

/// An image of a type or detail Rig does not know, as a wire block of ours.
fn image_as_wire(image: &ImageContent) -> ContentBlock {
    let mut inner = json!({ "mime_type": image.mime_type, "data": STANDARD.encode(&image.data) });
    if let Some(detail) = &image.detail {
        inner["detail"] = json!(detail);
    }
    ContentBlock::Wire(json!({ "memory_image": inner }))
}

/// A wire block holding Rig's content, as that content.
fn wire_to_rig(block: &ContentBlock) -> Option<UserContent> {
    let ContentBlock::Wire(value) = block else {
        return None;
    };
    match value.as_object() {
        Some(object) if object.len() == 1 => {
            serde_json::from_value(object.get(RIG_KEY)?.clone()).ok()
        }
        _ => None,
    }
}

/// Any other wire block: a Rig document holding its JSON, marked so that it
/// comes back as the same block.
fn as_document(block: &ContentBlock) -> UserContent {
    let value = match block {
        ContentBlock::Wire(value) => value.clone(),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    };
    UserContent::Document(Document {
        data: DocumentSourceKind::String(value.to_string()),
        media_type: None,
        additional_params: Some(json!({ WIRE_KEY: value })),
    })
}

/// A wire block made by [`image_as_wire`] as the image it holds.
fn unwire_image(block: ContentBlock) -> ContentBlock {
    let ContentBlock::Wire(value) = &block else {
        return block;
    };
    let image = value.get("memory_image").and_then(|image| {
        let mime = image.get("mime_type")?.as_str()?;
        let data = STANDARD.decode(image.get("data")?.as_str()?).ok()?;
        let ours = ImageContent::new(mime, data);
        Some(match image.get("detail") {
            Some(detail) => ours.with_detail(detail.as_str()?),
            None => ours,
        })
    });
    match image {
        Some(image) if image_as_wire(&image) == block => ContentBlock::Image(image),
        _ => block,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_results_and_text_split_into_ours() {
        let call = rig_core::message::ToolCall::new(
            CallId::from_wire("c1"),
            ToolFunction::parse(ToolName::new("ls").unwrap(), "{}"),
        );
        let rig = RigMessage::User {
            content: vec![
                UserContent::ToolResult(call.result(vec![ToolResultContent::Text(Text::new("a"))])),
                UserContent::Text(Text::new("and now?")),
            ],
        };
        let ours = to_ours(&rig);
        assert_eq!(ours.len(), 2);
        assert_eq!(ours[0].tool_call_id(), Some("c1"));
        assert_eq!(ours[1], Message::user("and now?"));
    }

    #[test]
    fn an_unnamed_result_takes_its_calls_name() {
        let rig = to_rig(&[
            Message::assistant_with_tools("", vec![ToolCall::new("c1", "ls", "{}")]),
            Message::tool_result("c1", "x"),
        ])
        .unwrap();
        let RigMessage::User { content } = &rig[1] else {
            panic!("a user message, got {rig:?}");
        };
        assert!(matches!(&content[0], UserContent::ToolResult(r) if r.name.as_str() == "ls"));
    }

    #[test]
    fn an_empty_tool_name_is_an_error_naming_the_call() {
        let err = to_rig(&[Message::assistant_with_tools(
            "",
            vec![ToolCall::new("c7", "", "{}")],
        )])
        .unwrap_err();
        assert_eq!(
            err,
            ConvertError::EmptyToolName {
                index: 0,
                call_id: "c7".into()
            }
        );
    }
}
