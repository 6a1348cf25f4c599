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

/// The installed `claude`, installed here first where it is not yet
/// (`None` where it cannot be, outside CI).
pub fn claude() -> Option<PathBuf> {
    static INSTALLED: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| super::npm::installed("@anthropic-ai/claude-code", VERSION, "claude"))
        .clone()
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
