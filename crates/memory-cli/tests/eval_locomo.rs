//! `memory eval locomo` on the LoCoMo-shaped fixture: exact recall figures.
//!
//! The fixture's conversation, counted in chars/4 tokens: session 1 is
//! 24 + 23 + 23 + 23, session 2 is 23 + 23 + 24 + 24 (187 in all). Six
//! questions are asked (5 + 5 + 12 + 6 + 9 + 8 tokens, mean 7.5); one names
//! only a malformed id (`D:1:3`) and one has no evidence, so both are
//! skipped; one names a missing id (`D9:9`) beside a good one. Four of the
//! six asked are of categories 1-4 and have an answer; the two of category
//! 5 count for evidence recall only.

use crate::common;

use common::{eval_locomo, eval_locomo_with, locomo_fixture, long_locomo, memory};

/// The figures at tight budgets below are the window's alone: the task
/// floor (the first utterance kept) is off for them.
const NO_TASK: &[&str] = &["--no-task-floor"];

/// (questions, recalled) per category "1" to "5".
fn categories(report: &memory_cli::EvalReport) -> Vec<(String, usize, usize)> {
    report
        .result
        .totals
        .by_category
        .iter()
        .map(|(c, r)| (c.clone(), r.questions, r.recalled))
        .collect()
}

fn cats(figures: [(usize, usize); 5]) -> Vec<(String, usize, usize)> {
    figures
        .iter()
        .enumerate()
        .map(|(i, (n, r))| ((i + 1).to_string(), *n, *r))
        .collect()
}

#[test]
fn a_large_budget_recalls_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = eval_locomo(&locomo_fixture(), 10_000, &["window"], dir.path());
    let t = &report.result.totals;
    assert_eq!(
        (t.questions, t.skipped_questions, t.skipped_evidence_ids),
        (6, 2, 2)
    );
    assert_eq!((t.recalled, t.evidence_recall), (6, 1.0));
    assert_eq!(
        categories(&report),
        cats([(1, 1), (1, 1), (1, 1), (1, 1), (2, 2)])
    );
    // The two sessions' time markers (about 10 tokens each) are in every
    // context.
    assert_eq!(t.context_tokens_mean, 214.5);
    assert_eq!(t.not_fitting, 0);
    assert_eq!(report.result.rows.len(), 6);
    assert!(report.pipelines.is_empty());
    assert_eq!(report.format, "LoCoMo JSON");
    assert_eq!(report.samples[0].label.as_deref(), Some("mini-1"));
    assert_eq!(
        (report.samples[0].sessions, report.samples[0].messages),
        (2, 8)
    );
    assert!(
        run.stdout
            .contains("evidence recall: 1.000 (6 of 6 questions)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "questions:    6 asked, 2 skipped (no usable evidence id); 2 evidence ids skipped"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.is_empty(),
        "no progress bar off a terminal: {}",
        run.stderr
    );
}

