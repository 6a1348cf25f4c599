//! The invariant suite through the Rig adapter: random conversations with
//! parallel tool calls are made Rig's messages, recorded through
//! `memory_rig::Recorded` (Rig's types to ours), trimmed by every strategy
//! and pipeline at every budget, and turned back into Rig's messages. Rig's
//! own transcript check finds no orphaned tool result and no unanswered
//! call, the invariants hold on the adapter's side, and Rig is given
//! exactly the messages the strategy chose.

use memory_core::Message;
use memory_rig::{Recorded, to_ours, to_rig};
use memory_tests::invariants::{self, Trimmed, for_every_trim};
use memory_tests::registry;
use memory_tests::scenario::{Scenario, scenarios};
use proptest::prelude::*;
use rig_core::transcript::{TranscriptError, validate_canonical};

/// The scenario's conversation as Rig appended it, recorded through the
/// adapter: the scenario over what the adapter recorded, and the record.
fn through_rig(scenario: &Scenario) -> Result<(Scenario, Recorded), TestCaseError> {
    let rig = to_rig(&scenario.case.messages).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut recorded = Recorded::new();
    let ours: Vec<_> = rig
        .iter()
        .flat_map(|m| recorded.record(m))
        .map(|(m, _)| m)
        .collect();
    prop_assert_eq!(
        &ours,
        &named(&scenario.case.messages),
        "the adapter changed the conversation"
    );
    let case = memory_tests::conversation::Case::new(ours, scenario.case.protected.clone());
    Ok((
        Scenario {
            case,
            permille: scenario.permille.clone(),
            rounds: scenario.rounds.clone(),
        },
        recorded,
    ))
}

/// The messages with each tool result named after its call, as Rig
/// requires and the conversion does.
fn named(messages: &[Message]) -> Vec<Message> {
    let calls: Vec<_> = messages
        .iter()
        .flat_map(Message::tool_calls)
        .cloned()
        .collect();
    messages
        .iter()
        .map(|m| match m {
            Message::ToolResult {
                tool_call_id,
                content,
                name: None,
            } => Message::ToolResult {
                tool_call_id: tool_call_id.clone(),
                content: content.clone(),
                name: calls
                    .iter()
                    .find(|c| &c.id == tool_call_id)
                    .map(|c| c.name.clone()),
            },
            other => other.clone(),
        })
        .collect()
}

/// What Rig is given: no orphaned result, no unanswered call, and exactly
/// the strategy's messages.
fn rig_is_given_the_trim(recorded: &Recorded, t: &Trimmed<'_>) -> Result<(), String> {
    let rig = recorded
        .restore(&t.result.messages)
        .map_err(|e| format!("could not go back to Rig: {e}"))?;
    if let Err(
        e @ (TranscriptError::OrphanToolResult { .. } | TranscriptError::UnansweredToolCall { .. }),
    ) = validate_canonical(&rig)
    {
        return Err(format!("Rig's check: {e}"));
    }
    let back: Vec<_> = rig.iter().flat_map(to_ours).collect();
    if back != t.result.messages {
        return Err("Rig was given other messages than the trim".to_owned());
    }
    Ok(())
}

proptest! {
    #![proptest_config(memory_tests::config(48))]

    /// Over conversations recorded from Rig, every strategy's result keeps
    /// the invariants, and Rig is given it with pairs intact (Rig's own
    /// transcript check passes) and nothing else.
    #[test]
    fn rig_is_never_given_an_orphaned_tool_result(s in scenarios()) {
        let (s, recorded) = through_rig(&s)?;
        for_every_trim(&s, &registry::strategies(), |t| {
            invariants::tool_pairing(t)?;
            invariants::order_kept(t)?;
            invariants::fits_when_floor_fits(t)?;
            invariants::protected_kept(t)?;
            rig_is_given_the_trim(&recorded, t)
        })?;
    }
}
