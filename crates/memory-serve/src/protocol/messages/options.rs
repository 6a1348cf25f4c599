//! A Messages request's options, read for translation and written from
//! it. What only Anthropic's models take (`thinking`, `context_management`,
//! `output_config`, `cache_control`) is consumed: the server's pipeline
//! fits the context for any other model.

use serde_json::{Map, Value, json};

use crate::protocol::options::{Options, ToolChoice, ToolSpec, stops, tools};

/// The options of a Messages request's fields.
pub(crate) fn read(rest: &Map<String, Value>) -> Options {
    let tools = tools(rest.get("tools"), tool_spec);
    Options {
        model: rest.get("model").cloned(),
        max_tokens: rest.get("max_tokens").and_then(Value::as_u64),
        temperature: rest.get("temperature").cloned(),
        top_p: rest.get("top_p").cloned(),
        stop: stops(rest.get("stop_sequences")),
        tools,
        tool_choice: rest.get("tool_choice").and_then(tool_choice),
        stream: rest.get("stream").and_then(Value::as_bool).unwrap_or(false),
        user: rest
            .get("metadata")
            .and_then(|m| m["user_id"].as_str())
            .map(str::to_string),
    }
}

/// The fields of a Messages request asking for `options`; `reply_tokens`
/// when it names no limit (Anthropic asks for one).
pub(crate) fn write(options: &Options, reply_tokens: usize) -> Map<String, Value> {
    let mut rest = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            rest.insert(k.to_string(), v);
        }
    };
    put("model", options.model.clone());
    put(
        "max_tokens",
        Some(json!(options.max_tokens.unwrap_or(reply_tokens as u64))),
    );
    // Anthropic takes a temperature of 0 to 1 (OpenAI's goes to 2).
    put(
        "temperature",
        options
            .temperature
            .as_ref()
            .map(|t| t.as_f64().map_or(t.clone(), |t| json!(t.clamp(0.0, 1.0)))),
    );
    put("top_p", options.top_p.clone());
    put(
        "stop_sequences",
        (!options.stop.is_empty()).then(|| json!(options.stop)),
    );
    put(
        "tools",
        (!options.tools.is_empty())
            .then(|| Value::Array(options.tools.iter().map(super::request::tool).collect())),
    );
    put(
        "tool_choice",
        // A choice among no tools is refused: none is sent then.
        options
            .tool_choice
            .as_ref()
            .filter(|_| !options.tools.is_empty())
            .map(|c| match c {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Any => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            }),
    );
    put(
        "metadata",
        options.user.as_ref().map(|u| json!({"user_id": u})),
    );
    put("stream", options.stream.then_some(json!(true)));
    rest
}

/// A client-defined tool (no `type`, or `custom`); Anthropic's own tools
/// (web search, bash, the text editor) have no function to call elsewhere.
fn tool_spec(tool: &Value) -> Option<ToolSpec> {
    if !matches!(
        tool.get("type").and_then(Value::as_str),
        None | Some("custom")
    ) {
        return None;
    }
    Some(ToolSpec {
        name: tool["name"].as_str()?.to_string(),
        description: tool["description"].as_str().map(str::to_string),
        schema: tool
            .get("input_schema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
    })
}

fn tool_choice(value: &Value) -> Option<ToolChoice> {
    match value["type"].as_str()? {
        "auto" => Some(ToolChoice::Auto),
        "none" => Some(ToolChoice::None),
        "any" => Some(ToolChoice::Any),
        "tool" => value["name"]
            .as_str()
            .map(|n| ToolChoice::Tool(n.to_string())),
        _ => None,
    }
}
