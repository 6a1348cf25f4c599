//! Whether a summarizer's reply may become a summary.
//!
//! A summary replaces the history it covers, so a reply is checked before it
//! may: it must be an assistant message without tool calls, it must have
//! ended normally ([`StopReason::is_complete`]: not cut off at the token
//! limit, not refused, not failed), and its text must not be blank
//! ([`accept_reply`]). A reply to a summary request must also say something
//! about what it covers ([`accept_summary`], by
//! [`grounding`](crate::grounding)). A strategy also rejects a summary
//! message over its cap ([`Rejection::OverCap`]) or no shorter than what it
//! covers ([`Rejection::NotShorter`]), counted with its own counter.

use memory_core::{ChatResponse, Message, StopReason};

/// Why a reply was not taken as a summary.
///
/// ```
/// use memory_core::{ChatResponse, StopReason};
/// use memory_summary_engine::{accept_reply, Rejection};
///
/// let mut reply = ChatResponse::text("The user wants a parser and the");
/// reply.stop_reason = StopReason::Length;
/// assert_eq!(accept_reply(&reply), Err(Rejection::Incomplete(StopReason::Length)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
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
    /// The reply did not end normally.
    #[error(
        "the summary did not end normally (stop reason {0:?}); a cut-off or refused summary would lose history, raise the summary cap or change the prompt"
    )]
    Incomplete(StopReason),
    /// The reply held no text.
    #[error("the summarizer replied with no text; check the model and the prompt")]
    Empty,
    /// The reply shares next to none of the salient terms of what it
    /// covers: it says nothing about it ([`grounding`](crate::grounding)).
    #[error(
        "the summary shares {shared} of the {source_terms} salient terms (names, identifiers, paths, numbers, rare words) of what it covers, fewer than the {needed} needed: it says nothing about it; check the model and the prompt"
    )]
    Ungrounded {
        /// Salient terms the reply shares with what it covers.
        shared: usize,
        /// How many it needed to share.
        needed: usize,
        /// Salient terms of what it covers.
        source_terms: usize,
    },
    /// The summary message holds more tokens than its cap.
    #[error(
        "the summary message holds {tokens} tokens, over its cap of {cap}; raise the summary cap or ask for a shorter summary"
    )]
    OverCap {
        /// Tokens of the whole summary message.
        tokens: usize,
        /// The cap.
        cap: usize,
    },
    /// The summary message holds at least as many tokens as the messages
    /// it covers: replacing them would save nothing.
    #[error(
        "the summary message holds {tokens} tokens, no fewer than the {covered} of the messages it covers; nothing was replaced"
    )]
    NotShorter {
        /// Tokens of the whole summary message.
        tokens: usize,
        /// Tokens of the messages it covers.
        covered: usize,
    },
}

/// The summary text of `reply`, trimmed, or why it cannot be one.
///
/// # Errors
///
/// A [`Rejection`] for a reply that is not an assistant message, asks for
/// tools, did not end normally, or is blank. Every strategy that makes a
/// summary from a model's reply asks this first.
///
/// ```
/// use memory_core::{ChatResponse, Message};
/// use memory_summary_engine::{accept_reply, Rejection};
///
/// assert_eq!(accept_reply(&ChatResponse::text("  Tests pass.\n")), Ok("Tests pass."));
/// assert_eq!(accept_reply(&ChatResponse::text(" \n ")), Err(Rejection::Empty));
/// let mut user = ChatResponse::text("x");
/// user.message = Message::user("x");
/// assert_eq!(accept_reply(&user), Err(Rejection::NotAssistant("user")));
/// ```
pub fn accept_reply(reply: &ChatResponse) -> Result<&str, Rejection> {
    let Message::Assistant {
        content,
        tool_calls,
        ..
    } = &reply.message
    else {
        return Err(Rejection::NotAssistant(reply.message.role()));
    };
    if !tool_calls.is_empty() || reply.stop_reason == StopReason::ToolCalls {
        return Err(Rejection::ToolCalls);
    }
    if !reply.stop_reason.is_complete() {
        return Err(Rejection::Incomplete(reply.stop_reason));
    }
    let text = content.trim();
    if text.is_empty() {
        return Err(Rejection::Empty);
    }
    Ok(text)
}

/// The summary text of `reply` to a request that asked to summarize
/// `source` ([`grounding::source_of`](crate::grounding::source_of) of the
/// request), or why it cannot be one: [`accept_reply`]'s rules, then
/// [`grounding::check`](crate::grounding::check).
///
/// # Errors
///
/// A [`Rejection`] as [`accept_reply`] gives, or
/// [`Rejection::Ungrounded`] for a reply that says nothing about `source`.
///
/// ```
/// use memory_core::ChatResponse;
/// use memory_summary_engine::{accept_summary, Rejection};
///
/// let source = "user: Why does tests/test_importer.py fail?\nassistant: parse_amount rejects '1.234,56'.";
/// let good = ChatResponse::text("tests/test_importer.py fails: parse_amount rejects '1.234,56'.");
/// assert!(accept_summary(source, &good).is_ok());
/// let chatter = ChatResponse::text("I'm ready to assist with any code you'd like me to work on.");
/// assert!(matches!(accept_summary(source, &chatter), Err(Rejection::Ungrounded { .. })));
/// ```
pub fn accept_summary<'r>(source: &str, reply: &'r ChatResponse) -> Result<&'r str, Rejection> {
    let text = accept_reply(reply)?;
    crate::grounding::check(source, text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ToolCall;

    fn stopped(reason: StopReason) -> ChatResponse {
        let mut reply = ChatResponse::text("A plausible summary");
        reply.stop_reason = reason;
        reply
    }

    #[test]
    fn only_a_complete_blank_free_assistant_text_is_accepted() {
        assert_eq!(
            accept_reply(&stopped(StopReason::Stop)),
            Ok("A plausible summary")
        );
        for reason in [StopReason::Length, StopReason::Refusal, StopReason::Error] {
            assert_eq!(
                accept_reply(&stopped(reason)),
                Err(Rejection::Incomplete(reason))
            );
        }
        let mut tools = ChatResponse::text("");
        tools.message =
            Message::assistant_with_tools("summary", vec![ToolCall::new("c", "t", "{}")]);
        assert_eq!(accept_reply(&tools), Err(Rejection::ToolCalls));
        let mut system = ChatResponse::text("");
        system.message = Message::system("a summary");
        assert_eq!(
            accept_reply(&system),
            Err(Rejection::NotAssistant("system"))
        );
        assert_eq!(
            accept_reply(&ChatResponse::text("\t\n")),
            Err(Rejection::Empty)
        );
    }

    #[test]
    fn rejections_say_what_to_do() {
        let text = Rejection::Incomplete(StopReason::Length).to_string();
        assert!(text.contains("raise the summary cap"));
    }
}
