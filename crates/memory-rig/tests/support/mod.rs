//! What the tests and the side-by-side share: an OpenAI-compatible chat
//! server on loopback whose replies are a fixed function of the request,
//! and the tool the agent is given.
#![allow(dead_code)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The chat server: records every request body it receives.
pub struct ChatServer {
    base_url: String,
    received: Arc<Mutex<Vec<Value>>>,
    task: JoinHandle<()>,
}

impl ChatServer {
    /// Starts the server on a free loopback port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let log = log.clone();
                        async move { Ok::<_, Infallible>(answer(request, &log).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            base_url,
            received,
            task,
        }
    }

    /// The base URL of its OpenAI-compatible API.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The bodies of the requests received so far.
    pub fn received(&self) -> Vec<Value> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for ChatServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(request: Request<Incoming>, log: &Mutex<Vec<Value>>) -> Response<Full<Bytes>> {
    let bytes = request.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    log.lock().unwrap().push(body.clone());
    let reply = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{ "index": 0, "message": reply_to(&body), "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 },
    });
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(reply.to_string())))
        .unwrap()
}

/// The prompt of turn `turn` of the conversation: reads (two parallel
/// calls, long results), checks (two parallel calls, short results) and
/// chat, in turn.
pub fn prompt(turn: usize) -> String {
    match turn % 3 {
        0 => format!("Turn {turn}: please read the module files for step {turn}."),
        1 => format!("Turn {turn}: please check the notes of step {turn} for me."),
        _ => format!(
            "Turn {turn}: note that step {turn} passed its tests; the release notes should say the parser and the cache were both reworked in this step."
        ),
    }
}

/// Whether a request is a summarizer's (it offers no tools).
pub fn is_summary_request(body: &Value) -> bool {
    body.get("tools")
        .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
}

/// The fixed replies: a summary to a summarizer; after tool results, their
/// beginnings; to a question with "read" in it, two parallel `read_file`
/// calls of 24 lines each; with "check", two of one line each; to anything
/// else, a note echoing it.
fn reply_to(body: &Value) -> Value {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    if is_summary_request(body) {
        return json!({ "role": "assistant",
            "content": "## Goals\nThe user asks to read the module files and check the notes of each step.\n## State\nread_file returned the src and tests module files; each line reads let value = compute(n)." });
    }
    if last["role"] == "tool" {
        let results: Vec<String> = messages
            .iter()
            .rev()
            .take_while(|m| m["role"] == "tool")
            .map(|m| text_of(&m["content"]))
            .collect();
        let short: Vec<String> = results
            .iter()
            .map(|r| r.chars().take(40).collect())
            .collect();
        return json!({ "role": "assistant", "content": format!("The results: {}.", short.join(" | ")) });
    }
    let question = text_of(&last["content"]);
    let lines = if question.contains("read") {
        24
    } else if question.contains("check") {
        1
    } else {
        return json!({ "role": "assistant", "content": format!("Noted: {question}") });
    };
    let n = messages.len();
    let call = |file: &str| {
        json!({ "id": format!("call_{n}_{file}"), "type": "function",
            "function": { "name": "read_file",
                "arguments": json!({ "path": format!("{file}/mod_{n}.rs"), "lines": lines }).to_string() } })
    };
    json!({ "role": "assistant", "content": null, "tool_calls": [call("src"), call("tests")] })
}

/// The text of a message's content (a string or a list of text parts).
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The agent's tool: "reads" `lines` lines of a file, made-up source that
/// depends on the path only (about 20 tokens a line).
#[derive(Debug, Clone, Copy)]
pub struct ReadFile;

/// The arguments of [`ReadFile`].
#[derive(Debug, serde::Deserialize)]
pub struct ReadArgs {
    path: String,
    lines: usize,
}

impl rig_core::tool::PortableTool for ReadFile {
    const NAME: &'static str = "read_file";
    type Args = ReadArgs;
    type Output = String;
    type Error = std::convert::Infallible;

    fn description(&self) -> String {
        "Reads a source file.".into()
    }

    fn parameters(&self) -> Value {
        json!({ "type": "object",
            "properties": { "path": { "type": "string" }, "lines": { "type": "integer" } },
            "required": ["path", "lines"] })
    }

    async fn call(&self, args: ReadArgs) -> Result<String, Self::Error> {
        Ok((0..args.lines)
            .map(|line| {
                format!(
                    "// {} line {line}: let value_{line} = compute({line});",
                    args.path
                )
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }
}
