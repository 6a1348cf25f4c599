//! The `memory` command: replays transcripts through trim pipelines and
//! reports what every model call would have been sent and cost, and
//! whether the model still had what its next step needed; and evaluates how
//! much of the evidence and the answer a question needs survives the trim.
//!
//! ```text
//! memory replay --input FILE --budget N --pipeline SPEC [--pipeline SPEC ...]
//!               [--counter chars|cl100k|o200k|hf:FILE] [--pricing NAME]
//!               [--report FILE.json] [--plot FILE.svg] [--plot-cost FILE.svg] [--repair]
//!               [SUMMARIZER OPTIONS]
//! memory eval locomo --input FILE --budget N --pipeline SPEC [--pipeline SPEC ...]
//!               [--counter chars|cl100k|o200k|hf:FILE] [--report FILE.json]
//!               [SUMMARIZER OPTIONS]
//!
//! SUMMARIZER OPTIONS: [--summarizer extractive|openai --base-url URL --model M]
//!               [--summary-max-tokens N] [--max-input-tokens N] [--temperature T]
//!               [--timeout-ms N] [--retries N]
//! ```
//!
//! The binary is a thin shell over [`run`]; the modules are usable on their
//! own: [`input`] loads and checks transcripts and LoCoMo files,
//! [`registry`] maps stage and counter names to factories, [`replay`] runs
//! the loop and measures each call, [`pricing`] prices it under a prefix
//! cache, [`support`] measures support recall, [`report`] holds the rows,
//! totals and summary, [`eval`] asks LoCoMo's questions and measures
//! evidence and answer recall, [`summarizer`] builds the summarizer as a
//! stack of provider layers and says when it fails, [`tally`] counts
//! compactions, [`plot`] draws a replay, [`Table`] sets pipelines side by
//! side and [`Progress`] shows how far a long run is.

pub mod args;
pub mod error;
pub mod eval;
pub mod input;
pub mod plot;
pub mod pricing;
pub mod progress;
pub mod registry;
pub mod relevance;
pub mod replay;
pub mod report;
pub mod serve;
pub mod store;
pub mod summarizer;
pub mod support;
pub mod table;
pub mod tally;

use memory_core::Budget;

pub use args::{Cli, Command, Eval, LocomoArgs, RecallArgs, ReplayArgs, ServeArgs, StageArgs};
pub use error::CliError;
pub use eval::EvalReport;
pub use progress::Progress;
pub use report::{PipelineReport, Report, Row, Totals};
pub use table::Table;

/// Runs a parsed command line: prints the human summary on stdout, repair
/// notes and progress on stderr, and writes the JSON report (and the plot)
/// when asked.
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
        Command::Eval(Eval::Locomo(args)) => {
            let report = eval_locomo_command(&args).await?;
            println!("{}", report.summary());
            Ok(())
        }
        Command::Serve(args) => serve::serve_command(&args).await,
        Command::Recall(args) => {
            println!("{}", recall_command(&args).await?);
            Ok(())
        }
    }
}

/// The budget, counter and summarizer every stage of a run shares; every
/// spec checked before anything is loaded. The summarizer is built only
/// when a stage of the pipelines calls it, so `--summarizer openai` with
/// pipelines that never summarize needs no endpoint.
fn stage_config(
    stages: &StageArgs,
    model: &args::SummarizerArgs,
) -> Result<registry::StageConfig, CliError> {
    let counter = registry::counter(&stages.counter)?;
    for spec in &stages.pipeline {
        registry::stages(spec)?;
    }
    let (kind, note) = summarizer::kind(model)?;
    let mut config = registry::StageConfig::new(Budget::tokens(stages.budget), counter)
        .with_background(model.background);
    if registry::summarizes(&stages.pipeline) {
        if let Some(note) = note {
            eprintln!("memory: {note}");
        }
        config = config.with_summarizer(summarizer::build(kind, model)?);
        config.summary = summarizer::SummaryFlags::of(model);
    } else if kind == args::SummarizerKind::Openai {
        eprintln!("memory: no stage of these pipelines summarizes; the summarizer is not called");
    }
    config.turn_delay = std::time::Duration::from_millis(model.turn_delay_ms);
    config.relevance = relevance::build(&stages.relevance)?;
    config.task_floor = !stages.no_task_floor;
    config.index = (stages.index_share > 0.0).then_some(memory_session::left_out::IndexSettings {
        max_share: stages.index_share,
    });
    for spec in &stages.pipeline {
        registry::pipeline(spec, &config)?;
    }
    Ok(config)
}

