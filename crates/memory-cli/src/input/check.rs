//! Transcript validity: tool pairing and order, checked on load and, with
//! `--repair`, fixed.

use memory_core::{Message, RepairAction, Violation, repair, structure, validate};
use serde::Serialize;

use super::{Located, Trajectory};

/// The fixes `--repair` made to one trajectory, by kind.
///
/// ```
/// let r = memory_cli::input::Repairs { dropped_orphans: 2, ..Default::default() };
/// assert_eq!(r.total(), 2);
/// assert_eq!(r.to_string(), "2 orphan tool results dropped");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Repairs {
    /// Tool results whose call appears nowhere, dropped.
    pub dropped_orphans: usize,
    /// Second results for an already answered call, dropped.
    pub dropped_duplicates: usize,
    /// Results moved to follow their call.
    pub moved_results: usize,
    /// Calls without a result, given an explicit placeholder result.
    pub added_missing_results: usize,
    /// Calls reusing an earlier call's id, given a fresh one.
    pub renamed_calls: usize,
    /// Fixes of kinds this build does not name.
    pub other: usize,
}

impl Repairs {
    fn from_actions(actions: &[RepairAction]) -> Self {
        let mut r = Repairs::default();
        for action in actions {
            match action {
                RepairAction::DroppedOrphan { .. } => r.dropped_orphans += 1,
                RepairAction::DroppedDuplicate { .. } => r.dropped_duplicates += 1,
                RepairAction::MovedResult { .. } => r.moved_results += 1,
                RepairAction::AddedMissingResult { .. } => r.added_missing_results += 1,
                RepairAction::RenamedCall { .. } => r.renamed_calls += 1,
                _ => r.other += 1,
            }
        }
        r
    }

    /// Number of fixes.
    ///
    /// ```
    /// assert_eq!(memory_cli::input::Repairs::default().total(), 0);
    /// ```
    pub fn total(&self) -> usize {
        self.dropped_orphans
            + self.dropped_duplicates
            + self.moved_results
            + self.added_missing_results
            + self.renamed_calls
            + self.other
    }
}

impl std::fmt::Display for Repairs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = [
            (self.dropped_orphans, "orphan tool result", "dropped"),
            (self.dropped_duplicates, "duplicate tool result", "dropped"),
            (self.moved_results, "tool result", "moved next to its call"),
            (
                self.added_missing_results,
                "missing tool result",
                "filled with a placeholder",
            ),
            (self.renamed_calls, "reused tool call id", "renamed"),
            (self.other, "other fix", "made"),
        ];
        let text: Vec<String> = parts
            .iter()
            .filter(|(n, ..)| *n > 0)
            .map(|(n, what, done)| {
                let plural = if *n == 1 { "" } else { "s" };
                format!("{n} {what}{plural} {done}")
            })
            .collect();
        if text.is_empty() {
            f.write_str("no fixes")
        } else {
            f.write_str(&text.join(", "))
        }
    }
}

/// The outcome of [`check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The transcript was valid as loaded.
    Valid,
    /// The transcript was invalid and has been repaired in place.
    Repaired(Repairs),
}

