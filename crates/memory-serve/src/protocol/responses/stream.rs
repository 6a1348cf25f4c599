//! A Responses stream: named events, each with its `sequence_number`
//! (`response.created`, `response.in_progress`,
//! `response.output_item.added`, `response.content_part.added`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`,
//! their `.done`s, `response.output_item.done`, then
//! `response.completed`, `response.incomplete` or `response.failed`).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::reply::{new_id, response, usage};
use crate::protocol::Lines;
use crate::protocol::event::{Event, StopReason, Usage};

/// Reads a Responses stream into events.
#[derive(Debug, Default, Clone)]
pub(crate) struct Decoder {
    lines: Lines,
    /// The call number of each function call item, by output index, and
    /// whether its arguments came in deltas.
    calls: HashMap<u64, (usize, bool)>,
    /// The output indexes whose text came in deltas.
    texts: std::collections::HashSet<u64>,
    /// Whether the reply called tools.
    called: bool,
    /// The final response object, once it came.
    completed: Option<Value>,
}

impl Decoder {
    /// The final response object, once the stream gave it.
    pub(crate) fn completed(&self) -> Option<&Value> {
        self.completed.as_ref()
    }

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
        let index = event["output_index"].as_u64().unwrap_or(0);
        let delta = event["delta"].as_str().filter(|d| !d.is_empty());
        match event["type"].as_str().unwrap_or_default() {
            "response.created" => out.push(Event::Start {
                id: event["response"]["id"].as_str().unwrap_or_default().into(),
                model: event["response"]["model"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
            }),
            "response.output_item.added" => self.added(index, &event["item"], out),
            "response.output_text.delta" => {
                self.texts.insert(index);
                out.extend(delta.map(|d| Event::Text(d.into())));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.extend(delta.map(|d| Event::Reasoning(d.into())));
            }
            // A custom tool's input is taken whole when its item is done
            // (as arguments `{"input": …}`, which its deltas are not).
            "response.function_call_arguments.delta" => {
                if let (Some(call), Some(d)) = (self.calls.get_mut(&index), delta) {
                    call.1 = true;
                    out.push(Event::ToolArguments {
                        index: call.0,
                        json: d.into(),
                    });
                }
            }
            "response.output_item.done" => self.done(index, &event["item"], out),
            "response.completed" | "response.incomplete" => {
                let r = &event["response"];
                self.completed = Some(r.clone());
                out.push(Event::Usage(usage(&r["usage"])));
                let stop = if r["status"] == "incomplete" {
                    StopReason::MaxTokens
                } else if self.called {
                    StopReason::ToolUse
                } else {
                    StopReason::EndTurn
                };
                out.extend([Event::Stop(stop), Event::Done]);
            }
            "response.failed" | "error" => {
                let error = if event["type"] == "error" {
                    event
                } else {
                    &event["response"]["error"]
                };
                out.push(Event::Error {
                    message: error["message"]
                        .as_str()
                        .unwrap_or("the upstream failed")
                        .into(),
                });
            }
            _ => {}
        }
    }

    fn added(&mut self, index: u64, item: &Value, out: &mut Vec<Event>) {
        if !matches!(
            item["type"].as_str(),
            Some("function_call" | "custom_tool_call")
        ) {
            return;
        }
        self.called = true;
        let call = self.calls.len();
        self.calls.insert(index, (call, false));
        out.push(Event::ToolStart {
            index: call,
            id: item["call_id"].as_str().unwrap_or_default().into(),
            name: item["name"].as_str().unwrap_or_default().into(),
        });
    }

    /// A finished item whose content came whole, not in deltas (some
    /// servers send no deltas).
    fn done(&mut self, index: u64, item: &Value, out: &mut Vec<Event>) {
        match item["type"].as_str() {
            Some("function_call" | "custom_tool_call") => {
                if !self.calls.contains_key(&index) {
                    self.added(index, item, out);
                }
                let (call, streamed) = self.calls[&index];
                let whole = match item["type"].as_str() {
                    Some("custom_tool_call") => item["input"]
                        .as_str()
                        .map(|i| json!({"input": i}).to_string()),
                    _ => item["arguments"].as_str().map(str::to_string),
                };
                if let Some(json) = whole.filter(|j| !streamed && !j.is_empty()) {
                    out.push(Event::ToolArguments { index: call, json });
                }
            }
            Some("message") if !self.texts.contains(&index) => {
                let text = super::items::text(&item["content"]);
                if !text.is_empty() {
                    out.push(Event::Text(text));
                }
            }
            _ => {}
        }
    }
}

