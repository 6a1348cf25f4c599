//! The OpenAI Responses front (`POST /v1/responses`, as Codex and the
//! openai SDKs send it) over a Chat Completions, a Messages and a
//! Responses upstream, streamed and not; its state (`store`,
//! `previous_response_id`, `GET /v1/responses/{id}`) and its compaction
//! (`POST /v1/responses/compact`, `compaction_trigger`,
//! `context_management`). The upstream is a real server on loopback
//! whose model is a script.

use std::sync::Arc;
use std::time::Duration;

use memory_core::{InMemoryStore, Message, Store, TrimStrategy, validate};
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, Compaction, Protocol, ServeConfig};
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

async fn post(
    server: &str,
    path: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{server}{path}"))
        .header("authorization", "Bearer sk-client");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.json(body).send().await.unwrap()
}

/// `GET /v1/responses/{id}`, as the client that made it.
async fn kept_response(server: &str, id: &str) -> Value {
    let answer = reqwest::Client::new()
        .get(format!("{server}/v1/responses/{id}"))
        .header("authorization", "Bearer sk-client")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    answer.json().await.unwrap()
}

/// A Responses stream read as a client reads it: every event named by
/// its type and numbered in order; the output items of its
/// `response.output_item.done` events and the final response.
fn read_stream(events: &str) -> (Vec<Value>, Value) {
    let (mut names, mut items, mut last) = (Vec::new(), Vec::new(), Value::Null);
    let mut number = 0;
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
        assert_eq!(e["sequence_number"], number, "{e}");
        number += 1;
        match e["type"].as_str().unwrap() {
            "response.output_item.done" => items.push(e["item"].clone()),
            "response.completed" | "response.incomplete" => last = e["response"].clone(),
            "response.failed" | "error" => panic!("a failure event: {e}"),
            _ => {}
        }
    }
    assert_eq!(names.first().map(String::as_str), Some("response.created"));
    assert_eq!(
        last["output"].as_array().unwrap(),
        &items,
        "the final response holds the items"
    );
    (items, last)
}

/// The output items of an answer, streamed or not.
async fn output_of(answer: reqwest::Response, stream: bool) -> (Vec<Value>, Value) {
    assert_eq!(answer.status(), 200);
    if stream {
        read_stream(&answer.text().await.unwrap())
    } else {
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["object"], "response");
        (body["output"].as_array().unwrap().clone(), body)
    }
}

/// The request body of a Codex-like client: instructions, a developer
/// message, the items so far, function tools and one of another kind.
fn codex_body(items: &[Value], stream: bool) -> Value {
    let mut input = vec![json!({"type": "message", "role": "developer",
        "content": [{"type": "input_text", "text": "<permissions>sandboxed</permissions>"}]})];
    input.extend(items.iter().cloned());
    json!({"model": "m", "instructions": "You are a coding agent.", "input": input,
        "tools": [{"type": "function", "name": "step", "description": "does a step",
                   "parameters": {"type": "object", "properties": {}}, "strict": false},
                  {"type": "web_search"}],
        "tool_choice": "auto", "parallel_tool_calls": true,
        "reasoning": {"effort": "medium"}, "store": false, "stream": stream,
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "k1"})
}

