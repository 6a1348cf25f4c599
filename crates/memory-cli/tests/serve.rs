//! `memory serve` as a process: killed mid-session and started again over
//! its SQLite file, and two servers over one PostgreSQL taking turns with
//! one session. The upstream is a scripted chat-completions server on
//! loopback; the client is an agent loop that sends its whole history.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use memory_core::test_util::{DATA, POSTGRES};
use memory_core::{Message, Store};
use memory_openai::wire;
use memory_serve::test_util::ScriptedUpstream;
use serde_json::{Value, json};

/// A `memory serve` process, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `memory serve` with compact,thrift at 2,000 tokens.
    fn start(upstream: &str, store: &str) -> Server {
        Self::with(upstream, store, "compact,thrift", "2000")
    }

    /// Starts `memory serve` on a free loopback port and waits until it
    /// listens.
    fn with(upstream: &str, store: &str, pipeline: &str, budget: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_memory"))
            .args(["serve", "--upstream", upstream, "--store", store])
            .args(["--listen", "127.0.0.1:0", "--pipeline", pipeline])
            .args(["--counter", "chars", "--budget", budget])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("memory serve ended before it listened")
                .unwrap();
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split(',').next().unwrap().to_string();
            }
        };
        // Keep draining its stderr so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server { child, url }
    }

    /// SIGKILL: no chance to flush or say goodbye.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// One call of the agent loop: the whole history goes to `server`; the
