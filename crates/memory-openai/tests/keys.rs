//! Where the API key goes, against real servers on loopback that record
//! the `Authorization` header: `$OPENAI_API_KEY` only to the OpenAI API
//! (`https://api.openai.com`, played here by a TLS server whose certificate
//! names that host, reached through the client's resolver), any other
//! endpoint only a key from a variable named for it, and a named variable
//! that is unset an error naming it.
//!
//! The default variable's cases need `OPENAI_API_KEY` set to a test value;
//! a test process cannot set its own environment safely, so
//! `the_default_key_goes_only_to_the_openai_api` runs this binary again,
//! with it set, for `default_key_cases`.

use crate::server;

use std::process::Command;
use std::sync::Arc;

use memory_core::{ChatRequest, Message, Provider, ProviderError};
use memory_openai::{DEFAULT_API_KEY_ENV, OpenAiProvider};
use serde_json::json;
use server::{Reply, Server};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::PrivateKeyDer;

/// The default variable's value in the child process.
const TEST_KEY: &str = "sk-test-default-key";

fn completion() -> Reply {
    Reply::json(
        200,
        json!({
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop"
            }]
        }),
    )
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::user("hi")])
}

/// The `Authorization` header of the one request `server` received.
fn authorization(server: &Server) -> Option<String> {
    let received = server.received();
    assert_eq!(received.len(), 1, "one request");
    received[0].headers.get("authorization").cloned()
}

/// A TLS server on loopback with a self-signed certificate for
/// `api.openai.com`, and a client that reaches that host at the server
/// and trusts the certificate.
async fn openai_double() -> (Server, reqwest::Client) {
    let certified = rcgen::generate_simple_self_signed(vec!["api.openai.com".to_string()])
        .expect("a certificate");
    let key = PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    let server = Server::start_tls([completion()], TlsAcceptor::from(Arc::new(config))).await;
    let root = reqwest::Certificate::from_der(certified.cert.der()).unwrap();
    let client = reqwest::Client::builder()
        .resolve("api.openai.com", server.addr())
        .add_root_certificate(root)
        .build()
        .unwrap();
    (server, client)
}

#[tokio::test]
#[ignore = "run by the_default_key_goes_only_to_the_openai_api, with OPENAI_API_KEY set"]
async fn default_key_cases() {
    assert_eq!(
        std::env::var(DEFAULT_API_KEY_ENV).as_deref(),
        Ok(TEST_KEY),
        "run by the_default_key_goes_only_to_the_openai_api"
    );

    // The OpenAI API gets the default variable's key.
    let (openai, client) = openai_double().await;
    let base = format!("https://api.openai.com:{}/v1", openai.addr().port());
    OpenAiProvider::new(&base, "gpt-4o-mini")
        .with_client(client)
        .chat(request())
        .await
        .unwrap();
    assert_eq!(
        authorization(&openai).as_deref(),
        Some(&*format!("Bearer {TEST_KEY}"))
    );

    // Any other endpoint does not: a local server...
    let local = Server::start([completion()]).await;
    OpenAiProvider::new(local.base_url(), "m")
        .chat(request())
        .await
        .unwrap();
    assert_eq!(authorization(&local), None);

    // ... nor the OpenAI host over plain HTTP (the name resolved to a
    // plain server on loopback).
    let plain = Server::start([completion()]).await;
    let client = reqwest::Client::builder()
        .resolve("api.openai.com", plain.addr())
        .build()
        .unwrap();
    OpenAiProvider::new(
        format!("http://api.openai.com:{}/v1", plain.addr().port()),
        "m",
    )
    .with_client(client)
    .chat(request())
    .await
    .unwrap();
    assert_eq!(authorization(&plain), None);

    // Named explicitly, the same variable goes where it is named for.
    let named = Server::start([completion()]).await;
    OpenAiProvider::new(named.base_url(), "m")
        .with_api_key_env(DEFAULT_API_KEY_ENV)
        .chat(request())
        .await
        .unwrap();
    assert_eq!(
        authorization(&named).as_deref(),
        Some(&*format!("Bearer {TEST_KEY}"))
    );
}

#[test]
fn the_default_key_goes_only_to_the_openai_api() {
    // The case's name in this binary: its module path less the crate's.
    let case = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::default_key_cases"),
        None => "default_key_cases".to_string(),
    };
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--ignored", "--exact", &case, "--nocapture"])
        .env(DEFAULT_API_KEY_ENV, TEST_KEY)
        .output()
        .expect("run the test binary");
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the cases ran: {text}");
}

#[tokio::test]
async fn a_named_variable_goes_to_any_endpoint() {
    // `cargo test` sets CARGO_PKG_NAME for the test process.
    let Ok(value) = std::env::var("CARGO_PKG_NAME") else {
        panic!("CARGO_PKG_NAME is set by cargo for its tests; run them with cargo test");
    };
    let server = Server::start([completion()]).await;
    OpenAiProvider::new(server.base_url(), "m")
        .with_api_key_env("CARGO_PKG_NAME")
        .chat(request())
        .await
        .unwrap();
    assert_eq!(authorization(&server), Some(format!("Bearer {value}")));
}

#[tokio::test]
async fn a_named_variable_that_is_unset_fails_the_call_naming_it_and_sends_nothing() {
    let server = Server::start([completion()]).await;
    let provider = OpenAiProvider::new(server.base_url(), "m")
        .with_api_key_env("MEMORY_OPENAI_TEST_NEVER_SET");
    let checked = provider.check_api_key().unwrap_err();
    let error = provider.chat(request()).await.unwrap_err();
    for error in [checked, error] {
        let ProviderError::Authentication(message) = &error else {
            panic!("an authentication error: {error:?}");
        };
        assert!(
            message.contains("MEMORY_OPENAI_TEST_NEVER_SET"),
            "{message}"
        );
    }
    assert!(server.received().is_empty(), "nothing was sent");
}