/// Says on stderr what the summarizer did wrong over the whole run, and
/// when background summaries started but none landed before the replay
/// ended.
fn closing_notes(sections: &[PipelineReport]) {
    let mut failures = memory_layer::FailureCounts::default();
    let mut calls = 0;
    for section in sections {
        failures.merge(section.totals.summarizer_failures);
        calls += section.totals.summarizer_calls;
        let t = &section.totals;
        if t.background_summaries_started > 0 && t.summaries_landed < t.summaries_started {
            eprintln!(
                "memory: {}: {} background summaries started, {} landed before the replay ended; give --turn-delay-ms the time of the agent's own model call so that they can land",
                section.pipeline, t.background_summaries_started, t.summaries_landed
            );
        }
    }
    if let Some(line) = summarizer::failures_line(&failures, calls) {
        eprintln!("{line}");
    }
}

/// `memory replay`: checks the options, loads and checks the input, replays
/// it through each pipeline and writes the report and plot files when they
/// are asked for.
///
/// # Errors
///
/// Bad options or input ([`CliError::exit_code`] 2), a failing replay or an
/// unwritable report or plot (1).
pub async fn replay_command(args: &ReplayArgs) -> Result<Report, CliError> {
    let mut config = stage_config(&args.stages, &args.model)?;
    config.pricing = args.pricing;
    config.keep_contexts = args.contexts.is_some();
    if args.store != "memory" || args.session != "replay" {
        config = config.with_store(store::open(&args.store).await?, &args.session);
    }

    let file = args.input.display().to_string();
    let mut input = input::load(&args.input)?;
    let trajectories = checked(&mut input, &file, args.repair)?;

    let steps = input.message_count() as u64 * args.stages.pipeline.len() as u64;
    let progress = Progress::new(steps, "messages");
    let mut sections = Vec::with_capacity(args.stages.pipeline.len());
    for spec in &args.stages.pipeline {
        progress.set_message(spec);
        let rows = replay::replay_with_progress(&input, &file, spec, &config, &progress).await?;
        sections.push(PipelineReport {
            pipeline: spec.clone(),
            totals: Totals::of(&rows, &config.budget),
            rows,
        });
    }
    progress.finish();
    closing_notes(&sections);

    let base = Report {
        input: file,
        format: input.format.to_string(),
        counter: args.stages.counter.clone(),
        budget: config.budget.max_tokens.unwrap_or_default(),
        pricing: args.pricing.to_string(),
        trajectories,
        ..Report::default()
    };
    let report = Report::with_sections(base, sections);
    if let Some(path) = &args.report {
        write_report(&report, path)?;
    }
    if let Some(path) = &args.plot {
        plot::tokens_per_call(&report, path)?;
    }
    if let Some(path) = &args.plot_cost {
        plot::cumulative_cost(&report, path)?;
    }
    if let Some(path) = &args.contexts {
        write_contexts(&report, path)?;
    }
    Ok(report)
}

/// `memory recall`: what a handle brings back from a stored session, as
/// the text a model gets or (`--json`) the original messages.
///
/// # Errors
///
/// An unusable store or counter, a malformed handle, or one the session
/// does not hold (exit 2).
pub async fn recall_command(args: &RecallArgs) -> Result<String, CliError> {
    let store = store::open(&args.store).await?;
    let counter = registry::counter(&args.counter)?;
    let history = store
        .history(&args.session)
        .await
        .map_err(|e| CliError::Usage(format!("--session {}: {e}", args.session)))?;
    if history.is_empty() {
        return Err(CliError::Usage(format!(
            "--session {}: the store holds no such session",
            args.session
        )));
    }
    let request = memory_core::recall::RecallRequest {
        handle: args.handle.clone(),
        query: args.query.clone(),
        max_tokens: args.max_tokens,
    };
    let recalled = memory_core::recall::resolve(&history, &request, counter.as_ref())
        .await
        .map_err(|e| CliError::Usage(e.to_string()))?;
    Ok(if args.json {
        memory_openai::wire::to_value(&recalled.messages).to_string()
    } else {
        recalled.text
    })
}

