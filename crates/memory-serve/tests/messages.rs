//! The Anthropic Messages front (`POST /v1/messages`, as Claude Code and
//! Anthropic's SDKs send it), over a Chat Completions upstream and over a
//! Messages one, streamed and not; and the Chat front over a Messages
//! upstream. The upstream is a real server on loopback whose model is a
//! script.

use std::sync::Arc;
use std::time::Duration;

use memory_core::{InMemoryStore, Store, TrimStrategy, validate};
use memory_openai::wire as openai_wire;
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, Protocol, ServeConfig};
use serde_json::{Value, json};

fn config(upstream: &str, api: Protocol, budget: usize) -> ServeConfig {
    let mut c = ServeConfig::new(
        upstream,
        Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
        Arc::new(InMemoryStore::new()) as Arc<dyn Store>,
    )
    .with_budget(BudgetMode::Tokens(budget));
    c.upstream_api = api;
    c
}

async fn send(server: &str, path: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{server}{path}"))
        .header("x-api-key", "sk-ant-client")
        .header("anthropic-version", "2023-06-01")
        .header(
            "anthropic-beta",
            "context-management-2025-06-27,interleaved-thinking-2025-05-14",
        )
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The assistant turn of a Messages stream: its content blocks, assembled
/// from the events as a client does; and the stop reason.
fn assemble(events: &str) -> (Vec<Value>, String) {
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    let mut stop = String::new();
    let mut names = Vec::new();
    for line in events.lines() {
        if let Some(name) = line.strip_prefix("event: ") {
            names.push(name.to_string());
        }
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let e: Value = serde_json::from_str(data).unwrap();
        assert_eq!(
            Some(e["type"].as_str().unwrap()),
            names.last().map(String::as_str)
        );
        let i = e["index"].as_u64().unwrap_or(0) as usize;
        match e["type"].as_str().unwrap() {
            "content_block_start" => {
                blocks.push(e["content_block"].clone());
                partial.push(String::new());
            }
            "content_block_delta" => match e["delta"]["type"].as_str().unwrap() {
                "text_delta" => {
                    let t = blocks[i]["text"].as_str().unwrap().to_string();
                    blocks[i]["text"] = json!(t + e["delta"]["text"].as_str().unwrap());
                }
                "input_json_delta" => {
                    partial[i].push_str(e["delta"]["partial_json"].as_str().unwrap())
                }
                other => panic!("unexpected delta {other}"),
            },
            "content_block_stop" if blocks[i]["type"] == "tool_use" && !partial[i].is_empty() => {
                blocks[i]["input"] = serde_json::from_str(&partial[i]).unwrap();
            }
            "message_delta" => stop = e["delta"]["stop_reason"].as_str().unwrap().to_string(),
            "error" => panic!("an error event: {e}"),
            _ => {}
        }
    }
    assert_eq!(names.first().map(String::as_str), Some("message_start"));
    assert_eq!(names.last().map(String::as_str), Some("message_stop"));
    (blocks, stop)
}

/// Runs a tool loop of `steps` steps through the Messages front, as an
/// Anthropic client does; the requests it sent, in order.
async fn tool_loop(server: &str, steps: usize, stream: bool) -> Vec<Value> {
    let mut turns = vec![json!({"role": "user", "content": [
        {"type": "text", "text": format!("Do the task in {steps} steps."),
         "cache_control": {"type": "ephemeral"}}]})];
    let mut sent = Vec::new();
    for _ in 0..=steps + 1 {
        let body = json!({
            "model": "m", "max_tokens": 256, "stream": stream,
            "system": [{"type": "text", "text": "You work in steps.", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "step", "description": "does a step", "input_schema": {"type": "object"}}],
            "thinking": {"type": "adaptive"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "messages": turns,
        });
        sent.push(body.clone());
        let answer = send(server, "/v1/messages", &body).await;
        assert_eq!(answer.status(), 200);
        assert!(!answer.headers()["x-memory-session"].is_empty());
        let (content, stop) = if stream {
            assemble(&answer.text().await.unwrap())
        } else {
            let m: Value = answer.json().await.unwrap();
            assert_eq!(m["type"], "message");
            assert!(
                m.get("output").is_none(),
                "no field of another protocol: {m}"
            );
            assert!(m["id"].as_str().unwrap().starts_with("msg_"));
            (
                m["content"].as_array().unwrap().clone(),
                m["stop_reason"].as_str().unwrap().to_string(),
            )
        };
        turns.push(json!({"role": "assistant", "content": content}));
        if stop == "end_turn" {
            let text = content
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<String>();
            assert_eq!(text, format!("All {steps} steps are done."));
            return sent;
        }
        assert_eq!(stop, "tool_use");
        let results: Vec<Value> = content
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                let (k, n) = (
                    b["input"]["step"].as_u64().unwrap(),
                    b["input"]["of"].as_u64().unwrap(),
                );
                json!({"type": "tool_result", "tool_use_id": b["id"],
                       "content": format!("step {k} of {n}: {}", "output ".repeat(40))})
            })
            .collect();
        turns.push(json!({"role": "user", "content": results}));
    }
    panic!("the loop did not end");
}

