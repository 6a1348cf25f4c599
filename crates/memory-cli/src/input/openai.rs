//! OpenAI chat format: an array of messages, an array of `{"messages": [...]}`
//! trajectories, or either as JSONL (one message, or one trajectory, a line).

use memory_core::Message;
use memory_openai::wire::{ImportError, message_from_value};
use serde_json::Value;

use super::json::Record;
use super::{Format, Located, Origin, Trajectory};

/// Whether `value` looks like a trajectory object: an object with `messages`.
pub(crate) fn is_trajectory(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|o| o.contains_key("messages"))
}

/// Whether `value` looks like a chat message: an object with `role`.
pub(crate) fn is_message(value: &Value) -> bool {
    value.as_object().is_some_and(|o| o.contains_key("role"))
}

/// Fields that name a trajectory, in order of preference.
pub(crate) const LABEL_FIELDS: [&str; 4] = ["instance_id", "id", "sample_id", "name"];

/// Loads the records as `format`.
///
/// # Errors
///
/// The first malformed trajectory or message, with its position.
pub(crate) fn load(records: Vec<Record>, format: Format) -> Result<Vec<Trajectory>, Located> {
    match format {
        Format::ChatMessages { lines: false } => {
            let items = records
                .into_iter()
                .flat_map(|r| match r.value {
                    Value::Array(items) => items,
                    other => vec![other],
                })
                .collect::<Vec<_>>();
            let trajectory = Trajectory::new(None, Vec::new(), Origin::Document);
            let messages = convert(&items, |i| trajectory.position(i))?;
            Ok(vec![Trajectory {
                messages,
                ..trajectory
            }])
        }
        Format::ChatMessages { lines: true } => {
            let lines: Vec<usize> = records.iter().map(|r| r.line).collect();
            let trajectory = Trajectory::new(None, Vec::new(), Origin::Lines(lines));
            let items: Vec<Value> = records.into_iter().map(|r| r.value).collect();
            let messages = convert(&items, |i| trajectory.position(i))?;
            Ok(vec![Trajectory {
                messages,
                ..trajectory
            }])
        }
        Format::ChatTrajectories { lines: false } => {
            let mut out = Vec::new();
            for record in records {
                let items = match record.value {
                    Value::Array(items) => items,
                    other => vec![other],
                };
                for item in items {
                    let index = out.len();
                    out.push(trajectory(&item, Origin::Element(index))?);
                }
            }
            Ok(out)
        }
        Format::Locomo | Format::SweAgentTraj => Err(Located::new(
            "line 1",
            format!("{format} is not OpenAI chat JSON; load it as {format}"),
        )),
        Format::ChatTrajectories { lines: true } => records
            .into_iter()
            .enumerate()
            .map(|(index, r)| {
                trajectory(
                    &r.value,
                    Origin::Line {
                        line: r.line,
                        index,
                    },
                )
            })
            .collect(),
    }
}

/// One `{"messages": [...], ...}` object.
fn trajectory(value: &Value, origin: Origin) -> Result<Trajectory, Located> {
    let shell = Trajectory::new(None, Vec::new(), origin);
    let Some(object) = value.as_object() else {
        return Err(Located::new(
            shell.name(),
            format!(
                "expected a trajectory object with `messages`, found {}",
                kind(value)
            ),
        ));
    };
    let label = LABEL_FIELDS
        .iter()
        .find_map(|f| object.get(*f).and_then(Value::as_str))
        .map(str::to_string);
    let items = match object.get("messages") {
        Some(Value::Array(items)) => items,
        None => {
            return Err(Located::new(
                shell.name(),
                "field `messages`: is missing; every trajectory needs an array of messages",
            ));
        }
        Some(other) => {
            return Err(Located::new(
                shell.name(),
                format!(
                    "field `messages`: expected an array of messages, found {}",
                    kind(other)
                ),
            ));
        }
    };
    let messages = convert(items, |i| shell.position(i))?;
    Ok(Trajectory {
        label,
        messages,
        ..shell
    })
}

/// Converts messages, naming the position of the first bad one.
fn convert(items: &[Value], position: impl Fn(usize) -> String) -> Result<Vec<Message>, Located> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            message_from_value(item, i).map_err(|e| Located::new(position(i), problem(&e)))
        })
        .collect()
}

/// The error without its message index (which moves to the position).
pub(crate) fn problem(e: &ImportError) -> String {
    if e.field.is_empty() {
        e.problem.clone()
    } else {
        format!("field `{}`: {}", e.field, e.problem)
    }
}

pub(crate) use memory_openai::wire::kind;
