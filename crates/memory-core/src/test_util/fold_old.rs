//! [`FoldOld`]: a compacting strategy that needs no model.

use std::ops::Range;

use async_trait::async_trait;

use crate::budget::Budget;
use crate::counter::TokenCounter;
use crate::error::MemoryError;
use crate::history::History;
use crate::strategy::{Selection, TrimResult, TrimStrategy};
use crate::structure;
use crate::summary;

/// When the history is over budget, replaces everything between the
/// leading protected message and the two newest steps by one summary
/// ("N earlier messages"), and materializes: a compaction without a
/// model, with no covered set (the folded turns are in the store only).
///
/// ```
/// use memory_core::test_util::FoldOld;
/// use memory_core::{summary, Budget, CharTokenCounter, History, Message, TrimStrategy};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let m: Vec<Message> = (0..8)
///     .map(|i| if i % 2 == 0 { Message::user(format!("ask {i}")) } else { Message::assistant(format!("answer {i}")) })
///     .collect();
/// let history = History::new(&m, &[10; 8]).unwrap().forget_task();
/// let result = FoldOld.trim_with_counts(&history, &Budget::tokens(40), &CharTokenCounter).await.unwrap();
/// assert!(result.replace && summary::is_summary(&result.messages[0]));
/// assert_eq!(result.messages.last(), m.last());
/// assert!(result.messages.len() < m.len());
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct FoldOld;

#[async_trait]
impl TrimStrategy for FoldOld {
    fn name(&self) -> &str {
        "fold-old"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        _counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let messages = history.messages();
        let steps: Vec<Range<usize>> = structure::steps(messages).collect();
        let head = usize::from(
            history.is_protected(0) && !messages.first().is_some_and(summary::is_summary),
        );
        let keep_from = steps
            .len()
            .checked_sub(2)
            .map_or(head, |i| steps[i].start.max(head));
        if budget.admits_tokens(history.total()) || keep_from <= head + 1 {
            return Ok(TrimResult::unchanged(history, budget));
        }
        let mut selection = Selection::new(history);
        selection.keep(0..head);
        selection.push(
            summary::message(format!("{} earlier messages", keep_from - head)),
            6,
            true,
        );
        selection.keep(keep_from..messages.len());
        let mut result = selection.finish(true, true);
        result.fits = budget.admits_tokens(result.tokens());
        Ok(result)
    }
}