#[tokio::test]
async fn a_tool_loop_over_a_chat_upstream_fits_and_keeps_its_pairs() {
    for stream in [false, true] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server =
            memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 1_500))
                .await;
        let sent = tool_loop(&server, 20, stream).await;
        let received = upstream.received();
        assert_eq!(received.len(), sent.len());
        let mut trimmed = 0;
        for (s, r) in sent.iter().zip(&received) {
            // Translated: Chat Completions, the key as a bearer token, the
            // Anthropic-only fields consumed.
            assert_eq!(r.authorization.as_deref(), Some("Bearer sk-ant-client"));
            assert!(r.body.get("context_management").is_none() && r.body.get("thinking").is_none());
            assert_eq!(r.body["tools"][0]["function"]["name"], "step");
            assert_eq!(r.body["stream"].as_bool().unwrap_or(false), stream);
            let messages = openai_wire::from_value(&r.body["messages"]).unwrap();
            assert!(validate(&messages).is_empty(), "pairs intact");
            assert_eq!(messages[0].text(), "You work in steps.");
            assert!(
                messages.iter().any(|m| m.text().contains("in 20 steps")),
                "the task is kept"
            );
            // Fitted: fewer tool results reached the upstream than the
            // client sent.
            let results_sent = s["messages"].to_string().matches("\"tool_result\"").count();
            let results_received = messages.iter().filter(|m| m.is_tool_result()).count();
            trimmed += usize::from(results_received < results_sent);
        }
        assert!(trimmed > 0, "the history outgrew the budget and was fitted");
    }
}

#[tokio::test]
async fn over_a_messages_upstream_what_is_kept_goes_as_the_client_sent_it() {
    for stream in [false, true] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server = memory_serve::test_util::spawn_server(config(
            upstream.url(),
            Protocol::Messages,
            1_000_000,
        ))
        .await;
        let sent = tool_loop(&server, 8, stream).await;
        let received = upstream.received();
        assert_eq!(received.len(), sent.len());
        for (s, r) in sent.iter().zip(&received) {
            // Nothing shed under a large budget: every field JSON-equal.
            assert_eq!(&r.body, s);
            assert_eq!(r.headers["x-api-key"], "sk-ant-client");
            assert!(r.authorization.is_none());
            assert_eq!(
                r.headers["anthropic-beta"],
                "context-management-2025-06-27,interleaved-thinking-2025-05-14"
            );
        }
    }
}

#[tokio::test]
async fn the_chat_front_goes_over_a_messages_upstream() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Messages, 100_000))
            .await;
    for stream in [false, true] {
        let body = json!({"model": "m", "stream": stream, "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Do the task in 3 steps."}]});
        let answer = reqwest::Client::new()
            .post(format!("{server}/v1/chat/completions"))
            .bearer_auth("sk-openai-style")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let text = answer.text().await.unwrap();
        if stream {
            assert!(
                text.contains("\"tool_calls\"") && text.ends_with("data: [DONE]\n\n"),
                "{text}"
            );
            assert!(text.contains("\"finish_reason\":\"tool_calls\""), "{text}");
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
            assert_eq!(
                v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
                "step"
            );
        }
    }
    let r = &upstream.received()[0];
    assert_eq!(r.headers["x-api-key"], "sk-openai-style");
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert_eq!(r.body["system"], "Be brief.");
    assert_eq!(r.body["max_tokens"], memory_serve::DEFAULT_REPLY_TOKENS);
}

