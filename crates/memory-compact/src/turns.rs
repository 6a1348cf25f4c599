//! Which messages a compaction keeps verbatim and which it folds into the
//! summary.
//!
//! A **turn** is what the model produced in one call, seen from the newest
//! message back: in the newest round (the current request) every step is a
//! turn; before it, each whole round (a user message and all its steps) is
//! one turn. The tail kept verbatim is the newest `keep_verbatim` turns
//! (at least one), so in an agent loop the newest steps are kept, and in a
//! chat the newest exchanges. The head (what precedes the first user
//! message) is never a turn.
//!
//! Kept in place, wherever they are: protected messages with their steps,
//! the leading system messages (the system prompt), other strategies'
//! summaries (protected too) and the current question. Folded: every other
//! message before the tail (the new material) and Compact's own earlier
//! summaries. Turns are walked step by step, so the cut never separates a
//! tool call from its results.

use std::ops::Range;

use memory_core::{History, structure};

use crate::body;

/// What one compaction of a history keeps and folds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Index of the first message of the tail.
    pub tail: usize,
    /// The current question.
    pub question: Option<usize>,
    /// What the new summary replaces, as sorted, merged, step-aligned ranges:
    /// the new material and Compact's earlier summaries.
    pub region: Vec<Range<usize>>,
    /// Compact's earlier summaries.
    pub previous: Vec<usize>,
    /// New material before the current question (all of it when there is
    /// no question).
    pub earlier: Vec<usize>,
    /// New material inside the newest round: its older steps.
    pub current: Vec<usize>,
    /// Tokens of the new material.
    pub new_tokens: usize,
}

impl Plan {
    /// Plans the compaction of `history`, keeping `keep_verbatim` turns.
    pub fn new(history: &History<'_>, keep_verbatim: usize) -> Plan {
        let messages = history.messages();
        let own: Vec<bool> = messages.iter().map(body::is_compact_summary).collect();
        let question = structure::current_question(messages);
        let fixed = fixed(history, &own, question);
        let tail = tail(history, &fixed, &own, question, keep_verbatim.max(1));
        let mut plan = Plan {
            tail,
            question,
            region: Vec::new(),
            previous: Vec::new(),
            earlier: Vec::new(),
            current: Vec::new(),
            new_tokens: 0,
        };
        for i in 0..messages.len() {
            let folded = if own[i] {
                plan.previous.push(i);
                true
            } else if i < tail && !fixed[i] {
                plan.new_tokens += history.counts()[i];
                if question.is_some_and(|q| i > q) {
                    plan.current.push(i);
                } else {
                    plan.earlier.push(i);
                }
                true
            } else {
                false
            };
            if folded {
                match plan.region.last_mut() {
                    Some(last) if last.end == i => last.end = i + 1,
                    _ => plan.region.push(i..i + 1),
                }
            }
        }
        plan
    }

    /// Whether anything but earlier summaries would be folded.
    pub fn has_new(&self) -> bool {
        !self.earlier.is_empty() || !self.current.is_empty()
    }

    /// Whether the newest round is cut: both earlier history and the
    /// round's own older steps are new, so each is summarized by itself.
    pub fn is_split(&self) -> bool {
        !self.earlier.is_empty() && !self.current.is_empty()
    }

    /// Number of messages the summary replaces.
    pub fn folded(&self) -> usize {
        self.region.iter().map(ExactSizeIterator::len).sum()
    }
}

/// What stays in place, wherever it is: protected messages with their
/// steps (unless they are Compact's own summaries), the leading system
/// messages, and the current question.
fn fixed(history: &History<'_>, own: &[bool], question: Option<usize>) -> Vec<bool> {
    let messages = history.messages();
    let mut fixed = vec![false; messages.len()];
    for &p in history.protected() {
        if !own[p] {
            for i in structure::step_of(messages, p) {
                fixed[i] = true;
            }
        }
    }
    for (i, message) in messages.iter().enumerate() {
        if !message.is_system() {
            break;
        }
        fixed[i] |= !own[i];
    }
    if let Some(q) = question {
        fixed[q] = true;
    }
    fixed
}

