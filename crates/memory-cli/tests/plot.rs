//! `memory replay --plot FILE.svg`.

use crate::common;

use common::{example_session, memory};

#[test]
fn the_plot_names_each_pipeline_and_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("tokens.svg");
    let run = memory(&[
        "replay",
        "--input",
        &example_session().display().to_string(),
        "--budget",
        "1000",
        "--pipeline",
        "window",
        "--pipeline",
        "window,window",
        "--plot",
        &svg.display().to_string(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let text = std::fs::read_to_string(&svg).expect("the plot is written");
    assert!(text.starts_with("<svg"), "{}", &text[..text.len().min(80)]);
    for label in [
        "window: mean",
        "window,window: mean",
        "budget (1000 tokens)",
        "agent-session.json",
        "cache break",
        "summarizer call",
        "model call",
        "tokens sent",
    ] {
        assert!(text.contains(label), "{label} missing from the SVG");
    }
}

#[test]
fn an_unwritable_plot_fails_after_replaying() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir
        .path()
        .join("no-such-dir")
        .join("tokens.svg")
        .display()
        .to_string();
    let run = memory(&[
        "replay",
        "--input",
        &example_session().display().to_string(),
        "--budget",
        "1000",
        "--pipeline",
        "window",
        "--plot",
        &svg,
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with(&format!("memory: {svg}: cannot write the plot: ")),
        "{}",
        run.stderr
    );
}

#[test]
fn the_cost_plot_names_each_pipeline_with_its_total() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("cost.svg");
    let report = dir.path().join("r.json");
    let run = memory(&[
        "replay",
        "--input",
        &example_session().display().to_string(),
        "--budget",
        "1000",
        "--pipeline",
        "window",
        "--pipeline",
        "summarize",
        "--pricing",
        "openai",
        "--plot-cost",
        &svg.display().to_string(),
        "--report",
        &report.display().to_string(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report: memory_cli::Report =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let text = std::fs::read_to_string(&svg).expect("the plot is written");
    assert!(text.starts_with("<svg"));
    for section in report.sections() {
        let label = format!("{}: {:.0} in all", section.pipeline, section.totals.cost);
        assert!(text.contains(&label), "{label} missing from the SVG");
    }
    for label in ["Cumulative cost", "openai", "cost so far"] {
        assert!(text.contains(label), "{label} missing from the SVG");
    }
}
