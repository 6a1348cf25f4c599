//! Which messages stay verbatim and which go to the summarizer.
//!
//! Kept verbatim, in place: every protected message that is not a summary,
//! with its step; and the tail. The tail is the newest round when it fits
//! the budget, plus older rounds while they fit the budget less the summary
//! reservation. When the newest round alone does not fit (one long agent
//! task), the tail is its user message and its newest steps, whole steps,
//! within the budget less the reservation, the newest step always. Every
//! other message, earlier summaries included, is summarized: it is replaced
//! by one summary placed where the first of them was.

use std::ops::Range;

use memory_core::structure::{self, Floor};
use memory_core::{Budget, History, summary};

/// What one summarization keeps and replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Sorted, disjoint ranges kept verbatim.
    pub kept: Vec<Range<usize>>,
    /// Tokens of `kept`.
    pub kept_tokens: usize,
    /// Sorted, disjoint, step-aligned ranges the summary replaces.
    pub summarized: Vec<Range<usize>>,
}

impl Plan {
    /// Where the summary goes: where the first replaced message was.
    pub fn insert_at(&self) -> usize {
        self.summarized.first().map_or(0, |r| r.start)
    }

    /// Whether anything but earlier summaries would be summarized: with
    /// nothing new, a summary is never summarized again on its own.
    pub fn has_new_material(&self, history: &History<'_>) -> bool {
        let messages = history.messages();
        self.summarized
            .iter()
            .flat_map(Clone::clone)
            .any(|i| !summary::is_summary(&messages[i]))
    }
}

/// Plans the summarization of `history`, which exceeds `budget`, keeping
/// `reserve` tokens of the budget free for the summary.
pub(crate) fn plan(history: &History<'_>, budget: &Budget, reserve: usize) -> Plan {
    let messages = history.messages();
    let n = messages.len();
    let max = budget.max_tokens.unwrap_or(usize::MAX);
    let target = max.saturating_sub(reserve);
    let question = structure::current_question(messages);

    // What is kept whatever happens: pinned steps, the current question and
    // the newest step.
    let mut base: Vec<Range<usize>> = history
        .protected()
        .iter()
        .filter(|&&p| !summary::is_summary(&messages[p]))
        .map(|&p| structure::step_of(messages, p))
        .collect();
    if let Some(q) = question {
        base.push(q..q + 1);
    }
    let newest_step = structure::step_start(messages, n)..n;
    base.push(newest_step.clone());
    let base = structure::merge(base);
    let base_tokens = base.iter().map(|r| history.tokens(r.clone())).sum();
    let mut tail = Tail {
        history,
        base: Floor {
            ranges: base,
            tokens: base_tokens,
        },
        used: base_tokens,
        kept: Vec::new(),
    };

    let round_start = question.unwrap_or(0);
    if tail.take(round_start..n, max) {
        // The newest round fits: older rounds while they fit what the
        // reservation leaves.
        let rounds = usize::from(question.is_some())
            + tail.base.users_before(history.messages(), round_start);
        let limit = budget.round_limit().unwrap_or(usize::MAX);
        tail.older_rounds(round_start, rounds, limit, target);
    } else {
        // One long round: its newest steps, the older ones are summarized.
        let low = question.map_or(0, |q| q + 1);
        tail.older_steps(newest_step.start, low, target);
    }

    let Tail {
        base, used, kept, ..
    } = tail;
    let mut kept_ranges = base.ranges;
    kept_ranges.extend(kept);
    let kept = structure::merge(kept_ranges);
    let summarized = complement(&kept, n);
    Plan {
        kept,
        kept_tokens: used,
        summarized,
    }
}

/// The tail being chosen, on top of what is always kept.
struct Tail<'t, 'h> {
    history: &'t History<'h>,
    base: Floor,
    used: usize,
    kept: Vec<Range<usize>>,
}

impl Tail<'_, '_> {
    /// Keeps `range` if what it adds to what is kept stays within `limit`.
    fn take(&mut self, range: Range<usize>, limit: usize) -> bool {
        let counts = self.history.counts();
        let extra =
            self.history.tokens(range.clone()) - self.base.tokens_within(range.clone(), counts);
        match self.used.checked_add(extra) {
            Some(used) if used <= limit => {
                self.used = used;
                self.kept.push(range);
                true
            }
            _ => false,
        }
    }
}

impl Tail<'_, '_> {
    /// Keeps the rounds (and the head) before `end`, newest first, while
    /// they fit `target` and the kept rounds, `rounds` so far, stay within
    /// `limit`.
    fn older_rounds(&mut self, mut end: usize, mut rounds: usize, limit: usize, target: usize) {
        let messages = self.history.messages();
        while end > 0 {
            let start = structure::round_start(messages, end);
            let is_round = messages[start].is_user();
            if (is_round && rounds >= limit) || !self.take(start..end, target) {
                break;
            }
            rounds += usize::from(is_round);
            end = start;
        }
    }