/// Index of the first message of the tail of `k` turns: the newest round's
/// steps from the newest back, then whole rounds before the question.
fn tail(
    history: &History<'_>,
    fixed: &[bool],
    own: &[bool],
    question: Option<usize>,
    k: usize,
) -> usize {
    let messages = history.messages();
    let mut turns = 0;
    let low = question.map_or(0, |q| q + 1);
    let mut end = messages.len();
    while turns < k && end > low {
        let start = structure::step_start(messages, end).max(low);
        if (start..end).all(|i| !fixed[i] && !own[i]) {
            turns += 1;
        }
        end = start;
    }
    if let Some(q) = question
        && turns < k
        && end == low
    {
        end = q;
        while turns < k && end > 0 {
            let start = structure::round_start(messages, end);
            if !messages[start].is_user() {
                break;
            }
            turns += 1;
            end = start;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use memory_core::{History, Message, ToolCall, summary};

    use super::*;
    use crate::FileOps;

    /// The plan with the task unprotected: these tests are about turns.
    fn plan(messages: &[Message], protected: &[usize], k: usize) -> Plan {
        let counts = vec![10; messages.len()];
        let history = History::new(messages, &counts)
            .unwrap()
            .forget_task()
            .protect(protected);
        Plan::new(&history, k)
    }

    fn tool_step(id: &str) -> [Message; 2] {
        [
            Message::assistant_with_tools("", vec![ToolCall::new(id, "t", "{}")]),
            Message::tool_result(id, "r"),
        ]
    }

    fn chat(rounds: usize) -> Vec<Message> {
        let mut m = vec![Message::system("rules")];
        for r in 0..rounds {
            m.push(Message::user(format!("u{r}")));
            m.push(Message::assistant(format!("a{r}")));
        }
        m
    }

    #[test]
    fn in_a_chat_the_newest_exchanges_are_the_turns() {
        // rules u0 a0 u1 a1 u2 a2 u3: the question and two whole rounds.
        let mut m = chat(3);
        m.push(Message::user("u3"));
        let p = plan(&m, &[], 2);
        assert_eq!(p.tail, 3);
        assert_eq!(p.region, vec![1..3]);
        assert_eq!(p.earlier, vec![1, 2]);
        assert_eq!(p.new_tokens, 20);
        assert!(!p.is_split());
        // With the newest reply present it is the first turn.
        let m = chat(3);
        let p = plan(&m, &[], 2);
        assert_eq!(p.tail, 3);
        assert_eq!(p.region, vec![1..3]);
    }

    #[test]
    fn in_an_agent_loop_the_newest_steps_are_the_turns() {
        // rules q s1 s2 s3 s4: keep q, s3, s4; fold s1, s2.
        let mut m = vec![Message::system("rules"), Message::user("q")];
        for id in ["1", "2", "3", "4"] {
            m.extend(tool_step(id));
        }
        let p = plan(&m, &[], 2);
        assert_eq!(p.tail, 6);
        assert_eq!(p.region, vec![2..6]);
        assert_eq!(p.current, vec![2, 3, 4, 5]);
        assert!(p.earlier.is_empty() && !p.is_split());
        // Earlier rounds make it a split turn.
        let mut m2 = chat(1);
        m2.extend(m[1..].iter().cloned());
        let p = plan(&m2, &[], 2);
        assert_eq!(p.earlier, vec![1, 2]);
        assert_eq!(p.current, vec![4, 5, 6, 7]);
        assert!(p.is_split());
        assert_eq!(p.region, vec![1..3, 4..8]);
    }

    #[test]
    fn protected_steps_and_summaries_stay_in_place_and_are_not_turns() {
        let own = crate::body::message("before", &FileOps::new());
        let other = summary::message("someone else's");
        let mut m = vec![Message::system("rules"), own, other, Message::user("q")];
        m.extend(tool_step("1")); // 4..6, protected through its result
        m.extend(tool_step("2")); // 6..8
        m.extend(tool_step("3")); // 8..10
        let p = plan(&m, &[5], 1);
        assert_eq!(p.tail, 8);
        assert_eq!(p.previous, vec![1]);
        assert_eq!(p.region, vec![1..2, 6..8]);
        assert_eq!(p.current, vec![6, 7]);
        assert_eq!(p.new_tokens, 20);
        // A protected newest step is not a turn: the one before it is.
        let p = plan(&m, &[9], 1);
        assert_eq!(p.tail, 6);
        assert_eq!(p.region, vec![1..2, 4..6]);
    }

    #[test]
    fn a_short_history_folds_nothing_new() {
        let p = plan(&chat(2), &[], 2);
        assert!(!p.has_new());
        assert_eq!(p.tail, 1);
        assert!(plan(&[], &[], 2).region.is_empty());
        // Without a user message every step is a turn.
        let m = [
            Message::assistant("a"),
            Message::assistant("b"),
            Message::assistant("c"),
        ];
        let p = plan(&m, &[], 2);
        assert_eq!((p.tail, p.earlier.clone()), (1, vec![0]));
        // Zero turns is taken as one.
        assert_eq!(plan(&m, &[], 0).tail, 2);
    }
}
