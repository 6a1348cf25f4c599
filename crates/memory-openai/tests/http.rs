//! `OpenAiProvider` against a real HTTP server on loopback: what it sends,
//! how it reads replies, and how it classifies failures, one attempt per
//! call (the layers that retry are tested in `layers.rs`).

use crate::server;

use memory_core::{
    ChatRequest, Message, ModelOptions, Provider, ProviderError, StopReason, ToolCall, Usage,
};
use memory_openai::OpenAiProvider;
use serde_json::json;
use server::{Reply, Server};

fn completion(content: &str, finish_reason: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason
            }],
            "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
        }),
    )
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("Summarize."),
        Message::user("user: fix src/lib.rs"),
    ])
}

fn provider(server: &Server) -> OpenAiProvider {
    OpenAiProvider::new(server.base_url(), "test-model")
}

#[tokio::test]
async fn a_reply_is_read_with_its_usage_and_stop_reason() {
    let server = Server::start([completion("The fix is in src/lib.rs.", "stop")]).await;
    let reply = provider(&server).chat(request()).await.unwrap();
    assert_eq!(
        reply.message,
        Message::assistant("The fix is in src/lib.rs.")
    );
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 42,
            output_tokens: 7
        }
    );
    assert_eq!(reply.stop_reason, StopReason::Stop);
}

#[tokio::test]
async fn finish_reasons_map_to_stop_reasons() {
    for (finish, expected) in [
        ("length", StopReason::Length),
        ("content_filter", StopReason::Refusal),
        ("tool_calls", StopReason::ToolCalls),
        ("stop", StopReason::Stop),
    ] {
        let server = Server::start([completion("partial", finish)]).await;
        let reply = provider(&server).chat(request()).await.unwrap();
        assert_eq!(reply.stop_reason, expected, "{finish}");
    }
}

#[tokio::test]
async fn the_request_carries_the_body_the_key_and_the_headers() {
    let server = Server::start([completion("ok", "stop")]).await;
    let provider = provider(&server)
        .with_api_key("sk-test-123")
        .with_header("x-route", "summarizer")
        .with_header("x-tenant", "builder-default");
    let mut request = request();
    request.messages.push(Message::assistant_with_tools(
        "",
        vec![ToolCall::new("c1", "read", r#"{"path":"a.rs"}"#)],
    ));
    request
        .messages
        .push(Message::tool_result("c1", "fn a() {}"));
    request.options = ModelOptions {
        temperature: Some(0.25),
        max_tokens: Some(256),
        ..ModelOptions::default()
    };
    request
        .options
        .headers
        .insert("x-tenant".into(), "acme".into());
    request.options.extra.insert("seed".into(), json!(7));
    provider.chat(request).await.unwrap();

    let received = server.received();
    assert_eq!(received.len(), 1);
    let r = &received[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], "Bearer sk-test-123");
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.headers["x-route"], "summarizer");
    // A request's own headers win over the provider's.
    assert_eq!(r.headers["x-tenant"], "acme");
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["max_tokens"], 256);
    assert_eq!(r.body["temperature"], 0.25);
    assert_eq!(r.body["seed"], 7);
    assert_eq!(
        r.body["messages"][0],
        json!({"role": "system", "content": "Summarize."})
    );
    assert_eq!(r.body["messages"][1]["content"], "user: fix src/lib.rs");
    assert_eq!(
        r.body["messages"][2]["tool_calls"][0]["function"]["name"],
        "read"
    );
    assert_eq!(r.body["messages"][3]["tool_call_id"], "c1");
}

#[test]
fn the_key_is_never_printed() {
    let provider = OpenAiProvider::new("http://127.0.0.1:9/v1", "m")
        .with_api_key("sk-very-secret")
        .with_header("x-api-key", "also-secret");
    let shown = format!("{provider:?}");
    assert!(!shown.contains("sk-very-secret"), "{shown}");
    assert!(!shown.contains("also-secret"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
    assert!(shown.contains("x-api-key"), "{shown}");
}

#[tokio::test]
async fn each_call_is_one_attempt() {
    let server = Server::start([
        Reply::json(500, json!({"error": {"message": "internal error"}})),
        completion("unused", "stop"),
    ])
    .await;
    let error = provider(&server).chat(request()).await.unwrap_err();
    assert_eq!(
        error,
        ProviderError::Server {
            status: 500,
            message: "internal error".into()
        }
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn retry_after_goes_into_the_error() {
    let server = Server::start([
        Reply::json(429, json!({"error": {"message": "Rate limit reached"}}))
            .header("retry-after", "2"),
        Reply::json(503, json!({"error": {"message": "Loading model"}}))
            .header("retry-after", "0.5"),
    ])
    .await;
    let p = provider(&server);
    assert_eq!(
        p.chat(request()).await.unwrap_err(),
        ProviderError::RateLimited {
            retry_after_ms: Some(2_000),
            message: "Rate limit reached".into()
        }
    );
    assert_eq!(
        p.chat(request()).await.unwrap_err(),
        ProviderError::RateLimited {
            retry_after_ms: Some(500),
            message: "HTTP 503: Loading model".into()
        }
    );
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_401_is_an_authentication_error() {
    let server = Server::start([
        Reply::json(
            401,
            json!({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}),
        ),
        completion("unused", "stop"),
    ])
    .await;
    let error = provider(&server)
        .with_api_key("sk-wrong")
        .chat(request())
        .await
        .unwrap_err();
    let ProviderError::Authentication(message) = &error else {
        panic!("expected an authentication error, got {error:?}");
    };
    assert!(message.contains("Incorrect API key provided"));
    assert!(!error.to_string().contains("sk-wrong"));
    assert!(error.to_string().contains("check the API key"));
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_context_overflow_is_recognized() {
    let server = Server::start([Reply::json(
        400,
        json!({"error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded"
        }}),
    )])
    .await;
    let error = provider(&server).chat(request()).await.unwrap_err();
    assert!(
        matches!(&error, ProviderError::ContextOverflow(m) if m.contains("8192")),
        "{error:?}"
    );
    assert!(error.to_string().contains("summarize in chunks"));
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_malformed_reply() {
    let server = Server::start([Reply::text(200, "<html>gateway says hi</html>")]).await;
    let error = provider(&server).chat(request()).await.unwrap_err();
    assert!(
        matches!(&error, ProviderError::MalformedReply(m) if m.contains("not JSON") && m.contains("gateway says hi")),
        "{error:?}"
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_closed_port_is_a_network_error() {
    let provider = OpenAiProvider::new(server::closed_base_url(), "test-model");
    let error = provider.chat(request()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Network(_)), "{error:?}");
    assert!(error.to_string().contains("check the base URL"));
}