#[tokio::test]
async fn errors_come_in_anthropics_shape() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 10_000)).await;
    let cases = [
        (json!({"model": "m"}), "messages"),
        (
            json!({"model": "m", "messages": [{"role": "robot", "content": "x"}]}),
            "messages[0].role",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": [{"text": "x"}]}]}),
            "messages[0].content[0].type",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}),
            "messages[0].content[0].tool_use_id",
        ),
    ];
    for (body, field) in cases {
        let answer = send(&server, "/v1/messages?beta=true", &body).await;
        assert_eq!(answer.status(), 400);
        let e: Value = answer.json().await.unwrap();
        assert_eq!(e["type"], "error");
        assert_eq!(e["error"]["type"], "invalid_request_error");
        assert!(
            e["error"]["message"].as_str().unwrap().contains(field),
            "{e}"
        );
    }
    // The upstream's 429, translated: its status, its Retry-After.
    let body = json!({"model": "fail-429", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
    let answer = send(&server, "/v1/messages", &body).await;
    assert_eq!(answer.status(), 429);
    assert_eq!(answer.headers()["retry-after"], "3");
    let e: Value = answer.json().await.unwrap();
    assert_eq!(e["error"]["type"], "rate_limit_error");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("slow down")
    );
}

#[tokio::test]
async fn count_tokens_is_the_size_of_the_next_context() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 600)).await;
    let mut turns = vec![json!({"role": "user", "content": "Do the task in 30 steps."})];
    for round in 0..12 {
        let body = json!({"model": "m", "max_tokens": 64, "system": "You work in steps.", "messages": turns});
        let counted: Value = send(&server, "/v1/messages/count_tokens", &body)
            .await
            .json()
            .await
            .unwrap();
        let answer = send(&server, "/v1/messages", &body).await;
        let tokens: u64 = answer.headers()["x-memory-tokens"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            counted["input_tokens"].as_u64(),
            Some(tokens),
            "round {round}"
        );
        let m: Value = answer.json().await.unwrap();
        let content = m["content"].as_array().unwrap().clone();
        let results: Vec<Value> = content
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                json!({"type": "tool_result", "tool_use_id": b["id"],
                   "content": format!("step {} of 30: {}", b["input"]["step"], "x".repeat(300))})
            })
            .collect();
        turns.push(json!({"role": "assistant", "content": content}));
        turns.push(json!({"role": "user", "content": results}));
    }
    // Counting records nothing: the upstream saw only the 12 calls.
    assert_eq!(upstream.received().len(), 12);
}

/// Claude Code's own requests (captured from `claude -p` 2.1.332 running a
/// tool: a system of three blocks with `cache_control`, a system turn in
/// the messages with a field of its own, twelve tools, `thinking`,
/// `context_management`, `output_config`, `metadata`).
fn claude_code_request(n: usize) -> Value {
    let path = format!(
        "{}/tests/fixtures/claude-code/request-{n}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn claude_codes_requests_reach_a_messages_upstream_unchanged() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server = memory_serve::test_util::spawn_server(config(
        upstream.url(),
        Protocol::Messages,
        1_000_000,
    ))
    .await;
    for n in [1, 2] {
        let body = claude_code_request(n);
        let answer = send(&server, "/v1/messages?beta=true", &body).await;
        assert_eq!(answer.status(), 200);
        let _ = answer.text().await.unwrap();
        assert_eq!(upstream.received()[n - 1].body, body, "request {n}");
    }
}

