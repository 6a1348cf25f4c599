//! The conversation model: [`Message`], [`ContentBlock`], [`ToolCall`].

use serde::{Deserialize, Serialize};

/// One tool invocation requested by the model.
///
/// ```
/// use memory_core::ToolCall;
///
/// let call = ToolCall::new("call_1", "read_file", r#"{"path":"src/lib.rs"}"#);
/// assert_eq!(call.name, "read_file");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    /// Unique id of the call; its result carries the same id.
    pub id: String,
    /// Name of the tool.
    pub name: String,
    /// Arguments as the model wrote them (JSON text, kept verbatim).
    pub arguments: String,
}

impl ToolCall {
    /// Builds a tool call.
    ///
    /// ```
    /// let call = memory_core::ToolCall::new("c1", "ls", "{}");
    /// assert_eq!(call.id, "c1");
    /// ```
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// Raw image bytes with their MIME type, and the `detail` the client asked
/// the model to see them at.
///
/// What an image costs in tokens is [`crate::image::tokens`].
///
/// ```
/// let image = memory_core::ImageContent::new("image/png", vec![0x89, 0x50]);
/// assert_eq!(image.mime_type, "image/png");
/// assert_eq!(image.detail, None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImageContent {
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// The bytes, not encoded.
    pub data: Vec<u8>,
    /// How closely the model looks at the image, as the client sent it:
    /// OpenAI's `low`, `high` or `auto`, or any other word a provider
    /// takes; `None` when the client said nothing (the provider's default,
    /// `auto` at OpenAI). Kept verbatim and written back with the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl ImageContent {
    /// Builds an image block's content, without a `detail`.
    ///
    /// ```
    /// let image = memory_core::ImageContent::new("image/jpeg", Vec::new());
    /// assert!(image.data.is_empty());
    /// ```
    pub fn new(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self {
            mime_type: mime_type.into(),
            data,
            detail: None,
        }
    }

    /// The same image with the `detail` the client asked for.
    ///
    /// ```
    /// let image = memory_core::ImageContent::new("image/png", vec![1]).with_detail("low");
    /// assert_eq!(image.detail.as_deref(), Some("low"));
    /// ```
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// One block of a user message.
///
/// ```
/// use memory_core::ContentBlock;
///
/// let block = ContentBlock::Text("hello".into());
/// assert_eq!(block.as_text(), Some("hello"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text(String),
    /// An image.
    Image(ImageContent),
    /// A provider-shaped block passed through verbatim (audio, files, image
    /// URLs, anything without a typed variant).
    Wire(serde_json::Value),
}

impl ContentBlock {
    /// The text of a text block.
    ///
    /// ```
    /// use memory_core::ContentBlock;
    /// assert_eq!(ContentBlock::Wire(serde_json::json!({})).as_text(), None);
    /// ```
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// One message of a conversation.
///
/// Parallel tool calls stay in one [`Message::Assistant`]; each is answered by
/// a [`Message::ToolResult`] carrying the call's id.
///
/// ```
/// use memory_core::{Message, ToolCall};
///
/// let history = vec![
///     Message::system("You are terse."),
///     Message::user("What is in src?"),
///     Message::assistant_with_tools("", vec![ToolCall::new("c1", "ls", r#"{"path":"src"}"#)]),
///     Message::tool_result("c1", "lib.rs main.rs"),
///     Message::assistant("lib.rs and main.rs."),
/// ];
/// assert!(history[1].is_user());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Message {
    /// Instructions from the application (or a summary, see [`crate::summary`]).
    System(String),
    /// What the user said: text, image and pass-through blocks.
    User(Vec<ContentBlock>),
    /// A model reply.
    Assistant {
        /// Reply text.
        content: String,
        /// Reasoning of thinking models, passed back verbatim.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        /// Tool calls requested with this reply.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    ToolResult {
        /// Id of the call this answers.
        tool_call_id: String,
        /// The result text.
        content: String,
        /// Name of the tool, when the source recorded it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl Message {
    /// A system message.
    ///
    /// ```
    /// assert!(memory_core::Message::system("be brief").is_system());
    /// ```
    pub fn system(content: impl Into<String>) -> Self {
        Message::System(content.into())
    }

    /// A user message with one text block.
    ///
    /// ```
    /// let m = memory_core::Message::user("hi");
    /// assert_eq!(m.text(), "hi");
    /// ```
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(vec![ContentBlock::Text(text.into())])
    }

