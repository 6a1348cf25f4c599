//! SWE-agent trajectories (`.traj`): one JSON object holding `history`, the
//! messages the agent's model saw, and `trajectory`, the agent's steps;
//! `info`, `replay_config` and `environment` beside them are ignored.
//!
//! `history` is the transcript. Each entry has a `role` (`system`, `user`,
//! `assistant`, `tool`) and a `content`: a string, or a list of
//! `{"type": "text", "text": ...}` parts joined by newlines. `agent`,
//! `message_type` (`system_prompt`, `observation`, `action`, `thought`,
//! `demonstration`), `is_demo` and other bookkeeping fields are not part of
//! a message, and demonstrations and extra system messages stay where they
//! are: the model saw them. A demonstration is not the task, though: when
//! demonstrations come before the first other user message, that message
//! is the trajectory's task
//! ([`task_after_demonstrations`](super::Trajectory::task_after_demonstrations)).
//!
//! - An `assistant` entry of a function-calling agent carries OpenAI
//!   `tool_calls`. Without tool calls (a thought/action agent) its `content`
//!   is the model's output; when that is empty, its `thought` and `action`
//!   are joined in its place.
//! - A `tool` entry answers the call ids in `tool_call_ids` (or one
//!   `tool_call_id`). SWE-agent answers one call per entry; an entry naming
//!   several becomes one result per id: the output under the first id and an
//!   empty result for each other, so that the output is counted once, as
//!   SWE-agent itself sends it under the first id.
//! - Observations of thought/action agents are `user` entries and stay user
//!   messages.
//!
//! A file without `history` (or with an empty one) is read from
//! `trajectory`: each step becomes an assistant message, its `response` (or
//! its `thought` when that is empty) with the step's `action` appended when
//! the text does not already show it (function-calling agents record the
//! call only there), followed by its `observation` as a user message. Steps
//! record neither the task nor the tool calls, so such a transcript starts at
//! the first model reply.

use std::iter;

use memory_core::Message;
use memory_openai::wire::message_from_value;
use serde_json::{Map, Value, json};

use super::json::Record;
use super::openai::{LABEL_FIELDS, kind, problem};
use super::{Located, Origin, Trajectory};

/// Whether `value` looks like a SWE-agent trajectory: an object with
/// `history` or `trajectory`.
pub(crate) fn is_traj(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|o| o.contains_key("history") || o.contains_key("trajectory"))
}

/// What each entry or step becomes, or what is wrong with it.
type Convert = fn(&Value) -> Result<Vec<Message>, String>;

/// Loads the one record of a `.traj` file.
///
/// # Errors
///
/// `history` or `trajectory` of the wrong type, neither present, or the
/// first malformed entry or step, named by its index.
pub(crate) fn load(record: &Record) -> Result<Trajectory, Located> {
    let document = format!("line {}", record.line);
    let Some(object) = record.value.as_object() else {
        return Err(Located::new(
            document,
            format!(
                "expected a SWE-agent trajectory object, found {}",
                kind(&record.value)
            ),
        ));
    };
    let (unit, items, convert) = source(object, &document)?;
    let mut messages = Vec::new();
    let mut entries = Vec::new();
    // The first user message that is not a demonstration, and whether a
    // demonstration came before it.
    let mut task = None;
    let mut demos_first = false;
    for (index, item) in items.iter().enumerate() {
        let converted = convert(item).map_err(|p| Located::new(format!("{unit} {index}"), p))?;
        if task.is_none() && converted.first().is_some_and(Message::is_user) {
            if is_demonstration(item) {
                demos_first = true;
            } else {
                task = Some(messages.len());
            }
        }
        entries.extend(iter::repeat_n(index, converted.len()));
        messages.extend(converted);
    }
    let label = LABEL_FIELDS
        .iter()
        .find_map(|f| object.get(*f).and_then(Value::as_str))
        .map(str::to_string);
    let mut trajectory = Trajectory::new(label, messages, Origin::Entries { unit, entries });
    if demos_first {
        trajectory.task_after_demos = task;
    }
    Ok(trajectory)
}

/// Whether a `history` entry is one of SWE-agent's demonstrations (a worked
/// example shown before the task): `is_demo` is true, or its
/// `message_type` is `demonstration`.
fn is_demonstration(entry: &Value) -> bool {
    entry.get("is_demo").and_then(Value::as_bool) == Some(true)
        || entry.get("message_type").and_then(Value::as_str) == Some("demonstration")
}

