//! The replay's measures on hand-made transcripts whose answers are known:
//! cost under prefix-cache pricing, support recall, and what the command
//! says about a failing summarizer.

use crate::common;

use std::path::Path;

use common::{Loopback, memory, memory_report};

/// A coding session: the agent reads a file, runs the tests, then edits
/// the file it read (its arguments name what only the read showed).
fn session() -> serde_json::Value {
    let filler = "log line without names ".repeat(20);
    serde_json::json!([
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "The date parser rejects ISO weeks. Fix it."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"src/dates/parser.py\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "def parse_iso_week(text):\n    raise ValueError(text)\n\nclass WeekParser:\n    pattern = 'YYYY-Www'"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\": \"pytest -q\"}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": filler},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "edit", "arguments": "{\"path\": \"src/dates/parser.py\", \"old\": \"raise ValueError(text)\", \"new\": \"return WeekParser().parse_iso_week(text)\"}"}}]},
        {"role": "tool", "tool_call_id": "c3", "content": "edited"},
        {"role": "assistant", "content": "Fixed parse_iso_week in src/dates/parser.py."}
    ])
}

fn write(dir: &Path, name: &str, value: &serde_json::Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(value).unwrap()).unwrap();
    path.display().to_string()
}

#[test]
fn cost_follows_the_formula_and_a_growing_context_is_served_from_cache() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "s.json", &session());
    for (pricing, (w, r, o)) in [
        ("anthropic", (1.25, 0.10, 5.0)),
        ("openai", (1.0, 0.50, 4.0)),
        ("custom:2,0.2,8", (2.0, 0.2, 8.0)),
    ] {
        let args = [
            "replay",
            "--input",
            &input,
            "--budget",
            "100000",
            "--pipeline",
            "window",
            "--pricing",
            pricing,
        ];
        let (_, report) = memory_report(&args, dir.path());
        assert_eq!(report.rows.len(), 4);
        let mut previous = 0;
        for row in &report.rows {
            // Nothing is trimmed: each context extends the previous one.
            assert!(!row.cache_break, "{row:?}");
            assert_eq!(row.cached_tokens, previous);
            assert_eq!(row.cached_tokens, row.prefix_kept_tokens);
            assert_eq!(row.uncached_tokens, row.tokens_out - row.cached_tokens);
            let want = row.uncached_tokens as f64 * w
                + row.cached_tokens as f64 * r
                + row.summarizer_input_tokens as f64
                + row.summarizer_output_tokens as f64 * o;
            assert!((row.cost - want).abs() < 1e-9, "{pricing}: {row:?}");
            previous = row.tokens_out;
        }
        let t = &report.totals;
        let sum: f64 = report.rows.iter().map(|r| r.cost).sum();
        assert!((t.cost - sum).abs() < 1e-9);
        assert!((t.cost_per_call - sum / 4.0).abs() < 1e-9);
        let cached: usize = report.rows.iter().map(|r| r.cached_tokens).sum();
        assert!((t.cached_share - cached as f64 / t.tokens_out as f64).abs() < 1e-12);
        assert!(
            report
                .pricing
                .starts_with(pricing.split(':').next().unwrap())
        );
    }
}

#[test]
fn summarizer_tokens_are_priced_as_input_and_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "s.json", &session());
    let args = [
        "replay",
        "--input",
        &input,
        "--budget",
        "160",
        "--pipeline",
        "summarize",
        "--pricing",
        "flat",
    ];
    let (_, report) = memory_report(&args, dir.path());
    let summarized: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.summarizer_calls > 0)
        .collect();
    assert!(!summarized.is_empty(), "{:?}", report.rows);
    for row in &report.rows {
        let want = (row.tokens_out as u64
            + row.summarizer_input_tokens
            + row.summarizer_output_tokens) as f64;
        assert!((row.cost - want).abs() < 1e-9, "{row:?}");
    }
}

