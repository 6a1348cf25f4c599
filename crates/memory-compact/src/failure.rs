//! [`Failure`]: why a compaction made no summary, and when a reply may
//! become one.

use std::time::Duration;

use memory_core::{ChatResponse, ProviderError, Rejection, StopReason};

/// Why a compaction left the history as it was. Each message says what to do.
///
/// ```
/// use memory_compact::Failure;
/// use memory_core::StopReason;
/// let failure = Failure::Incomplete(StopReason::Length);
/// assert!(failure.to_string().contains("with_summary_max_tokens"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The summarizer's provider failed (after the retries allowed).
    #[error("the summarizer failed: {0}")]
    Provider(ProviderError),
    /// The summarizer did not answer in time (after the retries allowed).
    #[error(
        "the summarizer did not answer within {0:?}; raise with_timeout or route summaries to a faster model"
    )]
    TimedOut(Duration),
    /// The reply was cut off, refused or failed mid-way.
    #[error(
        "the summary did not end normally (stop reason {0:?}); a cut-off or refused summary would lose history: raise with_summary_max_tokens or change the prompt"
    )]
    Incomplete(StopReason),
    /// The reply was not an assistant message.
    #[error(
        "the summarizer replied with a {0} message instead of an assistant message; check the summarizer's provider"
    )]
    NotAssistant(&'static str),
    /// The reply asked for tools instead of writing a summary.
    #[error(
        "the summarizer asked for tools instead of writing a summary; use a model or prompt that answers in text"
    )]
    ToolCalls,
    /// The reply (or a hook's summary) held no text.
    #[error("the summary is empty; check the model, the prompt or the hook")]
    Empty,
    /// A background summary was made for a history that has changed since.
    #[error(
        "the history changed while the background summary was made (another compaction or an edit); it was discarded and a new one will be made"
    )]
    Stale,
    /// The history with the summary is no smaller than without it (a
    /// summary as long as the text it covers); nothing was replaced.
    #[error(
        "the summary is no shorter than what it covers ({after} tokens with it, {before} without); nothing was replaced"
    )]
    NotSmaller {
        /// Tokens of the history before.
        before: usize,
        /// Tokens with the summary in place.
        after: usize,
    },
    /// With the summary, what may never be shed exceeds the budget.
    #[error(
        "with the summary, the messages that may never be shed hold {floor} tokens, over the budget of {budget}; lower with_summary_max_tokens or raise the budget"
    )]
    TooLarge {
        /// Tokens of the compacted history's floor.
        floor: usize,
        /// The token budget.
        budget: usize,
    },
}

/// The summary text of `reply`, trimmed, or why it cannot be one: it must be
/// an assistant message without tool calls that ended normally
/// ([`StopReason::is_complete`]) and holds text.
///
/// # Errors
///
/// The [`Failure`] that rejects the reply.
///
/// ```
/// use memory_compact::{accept_reply, Failure};
/// use memory_core::{ChatResponse, Message, StopReason};
///
/// assert_eq!(accept_reply(&ChatResponse::text("  ## Goals\nShip.\n")), Ok("## Goals\nShip."));
/// let mut cut = ChatResponse::text("## Goals\nSh");
/// cut.stop_reason = StopReason::Length;
/// assert_eq!(accept_reply(&cut), Err(Failure::Incomplete(StopReason::Length)));
/// let mut user = ChatResponse::text("x");
/// user.message = Message::user("x");
/// assert_eq!(accept_reply(&user), Err(Failure::NotAssistant("user")));
/// ```
pub fn accept_reply(reply: &ChatResponse) -> Result<&str, Failure> {
    memory_core::accept_reply(reply).map_err(Failure::from)
}

impl From<Rejection> for Failure {
    fn from(rejection: Rejection) -> Self {
        match rejection {
            Rejection::NotAssistant(role) => Failure::NotAssistant(role),
            Rejection::ToolCalls => Failure::ToolCalls,
            Rejection::Incomplete(reason) => Failure::Incomplete(reason),
            _ => Failure::Empty,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{Message, ToolCall};

    fn stopped(reason: StopReason) -> ChatResponse {
        let mut reply = ChatResponse::text("## Goals\nA parser.");
        reply.stop_reason = reason;
        reply
    }

    #[test]
    fn only_complete_nonblank_assistant_text_is_accepted() {
        assert!(accept_reply(&stopped(StopReason::Stop)).is_ok());
        for reason in [StopReason::Length, StopReason::Refusal, StopReason::Error] {
            assert_eq!(
                accept_reply(&stopped(reason)),
                Err(Failure::Incomplete(reason))
            );
        }
        assert_eq!(
            accept_reply(&stopped(StopReason::ToolCalls)),
            Err(Failure::ToolCalls)
        );
        let mut tools = ChatResponse::text("");
        tools.message = Message::assistant_with_tools("x", vec![ToolCall::new("c", "t", "{}")]);
        assert_eq!(accept_reply(&tools), Err(Failure::ToolCalls));
        assert_eq!(
            accept_reply(&ChatResponse::text(" \n\t")),
            Err(Failure::Empty)
        );
        let mut system = ChatResponse::text("");
        system.message = Message::system("summary");
        assert_eq!(accept_reply(&system), Err(Failure::NotAssistant("system")));
    }
}
