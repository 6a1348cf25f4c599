//! [`Options`]: what a request asks of the model besides its messages, in
//! no protocol's shape, for a request translated from one protocol to
//! another. Same-protocol requests keep every field as sent instead.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::Value;

/// A function tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    /// The JSON schema of its arguments.
    pub(crate) schema: Value,
}

/// Which tool the model must call, if any.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolChoice {
    /// It may call tools or answer.
    Auto,
    /// It may not call tools.
    None,
    /// It must call some tool.
    Any,
    /// It must call this one.
    Tool(String),
}

/// What a request asks besides its messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Options {
    pub(crate) model: Option<Value>,
    pub(crate) max_tokens: Option<u64>,
    pub(crate) temperature: Option<Value>,
    pub(crate) top_p: Option<Value>,
    pub(crate) stop: Vec<String>,
    pub(crate) tools: Vec<ToolSpec>,
    pub(crate) tool_choice: Option<ToolChoice>,
    pub(crate) stream: bool,
    /// Who the end user is, for the provider's abuse checks.
    pub(crate) user: Option<String>,
}

/// Logs, once for the server's life, that what `what` names is left out
/// of requests to an upstream that cannot take it.
pub(crate) fn left_out(what: &str) {
    static SEEN: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(what.to_string())
    {
        tracing::warn!(
            what,
            "the upstream's protocol cannot take it; it is left out of requests"
        );
    }
}

/// The tools of a request's `tools` field that `read` takes, in order;
/// each kind it does not take is logged, once, as left out.
pub(crate) fn tools(field: Option<&Value>, read: fn(&Value) -> Option<ToolSpec>) -> Vec<ToolSpec> {
    let mut specs = Vec::new();
    for tool in field.and_then(Value::as_array).into_iter().flatten() {
        match read(tool) {
            Some(spec) => specs.push(spec),
            None => left_out(&format!(
                "tool of type `{}`",
                tool["type"].as_str().unwrap_or("?")
            )),
        }
    }
    specs
}

/// The text of a stop sequence field: one string, or an array of them.
pub(crate) fn stops(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}
