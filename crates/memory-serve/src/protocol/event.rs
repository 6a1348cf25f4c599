//! [`Event`]: one step of a streamed reply, in no protocol's shape; what
//! a stream decoder reads from the upstream's events and a stream encoder
//! writes in the client's.

/// Why a reply ended, in no protocol's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The model called tools and waits for their results.
    ToolUse,
    /// The reply reached its token limit.
    MaxTokens,
    /// A stop sequence ended it.
    StopSequence,
    /// Any other reason, in the upstream's own word.
    Other(String),
}

impl StopReason {
    /// Chat Completions' `finish_reason`.
    pub(crate) fn as_chat(&self) -> &str {
        match self {
            StopReason::EndTurn | StopReason::StopSequence => "stop",
            StopReason::ToolUse => "tool_calls",
            StopReason::MaxTokens => "length",
            StopReason::Other(word) if word == "refusal" => "content_filter",
            StopReason::Other(word) => word,
        }
    }

    /// From Chat Completions' `finish_reason`.
    pub(crate) fn from_chat(word: &str) -> Self {
        match word {
            "stop" => StopReason::EndTurn,
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "length" => StopReason::MaxTokens,
            "content_filter" => StopReason::Other("refusal".into()),
            other => StopReason::Other(other.into()),
        }
    }

    /// Anthropic's `stop_reason`.
    pub(crate) fn as_messages(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Other(word) if word == "refusal" => "refusal",
            // A reason Anthropic's clients do not know ends the turn.
            StopReason::Other(_) => "end_turn",
        }
    }

    /// From Anthropic's `stop_reason`.
    pub(crate) fn from_messages(word: &str) -> Self {
        match word {
            "end_turn" => StopReason::EndTurn,
            "tool_use" => StopReason::ToolUse,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            other => StopReason::Other(other.into()),
        }
    }
}

/// Tokens a reply reports, when the upstream says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    /// Tokens of the request.
    pub(crate) input: Option<u64>,
    /// Tokens of the reply.
    pub(crate) output: Option<u64>,
}

/// One step of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// The reply begins: its id and model, as the upstream named them.
    Start { id: String, model: String },
    /// More of the reply's text.
    Text(String),
    /// More of the model's reasoning.
    Reasoning(String),
    /// A tool call begins: the `index`th call of the reply.
    ToolStart {
        index: usize,
        id: String,
        name: String,
    },
    /// More of the `index`th call's arguments (JSON text).
    ToolArguments { index: usize, json: String },
    /// Tokens used so far.
    Usage(Usage),
    /// The reply is complete, and why it ended.
    Stop(StopReason),
    /// The stream is over.
    Done,
    /// The upstream failed mid-stream.
    Error { message: String },
}
