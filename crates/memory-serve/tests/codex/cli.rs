//! The Codex CLI: installed once with npm (`support/npm.rs`), run as
//! `codex exec` with a custom Responses provider in a `config.toml` of its
//! own, and a time limit.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use super::agent_cli::Run;

/// The version every run uses.
pub const VERSION: &str = "0.171.0";

/// How long one run may take before it is killed: a run of this test's
/// task takes seconds, so reaching this means it hangs.
pub const RUN_LIMIT: Duration = Duration::from_secs(240);

/// The installed `codex`, installed here first where it is not yet
/// (`None` where it cannot be, outside CI).
pub fn codex() -> Option<PathBuf> {
    static INSTALLED: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| super::npm::installed("@openai/codex", VERSION, "codex"))
        .clone()
}

/// The provider block and model settings: the server at `base_url`, its
/// key read from `MEMORY_TEST_KEY`. The provider is named `OpenAI`: under
/// that name Codex compacts remotely (a `compaction_trigger` the server
/// answers) rather than by asking the model for a summary.
/// `compact_limit` sets `model_auto_compact_token_limit`.
pub fn config(base_url: &str, compact_limit: Option<usize>) -> String {
    let limit = compact_limit
        .map(|n| format!("model_auto_compact_token_limit = {n}\n"))
        .unwrap_or_default();
    format!(
        "model = \"test-model\"\nmodel_provider = \"memory\"\n{limit}\n\
         [model_providers.memory]\nname = \"OpenAI\"\nbase_url = \"{base_url}\"\n\
         wire_api = \"responses\"\nenv_key = \"MEMORY_TEST_KEY\"\nsupports_websockets = false\n"
    )
}

/// Runs `codex exec task` in `workspace` with `config` (its home in
/// `home`); fails the test, with what the CLI wrote, where it exits other
/// than 0 or runs past [`RUN_LIMIT`].
pub fn run(codex: &Path, config: &str, workspace: &Path, home: &Path, task: &str) -> Run {
    let codex_home = home.join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let mut command = Command::new(codex);
    command.current_dir(workspace).args([
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        task,
    ]);
    // Only what this run sets reaches the CLI's configuration.
    for name in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "CODEX_API_KEY",
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
        .env("CODEX_HOME", &codex_home)
        .env("MEMORY_TEST_KEY", "sk-test")
        .env("NO_PROXY", "127.0.0.1");
    super::agent_cli::run(command, home, RUN_LIMIT)
}
