//! The Claude Code CLI: installed once with npm into a cache that
//! outlives the test run, and run in print mode (`claude -p`) with a
//! time limit.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use super::agent_cli::Run;

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
    let mut command = Command::new(claude);
    command
        .current_dir(workspace)
        .args(["-p", task, "--allowedTools"])
        .args(tools);
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
    super::agent_cli::run(command, home, RUN_LIMIT)
}
