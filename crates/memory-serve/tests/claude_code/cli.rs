//! The Claude Code CLI: installed once with npm into a cache that
//! outlives the test run, and run in print mode (`claude -p`) with a
//! time limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The version every run uses: the one whose requests
/// `tests/fixtures/claude-code` holds.
pub const VERSION: &str = "2.1.332";

/// How long one run of the CLI may take before it is killed: a run of
/// this test's task takes seconds, so reaching this means it hangs.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The installed `claude`, installed here first where it is not yet;
/// `None` (after a notice) where npm is missing or the install fails,
/// unless the `CI` variable is set: then the test fails instead.
pub fn claude() -> Option<PathBuf> {
    static INSTALLED: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(install).clone()
}

/// The cache folder: `$XDG_CACHE_HOME`, or `$HOME/.cache`.
fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(
        base.join("memory-serve-tests")
            .join(format!("claude-code-{VERSION}")),
    )
}

fn install() -> Option<PathBuf> {
    let dir = cache_dir();
    let binary = dir
        .as_ref()
        .map(|d| d.join("node_modules").join(".bin").join("claude"));
    if let Some(binary) = binary.as_ref().filter(|b| works(b)) {
        return Some(binary.clone());
    }
    let why = match (&dir, &binary) {
        (Some(dir), Some(binary)) => {
            let installed = Command::new("npm")
                .args(["install", "--prefix"])
                .arg(dir)
                .args(["--no-audit", "--no-fund", "--loglevel=error"])
                .arg(format!("@anthropic-ai/claude-code@{VERSION}"))
                .stdout(Stdio::null())
                .status();
            match installed {
                Ok(s) if s.success() && works(binary) => return Some(binary.clone()),
                Ok(s) if s.success() => {
                    format!("{} does not run after the install", binary.display())
                }
                Ok(s) => format!("`npm install @anthropic-ai/claude-code@{VERSION}` failed ({s})"),
                Err(e) => format!("npm cannot be run ({e})"),
            }
        }
        _ => "no cache folder (neither XDG_CACHE_HOME nor HOME is set)".to_string(),
    };
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: the Claude Code CLI is not available: {why}");
    None
}

/// Whether `binary` answers `--version` with the pinned version.
fn works(binary: &Path) -> bool {
    Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(VERSION))
}

/// What one run of the CLI left.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Runs `claude -p task` in `workspace` against the API at `base_url`
/// (the key `sk-test`, a home of its own in `home`), allowing `tools`;
/// fails the test, with what the CLI wrote, where it exits other than 0
/// or runs past [`RUN_LIMIT`].
pub fn run(
    claude: &Path,
    base_url: &str,
    workspace: &Path,
    home: &Path,
    task: &str,
    tools: &[&str],
) -> Run {
    let out = home.join("cli.stdout");
    let err = home.join("cli.stderr");
    let mut command = Command::new(claude);
    command
        .current_dir(workspace)
        .args(["-p", task, "--allowedTools"])
        .args(tools)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    // Only what this run sets reaches the CLI's configuration.
    for name in [
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_MODEL",
        "ANTHROPIC_SMALL_FAST_MODEL",
        "ANTHROPIC_CUSTOM_HEADERS",
        "CLAUDE_CONFIG_DIR",
        "CLAUDE_CODE_USE_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
        "XDG_CONFIG_HOME",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
    ] {
        command.env_remove(name);
    }
    command
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("NO_PROXY", "127.0.0.1");
    let started = Instant::now();
    let mut child = command.spawn().expect("the CLI starts");
    let status = loop {
        if let Some(status) = child.try_wait().expect("the CLI's status") {
            break Some(status);
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = Run {
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        elapsed: started.elapsed(),
    };
    match status {
        None => panic!(
            "the CLI ran past {RUN_LIMIT:?} and was killed\n--- stdout\n{}\n--- stderr\n{}",
            run.stdout, run.stderr
        ),
        Some(s) if !s.success() => panic!(
            "the CLI failed ({s})\n--- stdout\n{}\n--- stderr\n{}",
            run.stdout, run.stderr
        ),
        Some(_) => run,
    }
}
