//! The provider layers of `memory_layer` over `OpenAiProvider`,
//! against a real HTTP server on loopback: retries that honour
//! `Retry-After`, a timeout per attempt, metering of every request sent,
//! and a circuit breaker that opens, fails fast and recovers.

mod server;

use std::time::{Duration, Instant};

use memory_core::{ChatRequest, Message, Provider, ProviderError};
use memory_layer::{BreakerPolicy, ProviderExt, RetryPolicy};
use memory_openai::OpenAiProvider;
use serde_json::json;
use server::{Reply, Server};

fn completion(content: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 42, "completion_tokens": 7}
        }),
    )
}

fn failure(status: u16) -> Reply {
    Reply::json(status, json!({"error": {"message": "upstream failed"}}))
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

/// Retries with millisecond waits, so the tests stay fast.
fn quick_retries(retries: u32) -> RetryPolicy {
    RetryPolicy::new(retries, Duration::from_millis(1))
}

#[tokio::test]
async fn the_retry_layer_waits_what_retry_after_asks() {
    let server = Server::start([
        Reply::json(429, json!({"error": {"message": "Rate limit reached"}}))
            .header("retry-after", "0.2"),
        Reply::json(503, json!({"error": {"message": "Loading model"}}))
            .header("retry-after", "0.2"),
        completion("ok"),
    ])
    .await;
    let stack = provider(&server).with_retry(quick_retries(3));
    let started = Instant::now();
    let reply = stack.chat(request()).await.unwrap();
    assert_eq!(reply.message.text(), "ok");
    assert_eq!(server.received().len(), 3);
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "Retry-After not honoured: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn retries_are_bounded_and_only_for_failures_that_may_pass() {
    let limited = || {
        Reply::json(429, json!({"error": {"message": "Rate limit reached"}}))
            .header("retry-after", "0.01")
    };
    let server = Server::start([limited(), limited(), limited(), limited()]).await;
    let error = provider(&server)
        .with_retry(quick_retries(2))
        .chat(request())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProviderError::RateLimited {
            retry_after_ms: Some(10),
            message: "Rate limit reached".into()
        }
    );
    assert_eq!(server.received().len(), 3, "one attempt and two retries");

    let server = Server::start([
        Reply::json(401, json!({"error": {"message": "Incorrect API key"}})),
        completion("unused"),
    ])
    .await;
    let error = provider(&server)
        .with_retry(quick_retries(3))
        .chat(request())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ProviderError::Authentication(_)),
        "{error:?}"
    );
    assert_eq!(server.received().len(), 1, "a bad key is not retried");
}

#[tokio::test]
async fn the_timeout_layer_limits_each_attempt() {
    let server = Server::start([completion("late").after(Duration::from_millis(800))]).await;
    let started = Instant::now();
    let error = provider(&server)
        .with_timeout(Duration::from_millis(100))
        .chat(request())
        .await
        .unwrap_err();
    assert_eq!(error, ProviderError::Timeout(100));
    assert!(started.elapsed() < Duration::from_millis(700));

    // Under a retry layer, the slow attempt is abandoned and the next one
    // answers.
    let server = Server::start([
        completion("late").after(Duration::from_millis(800)),
        completion("on time"),
    ])
    .await;
    let reply = provider(&server)
        .with_timeout(Duration::from_millis(100))
        .with_retry(quick_retries(1))
        .chat(request())
        .await
        .unwrap();
    assert_eq!(reply.message.text(), "on time");
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn metering_under_the_retries_counts_every_request_sent() {
    // The reply is a summary of the request (the meter judges it as one).
    let server = Server::start([
        failure(500),
        failure(502),
        completion("The user asked to fix src/lib.rs."),
    ])
    .await;
    let metered = provider(&server).metered();
    let meter = metered.meter();
    let stack = metered.with_retry(quick_retries(3));
    stack.chat(request()).await.unwrap();
    let stats = meter.snapshot();
    assert_eq!(server.received().len(), 3);
    assert_eq!((stats.calls, stats.failures), (3, 2));
    assert_eq!(stats.by_class.server_error, 2);
    assert_eq!((stats.input_tokens, stats.output_tokens), (42, 7));
    let (_, first) = meter.first_failure().unwrap();
    assert!(first.contains("500"), "{first}");
}

#[tokio::test]
async fn the_breaker_opens_fails_fast_and_recovers() {
    let server = Server::start([failure(500), failure(503), completion("back")]).await;
    let stack =
        provider(&server).with_circuit_breaker(BreakerPolicy::new(2, Duration::from_millis(150)));
    for _ in 0..2 {
        let error = stack.chat(request()).await.unwrap_err();
        assert!(matches!(error, ProviderError::Server { .. }), "{error:?}");
    }
    assert!(stack.is_open());
    let started = Instant::now();
    let error = stack.chat(request()).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::CircuitOpen { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("check that the endpoint is up"));
    assert!(started.elapsed() < Duration::from_millis(50), "not fast");
    assert_eq!(server.received().len(), 2, "nothing sent while open");

    tokio::time::sleep(Duration::from_millis(200)).await;
    let reply = stack.chat(request()).await.unwrap();
    assert_eq!(reply.message.text(), "back");
    assert!(!stack.is_open());
    assert_eq!(server.received().len(), 3);
}
