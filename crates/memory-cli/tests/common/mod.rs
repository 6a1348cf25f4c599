//! Running the built `memory` binary.

#![allow(dead_code)]

mod loopback;

#[allow(unused_imports)] // not every test file starts a server
pub use loopback::Loopback;

use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run printed, and how it ended.
pub struct Run {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Everything printed on stdout.
    pub stdout: String,
    /// Everything printed on stderr.
    pub stderr: String,
}

/// Runs `memory` with `args`.
pub fn memory(args: &[&str]) -> Run {
    memory_with_env(args, &[])
}

/// Runs `memory` with `args` and the environment variables `env` set.
pub fn memory_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_memory"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the memory binary runs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The example session that ships in the repository.
pub fn example_session() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/data/agent-session.json")
}

/// The small LoCoMo-shaped fixture: one sample, two sessions, eight
/// questions (one with a malformed id only, one without evidence).
pub fn locomo_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/locomo-mini.json")
}

/// Runs `memory eval locomo` on `input` at `budget` with one `--pipeline`
/// per entry of `pipelines`, writes the report into `dir`, and returns the
/// run and the parsed report.
pub fn eval_locomo(
    input: &Path,
    budget: usize,
    pipelines: &[&str],
    dir: &Path,
) -> (Run, memory_cli::EvalReport) {
    eval_locomo_with(input, budget, pipelines, &[], dir)
}

/// [`eval_locomo`] with more options (`extra`, e.g. `--no-task-floor`).
pub fn eval_locomo_with(
    input: &Path,
    budget: usize,
    pipelines: &[&str],
    extra: &[&str],
    dir: &Path,
) -> (Run, memory_cli::EvalReport) {
    let report = dir.join(format!("eval-{budget}.json"));
    let input = input.display().to_string();
    let budget_text = budget.to_string();
    let report_text = report.display().to_string();
    let mut args = vec![
        "eval",
        "locomo",
        "--input",
        &input,
        "--budget",
        &budget_text,
        "--report",
        &report_text,
    ];
    for pipeline in pipelines {
        args.extend(["--pipeline", pipeline]);
    }
    args.extend(extra);
    let run = memory(&args);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let text = std::fs::read_to_string(&report).expect("the report is written");
    let parsed = serde_json::from_str(&text).expect("the report is valid JSON");
    (run, parsed)
}

/// Replays `input` at `budget` through `pipeline`, writes the report into
/// `dir`, and returns the run and the parsed report.
pub fn replay(
    input: &Path,
    budget: usize,
    pipeline: &str,
    dir: &Path,
) -> (Run, memory_cli::Report) {
    let report = dir.join(format!("report-{budget}.json"));
    let run = memory(&[
        "replay",
        "--input",
        &input.display().to_string(),
        "--budget",
        &budget.to_string(),
        "--pipeline",
        pipeline,
        "--report",
        &report.display().to_string(),
    ]);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let text = std::fs::read_to_string(&report).expect("the report is written");
    let parsed = serde_json::from_str(&text).expect("the report is valid JSON");
    (run, parsed)
}

/// Runs `memory` with `args` plus `--report` into `dir`, expects success,
/// and returns the run and the parsed report.
pub fn memory_report(args: &[&str], dir: &Path) -> (Run, memory_cli::Report) {
    memory_report_with_env(args, &[], dir)
}

/// [`memory_report`] with the environment variables `env` set.
pub fn memory_report_with_env(
    args: &[&str],
    env: &[(&str, &str)],
    dir: &Path,
) -> (Run, memory_cli::Report) {
    let path = dir.join("report.json");
    let path_text = path.display().to_string();
    let mut all = args.to_vec();
    all.extend(["--report", path_text.as_str()]);
    let run = memory_with_env(&all, env);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let text = std::fs::read_to_string(&path).expect("the report is written");
    let report = serde_json::from_str(&text).expect("the report is valid JSON");
    (run, report)
}

/// Replays the example session through `summarize` at 1,000 tokens against
/// the OpenAI-compatible server at `url` (model `test-model`, no API key:
/// none is named for it),
/// with `extra` options; expects success and returns the run and report.
pub fn summarize_against(url: &str, extra: &[&str], dir: &Path) -> (Run, memory_cli::Report) {
    summarize_against_with_env(url, extra, &[], dir)
}

/// [`summarize_against`] with the environment variables `env` set.
pub fn summarize_against_with_env(
    url: &str,
    extra: &[&str],
    env: &[(&str, &str)],
    dir: &Path,
) -> (Run, memory_cli::Report) {
    let input = example_session().display().to_string();
    let mut args = summarize_args(url, &input);
    args.extend_from_slice(extra);
    memory_report_with_env(&args, env, dir)
}

/// The arguments that replay `input` through `summarize` at 1,000 tokens
/// against the OpenAI-compatible server at `url` (model `test-model`).
pub fn summarize_args<'a>(url: &'a str, input: &'a str) -> Vec<&'a str> {
    vec![
        "replay",
        "--input",
        input,
        "--budget",
        "1000",
        "--pipeline",
        "summarize",
        "--base-url",
        url,
        "--model",
        "test-model",
    ]
}

/// Writes a LoCoMo file of `samples` conversations into `dir`, each of
/// `utterances` utterances (about 25 tokens each, speakers alternating)
/// and `questions` questions (categories 1 to 4 in turn) whose answer is
/// the ring number only the utterance they name as evidence holds; returns
/// its path.
pub fn long_locomo(dir: &Path, samples: usize, utterances: usize, questions: usize) -> PathBuf {
    const PLACES: [&str; 5] = ["harbour", "market", "orchard", "library", "bakery"];
    const ANIMALS: [&str; 7] = ["heron", "badger", "otter", "magpie", "fox", "hare", "swan"];
    let ring = |k: usize| 1_000 + 7 * k;
    let utterance = |k: usize| {
        format!(
            "Day {k}: I walked {} km to the {} and saw a {} with ring {}.",
            k % 13 + 1,
            PLACES[k % PLACES.len()],
            ANIMALS[k % ANIMALS.len()],
            ring(k)
        )
    };
    let sample = |s: usize| {
        let session: Vec<serde_json::Value> = (1..=utterances)
            .map(|k| {
                serde_json::json!({
                    "speaker": if k % 2 == 1 { "Ada" } else { "Ben" },
                    "dia_id": format!("D1:{k}"),
                    "text": utterance(k),
                })
            })
            .collect();
        let qa: Vec<serde_json::Value> = (0..questions)
            .map(|q| {
                let k = q * utterances / questions.max(1) + 1;
                serde_json::json!({
                    "question": format!("What was seen on day {k}?"),
                    "answer": format!("ring {}", ring(k)),
                    "evidence": [format!("D1:{k}")],
                    "category": q % 4 + 1,
                })
            })
            .collect();
        serde_json::json!({
            "sample_id": format!("long-{s}"),
            "conversation": {"speaker_a": "Ada", "speaker_b": "Ben", "session_1": session},
            "qa": qa,
        })
    };
    let all: Vec<serde_json::Value> = (0..samples).map(sample).collect();
    let path = dir.join(format!("long-{samples}x{utterances}x{questions}.json"));
    std::fs::write(&path, serde_json::to_string(&all).unwrap()).unwrap();
    path
}