/// Validates `trajectory` (tool pairing and order). An invalid one is an
/// error naming its first violation, unless `repair` is set: then it is
/// repaired in place with [`memory_core::repair`].
///
/// A transcript may end while its last tool calls are still running (an agent
/// log that stops at its `finish` call): calls of the final step without
/// results are not violations, since no model call is replayed after them.
///
/// # Errors
///
/// The first violation, positioned by trajectory and message, when `repair`
/// is not set.
///
/// ```
/// use memory_cli::input::{check, parse, Verdict};
/// let mut input = parse(br#"[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "?"}]"#).unwrap();
/// let err = check(&mut input.trajectories[0], false).unwrap_err();
/// assert_eq!(err.position, "message 1");
/// assert!(matches!(check(&mut input.trajectories[0], true), Ok(Verdict::Repaired(r)) if r.dropped_orphans == 1));
/// ```
pub fn check(trajectory: &mut Trajectory, repair_it: bool) -> Result<Verdict, Located> {
    let pending = pending_step(&trajectory.messages);
    let violations: Vec<Violation> = validate(&trajectory.messages)
        .into_iter()
        .filter(
            |v| !matches!(v, Violation::UnansweredCall { index, .. } if Some(*index) == pending),
        )
        .collect();
    let Some(first) = violations.first() else {
        return Ok(Verdict::Valid);
    };
    if !repair_it {
        let index = first.index();
        let text = first.to_string();
        let prefix = format!("message {index}: ");
        let problem = text.strip_prefix(&prefix).unwrap_or(&text).to_string();
        let position = trajectory.position(index);
        let more = match violations.len() - 1 {
            0 => String::new(),
            1 => " (and 1 more problem)".to_string(),
            n => format!(" (and {n} more problems)"),
        };
        return Err(Located::new(
            position,
            format!("invalid transcript: {problem}{more}; pass --repair to fix it"),
        ));
    }
    let repaired = repair(&trajectory.messages);
    // Repairs move and drop tool results only: the task stays the same
    // user message, counted among the user messages.
    let task_user = trajectory.task_after_demos.map(|t| {
        trajectory.messages[..t]
            .iter()
            .filter(|m| m.is_user())
            .count()
    });
    trajectory.messages = repaired.messages;
    trajectory.task_after_demos = task_user.and_then(|k| {
        let mut users = trajectory
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.is_user());
        users.nth(k).map(|(i, _)| i)
    });
    Ok(Verdict::Repaired(Repairs::from_actions(&repaired.actions)))
}

/// Start of the final step when it is an assistant message with tool calls:
/// the calls the transcript ends on.
fn pending_step(messages: &[Message]) -> Option<usize> {
    if messages.is_empty() {
        return None;
    }
    let start = structure::step_start(messages, messages.len());
    (!messages[start].tool_calls().is_empty()).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::parse;

    fn trajectory(json: &str) -> Trajectory {
        parse(json.as_bytes()).unwrap().trajectories.remove(0)
    }

    #[test]
    fn a_transcript_may_end_on_running_calls() {
        let mut t = trajectory(
            r#"[{"role": "user", "content": "go"},
                {"role": "assistant", "tool_calls": [
                    {"id": "a", "function": {"name": "ls"}}, {"id": "b", "function": {"name": "finish"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "x"}]"#,
        );
        assert_eq!(check(&mut t, false), Ok(Verdict::Valid));
    }

    #[test]
    fn an_unanswered_call_before_the_end_is_rejected_or_repaired() {
        let json = r#"[{"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "ls"}}]},
            {"role": "user", "content": "well?"},
            {"role": "assistant", "content": "sorry"}]"#;
        let e = check(&mut trajectory(json), false).unwrap_err();
        assert_eq!(e.position, "message 1");
        assert_eq!(
            e.problem,
            "invalid transcript: tool call `a` has no result after it; pass --repair to fix it"
        );
        let mut t = trajectory(json);
        let verdict = check(&mut t, true).unwrap();
        assert_eq!(
            verdict,
            Verdict::Repaired(Repairs {
                added_missing_results: 1,
                ..Repairs::default()
            })
        );
        assert_eq!(t.messages.len(), 5);
        assert!(validate(&t.messages).is_empty());
    }

    #[test]
    fn a_repair_keeps_the_task_after_the_demonstrations() {
        let json = r#"{"history": [
            {"role": "system", "content": "rules"},
            {"role": "tool", "tool_call_id": "stray", "content": "orphan"},
            {"role": "user", "content": "an example", "is_demo": true},
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": "done"}]}"#;
        let mut t = trajectory(json);
        assert_eq!(t.task_after_demonstrations(), Some(3));
        let verdict = check(&mut t, true).unwrap();
        assert!(matches!(verdict, Verdict::Repaired(r) if r.dropped_orphans == 1));
        assert_eq!(t.task_after_demonstrations(), Some(2));
        assert_eq!(t.messages[2], Message::user("fix the bug"));
    }

    #[test]
    fn further_problems_are_counted() {
        let json = r#"[{"role": "tool", "tool_call_id": "x", "content": "1"},
            {"role": "tool", "tool_call_id": "y", "content": "2"},
            {"role": "user", "content": "hi"}]"#;
        let e = check(&mut trajectory(json), false).unwrap_err();
        assert_eq!(e.position, "message 0");
        assert!(e.problem.contains("(and 1 more problem)"), "{}", e.problem);
    }
}
