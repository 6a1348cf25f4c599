//! `memory replay --pipeline summarize`, offline and against an
//! OpenAI-compatible server on loopback.

use crate::common;

use common::{Loopback, example_session, memory, replay, summarize_against};

#[test]
fn the_extractive_summarizer_runs_offline_and_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = replay(&example_session(), 1_000, "summarize", dir.path());
    assert_eq!(report.totals.valid_rows, report.totals.calls);
    assert!(report.totals.summarizer_calls > 0, "{:?}", report.totals);
    assert!(report.totals.summarizer_input_tokens > 0);
    assert!(report.totals.summarizer_output_tokens > 0);
    for row in &report.rows {
        if row.fits {
            assert!(row.tokens_out <= 1_000, "{row:?}");
        }
    }
    assert!(run.stdout.contains("summarizer:"), "{}", run.stdout);
}

#[test]
fn openai_without_an_endpoint_is_a_usage_error() {
    let input = example_session().display().to_string();
    let run = memory(&[
        "replay",
        "--input",
        &input,
        "--budget",
        "1000",
        "--pipeline",
        "summarize",
        "--summarizer",
        "openai",
    ]);
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("--base-url"), "{}", run.stderr);
}

#[test]
fn an_openai_compatible_server_on_loopback_is_called_and_metered() {
    let server = Loopback::start(
        "200 OK",
        r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"The agent is fixing tidyledger's CSV import."},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":12}}"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = summarize_against(&server.url, &["--summarizer", "openai"], dir.path());
    let calls = server.served();
    assert!(calls > 0);
    assert_eq!(report.totals.summarizer_calls, calls as u64);
    assert_eq!(report.totals.summarizer_input_tokens, 900 * calls as u64);
    assert_eq!(report.totals.summarizer_output_tokens, 12 * calls as u64);
    assert_eq!(report.totals.valid_rows, report.totals.calls);
    let body: serde_json::Value = serde_json::from_str(&server.bodies()[0]).unwrap();
    assert_eq!(body["model"], "test-model");
}

#[test]
fn added_summarizer_latency_shows_in_the_calls_that_summarize() {
    let input = example_session().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("r.json");
    let run = memory(&[
        "replay",
        "--input",
        &input,
        "--budget",
        "1000",
        "--pipeline",
        "summarize",
        "--summarizer-latency-ms",
        "40",
        "--report",
        &report_path.display().to_string(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report: memory_cli::Report =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let slow: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.summarizer_calls > 0)
        .collect();
    assert!(!slow.is_empty());
    for row in slow {
        assert!(row.latency_us >= 40_000 * row.summarizer_calls, "{row:?}");
    }
}

#[test]
fn summary_options_reach_every_request() {
    let server = Loopback::start(
        "200 OK",
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"The agent is fixing the CSV import."},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":9}}"#,
    );
    let url = server.url.clone();
    let input = example_session().display().to_string();
    let base = [
        "replay",
        "--input",
        &input,
        "--budget",
        "1000",
        "--pipeline",
        "summarize",
        "--base-url",
        &url,
        "--model",
        "test-model",
    ];
    let run = memory(&base);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let asked = server.bodies().len();
    assert!(asked > 0);
    for body in server.bodies() {
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body["temperature"], 0.0,
            "summaries default to temperature 0"
        );
    }

    let mut args = base.to_vec();
    args.extend([
        "--summary-max-tokens",
        "300",
        "--max-input-tokens",
        "6000",
        "--temperature",
        "0.25",
        "--timeout-ms",
        "5000",
        "--retries",
        "0",
    ]);
    let run = memory(&args);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let bodies = server.bodies();
    assert!(bodies.len() > asked);
    for body in &bodies[asked..] {
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["temperature"], 0.25);
        assert!(body["max_tokens"].as_u64().unwrap() <= 300, "{body}");
    }
}

#[test]
fn a_dead_endpoint_gets_a_handful_of_requests_each_counted() {
    let server = Loopback::start(
        "503 Service Unavailable",
        r#"{"error":{"message":"upstream down"}}"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = summarize_against(&server.url, &["--retries", "1"], dir.path());
    let sent = server.served() as u64;
    // Three calls of two attempts each, then the circuit stays open (the
    // offline summarizer is called 11 times at this budget).
    assert_eq!(sent, 6, "{}", run.stderr);
    let t = &report.totals;
    assert_eq!(t.summarizer_calls, sent, "every request sent is counted");
    assert_eq!(t.summarizer_failures.server_error, sent);
    assert_eq!(t.valid_rows, t.calls);
}

#[test]
fn replies_the_stage_refuses_are_counted_as_failures_by_kind() {
    // Chatter that says nothing about the session: every call's reply is
    // refused by the stage as ungrounded, and counted as such.
    let chatter = Loopback::start(
        "200 OK",
        r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"I'm ready to assist with any code you'd like me to work on."},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":12}}"#,
    );
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = summarize_against(&chatter.url, &["--summarizer", "openai"], dir.path());
    let calls = chatter.served() as u64;
    assert!(calls > 0, "{}", run.stderr);
    let t = &report.totals;
    assert_eq!(t.summarizer_failures.ungrounded, calls);
    assert_eq!(t.summarizer_failures.total(), calls);
    // A blank reply is malformed.
    let blank = Loopback::start(
        "200 OK",
        r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"  "},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":1}}"#,
    );
    let (_, report) = summarize_against(&blank.url, &["--summarizer", "openai"], dir.path());
    let calls = blank.served() as u64;
    assert!(calls > 0);
    assert_eq!(report.totals.summarizer_failures.malformed_reply, calls);
}
