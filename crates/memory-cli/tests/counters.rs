//! `--counter`: the exact counters, and what is said when one cannot be
//! built.

use crate::common;

use common::{example_session, memory};

fn replay_with(counter: &str) -> common::Run {
    memory(&[
        "replay",
        "--input",
        &example_session().display().to_string(),
        "--budget",
        "1000",
        "--pipeline",
        "window",
        "--counter",
        counter,
    ])
}

/// A word-level tokenizer.json small enough to write here.
const WORD_LEVEL: &str = r#"{
  "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
  "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
  "post_processor": null, "decoder": null,
  "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "the": 1}, "unk_token": "[UNK]"}
}"#;

#[test]
fn the_openai_encodings_replay_like_any_counter() {
    for counter in ["cl100k", "o200k"] {
        let run = replay_with(counter);
        assert_eq!(run.code, Some(0), "{counter}: {}", run.stderr);
        assert!(
            run.stdout
                .contains(&format!("counter {counter}, budget 1000 tokens")),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains("invalid rows: 0"), "{}", run.stdout);
        assert!(run.stderr.is_empty(), "{}", run.stderr);
    }
}

#[test]
fn a_tokenizer_file_is_a_counter() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, WORD_LEVEL).unwrap();
    let spec = format!("hf:{}", path.display());
    let run = replay_with(&spec);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!("counter {spec}")),
        "{}",
        run.stdout
    );
    let run = memory(&[
        "eval",
        "locomo",
        "--input",
        &common::locomo_fixture().display().to_string(),
        "--budget",
        "60",
        "--pipeline",
        "window",
        "--counter",
        &spec,
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn a_missing_tokenizer_file_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir
        .path()
        .join("absent/tokenizer.json")
        .display()
        .to_string();
    let run = replay_with(&format!("hf:{missing}"));
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!(
            "memory: --counter hf:{missing}: cannot read tokenizer file `{missing}`: "
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("tokenizer.json"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

#[test]
fn a_file_that_is_no_tokenizer_and_a_missing_path_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.json");
    std::fs::write(&path, "{\"hello\": 1}").unwrap();
    let run = replay_with(&format!("hf:{}", path.display()));
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("is not a valid Hugging Face tokenizer.json"),
        "{}",
        run.stderr
    );
    for spec in ["hf", "hf:"] {
        let run = replay_with(spec);
        assert_eq!(run.code, Some(2));
        assert_eq!(
            run.stderr.trim_end(),
            format!("memory: --counter {spec}: counter `hf` needs a FILE: --counter hf:FILE")
        );
    }
    let run = replay_with("cl100k:x");
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("takes no argument"), "{}", run.stderr);
}
