//! The scripted model: a server on loopback speaking Chat Completions or
//! Anthropic Messages, streamed or not, that plays an agent reading the
//! workspace's files one a turn and keeps every request it gets.
//!
//! The script reads only what came after the last assistant turn of the
//! request (the results of its last calls): the history before it may
//! have been fitted away by the server. A result that shows file `fNN`
//! gets the call that reads the next one (with `Read` every
//! [`READ_EVERY`]th file, with `cat` through `Bash` otherwise); after the
//! last file, a `Write` of [`WRITTEN`]; after that, the answer
//! [`ANSWER`]. A request without the `Bash` tool (none of the agent's
//! loop) gets a short answer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header::CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use memory_serve::Protocol;
use serde_json::{Value, json};

/// The files the workspace holds, `f01.txt` to `f20.txt`.
pub const FILES: usize = 20;
/// Every this-many-th file is read with the `Read` tool.
pub const READ_EVERY: usize = 5;
/// The file the agent writes after reading every file.
pub const WRITTEN: &str = "summary.txt";
/// What it writes there.
pub const WRITTEN_TEXT: &str = "read f01.txt to f20.txt\n";
/// The start of the final answer; the number of files follows.
pub const ANSWER: &str = "ALL READ:";

/// The line each file starts with, which its tool result shows.
pub fn marker(n: usize) -> String {
    format!("== f{n:02}.txt ==")
}

/// What the script did for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A call of `name` with `input`.
    Call {
        id: String,
        name: String,
        input: Value,
    },
    /// An answer, the end of the loop.
    Answer(String),
}

/// A request the upstream received, and what it answered.
#[derive(Debug, Clone)]
pub struct Received {
    pub body: Value,
    pub step: Step,
}

#[derive(Clone)]
struct Script {
    api: Protocol,
    workspace: PathBuf,
    received: Arc<Mutex<Vec<Received>>>,
}

/// The scripted upstream, serving until dropped.
pub struct Upstream {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Upstream {
    /// Starts on a free loopback port, speaking `api`; the agent's files
    /// are in `workspace`.
    pub async fn start(api: Protocol, workspace: PathBuf) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Script {
            api,
            workspace,
            received: received.clone(),
        };
        let path = match api {
            Protocol::Chat => "/v1/chat/completions",
            _ => "/v1/messages",
        };
        let app = Router::new().route(path, post(answer)).with_state(script);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            received,
            task,
        }
    }

    /// The base URL (`http://127.0.0.1:PORT/v1`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn answer(State(script): State<Script>, body: String) -> Response {
    let Ok(body) = serde_json::from_str::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let step = {
        let mut received = script.received.lock().unwrap();
        let step = next_step(&script, &body, received.len());
        received.push(Received {
            body: body.clone(),
            step: step.clone(),
        });
        step
    };
    let stream = body["stream"] == true;
    // Each reply an id of its own, as a model's API gives: Claude Code
    // joins the turns of replies that share one.
    let n = script.received.lock().unwrap().len();
    let reply = Reply {
        model: body["model"].as_str().unwrap_or("scripted").to_string(),
        id: match script.api {
            Protocol::Chat => format!("chatcmpl-scripted-{n}"),
            _ => format!("msg_scripted_{n}"),
        },
    };
    match (script.api, stream) {
        (Protocol::Chat, false) => json_response(chat_reply(&step, &reply)),
        (Protocol::Chat, true) => sse(chat_events(&step, &reply)),
        (_, false) => json_response(messages_reply(&step, &reply)),
        (_, true) => sse(messages_events(&step, &reply)),
    }
}

/// What a reply says of itself.
struct Reply {
    id: String,
    model: String,
}

/// The tool names a request offers, in either protocol.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().or(t["function"]["name"].as_str()))
        .map(str::to_string)
        .collect()
}

/// The script: what the agent does next, from the results of its last
/// calls (everything after the last assistant turn).
fn next_step(script: &Script, body: &Value, n: usize) -> Step {
    if !tool_names(body).iter().any(|t| t == "Bash") {
        return Step::Answer("ok".into());
    }
    let empty = Vec::new();
    let messages = body["messages"].as_array().unwrap_or(&empty);
    let last_assistant = messages.iter().rposition(|m| m["role"] == "assistant");
    let tail = serde_json::to_string(&messages[last_assistant.map_or(0, |i| i + 1)..]).unwrap();
    let id = |k: usize| match script.api {
        Protocol::Chat => format!("call_{n:02}_{k:02}"),
        _ => format!("toolu_{n:02}_{k:02}"),
    };
    if last_assistant.is_some() && tail.contains(WRITTEN) {
        return Step::Answer(format!("{ANSWER} {FILES}"));
    }
    let shown = (1..=FILES).rev().find(|&k| tail.contains(&marker(k)));
    let read = match (shown, last_assistant) {
        (Some(k), _) => k + 1,
        (None, None) => 1,
        (None, Some(_)) => {
            let excerpt: String = tail.chars().take(2_000).collect();
            return Step::Answer(format!("STUCK after: {excerpt}"));
        }
    };
    let file = format!("f{read:02}.txt");
    let (name, input) = if read > FILES {
        let path = script.workspace.join(WRITTEN);
        ("Write", json!({"file_path": path, "content": WRITTEN_TEXT}))
    } else if read.is_multiple_of(READ_EVERY) {
        let path = script.workspace.join(&file);
        ("Read", json!({"file_path": path}))
    } else {
        let description = format!("Show the contents of {file}");
        (
            "Bash",
            json!({"command": format!("cat {file}"), "description": description}),
        )
    };
    Step::Call {
        id: id(read),
        name: name.into(),
        input,
    }
}