/// Runs a tool loop of `steps` steps as Codex does (the whole history each
/// time, the reply's items added to it); the bodies sent, in order.
async fn tool_loop(server: &str, steps: usize, stream: bool) -> Vec<Value> {
    let mut items = vec![json!({"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": format!("Do the task in {steps} steps.")}]})];
    let mut sent = Vec::new();
    for _ in 0..=steps + 1 {
        let body = codex_body(&items, stream);
        sent.push(body.clone());
        let answer = post(server, "/v1/responses", &body, &[("session-id", "codex-1")]).await;
        let (output, _) = output_of(answer, stream).await;
        let calls: Vec<Value> = output
            .iter()
            .filter(|i| i["type"] == "function_call")
            .cloned()
            .collect();
        items.extend(output.iter().cloned());
        if calls.is_empty() {
            let text = output.iter().find(|i| i["type"] == "message").unwrap();
            assert!(
                text["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("steps are done")
            );
            return sent;
        }
        for call in calls {
            let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
            let result = format!(
                "step {} of {} done. {}",
                args["step"],
                args["of"],
                "output ".repeat(60)
            );
            items.push(json!({"type": "function_call_output", "call_id": call["call_id"], "output": result}));
        }
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
        let sent = tool_loop(&server, 12, stream).await;
        let received = upstream.received();
        assert_eq!(received.len(), sent.len());
        let mut fitted = 0;
        for (s, r) in sent.iter().zip(&received) {
            assert_eq!(r.authorization.as_deref(), Some("Bearer sk-client"));
            assert_eq!(
                r.body["tools"].as_array().unwrap().len(),
                1,
                "the hosted tool is left out"
            );
            assert_eq!(r.body["tools"][0]["function"]["name"], "step");
            assert!(r.body.get("include").is_none() && r.body.get("reasoning").is_none());
            let messages = memory_openai::wire::from_value(&r.body["messages"]).unwrap();
            assert!(validate(&messages).is_empty(), "pairs intact");
            assert_eq!(messages[0].text(), "You are a coding agent.");
            assert!(
                messages.iter().any(|m| m.text().contains("in 12 steps")),
                "the task is kept"
            );
            let outputs_sent = s["input"]
                .to_string()
                .matches("function_call_output")
                .count();
            fitted +=
                usize::from(messages.iter().filter(|m| m.is_tool_result()).count() < outputs_sent);
        }
        assert!(fitted > 0, "the history outgrew the budget and was fitted");
    }
}

#[tokio::test]
async fn over_a_responses_upstream_every_item_goes_as_the_client_sent_it() {
    for stream in [false, true] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server = memory_serve::test_util::spawn_server(config(
            upstream.url(),
            Protocol::Responses,
            1_000_000,
        ))
        .await;
        let mut sent = tool_loop(&server, 6, stream).await;
        // An encrypted reasoning item and an item of an unknown kind, as
        // a client holds them.
        let mut last = sent.last().unwrap().clone();
        let input = last["input"].as_array_mut().unwrap();
        input.insert(
            2,
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}),
        );
        input.push(json!({"type": "mystery_item", "payload": {"x": 1}}));
        let answer = post(&server, "/v1/responses", &last, &[]).await;
        assert_eq!(answer.status(), 200);
        sent.push(last);
        let received = upstream.received();
        assert_eq!(received.len(), sent.len());
        for (s, r) in sent.iter().zip(&received) {
            // Nothing shed under a large budget: every field JSON-equal.
            assert_eq!(&r.body, s);
            assert_eq!(r.authorization.as_deref(), Some("Bearer sk-client"));
        }
    }
}

#[tokio::test]
async fn the_responses_front_goes_over_a_messages_upstream() {
    for stream in [false, true] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server = memory_serve::test_util::spawn_server(config(
            upstream.url(),
            Protocol::Messages,
            1_000_000,
        ))
        .await;
        let sent = tool_loop(&server, 4, stream).await;
        let received = upstream.received();
        assert_eq!(received.len(), sent.len());
        let last = &received.last().unwrap().body;
        assert_eq!(last["system"][0]["text"], "You are a coding agent.");
        assert_eq!(
            last["system"][1]["text"],
            "<permissions>sandboxed</permissions>"
        );
        assert_eq!(last["tools"][0]["name"], "step");
        assert!(last["messages"].to_string().contains("tool_result"));
    }
}

