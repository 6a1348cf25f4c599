//! `memory eval locomo` on the real LoCoMo conversations, found through
//! `MEMORY_DATA_DIR`; skipped with a notice when it is not set, failed when
//! it is not set under CI.

use crate::common;

use std::path::PathBuf;

fn locomo_file() -> Option<PathBuf> {
    memory_core::test_util::DATA.file("locomo/locomo-dev.json")
}

#[test]
fn most_recent_turns_recall_about_a_tenth_of_the_evidence_at_2000_tokens() {
    let Some(path) = locomo_file() else {
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
    assert!(
        (0.05..=0.3).contains(&t.answer_recall),
        "answer recall {}",
        t.answer_recall
    );
    // Category 5 (adversarial) has no answer; one answer (`"That"`) has no
    // content word.
    let adversarial = t.by_category["5"].questions;
    assert_eq!(
        t.answer_questions + t.answer_skipped,
        t.questions - adversarial
    );
    assert!(t.answer_skipped <= 5, "{} not judged", t.answer_skipped);
    for (category, c) in &t.by_category {
        assert_eq!(
            c.answer_recall.is_some(),
            category != "5",
            "category {category}"
        );
    }
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn compact_thrift_summarizes_each_conversation_a_few_times_not_each_question() {
    let Some(path) = locomo_file() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = common::eval_locomo(&path, 2_000, &["compact,thrift"], dir.path());
    let t = &report.result.totals;
    assert_eq!(report.result.conversations.len(), 7);
    for c in &report.result.conversations {
        assert!(
            (1..=20).contains(&c.summarizer_calls),
            "sample {}: {} calls",
            c.sample,
            c.summarizer_calls
        );
        assert_eq!(c.summaries, 1, "sample {}", c.sample);
    }
    assert!(t.question_summarizer_calls <= 7, "{t:?}");
    assert!(t.summarizer_calls * 10 < t.questions as u64, "{t:?}");
    assert_eq!(t.not_fitting, 0);
    assert!(
        run.stdout.contains("summarizer calls per conversation: "),
        "{}",
        run.stdout
    );
}
