//! The generators make what the suite relies on: valid transcripts of
//! distinct messages, with true counts, covering every shape they promise.

use std::collections::HashSet;

use memory_core::{ContentBlock, Message, structure, summary, validate};
use memory_tests::conversation::{Case, cases};
use memory_tests::scenario::scenarios;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

proptest! {
    #![proptest_config(memory_tests::config(128))]

    #[test]
    fn generated_transcripts_are_valid(case in cases()) {
        let violations = validate(&case.messages);
        prop_assert!(violations.is_empty(), "{:?}", violations);
    }

    #[test]
    fn generated_messages_are_distinct_and_counted(case in cases()) {
        let serialized: HashSet<String> = case
            .messages
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect();
        prop_assert_eq!(serialized.len(), case.messages.len());
        prop_assert_eq!(case.counts.len(), case.messages.len());
        prop_assert!(case.protected.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(case.protected.iter().all(|&p| p < case.messages.len()));
        let history = case.history();
        for (i, m) in case.messages.iter().enumerate() {
            if summary::is_summary(m) {
                prop_assert!(history.is_protected(i));
            }
        }
    }

    #[test]
    fn budgets_range_from_nothing_to_above_the_total(s in scenarios()) {
        let budgets = s.budgets();
        let tokens: Vec<usize> = budgets.iter().filter_map(|b| b.max_tokens).collect();
        prop_assert!(tokens.contains(&0));
        prop_assert!(tokens.iter().any(|&t| t > s.case.total()));
        prop_assert!(budgets.iter().any(|b| b.max_rounds.is_some() && b.max_tokens.is_some()));
    }
}

/// What one sample shows of the shapes the generators promise.
#[derive(Default, Debug)]
struct Seen {
    empty: bool,
    protected_system_prompt: bool,
    unprotected_system_prompt: bool,
    leading_summary: bool,
    parallel_calls: bool,
    answers_permuted: bool,
    reasoning: bool,
    huge: bool,
    cjk: bool,
    image: bool,
    agent_round: bool,
    protected_tool_result: bool,
    protected_in_the_middle: bool,
    system_in_the_middle: bool,
    steps_before_first_user: bool,
    ends_with_user: bool,
    floor_above_half: bool,
    big_task: bool,
    task_forgotten: bool,
    task_kept: bool,
}

fn observe(case: &Case, seen: &mut Seen) {
    let m = &case.messages;
    let history = case.history();
    seen.empty |= m.is_empty();
    let first_user = m.iter().position(Message::is_user).unwrap_or(m.len());
    for (i, msg) in m.iter().enumerate() {
        let protected = case.protected.contains(&i);
        let text = msg.text();
        match msg {
            Message::System(_) if summary::is_summary(msg) => seen.leading_summary |= i < 4,
            Message::System(_) if i < first_user && m[..i].iter().all(Message::is_system) => {
                seen.protected_system_prompt |= protected;
                seen.unprotected_system_prompt |= !protected;
            }
            Message::System(_) => seen.system_in_the_middle |= i > first_user,
            Message::User(blocks) => {
                seen.image |= blocks.iter().any(|b| matches!(b, ContentBlock::Image(_)));
            }
            Message::Assistant {
                reasoning,
                tool_calls,
                ..
            } => {
                seen.reasoning |= reasoning.is_some();
                seen.parallel_calls |= tool_calls.len() >= 2;
                let answers: Vec<&str> = m[i + 1..i + 1 + tool_calls.len()]
                    .iter()
                    .filter_map(Message::tool_call_id)
                    .collect();
                let calls: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
                seen.answers_permuted |= answers != calls;
                seen.steps_before_first_user |= i < first_user;
            }
            Message::ToolResult { .. } => {
                seen.protected_tool_result |= protected;
            }
        }
        seen.huge |= text.chars().count() >= 5_000;
        seen.cjk |= text.chars().any(|c| ('\u{4E00}'..='\u{9FFF}').contains(&c));
        seen.protected_in_the_middle |= protected && !msg.is_system() && i > 0;
    }
    let rounds = structure::rounds(m);
    seen.agent_round |= rounds
        .rounds
        .iter()
        .any(|r| structure::steps(&m[r.clone()]).count() >= 9);
    seen.ends_with_user |= m.last().is_some_and(Message::is_user);
    seen.floor_above_half |= !m.is_empty() && 2 * structure::floor(&history).tokens > case.total();
    if let Some(task) = structure::task(m) {
        seen.big_task |= case.counts[task] >= 100;
        seen.task_kept |= case.keep_task && history.is_protected(task);
        seen.task_forgotten |= !case.keep_task && !case.protected.contains(&task);
        // Forgotten, the task is protected only when the plan protects it.
        assert_eq!(
            history.is_protected(task),
            case.keep_task || case.protected.contains(&task)
        );
    }
}

#[test]
fn generators_cover_every_promised_shape() {
    let mut runner = TestRunner::deterministic();
    let strategy = cases();
    let mut seen = Seen::default();
    for _ in 0..400 {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        observe(&case, &mut seen);
    }
    let report = format!("{seen:?}");
    assert!(
        !report.contains("false"),
        "a shape was never generated: {report}"
    );
}