#[tokio::test]
async fn a_trigger_and_the_compact_endpoint_answer_one_compaction_that_stands_for_the_context() {
    for stream in [false, true] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server =
            memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 1_500))
                .await;
        let sent = tool_loop(&server, 6, stream).await;
        let calls = upstream.received().len();
        let mut history = sent.last().unwrap()["input"].as_array().unwrap().clone();
        history.remove(0);
        // A compaction_trigger as the last item.
        let mut items = history.clone();
        items.push(json!({"type": "compaction_trigger"}));
        let answer = post(
            &server,
            "/v1/responses",
            &codex_body(&items, stream),
            &[("session-id", "codex-1")],
        )
        .await;
        let (output, _) = output_of(answer, stream).await;
        assert_eq!(output.len(), 1);
        assert_eq!(output[0]["type"], "compaction");
        let handle = output[0]["encrypted_content"].as_str().unwrap().to_string();
        // The compact endpoint.
        let answer = post(
            &server,
            "/v1/responses/compact",
            &codex_body(&history, false),
            &[],
        )
        .await;
        assert_eq!(answer.status(), 200);
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["object"], "response.compaction");
        assert_eq!(body["output"].as_array().unwrap().len(), 1);
        assert_eq!(
            upstream.received().len(),
            calls,
            "no model call made either"
        );
        // The next request holds the compaction and a new task: the
        // upstream gets the conversation it stands for, fitted.
        let next = vec![
            output[0].clone(),
            json!({"role": "user", "content": "Now do the task in 2 steps."}),
        ];
        let answer = post(
            &server,
            "/v1/responses",
            &codex_body(&next, stream),
            &[("session-id", "codex-1")],
        )
        .await;
        let status = answer.status();
        let tokens: usize = answer.headers()["x-memory-tokens"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        output_of(answer, stream).await;
        assert_eq!(status, 200);
        assert!(
            tokens <= 1_500 / 2 + 20,
            "the compacted context and the new task: {tokens}"
        );
        let last = &upstream.received().last().unwrap().body.clone();
        let messages = memory_openai::wire::from_value(&last["messages"]).unwrap();
        assert!(validate(&messages).is_empty());
        assert_eq!(messages[0].text(), "You are a coding agent.");
        for said in [
            "You are a coding agent.",
            "<permissions>sandboxed</permissions>",
        ] {
            let times = messages.iter().filter(|m| m.text() == said).count();
            assert_eq!(times, 1, "`{said}` once");
        }
        assert!(
            messages.iter().any(|m| m.text().contains("in 6 steps")),
            "the first task is kept"
        );
        assert!(messages.last().unwrap().text().contains("in 2 steps"));
        assert!(
            !last.to_string().contains(&handle),
            "the handle never reaches the model"
        );
        // A forged handle, and one of another conversation, are refused.
        let forged = handle.replacen('.', ".x", 2);
        let mut bad = next.clone();
        bad[0]["encrypted_content"] = json!(forged);
        let answer = post(&server, "/v1/responses", &codex_body(&bad, false), &[]).await;
        assert_eq!(answer.status(), 400);
        let e: Value = answer.json().await.unwrap();
        assert_eq!(e["error"]["param"], "input[1].encrypted_content", "{e}");
        let answer = post(
            &server,
            "/v1/responses",
            &codex_body(&next, false),
            &[("session-id", "codex-2")],
        )
        .await;
        assert_eq!(answer.status(), 400);
    }
}

#[tokio::test]
async fn another_principals_handle_is_refused() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let mut c = config(upstream.url(), Protocol::Chat, 1_500);
    c = c.with_keys(memory_serve::Keys::parse("alice sk-alice\nbob sk-bob\n").unwrap());
    let server = memory_serve::test_util::spawn_server(c).await;
    let ask = |key: &'static str, items: Vec<Value>| {
        let server = server.clone();
        async move {
            reqwest::Client::new()
                .post(format!("{server}/v1/responses/compact"))
                .header("authorization", format!("Bearer {key}"))
                .json(&codex_body(&items, false))
                .send()
                .await
                .unwrap()
        }
    };
    let answer = ask(
        "sk-alice",
        vec![json!({"role": "user", "content": "hello"})],
    )
    .await;
    assert_eq!(answer.status(), 200);
    let item = answer.json::<Value>().await.unwrap()["output"][0].clone();
    let next = vec![item, json!({"role": "user", "content": "and then"})];
    let answer = ask("sk-bob", next.clone()).await;
    assert_eq!(answer.status(), 400, "bob cannot open alice's compaction");
    let answer = ask("sk-alice", next).await;
    assert_eq!(answer.status(), 200);
}

