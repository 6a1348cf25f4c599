//! A Responses request's options, read for translation and written from
//! it. What only OpenAI's own models take (`reasoning`, `include`,
//! `prompt_cache_key`, `text`) is consumed when translating: the server's
//! pipeline fits the context for any other model.

use serde_json::{Map, Value, json};

use crate::protocol::options::{Options, ToolChoice, ToolSpec, tools};

/// The options of a Responses request's fields.
pub(crate) fn read(rest: &Map<String, Value>) -> Options {
    Options {
        model: rest.get("model").cloned(),
        max_tokens: rest.get("max_output_tokens").and_then(Value::as_u64),
        temperature: rest.get("temperature").cloned(),
        top_p: rest.get("top_p").cloned(),
        stop: Vec::new(),
        tools: tools(rest.get("tools"), tool_spec),
        tool_choice: rest.get("tool_choice").and_then(tool_choice),
        stream: rest.get("stream").and_then(Value::as_bool).unwrap_or(false),
        user: ["safety_identifier", "user"]
            .iter()
            .find_map(|f| rest.get(*f).and_then(Value::as_str))
            .map(str::to_string),
    }
}

/// The fields of a Responses request asking for `options`. The upstream
/// keeps nothing: the server holds the conversation and sends it whole.
pub(crate) fn write(options: &Options) -> Map<String, Value> {
    let mut rest = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            rest.insert(k.to_string(), v);
        }
    };
    put("model", options.model.clone());
    put("max_output_tokens", options.max_tokens.map(Value::from));
    put("temperature", options.temperature.clone());
    put("top_p", options.top_p.clone());
    if !options.stop.is_empty() {
        crate::protocol::options::left_out("stop sequences");
    }
    put(
        "tools",
        (!options.tools.is_empty())
            .then(|| Value::Array(options.tools.iter().map(super::request::tool).collect())),
    );
    put(
        "tool_choice",
        options
            .tool_choice
            .as_ref()
            .filter(|_| !options.tools.is_empty())
            .map(|c| match c {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Any => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
            }),
    );
    put("safety_identifier", options.user.clone().map(Value::String));
    put("store", Some(json!(false)));
    put("stream", options.stream.then_some(json!(true)));
    rest
}

/// A function tool (flat, as this protocol writes one). A custom tool
/// (free-form input) is offered elsewhere as a function of one string,
/// `input`, which is how its calls are read back; a hosted tool (web
/// search, file search) has no function to call elsewhere.
fn tool_spec(tool: &Value) -> Option<ToolSpec> {
    let name = tool["name"].as_str()?.to_string();
    let description = tool["description"].as_str().map(str::to_string);
    match tool["type"].as_str()? {
        "function" => Some(ToolSpec {
            name,
            description,
            schema: tool
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        }),
        "custom" => Some(ToolSpec {
            name,
            description,
            schema: json!({"type": "object", "properties": {"input": {"type": "string"}},
                "required": ["input"]}),
        }),
        _ => None,
    }
}

fn tool_choice(value: &Value) -> Option<ToolChoice> {
    match value.as_str() {
        Some("auto") => Some(ToolChoice::Auto),
        Some("none") => Some(ToolChoice::None),
        Some("required") => Some(ToolChoice::Any),
        Some(_) => None,
        None => value["name"]
            .as_str()
            .map(|n| ToolChoice::Tool(n.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_written_read_back_and_hosted_tools_are_left_out() {
        let rest = json!({"model": "m", "max_output_tokens": 50, "tool_choice": "required",
            "tools": [{"type": "function", "name": "ls", "parameters": {"type": "object"}},
                      {"type": "custom", "name": "apply_patch"},
                      {"type": "web_search"}], "stream": true});
        let options = read(rest.as_object().unwrap());
        assert_eq!(options.tools.len(), 2);
        assert_eq!(options.tools[1].schema["required"][0], "input");
        let again = read(&write(&options));
        assert_eq!(again, options);
    }
}