/// The kind of the item being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Message,
    Reasoning,
}

/// Writes events as a Responses stream.
#[derive(Debug, Clone)]
pub(crate) struct Encoder {
    id: String,
    model: String,
    sequence: u64,
    started: bool,
    ended: bool,
    /// The item being written: its kind, id and text so far.
    open: Option<(Open, String, String)>,
    /// The items written whole, for the final response.
    output: Vec<Value>,
    /// The reply's tool calls, gathered whole before they are written (a
    /// Chat Completions stream may interleave parallel calls).
    calls: crate::protocol::pending::PendingCalls,
    stop: Option<StopReason>,
    usage: Usage,
    /// Items the server adds at the start of the output (a compaction).
    leading: Vec<Value>,
    /// What the request asked, repeated in each response object.
    echo: serde_json::Map<String, Value>,
    /// The request's custom tools, whose calls are custom tool calls.
    custom: Vec<String>,
    /// The final response object, once written.
    written: Option<Value>,
}

impl Encoder {
    /// An encoder of the response `id`, whose output opens with `leading`.
    pub(crate) fn new(id: String, leading: Vec<Value>) -> Self {
        Self {
            id,
            model: String::new(),
            sequence: 0,
            started: false,
            ended: false,
            open: None,
            output: Vec::new(),
            calls: Default::default(),
            stop: None,
            usage: Usage::default(),
            leading,
            echo: serde_json::Map::new(),
            custom: Vec::new(),
            written: None,
        }
    }

    /// The encoder, its response objects repeating what `request` asked.
    pub(crate) fn echoing(mut self, request: &crate::protocol::Decoded) -> Self {
        let mut asked = json!({});
        super::reply::echo(&mut asked, request);
        self.echo = asked.as_object().cloned().unwrap_or_default();
        self.custom.clone_from(&request.asks.custom_tools);
        self
    }

    /// The final response object it wrote, once it has.
    pub(crate) fn written(&self) -> Option<&Value> {
        self.written.as_ref()
    }

    /// The bytes of `event`.
    pub(crate) fn encode(&mut self, event: &Event) -> String {
        let mut out = String::new();
        if self.ended {
            return out;
        }
        if !self.started {
            self.start(event, &mut out);
        }
        match event {
            Event::Start { .. } => {}
            Event::Text(t) => {
                self.open_item(Open::Message, &mut out);
                self.text_delta("response.output_text.delta", t, &mut out);
            }
            Event::Reasoning(t) => {
                self.open_item(Open::Reasoning, &mut out);
                self.text_delta("response.reasoning_summary_text.delta", t, &mut out);
            }
            Event::ToolStart { index, id, name } => {
                self.close_item(&mut out);
                self.calls.start(*index, id, name);
            }
            Event::ToolArguments { index, json } => self.calls.arguments(*index, json),
            Event::Usage(u) => {
                self.usage.input = u.input.or(self.usage.input);
                self.usage.output = u.output.or(self.usage.output);
            }
            Event::Stop(reason) => {
                self.close_item(&mut out);
                self.write_calls(&mut out);
                self.stop = Some(reason.clone());
            }
            Event::Done => self.end(&mut out),
            Event::Error { message } => {
                self.ended = true;
                let mut failed = self.response("failed");
                failed["error"] = json!({"code": "server_error", "message": message});
                self.put(
                    &mut out,
                    json!({"type": "response.failed", "response": failed}),
                );
            }
        }
        out
    }

    fn response(&self, status: &str) -> Value {
        let mut body = response(
            &self.id,
            &self.model,
            status,
            self.output.clone(),
            self.usage,
        );
        for (field, value) in &self.echo {
            body[field] = value.clone();
        }
        body
    }