#[tokio::test]
async fn context_management_past_its_threshold_adds_a_compaction_to_the_reply() {
    // Over a Responses upstream the stream passes as it came, the
    // compaction put in first.
    for (api, stream) in [
        (Protocol::Chat, false),
        (Protocol::Chat, true),
        (Protocol::Responses, false),
        (Protocol::Responses, true),
    ] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let mut c = config(upstream.url(), api, 100_000);
        c.compaction = Some(Compaction::Ours);
        let server = memory_serve::test_util::spawn_server(c).await;
        let mut body = codex_body(
            &[json!({"role": "user", "content": "x ".repeat(400)})],
            stream,
        );
        body["context_management"] = json!([{"type": "compaction", "compact_threshold": 100}]);
        let (output, _) = output_of(post(&server, "/v1/responses", &body, &[]).await, stream).await;
        assert_eq!(
            output[0]["type"], "compaction",
            "{api:?}: first, for what came before"
        );
        assert_eq!(output[1]["type"], "message");
        let received = &upstream.received()[0].body;
        assert!(received.get("context_management").is_none());
        // The next request holds it and the reply: the upstream gets the
        // context it stands for, and the reply.
        let items = [
            output[0].clone(),
            output[1].clone(),
            json!({"role": "user", "content": "next"}),
        ];
        let answer = post(&server, "/v1/responses", &codex_body(&items, false), &[]).await;
        assert_eq!(answer.status(), 200);
        let sent = upstream.received().last().unwrap().body.to_string();
        assert!(
            sent.contains(&"x ".repeat(400)) && sent.contains("next"),
            "{api:?}"
        );
        assert!(!sent.contains("mcmp1."));
        body["context_management"] =
            json!([{"type": "compaction", "compact_threshold": 1_000_000}]);
        let (output, _) = output_of(post(&server, "/v1/responses", &body, &[]).await, stream).await;
        assert!(output.iter().all(|i| i["type"] != "compaction"));
        // No size named: the call's budget.
        body["context_management"] = json!([{"type": "compaction"}]);
        let (output, _) = output_of(post(&server, "/v1/responses", &body, &[]).await, stream).await;
        assert!(output.iter().all(|i| i["type"] != "compaction"));
    }
}

#[tokio::test]
async fn native_compaction_goes_to_a_responses_upstream_and_ours_can_be_forced() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Responses, 100_000))
            .await;
    let items = [json!({"role": "user", "content": "hello"})];
    let answer = post(
        &server,
        "/v1/responses/compact",
        &codex_body(&items, false),
        &[],
    )
    .await;
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["id"], "cmp_native");
    let native = body["output"][0].clone();
    // The provider's item, and a trigger, go to the upstream as they came.
    let next = [
        native.clone(),
        json!({"role": "user", "content": "go on"}),
        json!({"type": "compaction_trigger"}),
    ];
    let answer = post(&server, "/v1/responses", &codex_body(&next, false), &[]).await;
    assert_eq!(answer.status(), 200);
    let sent = &upstream.received().last().unwrap().body.clone();
    assert_eq!(sent["input"][1], native);
    assert_eq!(sent["input"][3], json!({"type": "compaction_trigger"}));

    let mut c = config(upstream.url(), Protocol::Responses, 100_000);
    c.compaction = Some(Compaction::Ours);
    let server = memory_serve::test_util::spawn_server(c).await;
    let before = upstream.received().len();
    let answer = post(
        &server,
        "/v1/responses/compact",
        &codex_body(&items, false),
        &[],
    )
    .await;
    let body: Value = answer.json().await.unwrap();
    assert!(
        body["output"][0]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("mcmp1.")
    );
    assert_eq!(upstream.received().len(), before);
}