#[tokio::test]
async fn claude_codes_requests_translate_for_a_chat_upstream() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 1_000_000))
            .await;
    let body = claude_code_request(2);
    let answer = send(&server, "/v1/messages?beta=true", &body).await;
    assert_eq!(answer.status(), 200);
    let _ = answer.text().await.unwrap();
    let sent = &upstream.received()[0].body;
    let messages = openai_wire::from_value(&sent["messages"]).unwrap();
    assert!(validate(&messages).is_empty());
    // The system blocks joined, the environment turn kept, the tool call
    // and its result paired by id.
    assert!(messages[0].is_system());
    let call = messages
        .iter()
        .find_map(|m| m.tool_calls().first())
        .unwrap();
    assert_eq!(call.name, "Bash");
    assert!(
        messages
            .iter()
            .any(|m| m.tool_call_id() == Some(call.id.as_str()))
    );
    assert_eq!(
        sent["tools"].as_array().unwrap().len(),
        body["tools"].as_array().unwrap().len()
    );
    for gone in ["thinking", "context_management", "output_config", "system"] {
        assert!(sent.get(gone).is_none(), "{gone} is consumed");
    }
}

#[tokio::test]
async fn the_chat_front_sends_developer_turns_and_cache_control_as_they_came() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 100_000))
            .await;
    let messages = json!([
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": "bonjour", "refusal": null},
        {"role": "user", "content": "again"}
    ]);
    let answer = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .json(&json!({"model": "m", "messages": messages}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(upstream.received()[0].body["messages"], messages);
}

#[tokio::test]
async fn images_cross_both_ways() {
    let png = "iVBORw0KGgo=";
    // Messages front, Chat upstream.
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 100_000))
            .await;
    let body = json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "d"}},
        {"type": "text", "text": "what is this?"}]}]});
    assert_eq!(send(&server, "/v1/messages", &body).await.status(), 200);
    let parts = upstream.received()[0].body["messages"][0]["content"].clone();
    assert_eq!(
        parts,
        json!([
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "text", "text": "what is this?"}
        ])
    );
    // Chat front, Messages upstream.
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Messages, 100_000))
            .await;
    let body = json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}},
        {"type": "text", "text": "and this?"}]}]});
    let answer = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        upstream.received()[0].body["messages"][0]["content"],
        json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
            {"type": "text", "text": "and this?"}
        ])
    );
}

#[tokio::test]
async fn a_session_reloaded_from_sqlite_sends_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.db");
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let over = |store: Arc<dyn Store>| {
        let mut c = config(upstream.url(), Protocol::Messages, 1_000_000);
        c.store = store;
        c
    };
    // The first call, answered with the tool call Claude Code then sent.
    let first = claude_code_request(1);
    let second = claude_code_request(2);
    let call = &second["messages"][2]["content"][0];
    assert_eq!(call["type"], "tool_use");
    upstream.queue(vec![memory_core::Message::assistant_with_tools(
        "",
        vec![memory_core::ToolCall::new(
            call["id"].as_str().unwrap(),
            call["name"].as_str().unwrap(),
            call["input"].to_string(),
        )],
    )]);
    let store: Arc<dyn Store> = Arc::new(memory_sqlite::SqliteStore::open(&path).unwrap());
    let server = memory_serve::test_util::spawn_server(over(store)).await;
    let answer = send(&server, "/v1/messages?beta=true", &first).await;
    assert_eq!(answer.status(), 200);
    let _ = answer.text().await.unwrap();
    // Another server over the same file: the session read from it.
    let store: Arc<dyn Store> = Arc::new(memory_sqlite::SqliteStore::open(&path).unwrap());
    let server = memory_serve::test_util::spawn_server(over(store)).await;
    let answer = send(&server, "/v1/messages?beta=true", &second).await;
    assert_eq!(answer.headers()["x-memory-admission"], "continued");
    let _ = answer.text().await.unwrap();
    assert_eq!(upstream.received()[1].body, second);
}

