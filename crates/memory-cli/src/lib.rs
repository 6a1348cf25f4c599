//! The `memory` command: replays transcripts through trim pipelines and
//! reports what every model call would have been sent.
//!
//! ```text
//! memory replay --input FILE --budget N --pipeline SPEC [--counter chars]
//!               [--report FILE.json] [--repair]
//! ```
//!
//! The binary is a thin shell over [`run`]; the modules are usable on their
//! own: [`input`] loads and checks transcripts, [`registry`] maps stage and
//! counter names to factories, [`replay`] runs the loop and measures each
//! call, [`report`] holds the rows, totals and summary.

pub mod args;
pub mod error;
pub mod input;
pub mod meter;
pub mod registry;
pub mod replay;
pub mod report;

use memory_core::Budget;

pub use args::{Cli, Command, ReplayArgs};
pub use error::CliError;
pub use meter::Meter;
pub use report::{Report, Row, Totals};

/// Runs a parsed command line: prints the human summary on stdout, repair
/// notes on stderr, and writes the JSON report when asked.
///
/// # Errors
///
/// A [`CliError`]; its [`exit_code`](CliError::exit_code) is the process's.
pub async fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Replay(args) => {
            let report = replay_command(&args).await?;
            println!("{}", report.summary());
            Ok(())
        }
    }
}

/// `memory replay`: checks the options, loads and checks the input, replays
/// it and writes the report file when one is asked for.
///
/// # Errors
///
/// Bad options or input ([`CliError::exit_code`] 2), a failing replay or an
/// unwritable report (1).
pub async fn replay_command(args: &ReplayArgs) -> Result<Report, CliError> {
    let config = registry::StageConfig {
        budget: Budget::tokens(args.budget),
        counter: registry::counter(&args.counter)?,
        meter: Meter::new(),
    };
    registry::pipeline(&args.pipeline, &config)?;

    let file = args.input.display().to_string();
    let mut input = input::load(&args.input)?;
    let mut trajectories = Vec::with_capacity(input.trajectories.len());
    for (index, trajectory) in input.trajectories.iter_mut().enumerate() {
        let repairs = match input::check(trajectory, args.repair).map_err(|l| l.in_file(&file))? {
            input::Verdict::Valid => 0,
            input::Verdict::Repaired(repairs) => {
                eprintln!(
                    "memory: {file}: {}: --repair made {} {}: {repairs}",
                    trajectory.name(),
                    repairs.total(),
                    if repairs.total() == 1 { "fix" } else { "fixes" },
                );
                repairs.total()
            }
        };
        trajectories.push(report::TrajectoryInfo {
            index,
            label: trajectory.label.clone(),
            messages: trajectory.messages.len(),
            repairs,
        });
    }

    let rows = replay::replay(&input, &file, &args.pipeline, &config).await?;
    let report = Report {
        input: file,
        format: input.format.to_string(),
        pipeline: args.pipeline.clone(),
        counter: args.counter.clone(),
        budget: args.budget,
        trajectories,
        totals: Totals::of(&rows, args.budget),
        rows,
    };
    if let Some(path) = &args.report {
        write_report(&report, path)?;
    }
    Ok(report)
}

/// Writes `report` as pretty JSON to `path`.
fn write_report(report: &Report, path: &std::path::Path) -> Result<(), CliError> {
    let failed = |source| CliError::Report {
        file: path.display().to_string(),
        source,
    };
    let json = serde_json::to_string_pretty(report).map_err(|e| failed(e.into()))?;
    std::fs::write(path, json + "\n").map_err(failed)
}