/// Where the messages come from: `history` when it has entries, else the
/// steps of `trajectory`; how its items are named and converted.
fn source<'a>(
    object: &'a Map<String, Value>,
    document: &str,
) -> Result<(&'static str, &'a [Value], Convert), Located> {
    let history = list(object, "history", document)?;
    let steps = list(object, "trajectory", document)?;
    match (history, steps) {
        (Some([]), Some(steps)) | (None, Some(steps)) => Ok(("trajectory step", steps, step)),
        (Some(entries), _) => Ok(("history entry", entries, history_entry)),
        (None, None) => Err(Located::new(
            document,
            "field `history`: is missing, and so is `trajectory`; a SWE-agent trajectory \
             needs a list of messages in `history` or a list of steps in `trajectory`",
        )),
    }
}

/// The list in field `key`: `None` when absent or null.
fn list<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    document: &str,
) -> Result<Option<&'a [Value]>, Located> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items)),
        Some(other) => Err(Located::new(
            document,
            format!("field `{key}`: expected a list, found {}", kind(other)),
        )),
    }
}

/// One `history` entry: one message, or one per answered call id.
fn history_entry(value: &Value) -> Result<Vec<Message>, String> {
    let Some(object) = value.as_object() else {
        return Err(format!("expected a message object, found {}", kind(value)));
    };
    match object.get("role").and_then(Value::as_str) {
        Some("tool") => tool_entry(object),
        Some("assistant") => assistant_entry(value, object).map(|m| vec![m]),
        _ => chat(value).map(|m| vec![m]),
    }
}

/// The entry as an OpenAI chat message.
fn chat(value: &Value) -> Result<Message, String> {
    message_from_value(value, 0).map_err(|e| problem(&e))
}

/// A model reply; without tool calls and content, its `thought` and
/// `action` carry the step.
fn assistant_entry(value: &Value, object: &Map<String, Value>) -> Result<Message, String> {
    let message = chat(value)?;
    let Message::Assistant {
        content,
        reasoning,
        tool_calls,
    } = message
    else {
        return Ok(message);
    };
    let content = if tool_calls.is_empty() && content.trim().is_empty() {
        let parts = [text(object, "thought")?, text(object, "action")?];
        let joined = join(parts.into_iter().flatten());
        if joined.is_empty() { content } else { joined }
    } else {
        content
    };
    Ok(Message::Assistant {
        content,
        reasoning,
        tool_calls,
    })
}

/// An observation answering tool calls: one result per call id, the output
/// under the first.
fn tool_entry(object: &Map<String, Value>) -> Result<Vec<Message>, String> {
    let ids = call_ids(object)?;
    let Some((first, others)) = ids.split_first() else {
        return Err(
            "field `tool_call_ids`: is empty; a tool message answers at least one call".to_string(),
        );
    };
    let mut head = object.clone();
    head.insert("tool_call_id".to_string(), json!(first));
    let head = chat(&Value::Object(head))?;
    let rest = others
        .iter()
        .map(|id| Message::tool_result(id.as_str(), ""));
    Ok(iter::once(head).chain(rest).collect())
}

/// The call ids a tool entry answers: `tool_call_ids`, or one
/// `tool_call_id`.
fn call_ids(object: &Map<String, Value>) -> Result<Vec<String>, String> {
    match (object.get("tool_call_ids"), object.get("tool_call_id")) {
        (Some(Value::Array(ids)), _) => ids
            .iter()
            .enumerate()
            .map(|(k, id)| match id {
                Value::String(id) => Ok(id.clone()),
                other => Err(format!(
                    "field `tool_call_ids[{k}]`: expected a string id, found {}",
                    kind(other)
                )),
            })
            .collect(),
        (None | Some(Value::Null), Some(Value::String(id))) => Ok(vec![id.clone()]),
        (None | Some(Value::Null), None | Some(Value::Null)) => Err(
            "field `tool_call_ids`: is missing; a tool message names the calls it answers"
                .to_string(),
        ),
        (None | Some(Value::Null), Some(other)) => Err(format!(
            "field `tool_call_id`: expected a string, found {}",
            kind(other)
        )),
        (Some(other), _) => Err(format!(
            "field `tool_call_ids`: expected a list of call ids, found {}",
            kind(other)
        )),
    }
}

