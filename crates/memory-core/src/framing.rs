//! [`Framing`]: the tokens a provider's chat format adds around the
//! messages, which no message text shows.

use crate::message::Message;

/// The tokens a chat format adds to a request on top of the message texts:
/// each message's start and end markers and role, each tool call's
/// wrapping, and the start of the reply the model is asked for.
///
/// A [`TokenCounter`](crate::TokenCounter) that stands for a model family
/// says its framing ([`TokenCounter::framing`](crate::TokenCounter::framing));
/// its [`count_message`](crate::TokenCounter::count_message) then includes
/// the per-message part, and a [`Budget`](crate::Budget) is narrowed by the
/// per-request part with [`Budget::for_messages`](crate::Budget::for_messages)
/// where a context is fitted, so that a context that fits by our count fits
/// by the provider's.
///
/// ```
/// use memory_core::{Framing, Message, ToolCall};
///
/// let call = Message::assistant_with_tools("", vec![ToolCall::new("c1", "ls", "{}")]);
/// assert_eq!(Framing::OPENAI_CHAT.of_message(&Message::user("hi")), 4);
/// assert_eq!(Framing::OPENAI_CHAT.of_message(&call), 5);
/// assert_eq!(Framing::NONE.of_message(&call), 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Framing {
    /// Added for every message (its markers and its role).
    pub per_message: usize,
    /// Added for every tool call of an assistant message, on top of its
    /// name and arguments.
    pub per_tool_call: usize,
    /// Added for a message's `name` field (a tool result's tool name), on
    /// top of the name's own tokens.
    pub per_name: usize,
    /// Added once per request: the start of the reply.
    pub per_request: usize,
}

impl Framing {
    /// No framing: message texts only (the estimate's, and any counter's
    /// that does not say).
    ///
    /// ```
    /// assert_eq!(memory_core::Framing::NONE, memory_core::Framing::default());
    /// ```
    pub const NONE: Self = Self {
        per_message: 0,
        per_tool_call: 0,
        per_name: 0,
        per_request: 0,
    };

    /// OpenAI's Chat Completions format (GPT-3.5-turbo, GPT-4, GPT-4o and
    /// later, `cl100k_base` and `o200k_base`), as OpenAI's cookbook "How to
    /// count tokens with tiktoken" documents it: 3 tokens a message plus its
    /// role (`system`, `user`, `assistant` and `tool` are one token each in
    /// both encodings, so 4), 1 more for a `name` field, and 3 once per
    /// request for the reply's start (`<|start|>assistant<|message|>`). A
    /// tool call adds 1 on top of its name and arguments, the figure
    /// `tiktoken-rs`'s `num_tokens_from_messages` uses (the cookbook gives
    /// none). Tool call ids are not counted, as in both.
    ///
    /// ```
    /// let f = memory_core::Framing::OPENAI_CHAT;
    /// assert_eq!((f.per_message, f.per_tool_call, f.per_name, f.per_request), (4, 1, 1, 3));
    /// ```
    pub const OPENAI_CHAT: Self = Self {
        per_message: 4,
        per_tool_call: 1,
        per_name: 1,
        per_request: 3,
    };

    /// The framing tokens of `message`: [`per_message`](Self::per_message)
    /// and [`per_tool_call`](Self::per_tool_call) for each of its tool
    /// calls. (A `name` field's tokens are counted with its text, by
    /// [`count_message`](crate::TokenCounter::count_message).)
    ///
    /// ```
    /// use memory_core::{Framing, Message};
    /// assert_eq!(Framing::OPENAI_CHAT.of_message(&Message::system("Be brief.")), 4);
    /// ```
    pub fn of_message(&self, message: &Message) -> usize {
        self.per_message + self.per_tool_call * message.tool_calls().len()
    }
}