#[tokio::test]
async fn what_the_pipeline_cleared_is_reported_as_context_management() {
    let mut turns = vec![json!({"role": "user", "content": "Do the task in 30 steps."})];
    for k in 1..=12 {
        let id = format!("toolu_{k}");
        turns.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "step", "input": {"step": k, "of": 30}}]}));
        turns.push(
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
            "content": format!("step {k} of 30: {}", "x".repeat(400))}]}),
        );
    }
    for (api, stream) in [
        (Protocol::Chat, false),
        (Protocol::Chat, true),
        (Protocol::Messages, false),
        (Protocol::Messages, true),
    ] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server =
            memory_serve::test_util::spawn_server(config(upstream.url(), api, 1_200)).await;
        let body = json!({"model": "m", "max_tokens": 64, "stream": stream, "messages": turns});
        let answer = send(&server, "/v1/messages", &body).await;
        assert_eq!(answer.status(), 200);
        let text = answer.text().await.unwrap();
        let report: Value = if stream {
            let delta = text
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .map(|d| serde_json::from_str::<Value>(d).unwrap())
                .find(|e| e["type"] == "message_delta")
                .unwrap();
            delta["context_management"].clone()
        } else {
            serde_json::from_str::<Value>(&text).unwrap()["context_management"].clone()
        };
        let edit = &report["applied_edits"][0];
        assert_eq!(
            edit["type"], "clear_tool_uses_20250919",
            "{api:?} {stream}: {text}"
        );
        assert!(edit["cleared_tool_uses"].as_u64().unwrap() > 0);
        assert!(edit["cleared_input_tokens"].as_u64().unwrap() > 0);
    }
}

#[tokio::test]
async fn every_kind_of_block_reaches_a_messages_upstream_as_it_came() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Messages, 100_000))
            .await;
    let body = json!({"model": "m", "max_tokens": 100, "messages": [
        {"role": "user", "content": [
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Notes."},
             "title": "notes", "citations": {"enabled": true}, "cache_control": {"type": "ephemeral"}},
            {"type": "search_result", "source": "https://example.com", "title": "t",
             "content": [{"type": "text", "text": "found"}]},
            {"type": "text", "text": "What do the notes say?"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Look at the notes.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "notes"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "text", "text": "They say: Notes.", "citations": [{"type": "char_location",
              "cited_text": "Notes.", "document_index": 0, "start_char_index": 0, "end_char_index": 6}]},
            {"type": "hologram", "frames": [1, 2, 3], "future_field": {"x": true}}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks."}], "future_turn_field": 1}
    ]});
    let answer = send(&server, "/v1/messages", &body).await;
    assert_eq!(answer.status(), 200);
    let _ = answer.text().await.unwrap();
    assert_eq!(upstream.received()[0].body, body);
}

#[tokio::test]
async fn a_novel_block_and_event_pass_through_and_are_left_out_in_translation() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Messages, 100_000))
            .await;
    let body = json!({"model": "novel", "max_tokens": 10, "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    let answer = send(&server, "/v1/messages", &body).await;
    let session = answer.headers()["x-memory-session"]
        .to_str()
        .unwrap()
        .to_string();
    let text = answer.text().await.unwrap();
    assert!(text.contains("\"type\":\"hologram\"") && text.contains("event: weather_report"));
    let stored: Value = reqwest::Client::new()
        .get(format!("{server}/v1/memory/sessions/{session}"))
        .header("x-api-key", "sk-ant-client")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        stored["history_length"], 2,
        "the reply is recorded: {stored}"
    );
    // The Chat front over the same upstream: the text, and nothing else.
    let chat = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .json(&json!({"model": "novel", "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        chat.contains("\"content\":\"Seen.\"") && chat.ends_with("data: [DONE]\n\n"),
        "{chat}"
    );
    assert!(!chat.contains("hologram") && !chat.contains("weather"));
}

#[tokio::test]
async fn an_upstream_that_breaks_off_is_never_a_silent_success() {
    let body = |model: &str| {
        json!({"model": model, "max_tokens": 10, "stream": true,
               "messages": [{"role": "user", "content": "hi"}]})
    };
    // Translated, the client gets an error event and no message_stop.
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 100_000))
            .await;
    let text = send(&server, "/v1/messages", &body("break"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("event: error") && !text.contains("message_stop"),
        "{text}"
    );
    // The Chat front over a Messages upstream: an error chunk, no [DONE].
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Messages, 100_000))
            .await;
    let text = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .json(&json!({"model": "break", "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("\"error\"") && !text.contains("[DONE]"),
        "{text}"
    );
    // Same protocol: the connection is cut, as the upstream's was.
    let cut = send(&server, "/v1/messages", &body("break"))
        .await
        .text()
        .await;
    assert!(cut.is_err(), "{cut:?}");
}