/// reply and its tool results are appended. Returns the session and how
/// the server found it, or `None` once the agent is done.
async fn step(server: &Server, history: &mut Vec<Message>) -> Option<(String, String)> {
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.url))
        .json(&json!({"model": "m", "messages": wire::to_value(history)}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let header = |name: &str| response.headers()[name].to_str().unwrap().to_string();
    let found = (header("x-memory-session"), header("x-memory-admission"));
    let body: Value = response.json().await.unwrap();
    let reply = wire::message_from_value(&body["choices"][0]["message"], 0).unwrap();
    let calls = reply.tool_calls().to_vec();
    history.push(reply);
    if calls.is_empty() {
        return None;
    }
    for call in calls {
        let args: Value = serde_json::from_str(&call.arguments).unwrap();
        let output = format!(
            "step {} of {}: {}",
            args["step"],
            args["of"],
            "the output of this step, line by line; ".repeat(30)
        );
        history.push(Message::tool_result(call.id, output));
    }
    Some(found)
}

/// A task no earlier run has sent (the stores outlive a run).
fn task(steps: usize) -> Vec<Message> {
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    vec![
        Message::system("You are a careful agent."),
        Message::user(format!(
            "Run {nonce}: work through the task in {steps} steps."
        )),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_session_goes_on_with_it_after_a_restart() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("serve.db").display());
    let mut history = task(16);
    let first = Server::start(upstream.url(), &store);
    let mut session = String::new();
    for _ in 0..8 {
        session = step(&first, &mut history).await.unwrap().0;
    }
    first.kill();
    let second = Server::start(upstream.url(), &store);
    while let Some((id, admission)) = step(&second, &mut history).await {
        assert_eq!(
            (id.as_str(), admission.as_str()),
            (session.as_str(), "continued")
        );
    }
    assert!(history.last().unwrap().text().contains("All 16 steps"));
    drop(second);
    let store: std::sync::Arc<dyn Store> =
        std::sync::Arc::new(memory_sqlite::SqliteStore::open(dir.path().join("serve.db")).unwrap());
    let stored = memory_serve::test_util::principal_store(&store, None)
        .await
        .history(&session)
        .await
        .unwrap();
    assert_eq!(stored, history, "every message acknowledged, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_over_one_postgresql_share_a_session() {
    let Some(url) = POSTGRES.value() else {
        return;
    };
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let servers = [
        Server::start(upstream.url(), &url),
        Server::start(upstream.url(), &url),
    ];
    let mut history = task(24);
    let mut sessions = Vec::new();
    let mut turn = 0;
    while let Some((id, _)) = step(&servers[turn % 2], &mut history).await {
        sessions.push(id);
        turn += 1;
    }
    assert!(history.last().unwrap().text().contains("All 24 steps"));
    assert!(sessions.iter().all(|s| *s == sessions[0]), "{sessions:?}");
    let store: std::sync::Arc<dyn Store> =
        std::sync::Arc::new(memory_postgres::PostgresStore::connect(&url).await.unwrap());
    let store = memory_serve::test_util::principal_store(&store, None).await;
    assert_eq!(
        store.history(&sessions[0]).await.unwrap(),
        history,
        "every message once"
    );
}

/// The contexts `memory replay --contexts` writes for `pipeline`.
fn replayed_contexts(input: &std::path::Path, pipeline: &str, budget: &str) -> Vec<Vec<Message>> {
    let out = input.with_extension(format!("{}.jsonl", pipeline.replace(',', "-")));
    let status = Command::new(env!("CARGO_BIN_EXE_memory"))
        .args(["replay", "--input"])
        .arg(input)
        .args([
            "--budget",
            budget,
            "--pipeline",
            pipeline,
            "--counter",
            "chars",
            "--contexts",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            wire::from_value(&row["messages"]).unwrap()
        })
        .collect()
}

/// The trajectories of the data set (SWE-Gym's tool calls, SWE-smith's
/// text-only agent) sent through the server call by call (each
/// one's whole history up to each assistant message; the upstream answers
/// with the recorded assistant message) get, upstream, exactly the contexts
/// that `memory replay` measures with the same pipeline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trajectories_through_the_server_get_the_contexts_of_the_replay() {
    for name in ["swe-gym-openhands.json", "swe-smith-text.json"] {
        let Some(file) = DATA.file(&format!("agent-trajectories/{name}")) else {
            return;
        };
        same_contexts(&file).await;
    }
}

async fn same_contexts(file: &std::path::Path) {
    let all: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("trajectories.json");
    std::fs::copy(file, &input).unwrap();
    for pipeline in ["compact,thrift", "thrift", "window"] {
        let replayed = replayed_contexts(&input, pipeline, "4000");
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server = Server::with(upstream.url(), "memory", pipeline, "4000");
        for trajectory in all.as_array().unwrap() {
            let messages = wire::from_value(&trajectory["messages"]).unwrap();
            through(&server, &upstream, &messages).await;
        }
        let sent: Vec<Vec<Message>> = upstream
            .received()
            .iter()
            .map(|r| wire::from_value(&r.body["messages"]).unwrap())
            .collect();
        assert_eq!(sent.len(), replayed.len(), "{pipeline}: calls");
        for (call, (server_context, replay_context)) in sent.iter().zip(&replayed).enumerate() {
            assert!(
                server_context == replay_context,
                "{pipeline}: call {call} differs"
            );
        }
        eprintln!(
            "{pipeline}: {} calls, every context identical to the replay's",
            sent.len()
        );
    }
}

/// Sends `messages` up to each assistant message (not the first message),
/// the upstream answering with that message.
async fn through(server: &Server, upstream: &ScriptedUpstream, messages: &[Message]) {
    let client = reqwest::Client::new();
    for (i, message) in messages.iter().enumerate().skip(1) {
        if !message.is_assistant() {
            continue;
        }
        upstream.queue(vec![message.clone()]);
        let response = client
            .post(format!("{}/v1/chat/completions", server.url))
            .json(&json!({"model": "m", "messages": wire::to_value(&messages[..i])}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["x-memory-admission"],
            if i == messages.iter().position(Message::is_assistant).unwrap() {
                "new"
            } else {
                "continued"
            }
        );
        let _ = response.bytes().await.unwrap();
    }
}

/// One SWE-Gym trajectory sent through the Anthropic Messages front, call
/// by call, as an Anthropic client would send it (its system prompt as
/// `system`, tool calls as `tool_use` blocks, results as `tool_result`
/// blocks), gets upstream, over Chat Completions, exactly the contexts
/// `memory replay` measures for the same conversation. A Messages client
/// holds a call's arguments as the object it parsed and a result without
/// its tool's name, so the replay is given the conversation so written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trajectory_through_the_messages_front_gets_the_contexts_of_the_replay() {
    let Some(file) = DATA.file("agent-trajectories/swe-gym-openhands.json") else {
        return;
    };
    let all: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let messages: Vec<Message> = wire::from_value(&all[0]["messages"])
        .unwrap()
        .into_iter()
        .map(as_a_messages_client_holds)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("trajectory.json");
    let trajectory = json!([{"messages": wire::to_value(&messages)}]);
    std::fs::write(&input, trajectory.to_string()).unwrap();
    for pipeline in ["compact,thrift", "thrift", "window"] {
        let replayed = replayed_contexts(&input, pipeline, "4000");
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server = Server::with(upstream.url(), "memory", pipeline, "4000");
        let client = reqwest::Client::new();
        for (i, message) in messages.iter().enumerate().skip(1) {
            if !message.is_assistant() {
                continue;
            }
            upstream.queue(vec![message.clone()]);
            let response = client
                .post(format!("{}/v1/messages", server.url))
                .json(&messages_request(&messages[..i]))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "{pipeline}: call at {i}");
            let _ = response.bytes().await.unwrap();
        }
        let sent: Vec<Vec<Message>> = upstream
            .received()
            .iter()
            .map(|r| wire::from_value(&r.body["messages"]).unwrap())
            .collect();
        assert_eq!(sent.len(), replayed.len(), "{pipeline}: calls");
        for (call, (server_context, replay_context)) in sent.iter().zip(&replayed).enumerate() {
            assert!(
                server_context == replay_context,
                "{pipeline}: call {call} differs"
            );
        }
        let lengths = messages
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, m)| m.is_assistant());
        let fitted = sent
            .iter()
            .zip(lengths)
            .filter(|(context, (i, _))| context.len() < *i)
            .count();
        assert!(fitted > 0, "{pipeline}: the history outgrew the budget");
        eprintln!(
            "{pipeline}: {} calls through the Messages front ({fitted} fitted), every context identical to the replay's",
            sent.len()
        );
    }
}

