//! `memory recall`: what a handle brings back from a session a replay
//! stored.

use std::process::Command;

use memory_core::recall::Handle;
use memory_openai::wire;

fn memory(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_memory"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_handle_brings_back_the_original_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("replay.db").display());
    let input = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/data/agent-session.json"
    );
    let replay = memory(&[
        "replay",
        "--input",
        input,
        "--budget",
        "2000",
        "--pipeline",
        "window",
        "--store",
        &store,
        "--session",
        "s",
    ]);
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let messages = wire::from_json_str(&std::fs::read_to_string(input).unwrap()).unwrap();
    let handle = Handle::of(&messages[2..4]).to_string();
    let recall = |more: &[&str]| {
        let mut args = vec!["recall", "--store", &store, "--session", "s/window"];
        args.extend(more);
        memory(&args)
    };

    let out = recall(&[&handle, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = wire::from_json_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(back, messages[2..4]);

    let text = recall(&[&handle, "--max-tokens", "20"]);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).len() < 200);

    let missing = recall(&["r:0000000000"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("names nothing recorded here"));

    // A part of a long message: exactly its characters.
    use memory_core::recall::{PART_CHARS, part_text};
    let long = messages
        .iter()
        .find(|m| part_text(m).chars().count() > 2 * PART_CHARS)
        .expect("the example holds a long output");
    let text: Vec<char> = part_text(long).chars().collect();
    let second = Handle::for_span(long, PART_CHARS..PART_CHARS + 1, text.len()).to_string();
    assert!(second.ends_with("#2"), "{second}");
    let out = recall(&[&second]);
    assert!(out.status.success());
    let expected: String = text[PART_CHARS..2 * PART_CHARS].iter().collect();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end_matches('\n'),
        expected
    );
}
