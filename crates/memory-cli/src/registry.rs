//! The registry: stage names and counter names the command accepts, each
//! mapped to a factory.
//!
//! A strategy crate joins the command with one row in [`STAGES`]: its name,
//! a line of help, and a function that builds it from a [`StageConfig`].
//! Options a stage needs (a summarizer, a model) go into [`StageConfig`].

use std::sync::Arc;

use memory_core::{Budget, CharTokenCounter, Pipeline, TokenCounter, TrimStrategy};
use memory_window::WindowDrop;

use crate::{CliError, Meter};

/// What a stage factory may use to build its stage.
#[derive(Clone)]
pub struct StageConfig {
    /// The budget of the replay.
    pub budget: Budget,
    /// The token counter of the replay.
    pub counter: Arc<dyn TokenCounter>,
    /// Wraps any model provider a stage calls, so its calls are reported.
    pub meter: Meter,
}

impl std::fmt::Debug for StageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageConfig")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

/// Builds a stage, or says which option it is missing.
pub type StageFactory = fn(&StageConfig) -> Result<Arc<dyn TrimStrategy>, String>;

/// One registered stage.
#[derive(Debug, Clone, Copy)]
pub struct Stage {
    /// The name used in `--pipeline`.
    pub name: &'static str,
    /// One line of help.
    pub about: &'static str,
    /// Builds a fresh instance (one per replayed trajectory).
    pub build: StageFactory,
}

/// Every stage `--pipeline` accepts.
///
/// ```
/// assert!(memory_cli::registry::STAGES.iter().any(|s| s.name == "window"));
/// ```
pub const STAGES: &[Stage] = &[Stage {
    name: "window",
    about: "drop the oldest steps and rounds that do not fit (memory-window)",
    build: window,
}];

fn window(_: &StageConfig) -> Result<Arc<dyn TrimStrategy>, String> {
    Ok(Arc::new(WindowDrop::new()))
}

/// Builds a counter.
pub type CounterFactory = fn() -> Arc<dyn TokenCounter>;

/// One registered token counter.
#[derive(Debug, Clone, Copy)]
pub struct Counter {
    /// The name used in `--counter`.
    pub name: &'static str,
    /// One line of help.
    pub about: &'static str,
    /// Builds it.
    pub build: CounterFactory,
}

/// Every counter `--counter` accepts.
///
/// ```
/// assert_eq!(memory_cli::registry::COUNTERS[0].name, "chars");
/// ```
pub const COUNTERS: &[Counter] = &[Counter {
    name: "chars",
    about: "a CJK ideograph is 1 token, other characters 1/4 (CharTokenCounter)",
    build: chars,
}];

fn chars() -> Arc<dyn TokenCounter> {
    Arc::new(CharTokenCounter)
}

/// The known stage names, comma-separated.
///
/// ```
/// assert!(memory_cli::registry::stage_names().contains("window"));
/// ```
pub fn stage_names() -> String {
    STAGES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

/// The known counter names, comma-separated.
///
/// ```
/// assert_eq!(memory_cli::registry::counter_names(), "chars");
/// ```
pub fn counter_names() -> String {
    COUNTERS
        .iter()
        .map(|c| c.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The counter called `name`.
///
/// # Errors
///
/// [`CliError::UnknownCounter`], listing the known names.
///
/// ```
/// assert!(memory_cli::registry::counter("chars").is_ok());
/// assert!(memory_cli::registry::counter("words").is_err());
/// ```
pub fn counter(name: &str) -> Result<Arc<dyn TokenCounter>, CliError> {
    COUNTERS
        .iter()
        .find(|c| c.name == name)
        .map(|c| (c.build)())
        .ok_or_else(|| CliError::UnknownCounter {
            name: name.to_string(),
            known: counter_names(),
        })
}

/// The stages of `spec` (names joined by commas), checked but not built.
///
/// # Errors
///
/// [`CliError::Pipeline`] for an empty spec or an empty name,
/// [`CliError::UnknownStage`] for a name not in [`STAGES`].
///
/// ```
/// let stages = memory_cli::registry::stages(" window , window").unwrap();
/// assert_eq!(stages.len(), 2);
/// assert!(memory_cli::registry::stages("window,").is_err());
/// ```
pub fn stages(spec: &str) -> Result<Vec<&'static Stage>, CliError> {
    spec.split(',')
        .map(str::trim)
        .map(|name| {
            if name.is_empty() {
                return Err(CliError::Pipeline {
                    spec: spec.to_string(),
                    problem: format!(
                        "empty stage name; join stage names with commas, e.g. `window` (known stages: {})",
                        stage_names()
                    ),
                });
            }
            STAGES
                .iter()
                .find(|s| s.name == name)
                .ok_or_else(|| CliError::UnknownStage {
                    name: name.to_string(),
                    known: stage_names(),
                })
        })
        .collect()
}

/// A fresh [`Pipeline`] of the stages in `spec`, in order.
///
/// # Errors
///
/// As [`stages`], and [`CliError::Pipeline`] when a stage cannot be built
/// from `config`.
///
/// ```
/// use std::sync::Arc;
/// use memory_cli::registry::{pipeline, StageConfig};
/// let config = StageConfig {
///     budget: memory_core::Budget::tokens(100),
///     counter: Arc::new(memory_core::CharTokenCounter),
///     meter: memory_cli::Meter::new(),
/// };
/// let p = pipeline("window", &config).unwrap();
/// assert_eq!(p.len(), 1);
/// let err = pipeline("window,nope", &config).unwrap_err();
/// assert_eq!(err.exit_code(), 2);
/// ```
pub fn pipeline(spec: &str, config: &StageConfig) -> Result<Pipeline, CliError> {
    let mut pipeline = Pipeline::new();
    for stage in stages(spec)? {
        let built = (stage.build)(config).map_err(|problem| CliError::Pipeline {
            spec: spec.to_string(),
            problem: format!("stage `{}`: {problem}", stage.name),
        })?;
        pipeline = pipeline.then_arc(built);
    }
    Ok(pipeline)
}