#[tokio::test]
async fn a_stored_response_is_continued_and_read_back() {
    for api in [Protocol::Chat, Protocol::Responses] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server =
            memory_serve::test_util::spawn_server(config(upstream.url(), api, 100_000)).await;
        let first = json!({"model": "m", "input": "Do the task in 2 steps.", "instructions": "be brief",
            "tools": [{"type": "function", "name": "step", "parameters": {"type": "object"}}]});
        let body: Value = post(&server, "/v1/responses", &first, &[])
            .await
            .json()
            .await
            .unwrap();
        let id = body["id"].as_str().unwrap().to_string();
        assert!(id.starts_with("resp_"));
        let call = &body["output"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["type"] == "function_call")
            .unwrap()
            .clone();
        let got = kept_response(&server, &id).await;
        assert_eq!(got, body);
        // Only the new item, continuing the stored response.
        let next = json!({"model": "m", "previous_response_id": id, "instructions": "be brief",
            "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "step 1 of 2 done"}]});
        let answer = post(&server, "/v1/responses", &next, &[]).await;
        assert_eq!(answer.status(), 200);
        let sent = &upstream.received().last().unwrap().body.clone();
        let text = sent.to_string();
        assert!(
            text.contains("Do the task in 2 steps.") && text.contains("step 1 of 2 done"),
            "{text}"
        );
        assert_eq!(text.matches("be brief").count(), 1, "the instructions once");
        // The call named by reference instead, with no previous response.
        let by_reference = json!({"model": "m", "input": [
            {"role": "user", "content": "Do the task in 2 steps."},
            {"type": "item_reference", "id": call["id"]},
            {"type": "function_call_output", "call_id": call["call_id"], "output": "step 1 of 2 done"}]});
        let answer = post(&server, "/v1/responses", &by_reference, &[]).await;
        assert_eq!(answer.status(), 200);
        let sent = upstream.received().last().unwrap().body.to_string();
        assert!(sent.contains(call["call_id"].as_str().unwrap()), "{sent}");
        assert!(!sent.contains("item_reference"), "{sent}");
        let unknown = json!({"model": "m", "input": [{"type": "item_reference", "id": "fc_nope"}]});
        let answer = post(&server, "/v1/responses", &unknown, &[]).await;
        assert_eq!(answer.status(), 400);
        let missing = json!({"model": "m", "previous_response_id": "resp_nope", "input": "x"});
        let answer = post(&server, "/v1/responses", &missing, &[]).await;
        assert_eq!(answer.status(), 400);
        let e: Value = answer.json().await.unwrap();
        assert_eq!(e["error"]["param"], "previous_response_id");
        let answer = reqwest::Client::new()
            .get(format!("{server}/v1/responses/resp_nope"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 404);
    }
}

#[tokio::test]
async fn an_upstream_that_breaks_off_ends_in_a_failed_response() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 10_000)).await;
    let mut body = codex_body(&[json!({"role": "user", "content": "hi"})], true);
    body["model"] = json!("break");
    let text = post(&server, "/v1/responses", &body, &[])
        .await
        .text()
        .await
        .unwrap_or_default();
    assert!(text.contains("response.failed"), "{text}");
    assert!(!text.contains("response.completed"));
    body["model"] = json!("fail-429");
    body["stream"] = json!(false);
    let answer = post(&server, "/v1/responses", &body, &[]).await;
    assert_eq!(answer.status(), 429);
    let e: Value = answer.json().await.unwrap();
    assert!(e["error"]["message"].is_string(), "{e}");
    let answer = post(&server, "/v1/responses", &json!({"input": 7}), &[]).await;
    assert_eq!(answer.status(), 400);
    let e: Value = answer.json().await.unwrap();
    assert_eq!(e["error"]["param"], "input");
}

#[tokio::test]
async fn images_and_messages_of_every_role_cross_to_chat() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let server =
        memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 100_000))
            .await;
    let items = [json!({"role": "user", "content": [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
        {"type": "input_image", "image_url": "https://example.com/a.png"}]})];
    let answer = post(&server, "/v1/responses", &codex_body(&items, false), &[]).await;
    assert_eq!(answer.status(), 200);
    let sent = &upstream.received()[0].body;
    let messages = &sent["messages"];
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "system", "the developer message");
    let parts = messages[2]["content"].as_array().unwrap();
    assert_eq!(parts.len(), 3);
    assert!(
        parts[1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,")
    );
    assert_eq!(parts[2]["image_url"]["url"], "https://example.com/a.png");
}

/// The fields the Open Responses specification requires of a response
/// object (`ResponseResource`).
const REQUIRED: [&str; 32] = [
    "id",
    "object",
    "created_at",
    "completed_at",
    "status",
    "incomplete_details",
    "model",
    "previous_response_id",
    "instructions",
    "output",
    "error",
    "tools",
    "tool_choice",
    "truncation",
    "parallel_tool_calls",
    "text",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "temperature",
    "reasoning",
    "user",
    "usage",
    "max_output_tokens",
    "max_tool_calls",
    "store",
    "background",
    "service_tier",
    "metadata",
    "safety_identifier",
    "prompt_cache_key",
];

