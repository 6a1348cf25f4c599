//! Recovers a view's covered set (see [`memory_core::covered`]) from the
//! store's history, for a session loaded afresh.

use std::collections::HashMap;

use memory_core::covered::Covered;
use memory_core::identity::message_key;
use memory_core::{MemoryError, Message, StoredMessage, TokenCounter, summary};

/// The covered set of `view` as the history shows it (see
/// [`memory_core::covered`]): the messages of `history` (everything
/// appended, oldest first) between the view's messages up to its anchor
/// (its first summary and the protected messages after it) and its tail
/// (the rest), the newest whole steps within `horizon` tokens, with the
/// counts stored with them in the `replaced` views (`counter` counts only
/// a message found in none). Empty when the view has no summary, or when its head and tail
/// are not found in the history in that order with its tail at the end:
/// nothing is placed where it did not stand.
///
/// # Errors
///
/// The counter's.
pub(crate) async fn covered(
    view: &[StoredMessage],
    history: &[Message],
    replaced: &[Vec<StoredMessage>],
    counter: &dyn TokenCounter,
    horizon: usize,
) -> Result<Covered, MemoryError> {
    let Some(first) = view.iter().position(|s| summary::is_summary(&s.message)) else {
        return Ok(Covered::default());
    };
    let anchor = (first + 1..view.len())
        .find(|&i| {
            let m = &view[i].message;
            !view[i].protected && !summary::is_summary(m) && !m.is_tool_result()
        })
        .unwrap_or(view.len());
    let Some(span) = covered_span(view, anchor, history) else {
        return Ok(Covered::default());
    };
    let picked = newest_within(&history[span], replaced, counter, horizon).await?;
    let next = view.get(anchor).map(|s| s.message.clone());
    Ok(Covered::default().extended(picked, horizon).before(next))
}

/// Where in `history` the messages the summary stands for are: after the
/// last of the view's head (before `anchor`, summaries left out), matched
/// from the start, and before its tail, matched at the end; `None` when
/// either is not found so.
fn covered_span(
    view: &[StoredMessage],
    anchor: usize,
    history: &[Message],
) -> Option<std::ops::Range<usize>> {
    let not_summary = |m: &&Message| !summary::is_summary(m);
    // The tail, matched from the end of the history.
    let tail: Vec<&Message> = view[anchor..]
        .iter()
        .map(|s| &s.message)
        .filter(not_summary)
        .collect();
    let end = history.len().checked_sub(tail.len())?;
    if history[end..].iter().zip(&tail).any(|(h, t)| h != *t) {
        return None;
    }
    // The head, matched from the start: the covered messages follow the
    // last of it.
    let head: Vec<&Message> = view[..anchor]
        .iter()
        .map(|s| &s.message)
        .filter(not_summary)
        .collect();
    let mut matched = 0;
    let mut from = 0;
    for (i, m) in history[..end].iter().enumerate() {
        if matched < head.len() && head[matched] == m {
            matched += 1;
            from = i + 1;
        }
    }
    (matched == head.len()).then_some(from..end)
}

/// The newest messages of `span` within `horizon` tokens, oldest first,
/// with the counts stored with them in the `replaced` views (`counter`
/// counts a message found in none).
async fn newest_within(
    span: &[Message],
    replaced: &[Vec<StoredMessage>],
    counter: &dyn TokenCounter,
    horizon: usize,
) -> Result<Vec<(Message, usize)>, MemoryError> {
    // The stored counts, by identity: newest views first.
    let mut stored: HashMap<u64, Vec<&StoredMessage>> = HashMap::new();
    for s in replaced.iter().rev().flatten() {
        stored.entry(message_key(&s.message)).or_default().push(s);
    }
    let mut picked: Vec<(Message, usize)> = Vec::new();
    let mut total = 0;
    for m in span.iter().rev() {
        let known = stored
            .get(&message_key(m))
            .and_then(|same| same.iter().find(|s| s.message == *m))
            .map(|s| s.tokens);
        let tokens = match known {
            Some(tokens) => tokens,
            None => counter.count_message(m).await?,
        };
        if total + tokens > horizon {
            break;
        }
        total += tokens;
        picked.push((m.clone(), tokens));
    }
    picked.reverse();
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{CharTokenCounter, ToolCall};

    fn stored(messages: &[Message]) -> Vec<StoredMessage> {
        messages
            .iter()
            .map(|m| StoredMessage::new(m.clone(), 1, false))
            .collect()
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn the_messages_between_head_and_tail_are_covered() {
        let history = vec![
            Message::system("rules"),
            Message::user("task"),
            Message::assistant_with_tools("", vec![ToolCall::new("a", "ls", "{}")]),
            Message::tool_result("a", "files"),
            Message::user("more"),
            Message::assistant("done"),
        ];
        let mut view = stored(&[
            history[0].clone(),
            summary::message("listed files"),
            history[1].clone(),
            history[4].clone(),
            history[5].clone(),
        ]);
        // The task, protected, stands after the summary.
        view[2].protected = true;
        let c = block_on(covered(&view, &history, &[], &CharTokenCounter, 1_000)).unwrap();
        assert_eq!(c.messages(), &history[2..4]);
        // Within a horizon that cannot hold the step, nothing.
        let c = block_on(covered(&view, &history, &[], &CharTokenCounter, 3)).unwrap();
        assert!(c.is_empty());
    }

    #[test]
    fn a_tail_that_is_not_the_end_of_the_history_gives_nothing() {
        let history = vec![Message::user("a"), Message::user("b"), Message::user("c")];
        let view = stored(&[summary::message("a"), Message::user("b")]);
        let c = block_on(covered(&view, &history, &[], &CharTokenCounter, 1_000)).unwrap();
        assert!(c.is_empty());
        let no_summary = stored(&history);
        let c = block_on(covered(
            &no_summary,
            &history,
            &[],
            &CharTokenCounter,
            1_000,
        ))
        .unwrap();
        assert!(c.is_empty());
    }
}