/// The text the assistant says with a step.
fn said(step: &Step) -> String {
    match step {
        Step::Call { name, input, .. } => {
            let what = input["command"].as_str().or(input["file_path"].as_str());
            format!("Next: {name} {}.", what.unwrap_or_default())
        }
        Step::Answer(text) => text.clone(),
    }
}

fn json_response(body: Value) -> Response {
    ([(CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn sse(events: Vec<String>) -> Response {
    let stream = futures::stream::iter(events.into_iter().map(Ok::<_, std::io::Error>));
    (
        [(CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// `s` in two pieces, cut at a character boundary.
fn halves(s: &str) -> [&str; 2] {
    let mut cut = s.len() / 2;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    [&s[..cut], &s[cut..]]
}

fn chat_reply(step: &Step, reply: &Reply) -> Value {
    let (message, finish) = match step {
        Step::Call { id, name, input } => (
            json!({"role": "assistant", "content": said(step), "tool_calls": [{
                "id": id, "type": "function",
                "function": {"name": name, "arguments": input.to_string()}}]}),
            "tool_calls",
        ),
        Step::Answer(text) => (json!({"role": "assistant", "content": text}), "stop"),
    };
    json!({"id": reply.id, "object": "chat.completion", "created": 0, "model": reply.model,
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
}

/// A Chat Completions stream: the role, the text in two pieces, the
/// call's name and then its arguments in two pieces, the finish, the
/// usage, `[DONE]`.
fn chat_events(step: &Step, reply: &Reply) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": reply.id, "object": "chat.completion.chunk", "created": 0,
                   "model": reply.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in halves(&said(step)) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    let finish = match step {
        Step::Call { id, name, input } => {
            events.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                       "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ));
            for piece in halves(&input.to_string()) {
                events.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                    Value::Null,
                ));
            }
            "tool_calls"
        }
        Step::Answer(_) => "stop",
    };
    events.push(chunk(json!({}), json!(finish)));
    events.push(format!(
        "data: {}\n\n",
        json!({"id": reply.id, "object": "chat.completion.chunk", "created": 0,
               "model": reply.model, "choices": [],
               "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
    ));
    events.push("data: [DONE]\n\n".into());
    events
}

fn messages_content(step: &Step) -> (Vec<Value>, &'static str) {
    let text = json!({"type": "text", "text": said(step)});
    match step {
        Step::Call { id, name, input } => (
            vec![
                text,
                json!({"type": "tool_use", "id": id, "name": name, "input": input}),
            ],
            "tool_use",
        ),
        Step::Answer(_) => (vec![text], "end_turn"),
    }
}

fn messages_reply(step: &Step, reply: &Reply) -> Value {
    let (content, stop) = messages_content(step);
    json!({"id": reply.id, "type": "message", "role": "assistant", "model": reply.model,
           "content": content, "stop_reason": stop, "stop_sequence": null,
           "usage": {"input_tokens": 100, "output_tokens": 10}})
}

/// A Messages stream as Anthropic's API sends one: the message's start,
/// a ping, each block's start, deltas (a call's input as
/// `input_json_delta` pieces) and stop, the stop reason, the message's
/// stop.
fn messages_events(step: &Step, reply: &Reply) -> Vec<String> {
    let event = |data: Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap()
        )
    };
    let (content, stop) = messages_content(step);
    let mut events = vec![
        event(json!({"type": "message_start", "message": {
            "id": reply.id, "type": "message", "role": "assistant", "model": reply.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 1}}})),
        event(json!({"type": "ping"})),
    ];
    for (index, block) in content.iter().enumerate() {
        let (start, deltas) = if block["type"] == "text" {
            let text = block["text"].as_str().unwrap();
            let deltas = halves(text).map(|t| json!({"type": "text_delta", "text": t}));
            (json!({"type": "text", "text": ""}), deltas)
        } else {
            let input = block["input"].to_string();
            let deltas =
                halves(&input).map(|p| json!({"type": "input_json_delta", "partial_json": p}));
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                deltas,
            )
        };
        events.push(event(
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            events.push(event(
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push(event(json!({"type": "content_block_stop", "index": index})));
    }
    events.push(event(json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 10}})));
    events.push(event(json!({"type": "message_stop"})));
    events
}
