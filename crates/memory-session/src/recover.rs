//! Recovers a view's covered set (see [`memory_core::covered`]) and the
//! turns folded away beyond it (see [`crate::left_out::Folded`])
//! from the store's history, for a session loaded afresh.

use std::collections::HashMap;

use crate::left_out::Folded;
use memory_core::covered::{Covered, Expanded};
use memory_core::identity::message_key;
use memory_core::index::is_index;
use memory_core::{Budget, History, MemoryError, Message, StoredMessage, TokenCounter, summary};

/// What a view's summary stands for, recovered.
#[derive(Debug, Default)]
pub(crate) struct Recovered {
    /// The covered set.
    pub covered: Covered,
    /// The turns older than the covered set, as the index lists them.
    pub folded: Folded,
}

/// The covered set of `view` as the history shows it (see
/// [`memory_core::covered`]): the messages of `history` (everything
/// appended, oldest first) between the view's messages up to its anchor
/// (its first summary and the protected messages after it) and its tail
/// (the rest), the newest whole steps within `horizon` tokens, with
/// the counts stored with them in the `replaced` views (`counter` counts
/// only a message found in none); and the older ones folded, in pieces
/// one recall brings back under `budget`. `None` when the view has no
/// summary, or when its head and tail are not found in the history in
/// that order with its tail at the end: nothing is placed where it did
/// not stand. Every older message is counted once per load (its stored
/// count when a replaced view holds it), so loading a long session reads
/// its whole history once. The span starts after the view's head, so the
/// turns older than a protected message kept after the summary are
/// neither covered nor folded.
///
/// # Errors
///
/// The counter's.
pub(crate) async fn recover(
    view: &[StoredMessage],
    history: &[Message],
    replaced: &[Vec<StoredMessage>],
    counter: &dyn TokenCounter,
    horizon: usize,
    budget: &Budget,
) -> Result<Option<Recovered>, MemoryError> {
    let stored = Counts::stored(replaced);
    let Some((covered, older)) = split(view, history, &stored, counter, horizon).await? else {
        return Ok(None);
    };
    let mut folded = Folded::default();
    folded.extend(&older, budget);
    Ok(Some(Recovered { covered, folded }))
}

/// What a compaction that made `view` of `before` (the history it was
/// given, its covered set placed) leaves within reach, by the rule
/// [`recover`] follows: the covered set, and the turns it folds away
/// (oldest first, with their counts). So the session shows the context
/// it would show opened again. `None` where `recover` finds nothing.
///
/// # Errors
///
/// The counter's (only for a message `before` does not hold).
pub(crate) async fn after_compaction(
    view: &[StoredMessage],
    before: &History<'_>,
    counter: &dyn TokenCounter,
    horizon: usize,
) -> Result<Option<(Covered, Vec<(Message, usize)>)>, MemoryError> {
    let expanded = Expanded::of(before);
    let before = &expanded
        .as_ref()
        .map_or_else(|| before.clone(), Expanded::history);
    let counts = Counts::Given(before.counts());
    split(view, before.messages(), &counts, counter, horizon).await
}

