//! `memory replay --store sqlite:PATH --session ID`: a replay persists and
//! resumes where the stored session ends.

use crate::common;

use common::{example_session, memory};
use memory_core::Store;

fn replay_into(input: &str, db: &str, report: &str) -> common::Run {
    memory(&[
        "replay",
        "--input",
        input,
        "--budget",
        "1000",
        "--pipeline",
        "window",
        "--store",
        &format!("sqlite:{db}"),
        "--session",
        "s1",
        "--report",
        report,
    ])
}

fn rows(path: &std::path::Path) -> Vec<memory_cli::Row> {
    let report: memory_cli::Report =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    report.rows
}

#[test]
fn a_replay_persists_and_resumes_after_what_the_session_holds() {
    let dir = tempfile::tempdir().unwrap();
    let full: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example_session()).unwrap()).unwrap();
    let all = full.as_array().unwrap();
    let head = dir.path().join("head.json");
    std::fs::write(&head, serde_json::to_string(&all[..20]).unwrap()).unwrap();
    let db = dir.path().join("sessions.db").display().to_string();
    let input = example_session().display().to_string();

    let first = dir.path().join("first.json");
    let run = replay_into(
        &head.display().to_string(),
        &db,
        &first.display().to_string(),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let second = dir.path().join("second.json");
    let run = replay_into(&input, &db, &second.display().to_string());
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    // The resumed run measures only the calls after the stored 20 messages,
    // and measures them as one uninterrupted run does.
    let whole = dir.path().join("whole.json");
    let run = memory(&[
        "replay",
        "--input",
        &input,
        "--budget",
        "1000",
        "--pipeline",
        "window",
        "--report",
        &whole.display().to_string(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let resumed = rows(&second);
    let expected: Vec<_> = rows(&whole).into_iter().filter(|r| r.turn >= 20).collect();
    assert_eq!(resumed.len(), expected.len());
    for (a, b) in resumed.iter().zip(&expected) {
        assert_eq!(
            (a.turn, a.tokens_in, a.tokens_out, a.valid),
            (b.turn, b.tokens_in, b.tokens_out, b.valid)
        );
    }

    let store = memory_sqlite::SqliteStore::open(&db).unwrap();
    let history = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(store.history("s1/window"))
        .unwrap();
    assert_eq!(history.len(), all.len());
}

#[test]
fn a_session_holding_another_transcript_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db").display().to_string();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"[{"role": "user", "content": "something else"}]"#).unwrap();
    let report = dir.path().join("r.json").display().to_string();
    assert_eq!(
        replay_into(&other.display().to_string(), &db, &report).code,
        Some(0)
    );
    let run = replay_into(&example_session().display().to_string(), &db, &report);
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("holds another transcript"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unknown_store_is_a_usage_error() {
    let input = example_session().display().to_string();
    let run = memory(&[
        "replay",
        "--input",
        &input,
        "--budget",
        "1000",
        "--pipeline",
        "window",
        "--store",
        "redis:localhost",
    ]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("sqlite:PATH"), "{}", run.stderr);
}