/// One `trajectory` step: the model's reply, then the observation.
fn step(value: &Value) -> Result<Vec<Message>, String> {
    let Some(object) = value.as_object() else {
        return Err(format!("expected a step object, found {}", kind(value)));
    };
    let said = match text(object, "response")? {
        Some(response) if !response.trim().is_empty() => Some(response),
        _ => text(object, "thought")?,
    };
    let action = text(object, "action")?.filter(|a| !a.trim().is_empty());
    let shown = match (said, action) {
        (Some(said), Some(action)) if shows(said, action) => vec![said],
        (said, action) => said.into_iter().chain(action).collect(),
    };
    let reply = join(shown.into_iter());
    if reply.is_empty() {
        return Err(
            "a step needs a `response`, a `thought` or an `action`; all are missing or empty"
                .to_string(),
        );
    }
    let mut messages = vec![Message::assistant(reply)];
    if let Some(observation) = text(object, "observation")? {
        messages.push(Message::user(observation));
    }
    Ok(messages)
}

/// Whether `text` holds `action` on lines of its own (as a thought/action
/// agent's output shows its command), not merely as a word of the thought.
fn shows(text: &str, action: &str) -> bool {
    let action = action.trim();
    text.match_indices(action).any(|(at, _)| {
        let before = text[..at].trim_end_matches([' ', '\t']);
        let after = text[at + action.len()..].trim_start_matches([' ', '\t', '\r']);
        (before.is_empty() || before.ends_with('\n'))
            && (after.is_empty() || after.starts_with('\n'))
    })
}

/// Field `key` as text: `None` when absent or null.
fn text<'a>(object: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "field `{key}`: expected a string, found {}",
            kind(other)
        )),
    }
}