    fn start(&mut self, event: &Event, out: &mut String) {
        self.started = true;
        if let Event::Start { model, .. } = event {
            self.model.clone_from(model);
        }
        let created = self.response("in_progress");
        self.put(
            out,
            json!({"type": "response.created", "response": created}),
        );
        let progress = self.response("in_progress");
        self.put(
            out,
            json!({"type": "response.in_progress", "response": progress}),
        );
        for item in std::mem::take(&mut self.leading) {
            let index = self.output.len();
            self.put(
                out,
                json!({"type": "response.output_item.added", "output_index": index, "item": item}),
            );
            self.item_done(item, out);
        }
    }

    fn put(&mut self, out: &mut String, mut data: Value) {
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        let name = data["type"].as_str().unwrap_or_default().to_string();
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }

    fn open_item(&mut self, kind: Open, out: &mut String) {
        if self.open.as_ref().is_some_and(|(k, _, _)| *k == kind) {
            return;
        }
        self.close_item(out);
        self.write_calls(out);
        let index = self.output.len();
        let (id, item, part) = match kind {
            Open::Message => {
                let id = new_id("msg");
                let item = json!({"id": id, "type": "message", "status": "in_progress",
                    "role": "assistant", "content": []});
                let part = json!({"type": "response.content_part.added", "item_id": id,
                    "output_index": index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}});
                (id, item, part)
            }
            Open::Reasoning => {
                let id = new_id("rs");
                let item = json!({"id": id, "type": "reasoning", "summary": []});
                let part = json!({"type": "response.reasoning_summary_part.added",
                    "item_id": id, "output_index": index, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}});
                (id, item, part)
            }
        };
        self.put(
            out,
            json!({"type": "response.output_item.added", "output_index": index, "item": item}),
        );
        self.put(out, part);
        self.open = Some((kind, id, String::new()));
    }

    fn text_delta(&mut self, name: &str, text: &str, out: &mut String) {
        let index = self.output.len();
        let Some((kind, id, so_far)) = self.open.as_mut() else {
            return;
        };
        so_far.push_str(text);
        let mut delta = json!({"type": name, "item_id": id, "output_index": index, "delta": text});
        match kind {
            Open::Message => delta["content_index"] = json!(0),
            Open::Reasoning => delta["summary_index"] = json!(0),
        }
        self.put(out, delta);
    }

    fn close_item(&mut self, out: &mut String) {
        let Some((kind, id, text)) = self.open.take() else {
            return;
        };
        let index = self.output.len();
        let item = match kind {
            Open::Message => {
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                self.put(
                    out,
                    json!({"type": "response.output_text.done", "item_id": id,
                    "output_index": index, "content_index": 0, "text": text}),
                );
                self.put(
                    out,
                    json!({"type": "response.content_part.done", "item_id": id,
                    "output_index": index, "content_index": 0, "part": part}),
                );
                json!({"id": id, "type": "message", "status": "completed",
                    "role": "assistant", "content": [part]})
            }
            Open::Reasoning => {
                let part = json!({"type": "summary_text", "text": text});
                self.put(
                    out,
                    json!({"type": "response.reasoning_summary_text.done", "item_id": id,
                    "output_index": index, "summary_index": 0, "text": text}),
                );
                self.put(
                    out,
                    json!({"type": "response.reasoning_summary_part.done", "item_id": id,
                    "output_index": index, "summary_index": 0, "part": part}),
                );
                json!({"id": id, "type": "reasoning", "summary": [part]})
            }
        };
        self.item_done(item, out);
    }

    fn item_done(&mut self, item: Value, out: &mut String) {
        let index = self.output.len();
        self.put(
            out,
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
        self.output.push(item);
    }

    /// The gathered calls, each a whole `function_call` item (or
    /// `custom_tool_call`, for a custom tool).
    fn write_calls(&mut self, out: &mut String) {
        for crate::protocol::pending::PendingCall {
            id: call_id,
            name,
            arguments,
        } in self.calls.take()
        {
            if self.custom.contains(&name) {
                self.write_custom(&call_id, &name, &arguments, out);
                continue;
            }
            let index = self.output.len();
            let id = new_id("fc");
            let item = |status: &str, arguments: &str| {
                json!({"id": id, "type": "function_call", "status": status,
                    "call_id": call_id, "name": name, "arguments": arguments})
            };
            let added = item("in_progress", "");
            self.put(
                out,
                json!({"type": "response.output_item.added", "output_index": index, "item": added}),
            );
            if !arguments.is_empty() {
                self.put(
                    out,
                    json!({"type": "response.function_call_arguments.delta", "item_id": id,
                    "output_index": index, "delta": arguments}),
                );
            }
            self.put(
                out,
                json!({"type": "response.function_call_arguments.done", "item_id": id,
                "output_index": index, "arguments": arguments}),
            );
            self.item_done(item("completed", &arguments), out);
        }
    }

    /// A whole `custom_tool_call` item: added, its input in one delta,
    /// done.
    fn write_custom(&mut self, call_id: &str, name: &str, arguments: &str, out: &mut String) {
        let index = self.output.len();
        let id = new_id("ctc");
        let mut item = super::items::custom_call(call_id, name, arguments);
        item["id"] = json!(id);
        let input = item["input"].clone();
        let mut added = item.clone();
        added["input"] = json!("");
        added["status"] = json!("in_progress");
        self.put(
            out,
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        );
        self.put(
            out,
            json!({"type": "response.custom_tool_call_input.delta", "item_id": id,
            "output_index": index, "delta": input}),
        );
        self.put(
            out,
            json!({"type": "response.custom_tool_call_input.done", "item_id": id,
            "output_index": index, "input": input}),
        );
        self.item_done(item, out);
    }

    fn end(&mut self, out: &mut String) {
        self.close_item(out);
        self.write_calls(out);
        self.ended = true;
        let (name, status) = match self.stop {
            Some(StopReason::MaxTokens) => ("response.incomplete", "incomplete"),
            _ => ("response.completed", "completed"),
        };
        let response = self.response(status);
        self.put(out, json!({"type": name, "response": response}));
        self.written = Some(response);
    }
}

