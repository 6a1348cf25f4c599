//! The scripted model behind the server for the Codex runs, over Chat
//! Completions or Responses: it reads the workspace's files one a turn
//! with Codex's shell tool (`exec_command`, `cat fNN.txt`), then answers
//! [`ANSWER`]. It goes by the request alone: the highest file marker in
//! any tool output (or, after a compaction of its own, the progress it
//! wrote in it) says which file is next. Every request is kept; each
//! answer reports as its input the request's size (characters / 4), so
//! that Codex's own auto-compaction sees what the model was sent.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use memory_serve::Protocol;
use serde_json::{Value, json};

/// Files in the workspace.
pub const FILES: usize = 20;

/// The final answer.
pub const ANSWER: &str = "ALL READ: 20 files";

/// The first line of file `n`.
pub fn marker(n: usize) -> String {
    format!("FILE-MARKER-{n:02}")
}

/// A request the upstream got.
#[derive(Debug, Clone)]
pub struct Received {
    pub body: Value,
    pub headers: HeaderMap,
}

#[derive(Clone)]
struct Script {
    api: Protocol,
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
    /// Starts on a free loopback port, speaking `api`.
    pub async fn start(api: Protocol) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Script {
            api,
            received: received.clone(),
        };
        let path = if api == Protocol::Chat {
            "/v1/chat/completions"
        } else {
            "/v1/responses"
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

    /// The base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// What the model does next.
enum Step {
    Read(usize),
    Answer,
    /// A provider's own compaction, its progress written in it.
    Compact(usize),
}

async fn answer(State(script): State<Script>, headers: HeaderMap, body: String) -> Response {
    let value: Value = serde_json::from_str(&body).unwrap_or_default();
    let n = {
        let mut received = script.received.lock().unwrap();
        received.push(Received {
            body: value.clone(),
            headers,
        });
        received.len()
    };
    let text = value.to_string();
    let tokens = (text.len() / 4) as u64;
    let next = progress(&text) + 1;
    let trigger = value["input"]
        .as_array()
        .and_then(|i| i.last())
        .is_some_and(|i| i["type"] == "compaction_trigger");
    let step = if trigger {
        Step::Compact(next)
    } else if next > FILES {
        Step::Answer
    } else {
        Step::Read(next)
    };
    let events = match script.api {
        Protocol::Chat => chat_events(&step, n, tokens),
        _ => responses_events(&step, n, tokens),
    };
    let stream = futures::stream::iter(events.into_iter().map(Ok::<_, std::io::Error>));
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

/// The files read so far, by the markers the request holds (or the
/// progress a compaction of the model's own holds).
fn progress(text: &str) -> usize {
    let read = (1..=FILES).rev().find(|n| text.contains(&marker(*n)));
    let compacted = text
        .match_indices("native-progress-")
        .filter_map(|(at, m)| {
            let digits: String = text[at + m.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<usize>().ok().map(|n| n.saturating_sub(1))
        });
    read.into_iter().chain(compacted).max().unwrap_or(0)
}

fn arguments(file: usize) -> String {
    json!({"cmd": format!("cat f{file:02}.txt")}).to_string()
}

fn chat_events(step: &Step, n: usize, tokens: u64) -> Vec<String> {
    let id = format!("chatcmpl-{n}");
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id": id, "object": "chat.completion.chunk", "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let mut events = Vec::new();
    match step {
        Step::Read(file) => {
            let call = json!([{"index": 0, "id": format!("call_{n:03}"), "type": "function",
                "function": {"name": "exec_command", "arguments": arguments(*file)}}]);
            events.push(chunk(
                json!({"role": "assistant", "content": null, "tool_calls": call}),
                Value::Null,
            ));
            events.push(chunk(json!({}), json!("tool_calls")));
        }
        Step::Answer | Step::Compact(_) => {
            events.push(chunk(
                json!({"role": "assistant", "content": ANSWER}),
                Value::Null,
            ));
            events.push(chunk(json!({}), json!("stop")));
        }
    }
    let usage = json!({"id": id, "object": "chat.completion.chunk", "model": "scripted", "choices": [],
        "usage": {"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20}});
    events.push(format!("data: {usage}\n\ndata: [DONE]\n\n"));
    events
}

fn responses_events(step: &Step, n: usize, tokens: u64) -> Vec<String> {
    let item = match step {
        Step::Read(file) => json!({"type": "function_call", "id": format!("fc_{n:03}"),
            "call_id": format!("call_{n:03}"), "name": "exec_command",
            "arguments": arguments(*file), "status": "completed"}),
        Step::Answer => json!({"type": "message", "id": format!("msg_{n:03}"), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}),
        Step::Compact(next) => json!({"type": "compaction", "id": format!("cmp_{n:03}"),
            "encrypted_content": format!("native-progress-{next}")}),
    };
    let response = |status: &str, output: Value| {
        json!({"id": format!("resp_{n:03}"), "object": "response", "status": status,
            "model": "scripted", "output": output,
            "usage": {"input_tokens": tokens, "output_tokens": 20, "total_tokens": tokens + 20,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0}}})
    };
    let events = [
        json!({"type": "response.created", "response": response("in_progress", json!([]))}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": response("completed", json!([item]))}),
    ];
    events
        .into_iter()
        .enumerate()
        .map(|(k, mut e)| {
            e["sequence_number"] = json!(k);
            format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())
        })
        .collect()
}