/// Writes each row's context as one JSON line (see `--contexts`).
fn write_contexts(report: &Report, path: &std::path::Path) -> Result<(), CliError> {
    let mut text = String::new();
    for section in report.sections() {
        for row in &section.rows {
            let line = serde_json::json!({
                "pipeline": section.pipeline,
                "trajectory": row.trajectory,
                "turn": row.turn,
                "messages": memory_openai::wire::to_value(row.context.as_deref().unwrap_or_default()),
            });
            text.push_str(&line.to_string());
            text.push('\n');
        }
    }
    std::fs::write(path, text).map_err(|source| CliError::Report {
        file: path.display().to_string(),
        source,
    })
}

/// Checks (and with `repair`, repairs) every trajectory of `input`, saying
/// on stderr what a repair changed; what the report lists of each.
fn checked(
    input: &mut input::Input,
    file: &str,
    repair: bool,
) -> Result<Vec<report::TrajectoryInfo>, CliError> {
    let mut trajectories = Vec::with_capacity(input.trajectories.len());
    for (index, trajectory) in input.trajectories.iter_mut().enumerate() {
        let repairs = match input::check(trajectory, repair).map_err(|l| l.in_file(file))? {
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
    Ok(trajectories)
}

/// `memory eval locomo`: checks the options, loads the LoCoMo file, asks its
/// questions through each pipeline and writes the report file when one is
/// asked for.
///
/// # Errors
///
/// Bad options or input ([`CliError::exit_code`] 2), a failing trim or an
/// unwritable report (1).
pub async fn eval_locomo_command(args: &LocomoArgs) -> Result<EvalReport, CliError> {
    let config = stage_config(&args.stages, &args.model)?;
    let file = args.input.display().to_string();
    let locomo = input::load_locomo(&args.input)?;
    let samples: Vec<eval::SampleInfo> = locomo
        .samples
        .iter()
        .enumerate()
        .map(|(index, sample)| eval::SampleInfo::of(index, sample))
        .collect();

    let asked: usize = samples.iter().map(|s| s.questions).sum();
    let progress = Progress::new(
        asked as u64 * args.stages.pipeline.len() as u64,
        "questions",
    );
    progress.set_message(&args.stages.pipeline.join(" | "));
    let arrival = eval::Arrival::default();
    let mut sections = eval::evaluate(
        &locomo,
        &file,
        &args.stages.pipeline,
        &config,
        arrival,
        &progress,
    )
    .await?;
    progress.finish();
    let mut failures = memory_layer::FailureCounts::default();
    for section in &sections {
        failures.merge(section.totals.summarizer_failures);
    }
    let calls = sections.iter().map(|s| s.totals.summarizer_calls).sum();
    if let Some(line) = summarizer::failures_line(&failures, calls) {
        eprintln!("{line}");
    }

    let pipelines = if sections.len() > 1 {
        sections.clone()
    } else {
        Vec::new()
    };
    let report = EvalReport {
        input: file,
        format: input::Format::Locomo.to_string(),
        counter: args.stages.counter.clone(),
        budget: config.budget.max_tokens.unwrap_or_default(),
        arrival,
        samples,
        result: sections.swap_remove(0),
        pipelines,
    };
    if let Some(path) = &args.report {
        write_report(&report, path)?;
    }
    Ok(report)
}

/// Writes `report` as pretty JSON to `path`.
fn write_report(report: &impl serde::Serialize, path: &std::path::Path) -> Result<(), CliError> {
    let failed = |source| CliError::Report {
        file: path.display().to_string(),
        source,
    };
    let json = serde_json::to_string_pretty(report).map_err(|e| failed(e.into()))?;
    std::fs::write(path, json + "\n").map_err(failed)
}
