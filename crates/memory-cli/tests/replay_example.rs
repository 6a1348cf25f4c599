//! `memory replay` on the example session that ships in the repository.

mod common;

use common::{example_session, memory, replay};

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
        "cache breaks:",
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
