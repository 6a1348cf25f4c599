//! A Messages stream: named events (`message_start`,
//! `content_block_start`, `content_block_delta`, `content_block_stop`,
//! `message_delta`, `message_stop`, `ping`, `error`).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::reply::{message_id, usage};
use crate::protocol::Lines;
use crate::protocol::event::{Event, StopReason};

/// Reads a Messages stream into events.
#[derive(Debug, Default, Clone)]
pub(crate) struct Decoder {
    lines: Lines,
    /// The call number of each `tool_use` block, by block index.
    calls: HashMap<u64, usize>,
}

impl Decoder {
    /// The events the next bytes complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut events = Vec::new();
        for data in self.lines.data(bytes) {
            if let Ok(event) = serde_json::from_str::<Value>(&data) {
                self.event(&event, &mut events);
            }
        }
        events
    }

    fn event(&mut self, event: &Value, out: &mut Vec<Event>) {
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => {
                let m = &event["message"];
                out.push(Event::Start {
                    id: m["id"].as_str().unwrap_or_default().to_string(),
                    model: m["model"].as_str().unwrap_or_default().to_string(),
                });
                out.push(Event::Usage(usage(&m["usage"])));
            }
            "content_block_start" => self.block_start(event, out),
            "content_block_delta" => self.delta(event, out),
            "message_delta" => {
                if let Some(reason) = event["delta"]["stop_reason"].as_str() {
                    out.push(Event::Stop(StopReason::from_messages(reason)));
                }
                out.push(Event::Usage(usage(&event["usage"])));
            }
            "message_stop" => out.push(Event::Done),
            "error" => out.push(Event::Error {
                message: event["error"]["message"]
                    .as_str()
                    .unwrap_or("the upstream failed")
                    .to_string(),
            }),
            _ => {}
        }
    }

    fn block_start(&mut self, event: &Value, out: &mut Vec<Event>) {
        let block = &event["content_block"];
        match block["type"].as_str().unwrap_or_default() {
            "text" => text(block["text"].as_str(), Event::Text, out),
            "thinking" => text(block["thinking"].as_str(), Event::Reasoning, out),
            "tool_use" => {
                let index = self.calls.len();
                self.calls
                    .insert(event["index"].as_u64().unwrap_or(0), index);
                out.push(Event::ToolStart {
                    index,
                    id: block["id"].as_str().unwrap_or_default().to_string(),
                    name: block["name"].as_str().unwrap_or_default().to_string(),
                });
            }
            _ => {}
        }
    }

    fn delta(&mut self, event: &Value, out: &mut Vec<Event>) {
        let delta = &event["delta"];
        match delta["type"].as_str().unwrap_or_default() {
            "text_delta" => text(delta["text"].as_str(), Event::Text, out),
            "thinking_delta" => text(delta["thinking"].as_str(), Event::Reasoning, out),
            "input_json_delta" => {
                let block = event["index"].as_u64().unwrap_or(0);
                if let (Some(index), Some(json)) =
                    (self.calls.get(&block), delta["partial_json"].as_str())
                    && !json.is_empty()
                {
                    out.push(Event::ToolArguments {
                        index: *index,
                        json: json.to_string(),
                    });
                }
            }
            _ => {}
        }
    }
}

fn text(text: Option<&str>, event: fn(String) -> Event, out: &mut Vec<Event>) {
    if let Some(t) = text.filter(|t| !t.is_empty()) {
        out.push(event(t.to_string()));
    }
}

/// The kind of the block being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
}

/// Writes events as a Messages stream.
#[derive(Debug, Default, Clone)]
pub(crate) struct Encoder {
    started: bool,
    open: Option<Open>,
    /// Blocks opened so far.
    blocks: usize,
    stop: Option<StopReason>,
    input_tokens: u64,
    output_tokens: u64,
    ended: bool,
    /// `context_management` for the `message_delta`, when the server's
    /// pipeline changed the context.
    edits: Option<Value>,
    /// The reply's tool calls, gathered whole before they are written: a
    /// Chat Completions stream may interleave the arguments of parallel
    /// calls, which Anthropic's blocks, one open at a time, cannot.
    calls: crate::protocol::pending::PendingCalls,
}

