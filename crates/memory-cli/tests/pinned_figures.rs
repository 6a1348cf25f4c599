//! The figures that matter, recomputed from the data set and compared with
//! the ones pinned in `figures/pinned.json`: per trajectory file, budget
//! and pipeline the cost per call, cache breaks, support and reachable
//! support recall, and the invalid, not fitting and over-budget rows;
//! LoCoMo's evidence, reachable and answer recall at 1,000 and 2,000
//! tokens; how much slower thrift's call is over the last 500 calls of a
//! long chat than over its first 500. Counts and recalls must match
//! exactly (to a float's rounding); the time ratio must stay under its
//! ceiling.
//!
//! A change that moves a figure updates the file in the same commit and
//! says why: `MEMORY_PIN_FIGURES=1 cargo test -p memory-cli --test
//! pinned_figures` writes the figures it finds (the time ceiling kept),
//! then `git diff figures/` shows what moved.
//!
//! Found through `MEMORY_DATA_DIR`; skipped with a notice when it is not
//! set, failed when it is not set under CI.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The trajectory files replayed, under `agent-trajectories/`.
const FILES: [&str; 2] = ["swe-gym-openhands", "swe-smith-text"];
const BUDGETS: [usize; 3] = [2_000, 4_000, 8_000];
const PIPELINES: [&str; 5] = ["window", "thrift", "summarize", "compact", "compact,thrift"];
/// The replay figures kept of each pipeline's totals.
const REPLAY_FIGURES: [&str; 8] = [
    "calls",
    "cost_per_call",
    "cache_breaks",
    "support_recall",
    "reachable_support_recall",
    "valid_rows",
    "not_fitting_rows",
    "over_budget_rows",
];
const LOCOMO_BUDGETS: [usize; 2] = [1_000, 2_000];
const LOCOMO_PIPELINES: [&str; 3] = ["window", "thrift", "compact,thrift"];
const LOCOMO_FIGURES: [&str; 4] = [
    "questions",
    "evidence_recall",
    "reachable_evidence_recall",
    "answer_recall",
];
/// The long chat's budget (as the figures in the README).
const CHAT_BUDGET: usize = 8_000;
/// How many times the LoCoMo conversations are chained into the long chat.
const CHAT_TIMES: usize = 2;

fn pinned_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../figures/pinned.json")
}

#[test]
fn the_pinned_figures_hold() {
    let Some(data) = memory_core::test_util::DATA.value() else {
        return;
    };
    let data = PathBuf::from(data);
    let dir = tempfile::tempdir().unwrap();
    let mut found = measured_figures(&data, dir.path());
    let ratio = long_chat_ratio(&data, dir.path());
    let pinned: Value = match std::fs::read_to_string(pinned_path()) {
        Ok(text) => serde_json::from_str(&text).expect("figures/pinned.json is JSON"),
        Err(_) => json!({}),
    };
    let ceiling = pinned["long_chat"]["thrift_last_to_first_500_max"].as_f64();
    found["long_chat"] = json!({
        "budget": CHAT_BUDGET,
        "times": CHAT_TIMES,
        "thrift_last_to_first_500_max": ceiling.unwrap_or(3.0),
    });
    if std::env::var_os("MEMORY_PIN_FIGURES").is_some() {
        let text = serde_json::to_string_pretty(&found).unwrap() + "\n";
        std::fs::write(pinned_path(), text).expect("figures/pinned.json is written");
        eprintln!("figures pinned; the long chat's ratio is {ratio:.2}");
        return;
    }
    let moved = differences(&pinned, &found);
    assert!(
        moved.is_empty(),
        "figures moved from figures/pinned.json (update it with MEMORY_PIN_FIGURES=1 and say why):\n{}",
        moved.join("\n")
    );
    let ceiling = ceiling.expect("a ceiling is pinned");
    assert!(
        ratio <= ceiling,
        "thrift's call over the last 500 calls of the long chat is {ratio:.2}x its first 500, over the pinned {ceiling}"
    );
}

/// One run of `memory` whose report gives figures: its arguments, its
/// report, its section of the figures and the key its pipelines' figures
/// go under (`"{prefix} {pipeline}"`).
struct Job {
    args: Vec<String>,
    report: PathBuf,
    section: &'static str,
    prefix: String,
}

