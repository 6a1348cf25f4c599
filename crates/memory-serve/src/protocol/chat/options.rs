//! A Chat Completions request's options, read for translation and
//! written from it.

use serde_json::{Map, Value, json};

use crate::protocol::options::{Options, ToolChoice, ToolSpec, stops, tools};

/// The options of a Chat Completions request's fields.
pub(crate) fn read(rest: &Map<String, Value>) -> Options {
    let max_tokens = ["max_completion_tokens", "max_tokens"]
        .iter()
        .find_map(|f| rest.get(*f).and_then(Value::as_u64));
    let tools = tools(rest.get("tools"), tool_spec);
    Options {
        model: rest.get("model").cloned(),
        max_tokens,
        temperature: rest.get("temperature").cloned(),
        top_p: rest.get("top_p").cloned(),
        stop: stops(rest.get("stop")),
        tools,
        tool_choice: rest.get("tool_choice").and_then(tool_choice),
        stream: rest.get("stream").and_then(Value::as_bool).unwrap_or(false),
        user: rest.get("user").and_then(Value::as_str).map(str::to_string),
    }
}

/// The fields of a Chat Completions request asking for `options`.
pub(crate) fn write(options: &Options) -> Map<String, Value> {
    let mut rest = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            rest.insert(k.to_string(), v);
        }
    };
    put("model", options.model.clone());
    put("max_tokens", options.max_tokens.map(Value::from));
    put("temperature", options.temperature.clone());
    put("top_p", options.top_p.clone());
    put(
        "stop",
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
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Any => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            }),
    );
    put("user", options.user.clone().map(Value::String));
    if options.stream {
        put("stream", Some(json!(true)));
        put("stream_options", Some(json!({"include_usage": true})));
    }
    rest
}

fn tool_spec(tool: &Value) -> Option<ToolSpec> {
    if tool["type"] != "function" {
        return None;
    }
    let f = &tool["function"];
    Some(ToolSpec {
        name: f["name"].as_str()?.to_string(),
        description: f["description"].as_str().map(str::to_string),
        schema: f
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
    })
}

fn tool_choice(value: &Value) -> Option<ToolChoice> {
    match value.as_str() {
        Some("auto") => Some(ToolChoice::Auto),
        Some("none") => Some(ToolChoice::None),
        Some("required") => Some(ToolChoice::Any),
        Some(_) => None,
        None => value["function"]["name"]
            .as_str()
            .map(|n| ToolChoice::Tool(n.to_string())),
    }
}
