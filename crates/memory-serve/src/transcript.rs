//! The transcript a request sends, checked before it is recorded.

use memory_core::{Message, repair, validate};

use crate::ApiError;

/// The request's messages, valid: as sent when they are; repaired (an
/// orphaned result dropped, a missing result made explicit) unless
/// `strict`, which refuses them naming the first problem.
///
/// # Errors
///
/// 400: no messages, or an invalid transcript under `strict`.
pub(crate) fn prepare(messages: Vec<Message>, strict: bool) -> Result<Vec<Message>, ApiError> {
    if messages.is_empty() {
        return Err(ApiError::bad_request(
            "field `messages` is empty: send at least one message",
            Some("messages"),
        ));
    }
    let violations = validate(&messages);
    let Some(first) = violations.first() else {
        return Ok(messages);
    };
    if strict {
        return Err(ApiError::bad_request(
            format!(
                "invalid transcript ({} problem{}): {first}; fix it, or run the server without --strict to have it repaired",
                violations.len(),
                if violations.len() == 1 { "" } else { "s" }
            ),
            Some("messages"),
        ));
    }
    let repaired = repair(&messages);
    tracing::debug!(
        actions = repaired.actions.len(),
        "repaired the request's transcript"
    );
    Ok(repaired.messages)
}

/// Leaves out of `context` every assistant's reasoning that the client
/// did not send in `sent` itself: reasoning recorded from the upstream's
/// replies is the server's record, not something the client chose to send
/// on. A session's context then holds, on every call, only reasoning the
/// client echoed.
pub(crate) fn keep_echoed_reasoning(context: &mut [Message], sent: &[Message]) {
    let echoed: std::collections::HashSet<&str> = sent
        .iter()
        .filter_map(|m| match m {
            Message::Assistant {
                reasoning: Some(r), ..
            } => Some(r.as_str()),
            _ => None,
        })
        .collect();
    for message in context {
        if let Message::Assistant { reasoning, .. } = message
            && reasoning.as_deref().is_some_and(|r| !echoed.contains(r))
        {
            *reasoning = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ToolCall;

    #[test]
    fn an_orphaned_result_is_repaired_or_refused() {
        let messages = vec![
            Message::user("go"),
            Message::tool_result("nobody", "output"),
            Message::assistant_with_tools("", vec![ToolCall::new("c1", "ls", "{}")]),
            Message::tool_result("c1", "a.txt"),
        ];
        let repaired = prepare(messages.clone(), false).unwrap();
        assert!(validate(&repaired).is_empty());
        assert_eq!(repaired.len(), 3);
        let e = prepare(messages, true).unwrap_err();
        assert_eq!(e.status().as_u16(), 400);
        assert!(e.message().contains("message 1"), "{}", e.message());
        assert!(prepare(vec![], false).is_err());
    }

    #[test]
    fn only_the_reasoning_the_client_sent_goes_on() {
        let thought = |r: &str| Message::Assistant {
            content: "ok".into(),
            reasoning: Some(r.into()),
            tool_calls: vec![],
        };
        let mut context = vec![Message::user("a"), thought("mine"), thought("upstream's")];
        keep_echoed_reasoning(&mut context, &[Message::user("a"), thought("mine")]);
        assert_eq!(context[1], thought("mine"));
        assert_eq!(context[2], Message::assistant("ok"));
    }
}