fn check_resource(body: &Value) {
    for field in REQUIRED {
        assert!(
            body.get(field).is_some(),
            "`{field}` is missing from {body}"
        );
    }
    assert_eq!(body["object"], "response");
    for field in ["input_tokens", "output_tokens", "total_tokens"] {
        assert!(body["usage"][field].is_u64(), "{body}");
    }
    for item in body["output"].as_array().unwrap() {
        assert!(item["id"].is_string() && item["type"].is_string(), "{item}");
    }
}

/// The Open Responses compliance cases (basic text, streaming, system
/// prompt, tool calling, image input, multi-turn), against a Chat
/// Completions upstream and a Messages one.
#[tokio::test]
async fn the_specifications_compliance_cases_pass() {
    for api in [Protocol::Chat, Protocol::Messages] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server =
            memory_serve::test_util::spawn_server(config(upstream.url(), api, 100_000)).await;
        let user = |text: &str| json!({"type": "message", "role": "user", "content": text});
        let cases = [
            (
                "basic",
                json!({"model": "m", "input": [user("Say hello in one word.")]}),
            ),
            (
                "system",
                json!({"model": "m", "input": [
                {"type": "message", "role": "system", "content": "You are a pirate."},
                user("Say hello.")]}),
            ),
            (
                "tools",
                json!({"model": "m", "input": [user("Weather in Paris?")],
                "tools": [{"type": "function", "name": "get_weather", "description": "the weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}),
            ),
            (
                "image",
                json!({"model": "m", "input": [{"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "What is in it?"},
                {"type": "input_image", "image_url": "https://example.com/a.jpg"}]}]}),
            ),
            (
                "multi-turn",
                json!({"model": "m", "input": [user("My name is Ada."),
                {"type": "message", "role": "assistant", "content": "Hello Ada."},
                user("What is my name?")]}),
            ),
        ];
        for (name, body) in cases {
            if name == "tools" {
                upstream.queue(vec![Message::assistant_with_tools(
                    "",
                    vec![memory_core::ToolCall::new(
                        "call_w",
                        "get_weather",
                        r#"{"city":"Paris"}"#,
                    )],
                )]);
            }
            let answer = post(&server, "/v1/responses", &body, &[]).await;
            assert_eq!(answer.status(), 200, "{name}");
            let got: Value = answer.json().await.unwrap();
            check_resource(&got);
            assert_eq!(got["status"], "completed", "{name}");
            if name == "tools" {
                let call = &got["output"][0];
                assert_eq!(call["type"], "function_call");
                assert_eq!(call["name"], "get_weather");
                assert_eq!(call["call_id"], "call_w");
                assert_eq!(
                    got["tools"][0]["name"], "get_weather",
                    "the tools are repeated"
                );
            } else {
                assert_eq!(got["output"][0]["type"], "message", "{name}: {got}");
                assert_eq!(got["output"][0]["content"][0]["type"], "output_text");
            }
            // Streamed: valid numbered events, and a final response that
            // is a whole resource.
            let mut streamed = body.clone();
            streamed["stream"] = json!(true);
            if name == "tools" {
                upstream.queue(vec![Message::assistant_with_tools(
                    "",
                    vec![memory_core::ToolCall::new(
                        "call_w",
                        "get_weather",
                        r#"{"city":"Paris"}"#,
                    )],
                )]);
            }
            let answer = post(&server, "/v1/responses", &streamed, &[]).await;
            let text = answer.text().await.unwrap();
            let (items, last) = read_stream(&text);
            check_resource(&last);
            assert_eq!(items.len(), last["output"].as_array().unwrap().len());
            for kind in [
                "response.in_progress",
                "response.output_item.added",
                "response.completed",
            ] {
                assert!(text.contains(&format!("event: {kind}\n")), "{name}: {kind}");
            }
        }
    }
}

#[tokio::test]
async fn a_compaction_succeeds_with_its_summarizer_down() {
    // The summarizer is a real model endpoint that refuses every call.
    let summarizer = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let url = summarizer.url().to_string();
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let mut c = config(upstream.url(), Protocol::Chat, 1_500);
    c.pipeline = Arc::new(move || {
        let provider = memory_openai::OpenAiProvider::new(url.clone(), "fail-429");
        Arc::new(memory_compact::Compact::new(provider).with_summarize_at_tokens(300))
            as Arc<dyn TrimStrategy>
    });
    let server = memory_serve::test_util::spawn_server(c).await;
    let sent = tool_loop(&server, 6, false).await;
    let mut items = sent.last().unwrap()["input"].as_array().unwrap().clone();
    items.remove(0);
    items.push(json!({"type": "compaction_trigger"}));
    let answer = post(&server, "/v1/responses", &codex_body(&items, false), &[]).await;
    let (output, _) = output_of(answer, false).await;
    assert_eq!(output.len(), 1);
    assert_eq!(output[0]["type"], "compaction");
    assert!(
        !summarizer.received().is_empty(),
        "the summarizer was asked, and failed"
    );
    let next = [
        output[0].clone(),
        json!({"role": "user", "content": "go on in 1 steps."}),
    ];
    let answer = post(&server, "/v1/responses", &codex_body(&next, false), &[]).await;
    assert_eq!(answer.status(), 200);
    let last = upstream.received().last().unwrap().body.clone();
    let messages = memory_openai::wire::from_value(&last["messages"]).unwrap();
    assert!(validate(&messages).is_empty());
}

#[tokio::test]
async fn a_custom_tool_offered_to_a_chat_model_is_called_back_as_one() {
    for stream in [false, true] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server =
            memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Chat, 100_000))
                .await;
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n";
        let arguments = json!({"input": patch}).to_string();
        upstream.queue(vec![Message::assistant_with_tools(
            "",
            vec![memory_core::ToolCall::new(
                "call_p",
                "apply_patch",
                arguments,
            )],
        )]);
        let mut body = codex_body(&[json!({"role": "user", "content": "patch it"})], stream);
        body["tools"] = json!([{"type": "custom", "name": "apply_patch", "description": "edits files",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}]);
        let answer = post(&server, "/v1/responses", &body, &[]).await;
        let (output, _) = output_of(answer, stream).await;
        let sent = &upstream.received()[0].body;
        assert_eq!(sent["tools"][0]["function"]["name"], "apply_patch");
        assert_eq!(
            sent["tools"][0]["function"]["parameters"]["required"][0],
            "input"
        );
        assert_eq!(output[0]["type"], "custom_tool_call", "{output:?}");
        assert_eq!(output[0]["input"], patch);
        assert_eq!(output[0]["call_id"], "call_p");
        // The client sends the call back with its output: the session goes
        // on, and the model gets the call as the function call it made.
        let mut items = vec![json!({"role": "user", "content": "patch it"})];
        items.push(output[0].clone());
        items.push(
            json!({"type": "custom_tool_call_output", "call_id": "call_p", "output": "Done."}),
        );
        let mut next = codex_body(&items, stream);
        next["tools"] = body["tools"].clone();
        let answer = post(&server, "/v1/responses", &next, &[]).await;
        assert_eq!(answer.headers()["x-memory-admission"], "continued");
        output_of(answer, stream).await;
        let sent = upstream.received()[1].body.clone();
        let messages = memory_openai::wire::from_value(&sent["messages"]).unwrap();
        assert!(validate(&messages).is_empty());
        let call = &messages
            .iter()
            .find(|m| !m.tool_calls().is_empty())
            .unwrap()
            .tool_calls()[0];
        assert_eq!(call.name, "apply_patch");
        assert_eq!(
            serde_json::from_str::<Value>(&call.arguments).unwrap()["input"],
            patch
        );
    }
}

