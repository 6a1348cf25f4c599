//! SWE-agent trajectories (`.traj`) and single trajectory objects replay
//! through every kind of pipeline, detected by content.

use crate::common;

use std::path::{Path, PathBuf};

use common::{memory, memory_report};
use memory_cli::Report;

/// Small enough that both fixtures are trimmed from their third call on.
const BUDGET: &str = "650";

const PIPELINES: [&str; 4] = ["window", "thrift", "compact,thrift", "summarize"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Replays `input` through every pipeline of [`PIPELINES`] at [`BUDGET`].
fn replay_all(input: &Path, dir: &Path) -> Report {
    replay(input, BUDGET, &PIPELINES, dir)
}

/// Replays `input` through `pipelines` at `budget`.
fn replay(input: &Path, budget: &str, pipelines: &[&str], dir: &Path) -> Report {
    let input = input.display().to_string();
    let mut args = vec!["replay", "--input", &input, "--budget", budget];
    for pipeline in pipelines {
        args.extend(["--pipeline", pipeline]);
    }
    let (run, report) = memory_report(&args, dir);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    report
}

/// Every pipeline made `calls` calls, every row valid, and the budget
/// trimmed some context.
fn assert_replayed(report: &Report, format: &str, calls: usize) {
    assert_eq!(report.format, format);
    assert_eq!(report.trajectories.len(), 1);
    let names: Vec<&str> = report
        .pipelines
        .iter()
        .map(|p| p.pipeline.as_str())
        .collect();
    assert_eq!(names, PIPELINES);
    for section in &report.pipelines {
        let name = &section.pipeline;
        assert_eq!(section.rows.len(), calls, "{name}");
        for row in &section.rows {
            assert!(row.valid, "{name}, turn {}: {:?}", row.turn, row.problems);
        }
        assert!(
            section.rows.iter().any(|r| r.tokens_out < r.tokens_in),
            "{name}: the budget should force trimming"
        );
    }
}

#[test]
fn a_function_calling_traj_replays_with_every_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let report = replay_all(&fixture("swe-agent-tools.traj"), dir.path());
    assert_replayed(&report, "SWE-agent trajectory", 6);
    // 15 history entries; the parallel call's two observations are two results.
    assert_eq!(report.trajectories[0].messages, 15);
}

#[test]
fn a_thought_action_traj_replays_with_every_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let report = replay_all(&fixture("swe-agent-text.traj"), dir.path());
    assert_replayed(&report, "SWE-agent trajectory", 7);
    assert_eq!(report.trajectories[0].messages, 17);
}

#[test]
fn a_traj_is_detected_by_content_not_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let renamed = dir.path().join("run-output.json");
    std::fs::copy(fixture("swe-agent-text.traj"), &renamed).unwrap();
    let report = replay_all(&renamed, dir.path());
    assert_replayed(&report, "SWE-agent trajectory", 7);
}

#[test]
fn a_bad_history_entry_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.traj");
    let text = std::fs::read_to_string(fixture("swe-agent-tools.traj")).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["history"][4]["tool_calls"] = serde_json::json!({"id": "call_02"});
    std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let file = path.display().to_string();
    let run = memory(&[
        "replay",
        "--input",
        &file,
        "--budget",
        BUDGET,
        "--pipeline",
        "window",
    ]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "memory: {file}: history entry 4: field `tool_calls`: expected an array, found an object"
        )
    );
}

#[test]
fn one_pretty_printed_trajectory_object_replays() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    let messages = serde_json::json!({
        "id": "session-1",
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Which tests fail?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "t1", "type": "function",
                 "function": {"name": "bash", "arguments": "{\"command\": \"pytest -q\"}"}}]},
            {"role": "tool", "tool_call_id": "t1", "content": "1 failed, 12 passed"},
            {"role": "assistant", "content": "One test fails: test_round_trip."}
        ]
    });
    std::fs::write(&path, serde_json::to_string_pretty(&messages).unwrap()).unwrap();
    let report = replay(&path, BUDGET, &["window"], dir.path());
    assert_eq!(report.format, "OpenAI chat trajectories, JSON");
    assert_eq!(report.trajectories.len(), 1);
    assert_eq!(report.trajectories[0].label.as_deref(), Some("session-1"));
    assert_eq!(report.trajectories[0].messages, 5);
    assert_eq!(report.rows.len(), 2);
    assert!(report.rows.iter().all(|r| r.valid));
}

/// A thought/action trajectory whose long demonstration comes before the
/// issue: the issue is the task (kept in every context), the demonstration
/// an early turn that a budget may drop.
#[test]
fn the_task_of_a_traj_is_the_request_after_its_demonstrations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo-first.traj");
    let demo = "An example session: open the file, find the bug, edit it. ".repeat(50);
    let mut history = vec![
        serde_json::json!({"role": "system", "content": "You are an autonomous programmer."}),
        serde_json::json!({"role": "user", "content": demo, "is_demo": true,
                           "message_type": "demonstration"}),
        serde_json::json!({"role": "user", "content": "Fix parse_duration in src/timeparse.py: it drops minutes.",
                           "message_type": "observation"}),
    ];
    for k in 0..6 {
        history.push(serde_json::json!({"role": "assistant",
            "content": format!("Step {k}: looking again.\n```\nopen src/timeparse.py\n```")}));
        history.push(serde_json::json!({"role": "user",
            "content": format!("[File: src/timeparse.py] line {k}: {}", "x = 1\n".repeat(30))}));
    }
    history.push(serde_json::json!({"role": "assistant", "content": "```\nsubmit\n```"}));
    std::fs::write(&path, serde_json::json!({"history": history}).to_string()).unwrap();
    let report = replay(&path, "400", &["window", "thrift"], dir.path());
    for section in &report.pipelines {
        let name = &section.pipeline;
        assert_eq!(section.rows.len(), 7, "{name}");
        for row in &section.rows {
            assert!(row.valid, "{name}, turn {}: {:?}", row.turn, row.problems);
            assert_eq!(row.task_kept, Some(true), "{name}, turn {}", row.turn);
        }
        // The demonstration alone is over the budget: a context fits only
        // without it.
        assert!(section.rows.iter().skip(1).all(|r| r.fits), "{name}");
    }
}