/// What a Responses stream passed to a Responses client as it came gains:
/// the server's `item` (a compaction) first in its output. Its
/// `output_item.added` and `.done` go before the upstream's first item,
/// and every later event's `output_index` and `sequence_number` move up to
/// make room (the final response holds the item too). Whole events come
/// to it from a [`Rewriter`](crate::protocol::rewriter::Rewriter).
#[derive(Debug, Clone)]
pub(crate) struct Inserter {
    item: Value,
    /// Events put in so far: what later sequence numbers move up by.
    added: u64,
}

impl Inserter {
    /// An inserter of `item`.
    pub(crate) fn new(item: Value) -> Self {
        Self { item, added: 0 }
    }

    /// `event`, with what the item moves.
    pub(crate) fn rewrite(&mut self, event: &str, out: &mut String) {
        let Some(mut value) = crate::protocol::rewriter::event_data(event) else {
            out.push_str(event);
            return;
        };
        let kind = value["type"].as_str().unwrap_or_default().to_string();
        let last = kind == "response.completed" || kind == "response.incomplete";
        if self.added == 0 && (kind == "response.output_item.added" || last) {
            let number = value["sequence_number"].as_u64().unwrap_or(0);
            for (k, name) in ["response.output_item.added", "response.output_item.done"]
                .into_iter()
                .enumerate()
            {
                let put = json!({"type": name, "sequence_number": number + k as u64,
                    "output_index": 0, "item": self.item});
                out.push_str(&format!("event: {name}\ndata: {put}\n\n"));
            }
            self.added = 2;
        }
        if self.added > 0 {
            for field in ["output_index", "sequence_number"] {
                let by = if field == "output_index" {
                    1
                } else {
                    self.added
                };
                if let Some(n) = value.get(field).and_then(Value::as_u64) {
                    value[field] = json!(n + by);
                }
            }
            if let (true, Some(response)) = (last, value.get_mut("response")) {
                super::reply::put_first(response, &self.item);
            }
        }
        out.push_str(&format!("event: {kind}\ndata: {value}\n\n"));
    }
}

