//! A Python virtual environment with one package from PyPI, made under
//! the target dir for the client tests that run a real Python SDK.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The python of `CARGO_TARGET_TMPDIR/<package>-venv`, with `package`
/// installed (made when it is not there yet). Without Python or PyPI the
/// test says so and gets `None`; under CI (the `CI` variable set) it fails
/// instead.
pub fn with_package(package: &str) -> Option<PathBuf> {
    // One at a time: the client tests of one binary share a package's
    // environment, and two installs into one folder would race.
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = MAKING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{package}-venv"));
    let python = dir.join("bin").join("python");
    let has_it = |p: &Path| {
        Command::new(p)
            .args(["-c", &format!("import {package}")])
            .status()
            .is_ok_and(|s| s.success())
    };
    if has_it(&python) {
        return Some(python);
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    let installed = made
        && Command::new(&python)
            .args(["-m", "pip", "install", "--quiet"])
            .args(["--disable-pip-version-check", package])
            .status()
            .is_ok_and(|s| s.success());
    if installed && has_it(&python) {
        return Some(python);
    }
    let why = format!(
        "cannot make a virtual environment with the `{package}` package (python3 -m venv, pip install {package})"
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// Runs `script` of `tests/python` with `python` and `args`, then the path
/// `out`, which the script writes its JSON to; what it wrote. Fails the
/// test, with the script's errors, where it fails.
pub async fn run_script(
    python: &Path,
    script: &str,
    args: Vec<String>,
    out: &Path,
) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let mut command = Command::new(python);
    command.arg(script).args(args).arg(out);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        output.status.success(),
        "the script failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}