/// A message as an Anthropic client holds it: arguments as the JSON
/// object it parsed (compact, keys in order), results without a tool
/// name, no reasoning (a Chat trajectory's has no signature to send).
fn as_a_messages_client_holds(message: Message) -> Message {
    match message {
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let calls = tool_calls
                .into_iter()
                .map(|mut c| {
                    c.arguments = input_of(&c.arguments).to_string();
                    c
                })
                .collect();
            Message::assistant_with_tools(content, calls)
        }
        Message::ToolResult {
            tool_call_id,
            content,
            ..
        } => Message::tool_result(tool_call_id, content),
        other => other,
    }
}

/// A call's arguments as Anthropic's `input` object.
fn input_of(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ if arguments.trim().is_empty() => json!({}),
        _ => json!({"arguments": arguments}),
    }
}

/// A Messages request holding `history`: leading system messages as
/// `system`, tool results in user turns, calls as `tool_use` blocks.
fn messages_request(history: &[Message]) -> Value {
    let lead = history.iter().take_while(|m| m.is_system()).count();
    let system: Vec<String> = history[..lead].iter().map(Message::text).collect();
    let mut turns: Vec<Value> = Vec::new();
    for m in &history[lead..] {
        let (role, blocks) = match m {
            Message::Assistant { content, .. } => {
                let mut blocks = Vec::new();
                if !content.is_empty() {
                    blocks.push(json!({"type": "text", "text": content}));
                }
                for c in m.tool_calls() {
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name,
                        "input": input_of(&c.arguments)}));
                }
                ("assistant", blocks)
            }
            Message::ToolResult {
                tool_call_id,
                content,
                ..
            } => (
                "user",
                vec![
                    json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content}),
                ],
            ),
            Message::System(text) => ("system", vec![json!({"type": "text", "text": text})]),
            Message::User(_) => ("user", vec![json!({"type": "text", "text": m.text()})]),
        };
        match turns.last_mut() {
            // The results of one reply go in one user turn.
            Some(t) if m.is_tool_result() && t["content"][0]["type"] == "tool_result" => {
                t["content"].as_array_mut().unwrap().extend(blocks)
            }
            _ => turns.push(json!({"role": role, "content": blocks})),
        }
    }
    let mut body = json!({"model": "m", "max_tokens": 1024, "messages": turns});
    if !system.is_empty() {
        body["system"] = json!(system.join("\n"));
    }
    body
}

#[test]
fn listening_off_loopback_needs_a_token() {
    let output = Command::new(env!("CARGO_BIN_EXE_memory"))
        .args([
            "serve",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--store",
            "memory",
        ])
        .args(["--listen", "0.0.0.0:0"])
        .env_remove("MEMORY_SERVE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("MEMORY_SERVE_TOKEN"), "{stderr}");
}