/// The stream of a response answered by the server itself (a
/// compaction): `body`'s items, then its completion.
pub(crate) fn whole(body: &Value) -> String {
    let mut encoder = Encoder::new(body["id"].as_str().unwrap_or_default().into(), Vec::new());
    encoder.model = body["model"].as_str().unwrap_or_default().into();
    encoder.leading = body["output"].as_array().cloned().unwrap_or_default();
    let mut out = encoder.encode(&Event::Start {
        id: encoder.id.clone(),
        model: encoder.model.clone(),
    });
    out.push_str(&encoder.encode(&Event::Done));
    out
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

    #[test]
    fn an_item_put_first_in_a_passed_stream_moves_the_rest_up() {
        let events = [
            Event::Start {
                id: "resp_u".into(),
                model: "m".into(),
            },
            Event::Text("Hi".into()),
            Event::Done,
        ];
        let mut upstream = Encoder::new("resp_u".into(), Vec::new());
        let stream: String = events.iter().map(|e| upstream.encode(e)).collect();
        let item = json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "h"});
        let mut inserter = crate::protocol::rewriter::Rewriter::inserting(item.clone());
        let mut out = Vec::new();
        for piece in stream.as_bytes().chunks(9) {
            out.extend(inserter.feed(piece));
        }
        out.extend(inserter.rest());
        let text = String::from_utf8(out).unwrap();
        let values: Vec<Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let numbers: Vec<u64> = values
            .iter()
            .map(|v| v["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(numbers, (0..numbers.len() as u64).collect::<Vec<_>>());
        let done: Vec<&Value> = values
            .iter()
            .filter(|v| v["type"] == "response.output_item.done")
            .collect();
        assert_eq!(done[0]["item"], item);
        assert_eq!(done[0]["output_index"], 0);
        assert_eq!(done[1]["output_index"], 1);
        assert_eq!(done[1]["item"]["type"], "message");
        let last = values.last().unwrap();
        assert_eq!(last["response"]["output"][0], item);
        assert_eq!(last["response"]["output"][1]["type"], "message");
    }

    #[test]
    fn events_written_read_back_the_same_with_numbered_events() {
        let head = vec![
            Event::Start {
                id: "x".into(),
                model: "m".into(),
            },
            Event::Reasoning("hm".into()),
            Event::Text("Hi".into()),
        ];
        let sent: Vec<Event> = head
            .iter()
            .cloned()
            .chain([
                call(0, "t1", "ls"),
                call(1, "t2", "cat"),
                arguments(0, "{\"p\":"),
                arguments(1, "{}"),
                arguments(0, "1}"),
                Event::Stop(StopReason::ToolUse),
                Event::Done,
            ])
            .collect();
        let mut encoder = Encoder::new("resp_1".into(), vec![json!({"type": "compaction"})]);
        let bytes: String = sent.iter().map(|e| encoder.encode(e)).collect();
        let numbers: Vec<u64> = bytes
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| {
                serde_json::from_str::<Value>(d).unwrap()["sequence_number"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(numbers, (0..numbers.len() as u64).collect::<Vec<_>>());
        let mut decoder = Decoder::default();
        let mut back = Vec::new();
        for piece in bytes.as_bytes().chunks(7) {
            back.extend(decoder.feed(piece));
        }
        back.retain(|e| !matches!(e, Event::Usage(_)));
        let expected: Vec<Event> = head
            .into_iter()
            .map(|e| match e {
                Event::Start { model, .. } => Event::Start {
                    id: "resp_1".into(),
                    model,
                },
                e => e,
            })
            .chain([
                call(0, "t1", "ls"),
                arguments(0, "{\"p\":1}"),
                call(1, "t2", "cat"),
                arguments(1, "{}"),
                Event::Stop(StopReason::ToolUse),
                Event::Done,
            ])
            .collect();
        assert_eq!(back, expected);
        let completed = bytes.lines().rfind(|l| l.starts_with("data:")).unwrap();
        let completed: Value = serde_json::from_str(&completed[6..]).unwrap();
        assert_eq!(completed["response"]["output"][0]["type"], "compaction");
    }
}