#[test]
fn support_recall_is_one_when_the_read_is_kept_and_lower_when_it_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "s.json", &session());
    let edit_turn = 6;

    let wide = [
        "replay",
        "--input",
        &input,
        "--budget",
        "100000",
        "--pipeline",
        "window",
    ];
    let (_, report) = memory_report(&wide, dir.path());
    let edit = report.rows.iter().find(|r| r.turn == edit_turn).unwrap();
    // src/dates/parser.py, ValueError, WeekParser and parse_iso_week.
    assert_eq!(edit.support_wanted, 4, "{edit:?}");
    assert_eq!(edit.support_recall, Some(1.0));
    assert_eq!(report.totals.support_recall, Some(1.0));

    // At 150 tokens the window keeps the question and the newest step only.
    let tight = [
        "replay",
        "--input",
        &input,
        "--budget",
        "150",
        "--pipeline",
        "window",
    ];
    let (_, report) = memory_report(&tight, dir.path());
    let edit = report.rows.iter().find(|r| r.turn == edit_turn).unwrap();
    assert!(edit.valid, "{edit:?}");
    assert_eq!(edit.support_wanted, 4, "{edit:?}");
    assert!(edit.support_recall.unwrap() < 1.0, "{edit:?}");
    // The first call has nothing earlier to recall: left out of the mean.
    assert_eq!(report.rows[0].support_recall, None);
    assert!(report.totals.support_rows < report.rows.len());
}

#[test]
fn summarizer_failures_are_warned_once_counted_by_class_and_history_is_kept() {
    // An OpenAI-style server whose model's context is too small for any
    // summary request.
    let server = Loopback::start(
        "400 Bad Request",
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    );
    let dir = tempfile::tempdir().unwrap();
    // --base-url alone implies the openai summarizer, and says so.
    let (run, report) = common::summarize_against(&server.url, &[], dir.path());
    let calls = server.served() as u64;
    assert!(calls > 1, "the server saw {calls} requests");
    let t = &report.totals;
    assert_eq!(t.summarizer_calls, calls);
    assert_eq!(t.summarizer_failures.context_overflow, calls);
    assert_eq!(t.summarizer_failures.total(), calls);
    assert_eq!(t.valid_rows, t.calls);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("warning"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(warnings[0].contains("context overflow"), "{}", run.stderr);
    assert!(
        run.stderr.contains("summarizing with --summarizer openai"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!(
            "{calls} of {calls} summarizer calls failed ({calls} context overflow)"
        )),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("failed"), "{}", run.stdout);
}

#[test]
fn tracing_reaches_stderr_when_rust_log_asks() {
    let input = common::example_session().display().to_string();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_memory"))
        .args([
            "replay",
            "--input",
            &input,
            "--budget",
            "2000",
            "--pipeline",
            "compact",
        ])
        .env("RUST_LOG", "memory_compact=info")
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("older history replaced by a summary"),
        "{stderr}"
    );
    // Not a terminal: no colour codes.
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
}

#[test]
fn summarizer_options_must_make_sense_together() {
    let input = common::example_session().display().to_string();
    let base = ["replay", "--input", &input, "--budget", "1000"];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        memory(&args)
    };
    // The extractive summarizer calls no model: an endpoint is a mistake.
    let r = run(&[
        "--pipeline",
        "summarize",
        "--summarizer",
        "extractive",
        "--base-url",
        "http://127.0.0.1:1/v1",
    ]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("--base-url is for --summarizer openai"),
        "{}",
        r.stderr
    );
    // A pipeline that never summarizes needs no endpoint.
    let r = run(&[
        "--pipeline",
        "window",
        "--pipeline",
        "thrift",
        "--summarizer",
        "openai",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("the summarizer is not called"),
        "{}",
        r.stderr
    );
    // One that does still needs it.
    let r = run(&[
        "--pipeline",
        "window",
        "--pipeline",
        "compact",
        "--summarizer",
        "openai",
    ]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}

#[test]
fn background_summaries_that_never_land_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let input = common::example_session().display().to_string();
    let args = [
        "replay",
        "--input",
        &input,
        "--budget",
        "1500",
        "--pipeline",
        "compact",
        "--background",
        "--summarizer-latency-ms",
        "5000",
    ];
    let (run, report) = memory_report(&args, dir.path());
    let t = &report.totals;
    assert!(t.background_summaries_started > 0, "{t:?}");
    assert_eq!(t.summaries_landed, 0, "{t:?}");
    assert!(
        run.stderr
            .contains("background summaries started, 0 landed"),
        "{}",
        run.stderr
    );
}

#[test]
fn help_reads_as_help() {
    for args in [&["--help"][..], &["eval", "--help"], &["replay", "--help"]] {
        let run = memory(args);
        assert_eq!(run.code, Some(0));
        assert!(!run.stdout.contains("```"), "{}", run.stdout);
        assert!(!run.stdout.contains("unwrap()"), "{}", run.stdout);
        assert!(!run.stdout.contains("use clap"), "{}", run.stdout);
    }
}