    /// A user message made of blocks.
    ///
    /// ```
    /// use memory_core::{ContentBlock, Message};
    /// let m = Message::user_blocks(vec![ContentBlock::Text("a".into())]);
    /// assert!(m.is_user());
    /// ```
    pub fn user_blocks(blocks: Vec<ContentBlock>) -> Self {
        Message::User(blocks)
    }

    /// An assistant reply without tool calls.
    ///
    /// ```
    /// let m = memory_core::Message::assistant("done");
    /// assert!(m.tool_calls().is_empty());
    /// ```
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant {
            content: content.into(),
            reasoning: None,
            tool_calls: Vec::new(),
        }
    }

    /// An assistant reply that calls tools.
    ///
    /// ```
    /// use memory_core::{Message, ToolCall};
    /// let m = Message::assistant_with_tools("", vec![ToolCall::new("c1", "ls", "{}")]);
    /// assert_eq!(m.tool_calls().len(), 1);
    /// ```
    pub fn assistant_with_tools(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message::Assistant {
            content: content.into(),
            reasoning: None,
            tool_calls,
        }
    }

    /// The result of tool call `tool_call_id`.
    ///
    /// ```
    /// let m = memory_core::Message::tool_result("c1", "ok");
    /// assert_eq!(m.tool_call_id(), Some("c1"));
    /// ```
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::ToolResult {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            name: None,
        }
    }

    /// Whether this is a user message.
    ///
    /// ```
    /// assert!(memory_core::Message::user("q").is_user());
    /// ```
    pub fn is_user(&self) -> bool {
        matches!(self, Message::User(_))
    }

    /// Whether this is a system message.
    ///
    /// ```
    /// assert!(!memory_core::Message::user("q").is_system());
    /// ```
    pub fn is_system(&self) -> bool {
        matches!(self, Message::System(_))
    }

    /// Whether this is an assistant message.
    ///
    /// ```
    /// assert!(memory_core::Message::assistant("a").is_assistant());
    /// ```
    pub fn is_assistant(&self) -> bool {
        matches!(self, Message::Assistant { .. })
    }

    /// Whether this is a tool result.
    ///
    /// ```
    /// assert!(memory_core::Message::tool_result("c", "r").is_tool_result());
    /// ```
    pub fn is_tool_result(&self) -> bool {
        matches!(self, Message::ToolResult { .. })
    }

    /// The tool calls of an assistant message (empty for other roles).
    ///
    /// ```
    /// assert!(memory_core::Message::user("q").tool_calls().is_empty());
    /// ```
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Assistant { tool_calls, .. } => tool_calls,
            _ => &[],
        }
    }

    /// The call id a tool result answers.
    ///
    /// ```
    /// assert_eq!(memory_core::Message::user("q").tool_call_id(), None);
    /// ```
    pub fn tool_call_id(&self) -> Option<&str> {
        match self {
            Message::ToolResult { tool_call_id, .. } => Some(tool_call_id),
            _ => None,
        }
    }

    /// The role name as OpenAI's chat format spells it.
    ///
    /// ```
    /// assert_eq!(memory_core::Message::tool_result("c", "r").role(), "tool");
    /// ```
    pub fn role(&self) -> &'static str {
        match self {
            Message::System(_) => "system",
            Message::User(_) => "user",
            Message::Assistant { .. } => "assistant",
            Message::ToolResult { .. } => "tool",
        }
    }

    /// The visible text: the system or result text, a user message's text
    /// blocks joined by newlines, or an assistant's reply text (reasoning and
    /// tool calls excluded).
    ///
    /// ```
    /// assert_eq!(memory_core::Message::assistant("yes").text(), "yes");
    /// ```
    pub fn text(&self) -> String {
        match self {
            Message::System(content) => content.clone(),
            Message::User(content) => content
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join("\n"),
            Message::Assistant { content, .. } => content.clone(),
            Message::ToolResult { content, .. } => content.clone(),
        }
    }
}
