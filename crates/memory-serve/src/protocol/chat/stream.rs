//! A Chat Completions stream: `data: {chat.completion.chunk}` events,
//! ended by `data: [DONE]`.

use serde_json::{Value, json};

use crate::protocol::Lines;
use crate::protocol::event::{Event, StopReason};

/// Reads a Chat Completions stream into events.
#[derive(Debug, Default, Clone)]
pub(crate) struct Decoder {
    lines: Lines,
    started: bool,
}

impl Decoder {
    /// The events the next bytes complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut events = Vec::new();
        for data in self.lines.data(bytes) {
            if data == "[DONE]" {
                events.push(Event::Done);
                continue;
            }
            if let Ok(chunk) = serde_json::from_str::<Value>(&data) {
                self.chunk(&chunk, &mut events);
            }
        }
        events
    }

    fn chunk(&mut self, chunk: &Value, events: &mut Vec<Event>) {
        if let Some(error) = chunk.get("error") {
            let message = error["message"].as_str().unwrap_or("the upstream failed");
            events.push(Event::Error {
                message: message.to_string(),
            });
            return;
        }
        if !self.started {
            self.started = true;
            events.push(Event::Start {
                id: chunk["id"].as_str().unwrap_or_default().to_string(),
                model: chunk["model"].as_str().unwrap_or_default().to_string(),
            });
        }
        let choice = chunk["choices"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["index"].as_u64().unwrap_or(0) == 0));
        if let Some(choice) = choice {
            delta(&choice["delta"], events);
            if let Some(reason) = choice["finish_reason"].as_str() {
                events.push(Event::Stop(StopReason::from_chat(reason)));
            }
        }
        if chunk["usage"].is_object() {
            events.push(Event::Usage(super::reply::usage(&chunk["usage"])));
        }
    }
}

fn delta(delta: &Value, events: &mut Vec<Event>) {
    let reasoning = delta
        .get("reasoning_content")
        .or_else(|| delta.get("reasoning"))
        .and_then(Value::as_str);
    if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
        events.push(Event::Reasoning(text.to_string()));
    }
    if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
        events.push(Event::Text(text.to_string()));
    }
    for (k, call) in delta["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let index = call["index"].as_u64().map_or(k, |i| i as usize);
        let id = call["id"].as_str().unwrap_or_default();
        let name = call["function"]["name"].as_str().unwrap_or_default();
        if !id.is_empty() || !name.is_empty() {
            events.push(Event::ToolStart {
                index,
                id: id.to_string(),
                name: name.to_string(),
            });
        }
        if let Some(json) = call["function"]["arguments"]
            .as_str()
            .filter(|a| !a.is_empty())
        {
            events.push(Event::ToolArguments {
                index,
                json: json.to_string(),
            });
        }
    }
}

/// Writes events as a Chat Completions stream.
#[derive(Debug, Default, Clone)]
pub(crate) struct Encoder {
    id: String,
    model: String,
    started: bool,
    /// The tokens reported so far, written once, before the end.
    usage: crate::protocol::event::Usage,
    reported: bool,
}

impl Encoder {
    /// The bytes of `event`.
    pub(crate) fn encode(&mut self, event: &Event) -> String {
        let mut out = String::new();
        if !self.started && !matches!(event, Event::Error { .. }) {
            self.started = true;
            if let Event::Start { id, model } = event {
                self.id.clone_from(id);
                self.model.clone_from(model);
            }
            out.push_str(&self.chunk(json!({"role": "assistant", "content": ""}), None));
        }
        match event {
            Event::Start { .. } => {}
            Event::Text(text) => out.push_str(&self.chunk(json!({"content": text}), None)),
            Event::Reasoning(text) => {
                out.push_str(&self.chunk(json!({"reasoning_content": text}), None));
            }
            Event::ToolStart { index, id, name } => out.push_str(&self.chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                None,
            )),
            Event::ToolArguments { index, json } => out.push_str(&self.chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": json}}]}),
                None,
            )),
            Event::Usage(usage) => {
                self.reported = true;
                self.usage.input = usage.input.or(self.usage.input);
                self.usage.output = usage.output.or(self.usage.output);
            }
            Event::Stop(reason) => {
                out.push_str(&self.chunk(json!({}), Some(reason.as_chat())));
            }
            Event::Done => {
                if self.reported {
                    out.push_str(&self.usage_chunk());
                }
                out.push_str("data: [DONE]\n\n");
            }
            Event::Error { message } => {
                let body = json!({"error": {"message": message, "type": "upstream_error"}});
                out.push_str(&format!("data: {body}\n\n"));
            }
        }
        out
    }

    /// The usage chunk (no choices), as a stream with `include_usage` ends.
    fn usage_chunk(&self) -> String {
        let (i, o) = (
            self.usage.input.unwrap_or(0),
            self.usage.output.unwrap_or(0),
        );
        let body = json!({"id": self.id, "object": "chat.completion.chunk", "created": 0,
            "model": self.model, "choices": [],
            "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o}});
        format!("data: {body}\n\n")
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> String {
        let body = json!({"id": self.id, "object": "chat.completion.chunk", "created": 0,
            "model": self.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {body}\n\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_written_read_back_the_same() {
        let events = vec![
            Event::Start {
                id: "c1".into(),
                model: "m".into(),
            },
            Event::Reasoning("hm".into()),
            Event::Text("Hi".into()),
            Event::ToolStart {
                index: 0,
                id: "t1".into(),
                name: "ls".into(),
            },
            Event::ToolArguments {
                index: 0,
                json: "{\"p\":1}".into(),
            },
            Event::Stop(StopReason::ToolUse),
            Event::Done,
        ];
        let mut encoder = Encoder::default();
        let bytes: String = events.iter().map(|e| encoder.encode(e)).collect();
        let mut decoder = Decoder::default();
        // Fed in pieces that split events anywhere.
        let mut back = Vec::new();
        for piece in bytes.as_bytes().chunks(7) {
            back.extend(decoder.feed(piece));
        }
        assert_eq!(back, events);
    }
}