/// The covered set of `view` in `history` (see [`recover`]) and the
/// older turns of its span, counted by `counts` (`counter` for a message
/// they do not hold). Summaries and indexes in the span (a history given
/// to a strategy holds its earlier summary there) are no turns.
async fn split(
    view: &[StoredMessage],
    history: &[Message],
    counts: &Counts<'_>,
    counter: &dyn TokenCounter,
    horizon: usize,
) -> Result<Option<(Covered, Vec<(Message, usize)>)>, MemoryError> {
    let Some(first) = view.iter().position(|s| summary::is_summary(&s.message)) else {
        return Ok(None);
    };
    let anchor = (first + 1..view.len())
        .find(|&i| {
            let m = &view[i].message;
            !view[i].protected && !summary::is_summary(m) && !m.is_tool_result()
        })
        .unwrap_or(view.len());
    let Some(span) = covered_span(view, anchor, history) else {
        return Ok(None);
    };
    let turns: Vec<usize> = span
        .filter(|&i| !summary::is_summary(&history[i]) && !is_index(&history[i]))
        .collect();
    let picked = newest_within(history, &turns, counts, counter, horizon).await?;
    let next = view.get(anchor).map(|s| s.message.clone());
    let covered = Covered::default().extended(picked, horizon).before(next);
    let mut older = Vec::new();
    for &i in &turns[..turns.len() - covered.len()] {
        older.push((history[i].clone(), counts.count(history, i, counter).await?));
    }
    Ok(Some((covered, older)))
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

/// Where the counts of a history's messages come from.
enum Counts<'a> {
    /// Stored with the messages in the replaced views, by identity,
    /// newest views first.
    Stored(HashMap<u64, Vec<&'a StoredMessage>>),
    /// The history's own, by position.
    Given(&'a [usize]),
}

impl<'a> Counts<'a> {
    fn stored(replaced: &'a [Vec<StoredMessage>]) -> Self {
        let mut stored: HashMap<u64, Vec<&StoredMessage>> = HashMap::new();
        for s in replaced.iter().rev().flatten() {
            stored.entry(message_key(&s.message)).or_default().push(s);
        }
        Counts::Stored(stored)
    }

    /// The count of message `i` of `history`: its own or its stored one,
    /// else `counter`'s.
    async fn count(
        &self,
        history: &[Message],
        i: usize,
        counter: &dyn TokenCounter,
    ) -> Result<usize, MemoryError> {
        let m = &history[i];
        let known = match self {
            Counts::Given(counts) => counts.get(i).copied(),
            Counts::Stored(stored) => stored
                .get(&message_key(m))
                .and_then(|same| same.iter().find(|s| s.message == *m))
                .map(|s| s.tokens),
        };
        match known {
            Some(tokens) => Ok(tokens),
            None => counter.count_message(m).await,
        }
    }
}

/// The newest messages of `turns` (positions in `history`) within
/// `horizon` tokens, oldest first, with their counts.
async fn newest_within(
    history: &[Message],
    turns: &[usize],
    counts: &Counts<'_>,
    counter: &dyn TokenCounter,
    horizon: usize,
) -> Result<Vec<(Message, usize)>, MemoryError> {
    let mut picked: Vec<(Message, usize)> = Vec::new();
    let mut total = 0;
    for &i in turns.iter().rev() {
        let tokens = counts.count(history, i, counter).await?;
        if total + tokens > horizon {
            break;
        }
        total += tokens;
        picked.push((history[i].clone(), tokens));
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

    /// What `recover` gives with no stored counts and a budget of 100.
    fn recovered(view: &[StoredMessage], history: &[Message], horizon: usize) -> Recovered {
        let budget = Budget::tokens(100);
        block_on(recover(
            view,
            history,
            &[],
            &CharTokenCounter,
            horizon,
            &budget,
        ))
        .unwrap()
        .unwrap_or_default()
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
        let r = recovered(&view, &history, 1_000);
        assert_eq!(r.covered.messages(), &history[2..4]);
        assert!(r.folded.is_empty());
        // Within a horizon that cannot hold the step, nothing covered:
        // the step is folded away, one piece.
        let r = recovered(&view, &history, 3);
        assert!(r.covered.is_empty());
        assert_eq!(r.folded.len(), 1);
    }

    #[test]
    fn a_tail_that_is_not_the_end_of_the_history_gives_nothing() {
        let history = vec![Message::user("a"), Message::user("b"), Message::user("c")];
        let view = stored(&[summary::message("a"), Message::user("b")]);
        let budget = Budget::tokens(100);
        let placed = |view: &[StoredMessage]| {
            block_on(recover(
                view,
                &history,
                &[],
                &CharTokenCounter,
                1_000,
                &budget,
            ))
            .unwrap()
            .is_some()
        };
        assert!(!placed(&view));
        assert!(!placed(&stored(&history)));
    }
}
