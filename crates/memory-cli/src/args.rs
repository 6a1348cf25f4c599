//! Command-line arguments (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Replays and evaluates agent transcripts through trim pipelines.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "replay", "--input", "s.json", "--budget", "4000", "--pipeline", "window",
/// ]).unwrap();
/// let memory_cli::Command::Replay(args) = cli.command;
/// assert_eq!(args.budget, 4000);
/// assert_eq!(args.counter, "chars");
/// assert!(memory_cli::Cli::try_parse_from(["memory", "replay", "--input", "s.json", "--budget", "0", "--pipeline", "window"]).is_err());
/// ```
#[derive(Debug, Parser)]
#[command(name = "memory", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record a transcript message by message, take the context before each
    /// assistant message, and report what each model call would have been
    /// sent.
    Replay(ReplayArgs),
}

/// Options of `memory replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// Transcript file: OpenAI chat JSON (an array of messages, an array of
    /// {"messages": [...]} trajectories) or JSONL (one message, or one
    /// trajectory, per line).
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,

    /// Token budget of every context (a positive whole number).
    #[arg(long, value_name = "N", value_parser = parse_budget)]
    pub budget: usize,

    /// Stage names joined by commas, run in order, e.g. `window`.
    #[arg(long, value_name = "SPEC")]
    pub pipeline: String,

    /// Token counter.
    #[arg(long, value_name = "NAME", default_value = "chars")]
    pub counter: String,

    /// Write the full report (one row per model call, and totals) as JSON.
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,

    /// Repair invalid transcripts (orphan or misplaced tool results, calls
    /// without results) instead of rejecting them; fixes go to stderr.
    #[arg(long)]
    pub repair: bool,
}

/// A token budget: a whole number of at least 1.
fn parse_budget(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("the budget must be at least 1 token".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number of tokens")),
    }
}