#[tokio::test]
async fn claude_codes_session_id_shows_its_forks_together() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 100_000))
            .await;
    let client = reqwest::Client::new();
    let call = |turns: Value| {
        client
            .post(format!("{server}/v1/messages"))
            .header("x-api-key", "sk-ant-client")
            .header("x-claude-code-session-id", "cc-1")
            .json(&json!({"model": "m", "max_tokens": 10, "messages": turns}))
            .send()
    };
    let first = call(json!([{"role": "user", "content": "first try"}]))
        .await
        .unwrap();
    let a = first.headers()["x-memory-session"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = first.text().await;
    // An edited first message: a fork, in the same group.
    let fork = call(json!([{"role": "user", "content": "second try"}]))
        .await
        .unwrap();
    let b = fork.headers()["x-memory-session"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = fork.text().await;
    assert_ne!(a, b);
    let inspect = |key: &'static str| {
        client
            .get(format!("{server}/v1/memory/sessions/cc-1"))
            .header("x-api-key", key)
            .send()
    };
    let group: Value = inspect("sk-ant-client")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(group["group"], "cc-1");
    let ids: Vec<&str> = group["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [a.as_str(), b.as_str()]);
    assert_eq!(group["sessions"][0]["history_length"], 2);
    // Another principal's group answers as a missing one.
    assert_eq!(inspect("sk-other").await.unwrap().status(), 404);
}

#[tokio::test]
async fn a_named_session_sends_its_earlier_turns_as_they_came_even_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("named.db");
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let start = || async {
        let mut c = config(upstream.url(), Protocol::Messages, 1_000_000);
        c.store = Arc::new(memory_sqlite::SqliteStore::open(&path).unwrap());
        memory_serve::test_util::spawn_server(c).await
    };
    let turn = |text: &str| {
        json!({"role": "user", "content": [
            {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}},
            {"type": "hologram", "frames": [1]}]})
    };
    let call = |server: String, turn: Value| async move {
        let answer = reqwest::Client::new()
            .post(format!("{server}/v1/messages"))
            .header("x-memory-session", "notes")
            .json(&json!({"model": "m", "max_tokens": 10, "messages": [turn]}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let _ = answer.text().await.unwrap();
    };
    let server = start().await;
    call(server.clone(), turn("first")).await;
    call(server, turn("second")).await;
    // Another server over the same file.
    call(start().await, turn("third")).await;
    let received = upstream.received();
    let last = &received[2].body["messages"];
    assert_eq!(last.as_array().unwrap().len(), 5, "{last}");
    assert_eq!(last[0], turn("first"));
    assert_eq!(last[2], turn("second"));
    assert_eq!(last[4], turn("third"));
}

#[tokio::test]
async fn turns_of_odd_shapes_reach_a_messages_upstream_whole_and_valid() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Messages, 100_000))
            .await;
    // A system turn of a string, after a `system` field of a string: both
    // go back as they came.
    let body = json!({"model": "m", "max_tokens": 10, "system": "rules",
        "messages": [{"role": "system", "content": "env"}, {"role": "user", "content": "hi"}]});
    assert_eq!(send(&server, "/v1/messages", &body).await.status(), 200);
    assert_eq!(upstream.received()[0].body, body);
    // A result sent after text in its turn: repaired into order, nothing
    // lost, every block its own.
    let body = json!({"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "note"},
            {"type": "tool_result", "tool_use_id": "c1", "content": "out"}]}]});
    assert_eq!(send(&server, "/v1/messages", &body).await.status(), 200);
    let sent = upstream.received()[1].body["messages"].to_string();
    assert!(
        sent.contains("\"note\"") && sent.contains("\"out\""),
        "{sent}"
    );
    let turns = upstream.received()[1].body["messages"].clone();
    assert_eq!(turns[1]["content"][0]["type"], "tool_use");
    assert_eq!(turns[2]["content"][0]["type"], "tool_result", "{turns}");
    // From the Chat front: a reply that was only reasoning and an empty
    // user message leave no empty turn or block.
    let chat = json!({"model": "m", "messages": [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "", "reasoning_content": "r"},
        {"role": "user", "content": ""},
        {"role": "user", "content": "b"}]});
    let answer = reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .json(&chat)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    for turn in upstream.received()[2].body["messages"].as_array().unwrap() {
        let content = &turn["content"];
        assert!(content.as_array().is_none_or(|b| !b.is_empty()), "{turn}");
        assert!(!content.to_string().contains("\"text\":\"\""), "{turn}");
    }
}

