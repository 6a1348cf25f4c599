//! Where `memory` sends the API key, against a loopback server that
//! records each request's `Authorization` header: `OPENAI_API_KEY` never
//! to another endpoint than the OpenAI API, a variable named with
//! `--api-key-env` to the endpoint it is named for, and a named variable
//! that is unset is a usage error naming it. (That `OPENAI_API_KEY` does
//! reach `https://api.openai.com` is the library's rule, which the command
//! uses as it is; `memory-openai`'s `tests/keys.rs` shows it.)

use crate::common;

use common::{
    Loopback, example_session, memory_with_env, summarize_against_with_env, summarize_args,
};

const SUMMARY: &str = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"The agent is fixing the CSV import."},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":9}}"#;

#[test]
fn the_default_key_is_not_sent_to_another_endpoint() {
    let server = Loopback::start("200 OK", SUMMARY);
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = summarize_against_with_env(
        &server.url,
        &[],
        &[("OPENAI_API_KEY", "sk-cli-default")],
        dir.path(),
    );
    let keys = server.authorizations();
    assert!(!keys.is_empty(), "the summarizer was called");
    assert!(keys.iter().all(Option::is_none), "{keys:?}");
    assert!(
        run.stderr
            .contains("OPENAI_API_KEY goes only to https://api.openai.com"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_named_variable_is_sent_to_the_endpoint() {
    let server = Loopback::start("200 OK", SUMMARY);
    let dir = tempfile::tempdir().unwrap();
    summarize_against_with_env(
        &server.url,
        &["--api-key-env", "MEMORY_TEST_GATEWAY_KEY"],
        &[
            ("MEMORY_TEST_GATEWAY_KEY", "sk-cli-gateway"),
            ("OPENAI_API_KEY", "sk-cli-default"),
        ],
        dir.path(),
    );
    let keys = server.authorizations();
    assert!(!keys.is_empty(), "the summarizer was called");
    for key in keys {
        assert_eq!(key.as_deref(), Some("Bearer sk-cli-gateway"));
    }
}

#[test]
fn a_named_variable_that_is_unset_is_a_usage_error_naming_it() {
    let server = Loopback::start("200 OK", SUMMARY);
    let input = example_session().display().to_string();
    let mut args = summarize_args(&server.url, &input);
    args.extend(["--api-key-env", "MEMORY_TEST_MISSPELLED_KEY"]);
    let run = memory_with_env(&args, &[("OPENAI_API_KEY", "sk-cli-default")]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--api-key-env MEMORY_TEST_MISSPELLED_KEY"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("is not set"), "{}", run.stderr);
    assert_eq!(server.served(), 0, "nothing was sent");
}
