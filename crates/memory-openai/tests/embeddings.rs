//! `OpenAiEmbedder` against a real HTTP server on loopback that answers
//! with fixed vectors: what it sends, how it orders and checks the
//! vectors, how it classifies failures, and the layers over it (a cache
//! with batches, retries, a timeout).

use crate::server;

use std::time::Duration;

use memory_core::{Embedder, ProviderError};
use memory_layer::CachedEmbedder;
use memory_layer::{EmbedderExt, RetryPolicy};
use memory_openai::OpenAiEmbedder;
use serde_json::json;
use server::{Reply, Server};

/// A fixed vector for text number `i`: distinct for each `i`.
fn vector(i: usize) -> Vec<f32> {
    vec![i as f32, 1.0, -0.5 * i as f32]
}

/// An `/embeddings` reply with the fixed vectors of `indices`, listed in
/// the order given.
fn embeddings(indices: &[usize]) -> Reply {
    let data: Vec<_> = indices
        .iter()
        .map(|&i| json!({"object": "embedding", "index": i, "embedding": vector(i)}))
        .collect();
    Reply::json(
        200,
        json!({"object": "list", "data": data, "model": "e5", "usage": {"prompt_tokens": 9, "total_tokens": 9}}),
    )
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("text {i}")).collect()
}

/// The `input` of every request the server received.
fn inputs(server: &Server) -> Vec<serde_json::Value> {
    server
        .received()
        .iter()
        .map(|r| r.body["input"].clone())
        .collect()
}

fn embedder(server: &Server) -> OpenAiEmbedder {
    OpenAiEmbedder::new(server.base_url(), "e5")
}

#[tokio::test]
async fn vectors_come_back_in_the_order_of_the_texts_whatever_the_order_of_data() {
    let server = Server::start([embeddings(&[2, 0, 1])]).await;
    let vectors = embedder(&server)
        .with_api_key("sk-embed")
        .with_header("x-route", "embeddings")
        .embed(&texts(3))
        .await
        .unwrap();
    assert_eq!(vectors, vec![vector(0), vector(1), vector(2)]);

    let received = server.received();
    assert_eq!(received.len(), 1);
    let r = &received[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/embeddings")
    );
    assert_eq!(
        r.body,
        json!({"model": "e5", "input": ["text 0", "text 1", "text 2"]})
    );
    assert_eq!(r.headers["authorization"], "Bearer sk-embed");
    assert_eq!(r.headers["x-route"], "embeddings");
}

#[tokio::test]
async fn the_input_type_and_the_prefix_are_sent_when_set() {
    let server = Server::start([embeddings(&[0, 1])]).await;
    embedder(&server)
        .with_input_type("passage")
        .with_prefix("passage: ")
        .embed(&texts(2))
        .await
        .unwrap();
    assert_eq!(
        server.received()[0].body,
        json!({"model": "e5", "input": ["passage: text 0", "passage: text 1"], "input_type": "passage"})
    );
}

#[tokio::test]
async fn an_empty_call_sends_nothing() {
    let server = Server::start([]).await;
    assert!(embedder(&server).embed(&[]).await.unwrap().is_empty());
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn the_cache_splits_missing_texts_into_batches_and_serves_hits_without_requests() {
    // Three batches for five texts, two at a time; the server holds no
    // reply for a fourth request.
    let server = Server::start([embeddings(&[0, 1]), embeddings(&[1, 0]), embeddings(&[0])]).await;
    let cached = CachedEmbedder::new(embedder(&server)).with_batch_size(2);
    let first = cached.embed(&texts(5)).await.unwrap();
    assert_eq!(
        inputs(&server),
        vec![
            json!(["text 0", "text 1"]),
            json!(["text 2", "text 3"]),
            json!(["text 4"])
        ]
    );
    // Each batch's vectors, by index within the batch.
    assert_eq!(
        first,
        vec![vector(0), vector(1), vector(0), vector(1), vector(0)]
    );

    let again = cached
        .embed(&[texts(5)[3].clone(), texts(5)[0].clone()])
        .await
        .unwrap();
    assert_eq!(again, vec![vector(1), vector(0)]);
    assert_eq!(server.received().len(), 3, "hits send no request");
    assert_eq!(cached.len(), 5);
}

#[tokio::test]
async fn http_errors_are_classified_as_the_chat_providers_are() {
    let server = Server::start([
        Reply::json(401, json!({"error": {"message": "Incorrect API key"}})),
        Reply::json(500, json!({"error": {"message": "inference failed"}})),
        Reply::json(404, json!({"error": {"message": "unknown route"}})),
    ])
    .await;
    let embedder = embedder(&server);
    let error = embedder.embed(&texts(1)).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Authentication(_)),
        "{error:?}"
    );
    assert_eq!(
        embedder.embed(&texts(1)).await.unwrap_err(),
        ProviderError::Server {
            status: 500,
            message: "inference failed".into()
        }
    );
    let error = embedder.embed(&texts(1)).await.unwrap_err();
    assert!(
        matches!(&error, ProviderError::Other(m) if m.contains("HTTP 404") && m.contains("base URL")),
        "{error:?}"
    );
}