impl Encoder {
    /// An encoder whose `message_delta` reports `edits`.
    pub(crate) fn reporting(edits: Option<Value>) -> Self {
        Self {
            edits,
            ..Self::default()
        }
    }

    /// The bytes of `event`.
    pub(crate) fn encode(&mut self, event: &Event) -> String {
        let mut out = String::new();
        if self.ended {
            return out;
        }
        if !self.started && !matches!(event, Event::Error { .. }) {
            self.start(event, &mut out);
        }
        match event {
            Event::Start { .. } => {}
            Event::Text(t) => {
                self.write_calls(&mut out);
                self.open_block(Open::Text, json!({"type": "text", "text": ""}), &mut out);
                self.delta(json!({"type": "text_delta", "text": t}), &mut out);
            }
            Event::Reasoning(t) => {
                let block = json!({"type": "thinking", "thinking": "", "signature": ""});
                self.write_calls(&mut out);
                self.open_block(Open::Thinking, block, &mut out);
                self.delta(json!({"type": "thinking_delta", "thinking": t}), &mut out);
            }
            Event::ToolStart { index, id, name } => {
                self.close_block(&mut out);
                self.calls.start(*index, id, name);
            }
            Event::ToolArguments { index, json } => self.calls.arguments(*index, json),
            Event::Usage(u) => {
                self.input_tokens = u.input.unwrap_or(self.input_tokens);
                self.output_tokens = u.output.unwrap_or(self.output_tokens);
            }
            Event::Stop(reason) => {
                self.close_block(&mut out);
                self.write_calls(&mut out);
                self.stop = Some(reason.clone());
            }
            Event::Done => self.end(&mut out),
            Event::Error { message } => {
                self.ended = true;
                put(
                    &mut out,
                    "error",
                    json!({"type": "error",
                    "error": {"type": "api_error", "message": message}}),
                );
            }
        }
        out
    }

    /// `message_start`, with the upstream's id and model when the event
    /// names them.
    fn start(&mut self, event: &Event, out: &mut String) {
        self.started = true;
        let (id, model) = match event {
            Event::Start { id, model } => (id.as_str(), model.as_str()),
            _ => ("", ""),
        };
        let message = json!({"id": message_id(id), "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0}});
        put(
            out,
            "message_start",
            json!({"type": "message_start", "message": message}),
        );
    }

    fn open_block(&mut self, kind: Open, block: Value, out: &mut String) {
        if self.open == Some(kind) {
            return;
        }
        self.close_block(out);
        self.open = Some(kind);
        put(
            out,
            "content_block_start",
            json!({"type": "content_block_start",
            "index": self.blocks, "content_block": block}),
        );
    }

    fn delta(&self, delta: Value, out: &mut String) {
        put(
            out,
            "content_block_delta",
            json!({"type": "content_block_delta",
            "index": self.blocks, "delta": delta}),
        );
    }

    fn close_block(&mut self, out: &mut String) {
        if self.open.take().is_some() {
            put(
                out,
                "content_block_stop",
                json!({"type": "content_block_stop", "index": self.blocks}),
            );
            self.blocks += 1;
        }
    }

    /// The gathered tool calls, each a whole `tool_use` block: its start,
    /// its arguments in one `input_json_delta`, its stop.
    fn write_calls(&mut self, out: &mut String) {
        for crate::protocol::pending::PendingCall {
            id,
            name,
            arguments,
        } in self.calls.take()
        {
            let block = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
            put(
                out,
                "content_block_start",
                json!({"type": "content_block_start",
                "index": self.blocks, "content_block": block}),
            );
            if !arguments.is_empty() {
                self.delta(
                    json!({"type": "input_json_delta", "partial_json": arguments}),
                    out,
                );
            }
            put(
                out,
                "content_block_stop",
                json!({"type": "content_block_stop", "index": self.blocks}),
            );
            self.blocks += 1;
        }
    }

    fn end(&mut self, out: &mut String) {
        self.close_block(out);
        self.write_calls(out);
        self.ended = true;
        let reason = self
            .stop
            .as_ref()
            .map_or("end_turn", StopReason::as_messages);
        let mut delta = json!({"type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": null},
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}});
        if let Some(edits) = self.edits.take() {
            delta["context_management"] = edits;
        }
        put(out, "message_delta", delta);
        put(out, "message_stop", json!({"type": "message_stop"}));
    }
}