/// A tool loop through the Chat Completions front, as an OpenAI client
/// sends it; the bodies sent.
async fn chat_loop(server: &str, steps: usize, stream: bool) -> Vec<Value> {
    let mut messages = vec![
        json!({"role": "system", "content": "You work in steps."}),
        json!({"role": "user", "content": format!("Do the task in {steps} steps.")}),
    ];
    let mut sent = Vec::new();
    for _ in 0..=steps + 1 {
        let body = json!({"model": "m", "messages": messages, "stream": stream,
            "tools": [{"type": "function", "function": {"name": "step", "parameters": {"type": "object"}}}]});
        sent.push(body.clone());
        let answer = post(server, "/v1/chat/completions", &body, &[]).await;
        assert_eq!(answer.status(), 200);
        let text = answer.text().await.unwrap();
        let reply = if stream {
            assert!(text.trim_end().ends_with("data: [DONE]"));
            let mut reply = memory_serve::StreamedReply::default();
            reply.feed(text.as_bytes());
            assert!(reply.is_done());
            memory_openai::wire::message_to_value(&reply.message())
        } else {
            let body: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(body["object"], "chat.completion");
            body["choices"][0]["message"].clone()
        };
        messages.push(reply.clone());
        let calls = reply["tool_calls"].as_array().cloned().unwrap_or_default();
        if calls.is_empty() {
            return sent;
        }
        for call in calls {
            let args: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
            let result = format!(
                "step {} of {} done. {}",
                args["step"],
                args["of"],
                "x ".repeat(300)
            );
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": result}));
        }
    }
    panic!("the loop did not end");
}