/// The replay and LoCoMo figures, every run at once (each a process of
/// its own): by `"FILE BUDGET PIPELINE"` under `replay` and by
/// `"BUDGET PIPELINE"` under `locomo`.
fn measured_figures(data: &Path, dir: &Path) -> Value {
    let mut jobs = Vec::new();
    for file in FILES {
        let input = data.join(format!("agent-trajectories/{file}.json"));
        for budget in BUDGETS {
            let report = dir.join(format!("{file}-{budget}.json"));
            let mut args = command(&["replay"], &input, budget, &report, &PIPELINES);
            args.extend(["--pricing".into(), "anthropic".into()]);
            let prefix = format!("{file} {budget}");
            jobs.push(Job {
                args,
                report,
                section: "replay",
                prefix,
            });
        }
    }
    let input = data.join("locomo/locomo-dev.json");
    for budget in LOCOMO_BUDGETS {
        let report = dir.join(format!("locomo-{budget}.json"));
        let args = command(
            &["eval", "locomo"],
            &input,
            budget,
            &report,
            &LOCOMO_PIPELINES,
        );
        let prefix = budget.to_string();
        jobs.push(Job {
            args,
            report,
            section: "locomo",
            prefix,
        });
    }
    let reports: Vec<Value> = std::thread::scope(|scope| {
        let running: Vec<_> = jobs
            .iter()
            .map(|job| scope.spawn(|| run_for_report(&job.args, &job.report)))
            .collect();
        running.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut found = json!({"replay": {}, "locomo": {}});
    for (job, report) in jobs.iter().zip(reports) {
        for p in report["pipelines"]
            .as_array()
            .expect("one entry a pipeline")
        {
            let key = format!("{} {}", job.prefix, p["pipeline"].as_str().unwrap());
            let figures = match job.section {
                "replay" => kept(&p["totals"], &REPLAY_FIGURES),
                _ => kept(p, &LOCOMO_FIGURES),
            };
            found[job.section][key] = figures;
        }
    }
    found
}

/// Thrift's mean time per call over the last 500 calls of the long chat
/// (`scripts/locomo-long-chat.py`) over its mean over the first 500.
fn long_chat_ratio(data: &Path, dir: &Path) -> f64 {
    let chat = dir.join("long-chat.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/locomo-long-chat.py");
    let made = Command::new("python3")
        .arg(&script)
        .arg(&chat)
        .args(["--times", &CHAT_TIMES.to_string()])
        .env("MEMORY_DATA_DIR", data)
        .output()
        .expect("python3 runs the long-chat script");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let report = dir.join("long-chat-report.json");
    let args = command(&["replay"], &chat, CHAT_BUDGET, &report, &["thrift"]);
    let report = run_for_report(&args, &report);
    let times = &report["totals"]["latency_us_first_last"];
    let (first, last) = (times[0].as_f64().unwrap(), times[1].as_f64().unwrap());
    last / first.max(1.0)
}

/// The arguments of `memory SUBCOMMAND` on `input` at `budget` with the
/// chars counter, writing `report`, one `--pipeline` each of `pipelines`.
fn command(
    subcommand: &[&str],
    input: &Path,
    budget: usize,
    report: &Path,
    pipelines: &[&str],
) -> Vec<String> {
    let mut args: Vec<String> = subcommand.iter().map(|s| s.to_string()).collect();
    args.extend([
        "--input".into(),
        input.display().to_string(),
        "--budget".into(),
        budget.to_string(),
        "--counter".into(),
        "chars".into(),
        "--report".into(),
        report.display().to_string(),
    ]);
    for pipeline in pipelines {
        args.extend(["--pipeline".into(), (*pipeline).into()]);
    }
    args
}

/// Runs `memory` with `args`, which write a report to `report`, and
/// returns the report.
fn run_for_report(args: &[String], report: &Path) -> Value {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = common::memory(&args);
    assert_eq!(run.code, Some(0), "memory {args:?}: {}", run.stderr);
    serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap()
}

/// The `names` fields of `totals`.
fn kept(totals: &Value, names: &[&str]) -> Value {
    let mut out = serde_json::Map::new();
    for name in names {
        out.insert((*name).into(), totals[*name].clone());
    }
    Value::Object(out)
}

/// Where `found` differs from `pinned` (the long chat's ceiling aside), a
/// line each: numbers equal to a float's rounding.
fn differences(pinned: &Value, found: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for section in ["replay", "locomo"] {
        let (Some(p), Some(f)) = (pinned[section].as_object(), found[section].as_object()) else {
            out.push(format!("{section}: not pinned"));
            continue;
        };
        for (key, figures) in f {
            for (name, value) in figures.as_object().unwrap() {
                let was = &p.get(key).map_or(Value::Null, |v| v[name].clone());
                if !same(was, value) {
                    out.push(format!("{section} {key} {name}: pinned {was}, now {value}"));
                }
            }
        }
        for key in p.keys().filter(|k| !f.contains_key(*k)) {
            out.push(format!("{section} {key}: pinned, no longer measured"));
        }
    }
    out
}

/// Whether two figures are the same: numbers to a float's rounding.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}
