//! Where things are in the history being trimmed: the current question, the
//! newest step and round, the floor, the recent tool results.

use memory_core::structure::{self, Floor};
use memory_core::{History, Message};

/// Positions every stage consults.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The current question (the newest user message), if any.
    pub question: Option<usize>,
    /// Start of the newest step (it ends at the end of the history).
    pub newest_step: usize,
    /// Results at or after this index, inside the newest round, are the
    /// recent ones that are never replaced by a placeholder.
    pub recent_results_from: usize,
    /// The newest tool result of the newest round: never cut or replaced
    /// (but for the newest step's last resort).
    pub newest_result: Option<usize>,
    /// What may never be dropped.
    pub floor: Floor,
}

impl Layout {
    /// Reads `history`; linear in the newest round and the floor.
    pub fn new(history: &History<'_>, keep_recent_results: usize) -> Self {
        let messages = history.messages();
        let n = messages.len();
        let question = structure::current_question(messages);
        let newest_step = if n == 0 {
            0
        } else {
            structure::step_start(messages, n)
        };
        let newest_round = question.unwrap_or(0);
        let keep = keep_recent_results.max(1);
        let mut seen = 0;
        let mut recent_results_from = newest_round;
        let mut newest_result = None;
        for i in (newest_round..n).rev() {
            if messages[i].is_tool_result() {
                newest_result.get_or_insert(i);
                seen += 1;
                if seen == keep {
                    recent_results_from = i;
                    break;
                }
            }
        }
        Self {
            question,
            newest_step,
            recent_results_from,
            newest_result,
            floor: structure::floor(history),
        }
    }

    /// Whether a cheap stage may change message `i`: it is not protected,
    /// not the current question and not part of the newest step.
    pub fn shrinkable(&self, history: &History<'_>, i: usize) -> bool {
        i < self.newest_step && Some(i) != self.question && !history.is_protected(i)
    }

    /// User messages of the floor other than the current question: rounds
    /// that are kept whatever the rounds limit says.
    pub fn floor_users(&self, messages: &[Message]) -> usize {
        self.floor
            .ranges
            .iter()
            .flat_map(|r| r.clone())
            .filter(|&i| messages[i].is_user() && Some(i) != self.question)
            .count()
    }
}

/// Whether `messages` hold no more rounds than `limit` allows; stops counting
/// at the limit.
pub(crate) fn rounds_within(messages: &[Message], limit: Option<usize>) -> bool {
    let Some(limit) = limit else {
        return true;
    };
    messages
        .iter()
        .rev()
        .filter(|m| m.is_user())
        .nth(limit)
        .is_none()
}