#[tokio::test]
async fn the_chat_front_goes_over_a_responses_upstream() {
    for stream in [false, true] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server =
            memory_serve::test_util::spawn_server(config(upstream.url(), Protocol::Responses, 800))
                .await;
        let sent = chat_loop(&server, 6, stream).await;
        let received = upstream.received();
        assert_eq!(received.len(), sent.len());
        for r in &received {
            let input = r.body["input"].as_array().unwrap();
            assert_eq!(input[0]["role"], "system");
            assert_eq!(r.body["tools"][0]["name"], "step", "flat function tools");
            assert_eq!(r.body["store"], false, "the upstream keeps nothing");
            assert!(r.body.get("messages").is_none());
            check_pairs(input);
        }
        let results = |r: &memory_serve::test_util::Received| {
            r.body.to_string().matches("function_call_output").count()
        };
        let most = received.iter().map(results).max().unwrap();
        assert!(results(received.last().unwrap()) < 7, "fitted: {most}");
    }
}

/// Each function call output after its call, and each call answered.
fn check_pairs(input: &[Value]) {
    let ids = |kind: &str| -> Vec<(usize, String)> {
        input
            .iter()
            .enumerate()
            .filter(|(_, i)| i["type"] == kind)
            .map(|(k, i)| (k, i["call_id"].as_str().unwrap().to_string()))
            .collect()
    };
    let (calls, outputs) = (ids("function_call"), ids("function_call_output"));
    for (k, id) in &outputs {
        assert!(calls.iter().any(|(c, cid)| cid == id && c < k), "{id}");
    }
    for (_, id) in &calls {
        assert!(outputs.iter().any(|(_, oid)| oid == id), "{id}");
    }
}

#[tokio::test]
async fn a_streamed_response_is_kept_as_the_client_saw_it() {
    for api in [Protocol::Chat, Protocol::Responses] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let server =
            memory_serve::test_util::spawn_server(config(upstream.url(), api, 100_000)).await;
        let body = json!({"model": "m", "input": "Do the task in 2 steps.", "stream": true,
            "tools": [{"type": "function", "name": "step", "parameters": {"type": "object"}}]});
        let text = post(&server, "/v1/responses", &body, &[])
            .await
            .text()
            .await
            .unwrap();
        let (items, last) = read_stream(&text);
        let id = last["id"].as_str().unwrap();
        let kept = kept_response(&server, id).await;
        assert_eq!(kept, last, "{api:?}");
        // An item of the stream may be named by reference.
        let call = &items[items.len() - 1];
        let next = json!({"model": "m", "input": [
            {"type": "item_reference", "id": call["id"]},
            {"type": "function_call_output", "call_id": call["call_id"], "output": "step 1 of 2 done"}]});
        let answer = post(&server, "/v1/responses", &next, &[]).await;
        assert_eq!(answer.status(), 200, "{api:?}");
    }
}
