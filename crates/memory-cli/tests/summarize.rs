//! `memory replay --pipeline summarize`, offline and against an
//! OpenAI-compatible server on loopback.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{example_session, memory, replay};

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

/// Answers every request with one chat completion, counting the requests
/// and remembering the last body.
fn serve(
    listener: TcpListener,
    served: Arc<AtomicUsize>,
    bodies: Arc<std::sync::Mutex<Vec<String>>>,
) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { return };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).unwrap();
        bodies
            .lock()
            .unwrap()
            .push(String::from_utf8_lossy(&body).into_owned());
        served.fetch_add(1, Ordering::SeqCst);
        let reply = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"The agent is fixing tidyledger's CSV import."},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":12}}"#;
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
            reply.len()
        );
        let _ = stream.write_all(response.as_bytes());
    }
}

#[test]
fn an_openai_compatible_server_on_loopback_is_called_and_metered() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let (served, bodies) = (served.clone(), bodies.clone());
        std::thread::spawn(move || serve(listener, served, bodies));
    }
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("r.json");
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
        "--base-url",
        &url,
        "--model",
        "test-model",
        "--api-key-env",
        "MEMORY_TEST_NO_SUCH_KEY",
        "--report",
        &report_path.display().to_string(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report: memory_cli::Report =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let calls = served.load(Ordering::SeqCst);
    assert!(calls > 0);
    assert_eq!(report.totals.summarizer_calls, calls as u64);
    assert_eq!(report.totals.summarizer_input_tokens, 900 * calls as u64);
    assert_eq!(report.totals.summarizer_output_tokens, 12 * calls as u64);
    assert_eq!(report.totals.valid_rows, report.totals.calls);
    let body: serde_json::Value = serde_json::from_str(&bodies.lock().unwrap()[0]).unwrap();
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
