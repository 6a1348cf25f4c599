//! `memory replay` on the example session that ships in the repository.

use crate::common;

use common::{example_session, memory, memory_report, replay};

#[test]
fn every_row_is_valid_and_within_budget_where_it_fits() {
    let dir = tempfile::tempdir().unwrap();
    for budget in [300, 1_000, 2_000, 4_000] {
        let (run, report) = replay(&example_session(), budget, "window", dir.path());
        assert_eq!(report.budget, budget);
        assert_eq!(report.trajectories.len(), 1);
        assert_eq!(
            report.totals.calls, 15,
            "one call before each assistant message"
        );
        assert_eq!(report.totals.calls, report.rows.len());
        assert_eq!(report.totals.valid_rows, report.totals.calls);
        for row in &report.rows {
            assert!(
                row.valid,
                "budget {budget}, turn {}: {:?}",
                row.turn, row.problems
            );
            if row.fits {
                assert!(row.tokens_out <= budget, "budget {budget}: {row:?}");
            } else {
                assert!(row.floor_tokens > budget, "budget {budget}: {row:?}");
            }
            assert!(row.tokens_out <= row.tokens_in);
            assert!(row.prefix_kept_tokens <= row.tokens_out);
            assert_eq!(row.summarizer_calls, 0);
        }
        assert!(
            run.stdout.contains(&format!("budget {budget} tokens")),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains("invalid rows: 0"), "{}", run.stdout);
        assert!(run.stderr.is_empty(), "{}", run.stderr);
    }
}

#[test]
fn a_generous_budget_changes_nothing_and_keeps_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = replay(&example_session(), 1_000_000, "window", dir.path());
    assert_eq!(report.totals.tokens_in, report.totals.tokens_out);
    assert_eq!(report.totals.cache_breaks, 0);
    assert_eq!(report.totals.not_fitting_rows, 0);
    let turns: Vec<usize> = report.rows.iter().map(|r| r.turn).collect();
    assert_eq!(
        turns,
        [2, 5, 7, 10, 12, 14, 16, 19, 21, 23, 25, 27, 30, 33, 36]
    );
    for pair in report.rows.windows(2) {
        assert_eq!(pair[1].prefix_kept_tokens, pair[0].tokens_out);
    }
}

#[test]
fn a_tight_budget_breaks_the_cache_and_reports_floors_that_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = replay(&example_session(), 300, "window", dir.path());
    assert!(report.totals.cache_breaks > 0);
    assert!(report.totals.not_fitting_rows > 0);
    assert_eq!(
        report.totals.not_fitting_rows,
        report.totals.over_budget_rows
    );
}

#[test]
fn the_summary_is_printed_without_a_report_file() {
    let input = example_session().display().to_string();
    let run = memory(&[
        "replay",
        "--input",
        &input,
        "--budget",
        "2000",
        "--pipeline",
        "window",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    for label in [
        "input:",
        "pipeline:",
        "calls:",
        "cache:",
        "cost:",
        "support:",
        "invalid rows:",
        "latency:",
    ] {
        assert!(
            run.stdout.contains(label),
            "{label} missing from:\n{}",
            run.stdout
        );
    }
    assert!(run.stdout.lines().count() <= 10);
}

#[test]
fn stages_chain_and_replay_alike() {
    let dir = tempfile::tempdir().unwrap();
    let (_, once) = replay(&example_session(), 1_000, "window", dir.path());
    let (_, twice) = replay(&example_session(), 1_000, "window,window", dir.path());
    let strip = |r: &memory_cli::Report| {
        r.rows
            .iter()
            .map(|row| {
                (
                    row.turn,
                    row.tokens_out,
                    row.messages_out,
                    row.fits,
                    row.valid,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&once), strip(&twice));
}

#[test]
fn two_pipelines_are_set_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("both.json");
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
        "--report",
        &report_path.display().to_string(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let header = lines
        .iter()
        .find(|l| l.contains("window,window"))
        .expect("a header naming both pipelines");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["window", "window,window"]
    );
    let row = |label: &str| -> Vec<String> {
        let line = lines
            .iter()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` row in:\n{}", run.stdout));
        line[label.len()..]
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let report: memory_cli::Report =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    assert_eq!(report.pipelines.len(), 2);
    assert_eq!(report.pipeline, "window");
    assert_eq!(report.rows, report.pipelines[0].rows);
    let t = &report.totals;
    let twice = |v: String| vec![v.clone(), v];
    assert_eq!(row("calls"), twice("15".into()));
    assert_eq!(row("tokens out, total"), twice(t.tokens_out.to_string()));
    assert_eq!(
        row("tokens out, mean"),
        twice(((t.tokens_out as f64 / 15.0).round() as usize).to_string())
    );
    assert_eq!(row("cache breaks"), twice(t.cache_breaks.to_string()));
    assert_eq!(row("summarizer calls"), twice("0".into()));
    assert_eq!(row("summarizer tokens in/out"), twice("0/0".into()));
    assert_eq!(row("invalid rows"), twice("0".into()));
    assert_eq!(row("not fitting"), twice(t.not_fitting_rows.to_string()));
    assert_eq!(row("latency, mean (us)").len(), 2);
    assert_eq!(report.pipelines[1].totals.tokens_out, t.tokens_out);
}

#[test]
fn one_pipeline_keeps_the_report_shape() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = replay(&example_session(), 1_000, "window", dir.path());
    assert!(report.pipelines.is_empty());
    let text = std::fs::read_to_string(dir.path().join("report-1000.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "input",
        "format",
        "pipeline",
        "counter",
        "budget",
        "trajectories",
        "totals",
        "rows",
    ] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    assert!(!keys.contains(&"pipelines"), "{keys:?}");
}

#[test]
fn the_task_floor_keeps_the_first_request_and_can_be_turned_off() {
    // The session's task (about 120 tokens) is the current question until
    // a follow-up request at message 26; from then on it is in the floor
    // only while the task floor is on. Either way every row is valid: the
    // audit holds the replay to the same setting.
    let dir = tempfile::tempdir().unwrap();
    let input = example_session().display().to_string();
    let args = [
        "replay",
        "--input",
        &input,
        "--budget",
        "300",
        "--pipeline",
        "window",
    ];
    let (_, kept) = memory_report(&args, dir.path());
    let mut off_args = args.to_vec();
    off_args.push("--no-task-floor");
    let (_, off) = memory_report(&off_args, dir.path());
    for report in [&kept, &off] {
        assert_eq!(report.totals.valid_rows, report.totals.calls);
        assert_eq!(report.totals.task_rows, report.totals.calls);
    }
    // Kept in every context by default; dropped from some without it.
    assert_eq!(kept.totals.task_kept_rows, kept.totals.calls);
    assert!(off.totals.task_kept_rows < off.totals.calls);
    assert!(kept.rows.iter().all(|r| r.task_kept == Some(true)));
    assert_eq!(kept.rows.len(), off.rows.len());
    for (k, o) in kept.rows.iter().zip(&off.rows) {
        if k.turn < 26 {
            assert_eq!(k.floor_tokens, o.floor_tokens, "turn {}", k.turn);
        } else {
            assert!(k.floor_tokens > o.floor_tokens + 100, "turn {}", k.turn);
        }
    }
    let help = memory(&["replay", "--help"]);
    assert!(help.stdout.contains("--no-task-floor"), "{}", help.stdout);
}