#[test]
fn a_tiny_budget_keeps_only_the_last_round() {
    // 60 tokens hold the question and the last round (D2:3, D2:4: 48
    // tokens), never the round before it.
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = eval_locomo_with(&locomo_fixture(), 60, &["window"], NO_TASK, dir.path());
    let t = &report.result.totals;
    assert_eq!((t.questions, t.recalled), (6, 2));
    assert!((t.evidence_recall - 2.0 / 6.0).abs() < 1e-12);
    assert_eq!(
        categories(&report),
        cats([(1, 0), (1, 1), (1, 0), (1, 0), (2, 1)])
    );
    assert_eq!(t.context_tokens_mean, 55.5);
    let recalled: Vec<(usize, bool)> = report
        .result
        .rows
        .iter()
        .map(|r| (r.question, r.recalled))
        .collect();
    assert_eq!(
        recalled,
        [
            (0, false),
            (1, true),
            (2, false),
            (4, false),
            (5, true),
            (6, false)
        ]
    );
    // The two-utterance question finds one of its two.
    assert_eq!(
        (report.result.rows[2].evidence, report.result.rows[2].found),
        (2, 1)
    );
    assert!(
        run.stdout
            .contains("evidence recall: 0.333 (2 of 6 questions)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  category 5:   0.500 (1 of 2)"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn a_budget_below_the_question_recalls_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = eval_locomo_with(&locomo_fixture(), 10, &["window"], NO_TASK, dir.path());
    let t = &report.result.totals;
    assert_eq!((t.questions, t.recalled, t.evidence_recall), (6, 0, 0.0));
    assert_eq!(t.not_fitting, 1, "only the 12-token question is over 10");
    assert!(report.result.rows.iter().all(|r| r.messages_out == 1));
}

#[test]
fn by_default_the_first_utterance_is_kept_even_over_the_budget() {
    // The task floor: the first utterance (D1:1, 24 tokens) is in every
    // context, so the question whose evidence it is finds it even at 10
    // tokens, and every context says it does not fit.
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = eval_locomo(&locomo_fixture(), 10, &["window"], dir.path());
    let t = &report.result.totals;
    assert_eq!((t.questions, t.recalled), (6, 1));
    assert_eq!(t.not_fitting, 6);
    assert!(report.result.rows.iter().all(|r| r.messages_out == 2));
    let recalled: Vec<usize> = report
        .result
        .rows
        .iter()
        .filter(|r| r.recalled)
        .map(|r| r.evidence)
        .collect();
    assert_eq!(recalled, [1]);
}

#[test]
fn two_pipelines_are_set_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = eval_locomo_with(
        &locomo_fixture(),
        60,
        &["window", "window,window"],
        NO_TASK,
        dir.path(),
    );
    assert_eq!(report.pipelines.len(), 2);
    assert_eq!(report.pipelines[0].pipeline, "window");
    assert_eq!(report.pipelines[1].pipeline, "window,window");
    assert_eq!(report.result, report.pipelines[0]);
    for section in &report.pipelines {
        assert_eq!(section.totals.recalled, 2);
        assert_eq!(section.rows.len(), 6);
    }
    let lines: Vec<&str> = run.stdout.lines().collect();
    let header = lines
        .iter()
        .find(|l| l.contains("window,window"))
        .expect("a header naming both pipelines");
    assert!(header.trim_start().starts_with("window "), "{header}");
    let row = |label: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` row in:\n{}", run.stdout))
            .split_whitespace()
            .rev()
            .take(2)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("evidence recall"), ["0.333", "0.333"]);
    assert_eq!(row("  category 2"), ["1.000", "1.000"]);
    assert_eq!(row("  category 5"), ["0.500", "0.500"]);
    assert_eq!(row("answer recall"), ["0.000", "0.000"]);
    assert_eq!(row("context tokens, mean"), ["56", "56"]);
    assert_eq!(row("questions asked"), ["6", "6"]);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn a_locomo_file_replays_as_a_chat() {
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = common::replay(&locomo_fixture(), 60, "window", dir.path());
    assert_eq!(report.format, "LoCoMo JSON");
    assert_eq!(report.trajectories[0].label.as_deref(), Some("mini-1"));
    // Eight utterances and two time markers.
    assert_eq!(report.trajectories[0].messages, 10);
    // One model call before each of Tomas's four utterances.
    let turns: Vec<usize> = report.rows.iter().map(|r| r.turn).collect();
    // (After the first session's marker, the second's after turn 4.)
    assert_eq!(turns, [2, 4, 7, 9]);
    assert_eq!(report.totals.valid_rows, 4);
    assert!(report.rows.iter().all(|r| r.tokens_out <= 60));
    assert!(
        run.stdout
            .contains("LoCoMo JSON (1 trajectory, 10 messages)"),
        "{}",
        run.stdout
    );
}

#[test]
fn other_formats_and_broken_samples_are_rejected_with_their_position() {
    let dir = tempfile::tempdir().unwrap();
    let eval = |file: &str| {
        memory(&[
            "eval",
            "locomo",
            "--input",
            file,
            "--budget",
            "100",
            "--pipeline",
            "window",
        ])
    };
    let chat = dir.path().join("chat.json");
    std::fs::write(&chat, r#"[{"role": "user", "content": "hi"}]"#).unwrap();
    let chat = chat.display().to_string();
    let run = eval(&chat);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "memory: {chat}: line 1: expected LoCoMo JSON (an array of samples with `conversation` and `qa`), found OpenAI chat messages, JSON"
        )
    );

    let broken = dir.path().join("broken.json");
    std::fs::write(
        &broken,
        r#"[{"sample_id": "x", "qa": [], "conversation": {"speaker_a": "A", "speaker_b": "B",
            "session_1": [{"speaker": "A", "dia_id": "D1:1"}]}}]"#,
    )
    .unwrap();
    let broken = broken.display().to_string();
    let run = eval(&broken);
    assert_eq!(run.code, Some(2));
    assert_eq!(
        run.stderr.trim_end(),
        format!("memory: {broken}: sample 0 (x), session 1, utterance 0: field `text`: is missing")
    );
    assert!(run.stdout.is_empty());

    let missing = dir.path().join("absent.json").display().to_string();
    let run = eval(&missing);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .starts_with(&format!("memory: {missing}: cannot read the file: "))
    );
    assert_eq!(run.stderr.lines().count(), 1);
}

/// (questions judged, recalled, answer recall) per category.
fn answer_categories(report: &memory_cli::EvalReport) -> Vec<(String, usize, usize, Option<f64>)> {
    report
        .result
        .totals
        .by_category
        .iter()
        .map(|(c, r)| {
            (
                c.clone(),
                r.answer_questions,
                r.answer_recalled,
                r.answer_recall,
            )
        })
        .collect()
}

#[test]
fn answer_recall_is_reported_per_category() {
    let dir = tempfile::tempdir().unwrap();
    let (run, report) = eval_locomo(&locomo_fixture(), 10_000, &["window"], dir.path());
    let t = &report.result.totals;
    // Everything is in the context, but "Tomas's neighbour" names a speaker,
    // and speakers' names are not in their utterances' text.
    assert_eq!(
        (t.answer_questions, t.answer_recalled, t.answer_skipped),
        (4, 3, 0)
    );
    assert_eq!(t.answer_recall, 0.75);
    let one = |c: &str, n, r, recall| (c.to_string(), n, r, recall);
    assert_eq!(
        answer_categories(&report),
        [
            one("1", 1, 1, Some(1.0)),
            one("2", 1, 0, Some(0.0)),
            one("3", 1, 1, Some(1.0)),
            one("4", 1, 1, Some(1.0)),
            one("5", 0, 0, None),
        ]
    );
    let answers: Vec<(u64, usize, usize, Option<bool>)> = report
        .result
        .rows
        .iter()
        .map(|r| {
            (
                r.category,
                r.answer_words,
                r.answer_found,
                r.answer_recalled,
            )
        })
        .collect();
    assert_eq!(
        answers,
        [
            (1, 2, 2, Some(true)),  // a lemon tree
            (2, 2, 1, Some(false)), // Tomas's neighbour
            (4, 3, 3, Some(true)),  // his bike chain; the cello
            (3, 3, 3, Some(true)),  // under four hours
            (5, 0, 0, None),
            (5, 0, 0, None),
        ]
    );
    assert!(
        run.stdout
            .contains("answer recall: 0.750 (3 of 4 questions of categories 1-4, 0 not judged)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("  category 2:   1.000 (1 of 1); answer 0.000 (0 of 1)"),
        "{}",
        run.stdout
    );
    // Category 5 rows carry no verdict on an answer they do not have.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("eval-10000.json")).unwrap())
            .unwrap();
    assert_eq!(json["rows"][0]["answer_recalled"], true);
    assert!(json["rows"][4].get("answer_recalled").is_none());
    assert!(json["by_category"]["5"].get("answer_recall").is_none());
    assert_eq!(json["answer_recall"], 0.75);

    // At 60 tokens only the last round is left: one of "his bike chain; the
    // cello" is there, no answer whole.
    let (_, report) = eval_locomo_with(&locomo_fixture(), 60, &["window"], NO_TASK, dir.path());
    let t = &report.result.totals;
    assert_eq!((t.answer_questions, t.answer_recalled), (4, 0));
    assert_eq!(
        (
            report.result.rows[2].answer_words,
            report.result.rows[2].answer_found
        ),
        (3, 1)
    );
}

#[test]
fn compact_thrift_summarizes_per_conversation_not_per_question() {
    // Two conversations of 400 utterances (about 7,000 tokens each, past
    // compact's threshold twice), asked 4 and then 40 questions each, at a
    // budget that holds the offline summarizer's summaries (up to 1,024
    // tokens; below that compact cannot show, and so never stores, one).
    let dir = tempfile::tempdir().unwrap();
    let few = long_locomo(dir.path(), 2, 400, 4);
    let many = long_locomo(dir.path(), 2, 400, 40);
    let (_, few) = eval_locomo(&few, 1_500, &["compact,thrift"], dir.path());
    let (run, many) = eval_locomo(&many, 1_500, &["compact,thrift"], dir.path());
    let per_conversation = |report: &memory_cli::EvalReport| -> Vec<u64> {
        report
            .result
            .conversations
            .iter()
            .map(|c| c.summarizer_calls)
            .collect()
    };
    let calls = per_conversation(&many);
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|&c| c > 0), "{calls:?}");
    assert_eq!(per_conversation(&few), calls, "the same whatever is asked");
    for c in &many.result.conversations {
        assert_eq!((c.utterances, c.contexts), (400, 200));
        assert!(c.summaries == 1 && c.state_messages < 400, "{c:?}");
    }
    let t = &many.result.totals;
    assert_eq!(t.questions, 80);
    assert!(
        t.question_summarizer_calls <= 2,
        "the questions share the state: {}",
        t.question_summarizer_calls
    );
    assert_eq!(
        t.summarizer_calls,
        t.conversation_summarizer_calls + t.question_summarizer_calls
    );
    assert_eq!(t.conversation_summarizer_calls, calls.iter().sum::<u64>());
    assert!(t.summarizer_calls * 4 < t.questions as u64, "{t:?}");
    assert!(
        many.result
            .rows
            .iter()
            .all(|r| r.fits && r.tokens_out <= 1_500)
    );
    assert!(
        run.stdout
            .contains("summarizer calls per conversation, while recording it:")
            || run.stdout.contains(&format!(
                "summarizer calls per conversation: {}, {}",
                calls[0], calls[1]
            )),
        "{}",
        run.stdout
    );
}