#[tokio::test]
async fn bodies_compressed_with_gzip_or_zstd_are_read() {
    use std::io::Write as _;
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 100_000))
            .await;
    let body = json!({"model": "m", "max_tokens": 10,
        "messages": [{"role": "user", "content": "packed"}]})
    .to_string();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(body.as_bytes()).unwrap();
    let packed = [
        ("gzip", gzip.finish().unwrap()),
        ("zstd", zstd::encode_all(body.as_bytes(), 3).unwrap()),
    ];
    for (path, (encoding, bytes)) in ["/v1/messages", "/v1/chat/completions"]
        .iter()
        .flat_map(|p| packed.iter().map(move |b| (p, b)))
    {
        let answer = reqwest::Client::new()
            .post(format!("{server}{path}"))
            .header("content-type", "application/json")
            .header("content-encoding", *encoding)
            .body(bytes.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{path} {encoding}");
        let last = upstream.received().last().unwrap().body.clone();
        assert_eq!(
            last["messages"][0]["content"], "packed",
            "{path} {encoding}"
        );
    }
    // An encoding the server does not read is refused, not read as JSON.
    let answer = reqwest::Client::new()
        .post(format!("{server}/v1/messages"))
        .header("content-type", "application/json")
        .header("content-encoding", "br")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 415);
    // The size limit holds for what a body unpacks to.
    let mut small = config(upstream.url(), Protocol::Chat, 100_000);
    small.max_body_bytes = 10_000;
    let server = memory_serve::test_util::spawn_server(small).await;
    let big = json!({"model": "m", "messages": [{"role": "user", "content": " ".repeat(100_000)}]});
    let bomb = zstd::encode_all(big.to_string().as_bytes(), 3).unwrap();
    assert!(bomb.len() < 1_000);
    let answer = reqwest::Client::new()
        .post(format!("{server}/v1/messages"))
        .header("content-type", "application/json")
        .header("content-encoding", "zstd")
        .body(bomb)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 413);
}

#[tokio::test]
async fn the_messages_front_goes_over_a_responses_upstream() {
    for stream in [false, true] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server = memory_serve::test_util::spawn_server(config(
            upstream.url(),
            Protocol::Responses,
            1_500,
        ))
        .await;
        let sent = tool_loop(&server, 10, stream).await;
        let received = upstream.received();
        assert_eq!(received.len(), sent.len());
        for r in &received {
            // Translated: Responses items, the key as a bearer token.
            assert_eq!(r.authorization.as_deref(), Some("Bearer sk-ant-client"));
            let input = r.body["input"].as_array().unwrap();
            assert_eq!(input[0]["content"][0]["text"], "You work in steps.");
            assert!(r.body.get("thinking").is_none() && r.body.get("messages").is_none());
            assert_eq!(r.body["tools"][0]["name"], "step");
            let ids = |kind: &str| -> Vec<&str> {
                input
                    .iter()
                    .filter(|i| i["type"] == kind)
                    .map(|i| i["call_id"].as_str().unwrap())
                    .collect()
            };
            let (calls, outputs) = (ids("function_call"), ids("function_call_output"));
            assert!(outputs.iter().all(|o| calls.contains(o)), "pairs intact");
            assert!(calls.iter().all(|c| outputs.contains(c)), "pairs intact");
        }
    }
}