/// The non-blank texts, each without trailing whitespace, one per line.
fn join<'a>(texts: impl Iterator<Item = &'a str>) -> String {
    texts
        .map(str::trim_end)
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use memory_core::ToolCall;

    use crate::input::{Format, Input, Located, parse};

    use super::*;

    fn load(json: &str) -> Input {
        let input = parse(json.as_bytes()).unwrap();
        assert_eq!(input.format, Format::SweAgentTraj);
        input
    }

    fn error(json: &str) -> Located {
        parse(json.as_bytes()).unwrap_err()
    }

    #[test]
    fn function_calls_and_their_observations_pair_up() {
        let input = load(
            r#"{"environment": "main", "info": {}, "replay_config": "{}", "trajectory": [],
            "history": [
              {"role": "system", "content": "You fix bugs.", "agent": "main", "message_type": "system_prompt"},
              {"role": "user", "content": [{"type": "text", "text": "Issue:"}, {"type": "text", "text": "tests fail"}],
               "agent": "main", "message_type": "observation"},
              {"role": "assistant", "content": "Look first.", "thought": "Look first.", "action": "ls",
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}],
               "agent": "main", "message_type": "action"},
              {"role": "tool", "content": [{"type": "text", "text": "src tests"}], "tool_call_ids": ["c1"],
               "agent": "main", "message_type": "observation"}]}"#,
        );
        assert_eq!(input.format.to_string(), "SWE-agent trajectory");
        let t = &input.trajectories[0];
        assert_eq!(t.messages[1].text(), "Issue:\ntests fail");
        assert_eq!(t.messages[0], Message::system("You fix bugs."));
        assert_eq!(
            t.messages[2..],
            [
                Message::assistant_with_tools(
                    "Look first.",
                    vec![ToolCall::new("c1", "bash", "{\"command\":\"ls\"}")]
                ),
                Message::tool_result("c1", "src tests"),
            ]
        );
        assert_eq!(t.position(3), "history entry 3");
        assert_eq!(t.name(), "transcript");
    }

    #[test]
    fn a_tool_entry_answering_several_calls_gives_one_result_each() {
        let input = load(
            r#"{"history": [
              {"role": "assistant", "content": "", "tool_calls": [
                {"id": "a", "function": {"name": "ls"}}, {"id": "b", "function": {"name": "pwd"}}]},
              {"role": "tool", "content": "x\n/repo", "tool_call_ids": ["a", "b"]},
              {"role": "tool", "content": "late", "tool_call_id": "c"}]}"#,
        );
        let t = &input.trajectories[0];
        assert_eq!(
            t.messages[1..],
            [
                Message::tool_result("a", "x\n/repo"),
                Message::tool_result("b", ""),
                Message::tool_result("c", "late"),
            ]
        );
        assert_eq!(t.position(2), "history entry 1");
        assert_eq!(t.position(3), "history entry 2");
    }

    #[test]
    fn thought_and_action_carry_a_step_without_content() {
        let input = load(
            r#"{"history": [
              {"role": "system", "content": "rules", "message_type": "system_prompt"},
              {"role": "system", "content": "more rules"},
              {"role": "user", "content": "a demo", "is_demo": true, "message_type": "demonstration"},
              {"role": "assistant", "content": "", "thought": "Check the file.\n", "action": "cat a.py\n", "tool_calls": null},
              {"role": "user", "content": "print(1)", "message_type": "observation"},
              {"role": "assistant", "content": "Done.\n```\nsubmit\n```", "thought": "Done.", "action": "submit"}]}"#,
        );
        let t = &input.trajectories[0];
        assert_eq!(
            t.messages,
            [
                Message::system("rules"),
                Message::system("more rules"),
                Message::user("a demo"),
                Message::assistant("Check the file.\ncat a.py"),
                Message::user("print(1)"),
                Message::assistant("Done.\n```\nsubmit\n```"),
            ]
        );
    }

    #[test]
    fn steps_replay_when_there_is_no_history() {
        let input = load(
            r#"{"trajectory": [
              {"response": "Let me look.\n```\nls\n```", "thought": "Let me look.", "action": "ls\n", "observation": "a.py"},
              {"response": "Open it.", "thought": "Open it.", "action": "open a.py", "observation": "1: x = 1", "state": {}},
              {"thought": "", "action": "submit", "observation": null}],
              "history": [], "info": {"exit_status": "submitted"}}"#,
        );
        let t = &input.trajectories[0];
        assert_eq!(
            t.messages,
            [
                Message::assistant("Let me look.\n```\nls\n```"),
                Message::user("a.py"),
                Message::assistant("Open it.\nopen a.py"),
                Message::user("1: x = 1"),
                Message::assistant("submit"),
            ]
        );
        assert_eq!(t.position(3), "trajectory step 1");
    }

    #[test]
    fn bad_history_entries_are_named_by_position() {
        let cases = [
            (
                r#"{"history": [{"role": "user", "content": "hi"}, {"content": "x"}]}"#,
                "history entry 1",
                "field `role`: is missing",
            ),
            (
                r#"{"history": [{"role": "assistant", "content": "", "tool_calls": {"id": "a"}}]}"#,
                "history entry 0",
                "field `tool_calls`: expected an array, found an object",
            ),
            (
                r#"{"history": [{"role": "tool", "content": "x"}]}"#,
                "history entry 0",
                "field `tool_call_ids`: is missing",
            ),
            (
                r#"{"history": [{"role": "tool", "content": "x", "tool_call_ids": []}]}"#,
                "history entry 0",
                "field `tool_call_ids`: is empty",
            ),
            (
                r#"{"history": [{"role": "tool", "content": "x", "tool_call_ids": "a"}]}"#,
                "history entry 0",
                "field `tool_call_ids`: expected a list of call ids, found a string",
            ),
            (
                r#"{"history": [{"role": "tool", "content": "x", "tool_call_ids": ["a", 2]}]}"#,
                "history entry 0",
                "field `tool_call_ids[1]`: expected a string id, found a number",
            ),
            (
                r#"{"history": [{"role": "assistant", "content": null, "thought": 3}]}"#,
                "history entry 0",
                "field `thought`: expected a string, found a number",
            ),
            (
                r#"{"history": ["hi"]}"#,
                "history entry 0",
                "expected a message object, found a string",
            ),
        ];
        assert_rejected(&cases);
    }

    #[test]
    fn bad_documents_and_steps_are_named_by_position() {
        let cases = [
            (
                "{\n\"history\": {\"role\": \"user\"}}",
                "line 1",
                "field `history`: expected a list, found an object",
            ),
            (
                r#"{"trajectory": [{"action": "ls", "observation": "a"}, {"observation": "b"}]}"#,
                "trajectory step 1",
                "a step needs a `response`, a `thought` or an `action`",
            ),
            (
                r#"{"trajectory": [{"response": "hm", "observation": 4}]}"#,
                "trajectory step 0",
                "field `observation`: expected a string, found a number",
            ),
        ];
        assert_rejected(&cases);
    }

    /// Each `(json, position, problem)`: rejected at `position`, the
    /// problem starting with `problem`.
    fn assert_rejected(cases: &[(&str, &str, &str)]) {
        for (json, position, problem) in cases {
            let e = error(json);
            assert_eq!(e.position, *position, "{json}");
            assert!(e.problem.starts_with(problem), "{json}: {}", e.problem);
        }
    }

    #[test]
    fn a_traj_needs_history_or_trajectory() {
        let e = error(r#"{"history": null, "trajectory": null, "info": {}}"#);
        assert_eq!(e.position, "line 1");
        assert!(e.problem.contains("`history`: is missing"), "{}", e.problem);
    }

    #[test]
    fn an_empty_history_is_an_empty_transcript() {
        let input = load(r#"{"history": [], "info": {}}"#);
        assert!(input.trajectories[0].messages.is_empty());
    }
}