#[tokio::test]
async fn replies_that_do_not_hold_one_vector_per_text_are_malformed() {
    let cases = [
        (Reply::text(200, "<html>proxy error</html>"), "not JSON"),
        (
            Reply::json(200, json!({"object": "list"})),
            "no `data` array",
        ),
        (embeddings(&[0]), "1 embeddings in `data` for 2 texts"),
        (embeddings(&[0, 0]), "index 0 comes twice"),
        (embeddings(&[0, 2]), "not an index below 2"),
        (
            Reply::json(
                200,
                json!({"data": [{"index": 0, "embedding": "AACAPw=="}, {"index": 1, "embedding": "AACAPw=="}]}),
            ),
            "a string (base64?)",
        ),
        (
            Reply::json(
                200,
                json!({"data": [{"embedding": [1.0, 2.0]}, {"embedding": [1.0]}]}),
            ),
            "embedding 1 has 1 dimensions",
        ),
        (
            Reply::json(
                200,
                json!({"data": [{"embedding": [1.0, "x"]}, {"embedding": [1.0, 2.0]}]}),
            ),
            "other than numbers",
        ),
    ];
    let (replies, expected): (Vec<_>, Vec<_>) = cases.into_iter().unzip();
    let server = Server::start(replies).await;
    let embedder = embedder(&server);
    for what in expected {
        match embedder.embed(&texts(2)).await {
            Err(ProviderError::MalformedReply(message)) => {
                assert!(message.contains(what), "{what}: {message}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_closed_port_is_a_network_error() {
    let embedder = OpenAiEmbedder::new(server::closed_base_url(), "e5");
    let error = embedder.embed(&texts(1)).await.unwrap_err();
    assert!(matches!(error, ProviderError::Network(_)), "{error:?}");
}

#[tokio::test]
async fn the_retry_layer_resends_a_failed_batch_only() {
    let server = Server::start([
        embeddings(&[0, 1]),
        Reply::json(503, json!({"error": {"message": "busy"}})).header("retry-after", "0"),
        Reply::json(502, json!({"error": {"message": "bad gateway"}})),
        embeddings(&[0]),
    ])
    .await;
    let cached = CachedEmbedder::new(
        embedder(&server).with_retry(RetryPolicy::new(3, Duration::from_millis(1))),
    )
    .with_batch_size(2);
    let vectors = cached.embed(&texts(3)).await.unwrap();
    assert_eq!(vectors, vec![vector(0), vector(1), vector(0)]);
    assert_eq!(
        inputs(&server),
        vec![
            json!(["text 0", "text 1"]),
            json!(["text 2"]),
            json!(["text 2"]),
            json!(["text 2"])
        ]
    );

    // What may not pass on a second try is not retried.
    let server = Server::start([
        Reply::json(401, json!({"error": {"message": "Incorrect API key"}})),
        embeddings(&[0]),
    ])
    .await;
    let retried = embedder(&server).with_retry(RetryPolicy::new(3, Duration::from_millis(1)));
    let error = retried.embed(&texts(1)).await.unwrap_err();
    assert!(
        matches!(error, ProviderError::Authentication(_)),
        "{error:?}"
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn the_timeout_layer_limits_each_attempt() {
    let server = Server::start([
        embeddings(&[0]).after(Duration::from_millis(800)),
        embeddings(&[0]),
    ])
    .await;
    let limited = embedder(&server).with_timeout(Duration::from_millis(100));
    assert_eq!(
        limited.embed(&texts(1)).await.unwrap_err(),
        ProviderError::Timeout(100)
    );
    // Under a retry, a timed-out attempt is tried again.
    let retried = limited.with_retry(RetryPolicy::new(1, Duration::from_millis(1)));
    assert_eq!(retried.embed(&texts(1)).await.unwrap(), vec![vector(0)]);
}
