//! `memory eval locomo` on the real LoCoMo conversations, found through
//! `MEMORY_DATA_DIR`; skipped with a notice when it is not set.

mod common;

use std::path::PathBuf;

fn locomo_file() -> Option<PathBuf> {
    let dir = std::env::var_os("MEMORY_DATA_DIR")?;
    let path = PathBuf::from(dir).join("locomo/locomo-dev.json");
    path.exists().then_some(path)
}

#[test]
fn most_recent_turns_recall_about_a_tenth_of_the_evidence_at_2000_tokens() {
    let Some(path) = locomo_file() else {
        println!("skipped: MEMORY_DATA_DIR not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = common::eval_locomo(&path, 2_000, &["window"], dir.path());
    let t = &report.result.totals;
    assert_eq!(report.samples.len(), 7);
    assert!(t.questions > 1_000, "{} questions", t.questions);
    assert!(
        (0.05..=0.3).contains(&t.evidence_recall),
        "recall {}",
        t.evidence_recall
    );
    assert_eq!(t.by_category.len(), 5);
    assert!(t.context_tokens_mean <= 2_000.0);
    assert_eq!(t.not_fitting, 0);
    assert_eq!(t.questions + t.skipped_questions, 1_347);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}