    /// Keeps the whole steps between `low` and `end`, newest first, while
    /// they fit `target`.
    fn older_steps(&mut self, mut end: usize, low: usize, target: usize) {
        let messages = self.history.messages();
        while end > low {
            let start = structure::step_start(messages, end).max(low);
            if !self.take(start..end, target) {
                break;
            }
            end = start;
        }
    }
}

/// The parts of `0..n` outside the sorted, disjoint `ranges`.
fn complement(ranges: &[Range<usize>], n: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut next = 0;
    for r in ranges {
        if next < r.start {
            out.push(next..r.start);
        }
        next = next.max(r.end);
    }
    if next < n {
        out.push(next..n);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{Message, ToolCall};

    fn rounds(n: usize) -> Vec<Message> {
        (1..=n)
            .flat_map(|i| {
                [
                    Message::user(format!("Question from round {i}")),
                    Message::assistant(format!("Answer from round {i}")),
                ]
            })
            .collect()
    }

    #[test]
    fn the_reservation_decides_how_many_older_rounds_stay() {
        let m = rounds(4);
        let counts = [6, 5, 6, 5, 6, 5, 6, 5];
        let h = History::new(&m, &counts).unwrap().forget_task();
        let p = plan(&h, &Budget::tokens(30), 4);
        assert_eq!(p.kept, vec![4..8]);
        assert_eq!(p.kept_tokens, 22);
        assert_eq!(p.summarized, vec![0..4]);
        let p = plan(&h, &Budget::tokens(30), 1024);
        assert_eq!(p.kept, vec![6..8]);
        assert_eq!(p.insert_at(), 0);
    }

    #[test]
    fn pinned_steps_stay_in_place_and_summaries_are_replaced() {
        let mut m = vec![
            Message::system("rules"),
            summary::message("earlier"),
            Message::user("a"),
            Message::assistant_with_tools("", vec![ToolCall::new("c", "t", "{}")]),
            Message::tool_result("c", "r"),
        ];
        m.extend(rounds(2));
        let counts = vec![2; m.len()];
        // The tool result is protected: its whole step stays.
        let h = History::new(&m, &counts).unwrap().protect(&[0, 4]);
        let p = plan(&h, &Budget::tokens(12), 0);
        assert_eq!(p.kept, vec![0..1, 3..5, 7..9]);
        assert_eq!(p.summarized, vec![1..3, 5..7]);
        assert_eq!(p.insert_at(), 1);
        assert!(p.has_new_material(&h));
    }

    #[test]
    fn a_long_round_keeps_its_question_and_newest_steps() {
        let mut m = vec![Message::user("do the task")];
        for i in 0..5 {
            let id = format!("c{i}");
            m.push(Message::assistant_with_tools(
                "",
                vec![ToolCall::new(id.clone(), "t", "{}")],
            ));
            m.push(Message::tool_result(id, "result"));
        }
        let counts = vec![3; m.len()];
        let h = History::new(&m, &counts).unwrap();
        // Round 33 > 20; reserve 5: question 3 + newest step 6, one more step
        // (6) reaches 15 <= 15.
        let p = plan(&h, &Budget::tokens(20), 5);
        assert_eq!(p.kept, vec![0..1, 7..11]);
        assert_eq!(p.summarized, vec![1..7]);
        assert_eq!(p.insert_at(), 1);
    }

    #[test]
    fn only_a_summary_before_the_tail_is_no_new_material() {
        let mut m = vec![summary::message("so far")];
        m.extend(rounds(1));
        let h = History::new(&m, &[20, 6, 5]).unwrap();
        let p = plan(&h, &Budget::tokens(12), 4);
        assert_eq!(p.summarized, vec![0..1]);
        assert!(!p.has_new_material(&h));
    }

    #[test]
    fn the_rounds_limit_bounds_the_tail() {
        let m = rounds(4);
        let h = History::new(&m, &[1; 8]).unwrap().forget_task();
        let p = plan(&h, &Budget::rounds(2), 1024);
        assert_eq!(p.kept, vec![4..8]);
        // The task stays in place beside the tail, and counts against the
        // rounds limit as every user message shown does.
        let h = History::new(&m, &[1; 8]).unwrap();
        let p = plan(&h, &Budget::rounds(2), 1024);
        assert_eq!(p.kept, vec![0..1, 6..8]);
        assert_eq!(p.summarized, vec![1..6]);
    }
}
