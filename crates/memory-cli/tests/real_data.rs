//! `memory replay` on real agent trajectories, found through
//! `MEMORY_DATA_DIR`; skipped with a notice when it is not set, failed when
//! it is not set under CI.

use crate::common;

use std::path::PathBuf;

use memory_core::test_util::DATA;
use memory_core::{CharTokenCounter, Message, TokenCounter};
use memory_openai::wire;

fn trajectories_file() -> Option<PathBuf> {
    DATA.file("agent-trajectories/swe-gym-openhands.json")
}

/// The floor before the call at `turn`, computed here from the input: the
/// leading system prompt, the task (the first user message), the newest
/// user message and the newest step.
fn floor_tokens(messages: &[Message], counts: &[usize], turn: usize) -> usize {
    let recorded = &messages[..turn];
    let mut indices: Vec<usize> = (0..recorded.len())
        .take_while(|&i| recorded[i].is_system())
        .collect();
    if let Some(q) = recorded.iter().rposition(Message::is_user) {
        indices.push(q);
    }
    if let Some(task) = recorded.iter().position(Message::is_user) {
        indices.push(task);
    }
    // The newest step: the last message, and when it is a tool result, back
    // over the results to the assistant message that called them.
    let mut start = recorded.len() - 1;
    if recorded[start].is_tool_result() {
        let mut j = start;
        while j > 0 && recorded[j - 1].is_tool_result() {
            j -= 1;
        }
        if j > 0 && !recorded[j - 1].tool_calls().is_empty() {
            start = j - 1;
        }
    }
    indices.extend(start..recorded.len());
    indices.sort_unstable();
    indices.dedup();
    indices.iter().map(|&i| counts[i]).sum()
}

#[test]
fn swe_gym_trajectories_replay_valid_and_fit_unless_protected_messages_do_not() {
    let Some(path) = trajectories_file() else {
        return;
    };
    let raw: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let inputs: Vec<(Vec<Message>, Vec<usize>)> = raw
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let messages = wire::from_value(&t["messages"]).unwrap();
            let counts = runtime.block_on(async {
                let mut counts = Vec::new();
                for m in &messages {
                    counts.push(CharTokenCounter.count_message(m).await.unwrap());
                }
                counts
            });
            (messages, counts)
        })
        .collect();
    assert_eq!(inputs.len(), 5);

    let dir = tempfile::tempdir().unwrap();
    for budget in [2_000, 4_000, 8_000] {
        let (_, report) = common::replay(&path, budget, "window", dir.path());
        assert_eq!(report.trajectories.len(), 5);
        let expected_calls: usize = inputs
            .iter()
            .map(|(m, _)| m.iter().skip(1).filter(|m| m.is_assistant()).count())
            .sum();
        assert_eq!(report.rows.len(), expected_calls);
        for row in &report.rows {
            let (messages, counts) = &inputs[row.trajectory];
            assert!(messages[row.turn].is_assistant());
            let floor = floor_tokens(messages, counts, row.turn);
            let tokens_in: usize = counts[..row.turn].iter().sum();
            let at = format!(
                "budget {budget}, trajectory {}, turn {}",
                row.trajectory, row.turn
            );
            assert!(row.valid, "{at}: {:?}", row.problems);
            assert_eq!(row.tokens_in, tokens_in, "{at}");
            assert_eq!(row.floor_tokens, floor, "{at}");
            // Within the budget whenever the floor is; over it only when
            // the floor's cuttable messages, cut, still leave it over.
            assert_eq!(row.fits, row.tokens_out <= budget, "{at}: floor {floor}");
            if floor <= budget {
                assert!(row.fits, "{at}: {} tokens", row.tokens_out);
            }
        }
        assert_eq!(report.totals.valid_rows, report.rows.len());
        // Over the budget only where the protected messages (the system
        // prompt and the task) alone are.
        assert_eq!(
            report.totals.avoidable_over_budget_rows, 0,
            "budget {budget}"
        );
    }
}
