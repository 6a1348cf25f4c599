//! An agent loop whose model calls `recall` for the handle it needs gets
//! back what it needs: through `WindowMemory`, and through the server with
//! `--recall server` (streamed and not) and `--recall client`.

use std::sync::Arc;
use std::time::Duration;

use memory_core::recall::{Handle, RECALL_TOOL, RecallRequest};
use memory_core::{InMemoryStore, Memory, Message, Store, ToolCall, TrimStrategy};
use memory_openai::wire;
use memory_serve::test_util::{ScriptedUpstream, next_step};
use memory_serve::{BudgetMode, RecallMode, ServeConfig, StreamedReply};
use serde_json::{Value, json};

const SECRET: &str = "SECRET-LINE-42: the port is 8731";

/// A session whose old output the window drops, and a question that names
/// its handle.
fn session() -> Vec<Message> {
    let output = Message::tool_result(
        "c1",
        format!("{SECRET}\n{}", "filler line of the file\n".repeat(200)),
    );
    let handle = Handle::of(std::slice::from_ref(&output));
    vec![
        Message::user("Read the config file."),
        Message::assistant_with_tools(
            "",
            vec![ToolCall::new("c1", "cat", r#"{"path":"app.conf"}"#)],
        ),
        output,
        Message::assistant("I read it."),
        Message::user(format!("Which port was it? It is in {handle}.")),
    ]
}

#[tokio::test]
async fn through_window_memory() {
    let mut memory = memory_session::WindowMemory::new(300);
    for m in session() {
        memory.record(m).await.unwrap();
    }
    assert!(
        !memory
            .context()
            .await
            .unwrap()
            .iter()
            .any(|m| m.text().contains(SECRET))
    );
    // The model asks for the handle; the loop answers from the memory.
    let call = next_step(&memory.context().await.unwrap());
    assert_eq!(call.tool_calls()[0].name, RECALL_TOOL);
    memory.record(call.clone()).await.unwrap();
    for c in call.tool_calls() {
        let request = RecallRequest::from_arguments(&c.arguments).unwrap();
        let recalled = memory.recall(&request).await.unwrap();
        memory
            .record(Message::tool_result(c.id.clone(), recalled.text))
            .await
            .unwrap();
    }
    let answer = next_step(&memory.context().await.unwrap());
    assert!(answer.text().contains(SECRET), "{}", answer.text());
}

#[tokio::test]
async fn through_window_memory_with_the_handle_found_in_the_context() {
    // The question names no handle: the model finds one where the memory
    // put it (the index of what the context leaves out) and recalls each
    // handle it sees until it has what it needs.
    let mut memory = memory_session::WindowMemory::new(600);
    let mut messages = session();
    messages.pop();
    for m in messages {
        memory.record(m).await.unwrap();
    }
    memory
        .record(Message::user("Which port was it?"))
        .await
        .unwrap();
    let context = memory.context().await.unwrap();
    assert!(!context.iter().any(|m| m.text().contains(SECRET)));
    let handles = memory_core::recall::handles_in(&context);
    assert!(!handles.is_empty(), "the context names what it left out");
    let mut answer = None;
    for (k, handle) in handles.iter().enumerate() {
        let id = format!("recall_{k}");
        let args = json!({ "handle": handle.to_string() }).to_string();
        let call = Message::assistant_with_tools("", vec![ToolCall::new(&id, RECALL_TOOL, &args)]);
        memory.record(call).await.unwrap();
        let request = RecallRequest::from_arguments(&args).unwrap();
        let recalled = memory.recall(&request).await.unwrap();
        let found = recalled.text.contains(SECRET);
        memory
            .record(Message::tool_result(id, recalled.text))
            .await
            .unwrap();
        if found {
            answer = Some(next_step(&memory.context().await.unwrap()));
            break;
        }
    }
    let answer = answer.expect("one of the context's handles brings the port back");
    assert!(answer.text().contains(SECRET), "{}", answer.text());
}

async fn start(upstream: &str, store: Arc<dyn Store>, recall: RecallMode) -> String {
    let mut config = ServeConfig::new(
        upstream,
        Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
        store,
    )
    .with_budget(BudgetMode::Tokens(300));
    config.recall = recall;
    memory_serve::test_util::spawn_server(config).await
}

async fn post(server: &str, stream: bool) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{server}/v1/chat/completions"))
        .json(&json!({"model": "m", "stream": stream, "messages": wire::to_value(&session())}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn through_the_server_answering_recalls_itself() {
    for stream in [false, true] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
        let server = start(upstream.url(), store.clone(), RecallMode::Server).await;
        let r = post(&server, stream).await;
        assert_eq!(r.status(), 200);
        let id = r.headers()["x-memory-session"]
            .to_str()
            .unwrap()
            .to_string();
        let reply = if stream {
            let mut reply = StreamedReply::default();
            reply.feed(&r.bytes().await.unwrap());
            reply.message()
        } else {
            let body: Value = r.json().await.unwrap();
            wire::message_from_value(&body["choices"][0]["message"], 0).unwrap()
        };
        // The client sees the answer, never the recall.
        assert!(
            reply.text().contains(SECRET),
            "stream {stream}: {}",
            reply.text()
        );
        assert!(reply.tool_calls().is_empty());
        let got = upstream.received();
        assert_eq!(got.len(), 2, "one recall round");
        assert!(
            got[0].body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["function"]["name"] == RECALL_TOOL)
        );
        let first = wire::from_value(&got[0].body["messages"]).unwrap();
        assert!(
            !first.iter().any(|m| m.text().contains(SECRET)),
            "the window dropped it"
        );
        // The session holds what the client sent and the answer, not the
        // hidden exchange.
        let mut expected = session();
        expected.push(reply);
        assert_eq!(
            memory_serve::test_util::principal_store(&store, None)
                .await
                .history(&id)
                .await
                .unwrap(),
            expected
        );
        // The operator sees the recall the server answered.
        let metrics = memory_serve::test_util::metrics(&server).await;
        assert!(
            metrics.contains(r#"memory_serve_recalls_total{outcome="returned"} 1"#),
            "{metrics}"
        );
    }
}

#[tokio::test]
async fn through_the_client_answering_recalls_from_the_server() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let server = start(upstream.url(), store, RecallMode::Client).await;
    let r = post(&server, false).await;
    let session = r.headers()["x-memory-session"]
        .to_str()
        .unwrap()
        .to_string();
    let body: Value = r.json().await.unwrap();
    let call = wire::message_from_value(&body["choices"][0]["message"], 0).unwrap();
    assert_eq!(call.tool_calls()[0].name, RECALL_TOOL);
    let answer: Value = reqwest::Client::new()
        .post(format!("{server}/v1/memory/sessions/{session}/recall"))
        .header("content-type", "application/json")
        .body(call.tool_calls()[0].arguments.clone())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(answer["text"].as_str().unwrap().contains(SECRET));
    assert_eq!(answer["whole"], true);
}
