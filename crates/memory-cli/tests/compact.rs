//! `--pipeline compact` and `compact,thrift`, in the foreground and in the
//! background.

use crate::common;

use common::{example_session, memory_report, replay};

#[test]
fn compact_replays_are_valid_and_call_the_summarizer() {
    let dir = tempfile::tempdir().unwrap();
    // At 1,500 tokens a summary of the example session's early steps
    // leaves room for the steps it keeps (at 1,000 none would: the fit
    // sheds there instead).
    for pipeline in ["compact", "compact,thrift"] {
        let (_, report) = replay(&example_session(), 1_500, pipeline, dir.path());
        assert_eq!(report.totals.valid_rows, report.totals.calls, "{pipeline}");
        assert!(report.totals.summarizer_calls > 0, "{pipeline}");
        for row in &report.rows {
            if row.fits {
                assert!(row.tokens_out <= 1_500, "{pipeline}: {row:?}");
            }
        }
    }
}

#[test]
fn in_the_background_no_call_waits_for_a_slow_summarizer() {
    let input = example_session().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = memory_report(
        &[
            "replay",
            "--input",
            &input,
            "--budget",
            "1500",
            "--pipeline",
            "compact,thrift",
            "--background",
            "--summarizer-latency-ms",
            "2000",
        ],
        dir.path(),
    );
    assert_eq!(report.totals.valid_rows, report.totals.calls);
    // At 1,500 tokens a background summary is worth starting (at 1,000
    // none would leave room for the steps it keeps).
    assert!(report.totals.background_summaries_started > 0);
    for row in &report.rows {
        assert!(
            row.latency_us < 2_000_000,
            "a call waited for the summarizer: {row:?}"
        );
        assert!(row.fits && row.tokens_out <= 1_500, "{row:?}");
    }
}

#[test]
fn background_summaries_land_when_turns_take_as_long_as_model_calls() {
    let input = example_session().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = memory_report(
        &[
            "replay",
            "--input",
            &input,
            "--budget",
            "1500",
            "--pipeline",
            "compact,thrift",
            "--background",
            "--summarizer-latency-ms",
            "20",
            "--turn-delay-ms",
            "60",
        ],
        dir.path(),
    );
    assert_eq!(report.totals.valid_rows, report.totals.calls);
    assert!(report.totals.summarizer_calls > 0);
    assert!(
        report.totals.summarizer_input_tokens > 0,
        "finished background summaries are reported: {:?}",
        report.totals
    );
}
