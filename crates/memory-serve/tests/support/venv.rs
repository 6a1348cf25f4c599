//! One Python virtual environment with the SDKs from PyPI that the client
//! tests run (`openai` and `anthropic`), made once under the target dir.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The packages the client tests import, installed together: they share
/// most of what they depend on (httpx, pydantic), which one install
/// resolves and fetches once.
const PACKAGES: [&str; 2] = ["openai", "anthropic"];

/// The python of `CARGO_TARGET_TMPDIR/sdk-venv`, with [`PACKAGES`]
/// installed, made once per target dir (and looked for once per run: the
/// client tests of the binary share it). Without Python or PyPI the test
/// says so and gets `None`; under CI (the `CI` variable set) it fails
/// instead.
pub fn python() -> Option<PathBuf> {
    static MADE: OnceLock<Option<PathBuf>> = OnceLock::new();
    MADE.get_or_init(make).clone()
}

/// Finds the environment with [`PACKAGES`], or makes it.
fn make() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sdk-venv");
    let python = dir.join("bin").join("python");
    // Installed, by their metadata: importing both SDKs to find out took
    // 2.9 s of CPU (each test's script imports its own), this 0.05 s.
    let installed = format!("import importlib.metadata as m\nfor p in {PACKAGES:?}: m.version(p)");
    let has_them = |p: &Path| succeeds(Command::new(p).args(["-c", &installed]));
    if has_them(&python) {
        return Some(python);
    }
    // The system's pip installs into an environment made without one
    // (`--python`, pip 22.3 on): making the environment's own pip took
    // 6 s of the 6.2 s that making it took. An older pip, or none, and
    // the environment gets its own.
    let _ = std::fs::remove_dir_all(&dir);
    let install = |pip: &mut Command| {
        succeeds(
            pip.args(["install", "--quiet", "--disable-pip-version-check"])
                .args(PACKAGES),
        )
    };
    let bare = succeeds(
        Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&dir),
    ) && install(
        Command::new("python3")
            .args(["-m", "pip", "--python"])
            .arg(&python),
    );
    let made = bare || {
        let _ = std::fs::remove_dir_all(&dir);
        succeeds(Command::new("python3").args(["-m", "venv"]).arg(&dir))
            && install(Command::new(&python).args(["-m", "pip"]))
    };
    if made && has_them(&python) {
        return Some(python);
    }
    let why = format!(
        "cannot make a virtual environment with the `{}` packages (python3 -m venv, pip install)",
        PACKAGES.join("` and `")
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// Whether `command` ran and exited with success.
fn succeeds(command: &mut Command) -> bool {
    command.status().is_ok_and(|s| s.success())
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
