//! Bad input and bad usage: exit 2, one line naming the file and the
//! position, never a panic.

use crate::common;

use std::path::Path;

use common::memory;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.display().to_string()
}

fn replay(input: &str, extra: &[&str]) -> common::Run {
    let mut args = vec![
        "replay",
        "--input",
        input,
        "--budget",
        "1000",
        "--pipeline",
        "window",
    ];
    args.extend_from_slice(extra);
    memory(&args)
}

/// Exit 2 and exactly one line on stderr, starting `memory: FILE: POSITION`.
fn assert_rejected(run: &common::Run, file: &str, position: &str, problem: &str) {
    assert_eq!(run.code, Some(2), "stderr: {}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "one line: {}", run.stderr);
    let expected = format!("memory: {file}: {position}: ");
    assert!(
        run.stderr.starts_with(&expected),
        "expected {expected:?}, got {}",
        run.stderr
    );
    assert!(
        run.stderr.contains(problem),
        "expected {problem:?} in {}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

const ORPHAN: &str = r#"[
  {"role": "system", "content": "You are a coding agent."},
  {"role": "user", "content": "Run the tests."},
  {"role": "tool", "tool_call_id": "call_9", "content": "3 passed"},
  {"role": "assistant", "content": "All three tests pass."}
]"#;

#[test]
fn a_missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("absent.json").display().to_string();
    let run = replay(&file, &[]);
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.lines().count(), 1);
    assert!(
        run.stderr
            .starts_with(&format!("memory: {file}: cannot read the file: ")),
        "{}",
        run.stderr
    );
}

#[test]
fn a_gigabyte_transcript_is_refused_before_it_is_read() {
    // A sparse file: a gigabyte by its size, no disk used.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.json");
    std::fs::File::create(&path)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let file = path.display().to_string();
    let run = replay(&file, &[]);
    assert_eq!(run.code, Some(2), "stderr: {}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!(
            "memory: {file}: 1073741824 bytes or more, over the limit"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn invalid_utf8_names_the_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "latin1.json",
        b"[{\"role\": \"user\",\n  \"content\": \"caf\xe9\"}]",
    );
    assert_rejected(
        &replay(&file, &[]),
        &file,
        "line 2, byte 35",
        "invalid UTF-8 (byte 0xe9)",
    );
}

#[test]
fn truncated_json_names_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "truncated.json",
        b"[\n  {\"role\": \"user\", \"content\": \"hi\"},\n  {\"role\": \"assistant\", \"content\": \"hel",
    );
    assert_rejected(
        &replay(&file, &[]),
        &file,
        "line 3, column 39",
        "invalid JSON: EOF while parsing a string",
    );
}

#[test]
fn a_broken_jsonl_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "session.jsonl",
        b"{\"role\": \"user\", \"content\": \"hi\"}\n{\"role\": \"assistant\", \"content\": \"hello\"}\n{\"role\": \"user\", \"content\": }\n",
    );
    assert_rejected(
        &replay(&file, &[]),
        &file,
        "line 3, column 29",
        "invalid JSON: expected value",
    );
}

#[test]
fn a_non_object_message_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "strings.json",
        br#"[{"role": "user", "content": "hi"}, "hello"]"#,
    );
    assert_rejected(
        &replay(&file, &[]),
        &file,
        "message 1",
        "expected an object, found a string",
    );
}

#[test]
fn a_missing_role_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "norole.json",
        br#"[{"messages": [{"role": "user", "content": "a"}]}, {"messages": [{"role": "user", "content": "b"}, {"content": "c"}]}]"#,
    );
    assert_rejected(
        &replay(&file, &[]),
        &file,
        "trajectory 1, message 1",
        "field `role`: is missing",
    );
}

#[test]
fn a_document_that_is_no_transcript_says_what_is_expected() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("empty.json", &b""[..]),
        ("number.json", b"42"),
        ("object.json", b"{\"a\": 1}"),
    ] {
        let file = write(dir.path(), name, bytes);
        assert_rejected(
            &replay(&file, &[]),
            &file,
            "line 1",
            "expected OpenAI chat JSON",
        );
    }
}

#[test]
fn an_orphan_tool_result_is_rejected_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "orphan.json", ORPHAN.as_bytes());
    assert_rejected(
        &replay(&file, &[]),
        &file,
        "message 2",
        "invalid transcript: tool result for `call_9` has no tool call; pass --repair",
    );
    let wrapped = format!(r#"[{{"messages": []}}, {{"messages": {ORPHAN}}}]"#);
    let file = write(dir.path(), "orphan-trajectories.json", wrapped.as_bytes());
    assert_rejected(
        &replay(&file, &[]),
        &file,
        "trajectory 1, message 2",
        "has no tool call",
    );
}

#[test]
fn repair_accepts_the_orphan_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "orphan.json", ORPHAN.as_bytes());
    let report = dir.path().join("report.json");
    let run = replay(
        &file,
        &["--repair", "--report", &report.display().to_string()],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.stderr.trim_end(),
        format!("memory: {file}: transcript: --repair made 1 fix: 1 orphan tool result dropped")
    );
    assert!(run.stdout.contains("repaired:     1 fix"), "{}", run.stdout);
    let report: memory_cli::Report =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    assert_eq!(report.trajectories[0].repairs, 1);
    assert_eq!(report.trajectories[0].messages, 3);
    assert_eq!(report.rows.len(), 1);
    assert!(report.rows[0].valid);
}

#[test]
fn unknown_stages_and_counters_list_the_known_ones() {
    let file = common::example_session().display().to_string();
    let run = memory(&[
        "replay",
        "--input",
        &file,
        "--budget",
        "100",
        "--pipeline",
        "window,shrink",
    ]);
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(
            "memory: unknown stage `shrink` in --pipeline; known stages: window, thrift, compact, summarize"
        ),
        "{}",
        run.stderr
    );
    let run = memory(&[
        "replay",
        "--input",
        &file,
        "--budget",
        "100",
        "--pipeline",
        "window,",
    ]);
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let run = memory(&[
        "replay",
        "--input",
        &file,
        "--budget",
        "100",
        "--pipeline",
        "window",
        "--counter",
        "words",
    ]);
    assert_eq!(run.code, Some(2));
    assert_eq!(
        run.stderr.trim_end(),
        "memory: unknown counter `words` in --counter; known counters: chars, cl100k, o200k, hf:FILE"
    );
}

#[test]
fn a_zero_or_non_numeric_budget_is_a_usage_error() {
    let file = common::example_session().display().to_string();
    for budget in ["0", "many", "-5", "1.5"] {
        let run = memory(&[
            "replay",
            "--input",
            &file,
            "--budget",
            budget,
            "--pipeline",
            "window",
        ]);
        assert_eq!(run.code, Some(2), "budget {budget}: {}", run.stderr);
        assert!(run.stderr.contains("--budget"), "{}", run.stderr);
        assert!(!run.stderr.contains("panicked"));
    }
}

#[test]
fn an_unwritable_report_fails_after_replaying() {
    let dir = tempfile::tempdir().unwrap();
    let file = common::example_session().display().to_string();
    let report = dir
        .path()
        .join("no-such-dir")
        .join("report.json")
        .display()
        .to_string();
    let run = replay(&file, &["--report", &report]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr.lines().count(), 1);
    assert!(
        run.stderr
            .starts_with(&format!("memory: {report}: cannot write the report: ")),
        "{}",
        run.stderr
    );
}