/// What a Messages stream passed to a Messages client as it came gains:
/// on its `message_delta`, the server's `context_management` report
/// (beside the provider's own edits). Whole events come to it from a
/// [`Rewriter`](crate::protocol::rewriter::Rewriter).
#[derive(Debug, Clone)]
pub(crate) struct Reporter {
    edits: Option<Value>,
}

impl Reporter {
    /// A reporter of `edits`.
    pub(crate) fn new(edits: Value) -> Self {
        Self { edits: Some(edits) }
    }

    /// Whether `events` may hold what it rewrites.
    pub(crate) fn wants(&self, events: &[u8]) -> bool {
        self.edits.is_some() && contains(events, b"\"message_delta\"")
    }

    /// `event`, reported on when it is the `message_delta`.
    pub(crate) fn rewrite(&mut self, event: &str, out: &mut String) {
        let value = crate::protocol::rewriter::event_data(event);
        let Some(mut value) = value.filter(|v| v["type"] == "message_delta") else {
            out.push_str(event);
            return;
        };
        let Some(edits) = self.edits.take() else {
            out.push_str(event);
            return;
        };
        let ours = edits["applied_edits"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let field = &mut value["context_management"];
        match field["applied_edits"].as_array_mut() {
            Some(theirs) => theirs.extend(ours),
            None => *field = edits,
        }
        out.push_str(&format!("event: message_delta\ndata: {value}\n\n"));
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn put(out: &mut String, name: &str, data: Value) {
    out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(index: usize, id: &str, name: &str) -> Event {
        Event::ToolStart {
            index,
            id: id.into(),
            name: name.into(),
        }
    }

    fn arguments(index: usize, json: &str) -> Event {
        Event::ToolArguments {
            index,
            json: json.into(),
        }
    }

    /// Parallel calls whose arguments come interleaved (as a Chat
    /// Completions stream may send them) are written one whole block each.
    #[test]
    fn events_written_read_back_the_same() {
        let start = Event::Start {
            id: "msg_1".into(),
            model: "m".into(),
        };
        let head = vec![
            start,
            Event::Reasoning("hm".into()),
            Event::Text("Hi".into()),
        ];
        let tail = vec![Event::Stop(StopReason::ToolUse), Event::Done];
        let sent: Vec<Event> = head
            .iter()
            .cloned()
            .chain([
                call(0, "t1", "ls"),
                call(1, "t2", "cat"),
                arguments(0, "{\"p\":"),
                arguments(1, "{}"),
                call(0, "t1", "ls"),
                arguments(0, "1}"),
            ])
            .chain(tail.iter().cloned())
            .collect();
        let mut encoder = Encoder::default();
        let bytes: String = sent.iter().map(|e| encoder.encode(e)).collect();
        let mut decoder = Decoder::default();
        let mut back = Vec::new();
        for piece in bytes.as_bytes().chunks(5) {
            back.extend(decoder.feed(piece));
        }
        back.retain(|e| !matches!(e, Event::Usage(_)));
        let calls = [
            call(0, "t1", "ls"),
            arguments(0, "{\"p\":1}"),
            call(1, "t2", "cat"),
            arguments(1, "{}"),
        ];
        let expected: Vec<Event> = head.into_iter().chain(calls).chain(tail).collect();
        assert_eq!(back, expected);
    }

    #[test]
    fn the_report_joins_the_message_delta_however_the_bytes_split() {
        let stream = "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let edits = json!({"applied_edits": [{"type": "clear_tool_uses_20250919"}]});
        let mut reporter = crate::protocol::rewriter::Rewriter::reporting(edits.clone());
        let mut out = Vec::new();
        for piece in stream.as_bytes().chunks(3) {
            out.extend(reporter.feed(piece));
        }
        out.extend(reporter.rest());
        let mut decoder = Decoder::default();
        let events = decoder.feed(&out);
        assert_eq!(events.last(), Some(&Event::Done));
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("event: message_start\n"));
        let delta = text
            .lines()
            .find(|l| l.contains("message_delta") && l.starts_with("data:"))
            .unwrap();
        let delta: Value = serde_json::from_str(&delta[5..]).unwrap();
        assert_eq!(delta["context_management"], edits);
        assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    }
}
