//! The message texts of the real data sets, found through `MEMORY_DATA_DIR`:
//! one text per thing an agent memory counts (a message's content, each tool
//! call's name and arguments, each chat turn).
//!
//! Shared by the tests and the benchmark.

#![allow(dead_code)]

use std::path::Path;

use memory_core::test_util::DATA;

use serde_json::Value;

/// The texts of one data set.
pub struct Corpus {
    /// Short name, for reports.
    pub name: &'static str,
    /// One entry per counted text, in file order; empty texts left out.
    pub texts: Vec<String>,
}

impl Corpus {
    /// Total UTF-8 bytes of the texts.
    pub fn bytes(&self) -> usize {
        self.texts.iter().map(String::len).sum()
    }
}

/// Pulls the texts out of one data set's JSON.
type Extract = fn(&Value) -> Vec<String>;

/// The data sets under `MEMORY_DATA_DIR` that are present, and a notice for
/// each one that cannot be read. A data set that is missing (or the variable
/// itself) is skipped with a notice, and fails the run under CI.
pub fn load() -> (Vec<Corpus>, Vec<String>) {
    let mut corpora = Vec::new();
    let mut notices = Vec::new();
    let sets: [(&'static str, &str, Extract); 2] = [
        (
            "agent-trajectories",
            "agent-trajectories/swe-gym-openhands.json",
            trajectory_texts,
        ),
        ("locomo", "locomo/locomo-dev.json", locomo_texts),
    ];
    for (name, file, extract) in sets {
        let Some(path) = DATA.file(file) else {
            continue;
        };
        match read(&path) {
            Ok(json) => corpora.push(Corpus {
                name,
                texts: extract(&json),
            }),
            Err(why) => notices.push(format!("{name} skipped: {why}")),
        }
    }
    (corpora, notices)
}

fn read(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

/// `[{messages: [{role, content, tool_calls: [{function: {name, arguments}}]}]}]`;
/// a content may also be a list of `{type: "text", text}` parts.
fn trajectory_texts(json: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    let trajectories = json.as_array().map(Vec::as_slice).unwrap_or_default();
    for trajectory in trajectories {
        let messages = trajectory["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for message in messages {
            match &message["content"] {
                Value::String(text) => texts.push(text.clone()),
                Value::Array(parts) => texts.extend(
                    parts
                        .iter()
                        .filter_map(|part| part["text"].as_str().map(str::to_owned)),
                ),
                _ => {}
            }
            for call in message["tool_calls"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                for field in ["name", "arguments"] {
                    if let Some(text) = call["function"][field].as_str() {
                        texts.push(text.to_owned());
                    }
                }
            }
        }
    }
    texts.retain(|t| !t.is_empty());
    texts
}

/// `[{conversation: {session_N: [{text}]}}]`, sessions in file order.
fn locomo_texts(json: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    let samples = json.as_array().map(Vec::as_slice).unwrap_or_default();
    for sample in samples {
        let Some(conversation) = sample["conversation"].as_object() else {
            continue;
        };
        for (key, turns) in conversation {
            let Some(turns) = turns.as_array() else {
                continue;
            };
            if !key.starts_with("session_") {
                continue;
            }
            texts.extend(
                turns
                    .iter()
                    .filter_map(|turn| turn["text"].as_str().map(str::to_owned)),
            );
        }
    }
    texts.retain(|t| !t.is_empty());
    texts
}
