//! Replays the fuzz targets' committed inputs (`fuzz/regressions/<target>/`,
//! findings and seeds cut from the repository's fixtures) and the `memory`
//! command's test fixtures through the functions the targets run, under
//! stable: none may panic, and every result must validate.

use std::path::{Path, PathBuf};

use memory_tests::fuzz;

/// Every file of `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `check` on every file; the names of those it panicked on.
fn failures(paths: &[PathBuf], check: fn(&[u8])) -> Vec<String> {
    paths
        .iter()
        .filter(|path| {
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            std::panic::catch_unwind(|| check(&bytes)).is_err()
        })
        .map(|path| path.display().to_string())
        .collect()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_committed_fuzz_input_replays_cleanly() {
    let mut replayed = 0;
    let mut failed = Vec::new();
    for (target, check) in fuzz::TARGETS {
        let paths = files(&root().join("fuzz/regressions").join(target));
        assert!(!paths.is_empty(), "no committed inputs for {target}");
        replayed += paths.len();
        failed.extend(failures(&paths, check));
    }
    assert!(failed.is_empty(), "panicked on {failed:#?}");
    assert!(replayed >= 10, "{replayed} inputs replayed");
}

#[test]
fn the_command_fixtures_read_repair_and_trim_cleanly() {
    let fixtures = files(&root().join("crates/memory-cli/tests/fixtures"));
    assert!(!fixtures.is_empty());
    assert_eq!(failures(&fixtures, fuzz::input), Vec::<String>::new());
    let budgeted = |bytes: &[u8]| fuzz::repair_trim(&[b"\x50\x00", bytes].concat());
    assert_eq!(failures(&fixtures, budgeted), Vec::<String>::new());
}
