//! `--pipeline thrift` in replays and evaluations.

use crate::common;

use common::{eval_locomo, example_session, locomo_fixture, replay};

#[test]
fn thrift_replays_are_valid_and_fit_where_they_say_so() {
    let dir = tempfile::tempdir().unwrap();
    for pipeline in ["thrift", "window,thrift", "summarize,thrift"] {
        for budget in [300, 1_000, 2_000] {
            let (_, report) = replay(&example_session(), budget, pipeline, dir.path());
            assert_eq!(
                report.totals.valid_rows, report.totals.calls,
                "{pipeline} at {budget}"
            );
            for row in &report.rows {
                if row.fits {
                    assert!(row.tokens_out <= budget, "{pipeline} at {budget}: {row:?}");
                }
            }
        }
    }
}

#[test]
fn thrift_recalls_more_evidence_than_the_newest_turns_at_a_tight_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = eval_locomo(&locomo_fixture(), 60, &["window", "thrift"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let window = &report.result.totals;
    let thrift = &report.pipelines[1].totals;
    assert!(
        thrift.evidence_recall >= window.evidence_recall,
        "thrift {} < window {}",
        thrift.evidence_recall,
        window.evidence_recall
    );
}

#[test]
fn the_report_carries_what_thrift_shed_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = replay(&example_session(), 1_000, "thrift", dir.path());
    assert!(report.rows.iter().all(|r| r.thrift.is_some()));
    let shed: Vec<_> = report
        .rows
        .iter()
        .filter_map(|r| r.thrift.as_ref())
        .filter(|t| t.tokens_after < t.tokens_before)
        .collect();
    assert!(!shed.is_empty(), "a 1,000-token budget makes thrift shed");
    for (row, trace) in report
        .rows
        .iter()
        .zip(report.rows.iter().map(|r| r.thrift.as_ref().unwrap()))
    {
        // What thrift kept, and the index of what it left out.
        assert_eq!(
            trace.tokens_after + row.index_tokens,
            row.tokens_out,
            "{row:?}"
        );
    }
    let (_, window) = replay(&example_session(), 1_000, "window", dir.path());
    assert!(window.rows.iter().all(|r| r.thrift.is_none()));
}
