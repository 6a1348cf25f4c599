//! The registry: stage names and counter names the command accepts, each
//! mapped to a factory.
//!
//! A strategy crate joins the command with one row in [`STAGES`]: its name,
//! a line of help, and a function that builds it from a [`StageConfig`].
//! Options a stage needs (a summarizer, a model) go into [`StageConfig`].

use std::sync::Arc;

use memory_compact::Compact;
use memory_core::{Budget, CharTokenCounter, MemoryError, Pipeline, TokenCounter, TrimStrategy};
use memory_layer::ProviderStats;
use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
use memory_thrift::Thrift;
use memory_tokenizers::{CachedCounter, Cl100k, HfCounter, O200k};
use memory_window::WindowDrop;

use crate::CliError;
use crate::pricing::Pricing;
use crate::summarizer::{Summarizer, SummaryFlags};

/// What a stage factory may use to build its stage, and what the measures
/// of a run share.
#[derive(Clone)]
pub struct StageConfig {
    /// The budget of the replay.
    pub budget: Budget,
    /// The token counter of the replay.
    pub counter: Arc<dyn TokenCounter>,
    /// The model that summarizing stages call (by default the offline
    /// extractive summarizer), metered so the report can say what it cost.
    pub summarizer: Summarizer,
    /// What summarizing stages ask of each summary.
    pub summary: SummaryFlags,
    /// Whether stages that can summarize in the background do.
    pub background: bool,
    /// Where replayed sessions are kept, and the session id they start from.
    pub store: Option<(Arc<dyn memory_core::Store>, String)>,
    /// How long the agent's own model call takes after each measured call
    /// (simulated; gives background work the time it would have).
    pub turn_delay: std::time::Duration,
    /// How each replayed call is priced (`Row::cost`).
    pub pricing: Pricing,
    /// How `thrift` stages score older turns.
    pub relevance: Arc<dyn memory_thrift::Relevance>,
    /// Whether the task (a session's first user request) is part of the
    /// floor (`--no-task-floor` turns it off).
    pub task_floor: bool,
    /// How contexts index what they leave out (`--index-share`); `None`:
    /// no index.
    pub index: Option<memory_session::left_out::IndexSettings>,
    /// Whether each replayed call's context is kept in its row
    /// (`--contexts`).
    pub keep_contexts: bool,
}

impl StageConfig {
    /// A configuration with the offline extractive summarizer, in the
    /// foreground.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let config = memory_cli::registry::StageConfig::new(
    ///     memory_core::Budget::tokens(100),
    ///     Arc::new(memory_core::CharTokenCounter),
    /// );
    /// assert_eq!(config.usage().calls, 0);
    /// ```
    pub fn new(budget: Budget, counter: Arc<dyn TokenCounter>) -> Self {
        Self {
            budget,
            counter,
            summarizer: Summarizer::metered(Arc::new(ExtractiveSummarizer::new())),
            summary: SummaryFlags::default(),
            background: false,
            store: None,
            turn_delay: std::time::Duration::ZERO,
            pricing: Pricing::default(),
            relevance: Arc::new(memory_thrift::Lexical),
            task_floor: true,
            index: Some(memory_session::left_out::IndexSettings::default()),
            keep_contexts: false,
        }
    }

    /// Keeps replayed sessions in `store`, under `session` (see
    /// [`ReplayArgs::session`](crate::ReplayArgs::session)).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let config = memory_cli::registry::StageConfig::new(
    ///     memory_core::Budget::tokens(100),
    ///     Arc::new(memory_core::CharTokenCounter),
    /// )
    /// .with_store(Arc::new(memory_core::InMemoryStore::new()), "s1");
    /// assert!(config.store.is_some());
    /// ```
    pub fn with_store(mut self, store: Arc<dyn memory_core::Store>, session: &str) -> Self {
        self.store = Some((store, session.to_string()));
        self
    }

    /// Uses `summarizer` (see [`crate::summarizer::build`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use memory_cli::summarizer::Summarizer;
    /// let config = memory_cli::registry::StageConfig::new(
    ///     memory_core::Budget::tokens(100),
    ///     Arc::new(memory_core::CharTokenCounter),
    /// )
    /// .with_summarizer(Summarizer::metered(Arc::new(memory_core::FakeProvider::default())));
    /// # let _ = config;
    /// ```
    pub fn with_summarizer(mut self, summarizer: Summarizer) -> Self {
        self.summarizer = summarizer;
        self
    }

    /// Summarizes in the background where a stage can.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let config = memory_cli::registry::StageConfig::new(
    ///     memory_core::Budget::tokens(100),
    ///     Arc::new(memory_core::CharTokenCounter),
    /// )
    /// .with_background(true);
    /// assert!(config.background);
    /// ```
    pub fn with_background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    /// The summarizer's calls and tokens so far.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let config = memory_cli::registry::StageConfig::new(
    /// #     memory_core::Budget::tokens(100), Arc::new(memory_core::CharTokenCounter));
    /// assert_eq!(config.usage().input_tokens, 0);
    /// ```
    pub fn usage(&self) -> ProviderStats {
        self.summarizer.snapshot()
    }
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
    /// Whether it calls the summarizer.
    pub summarizes: bool,
    /// Builds a fresh instance (one per replayed trajectory).
    pub build: StageFactory,
}

/// Every stage `--pipeline` accepts.
///
/// ```
/// assert!(memory_cli::registry::STAGES.iter().any(|s| s.name == "window"));
/// ```
pub const STAGES: &[Stage] = &[
    Stage {
        name: "window",
        about: "drop the oldest steps and rounds that do not fit (memory-window)",
        summarizes: false,
        build: window,
    },
    Stage {
        name: "thrift",
        about: "shed low-signal content and irrelevant rounds, no model call (memory-thrift)",
        summarizes: false,
        build: thrift,
    },
    Stage {
        name: "compact",
        about: "rolling summary of older turns, in the background with --background (memory-compact)",
        summarizes: true,
        build: compact,
    },
    Stage {
        name: "summarize",
        about: "summarize what does not fit into one summary, falling back to window (memory-summarize)",
        summarizes: true,
        build: summarize,
    },
];

fn window(_: &StageConfig) -> Result<Arc<dyn TrimStrategy>, String> {
    Ok(Arc::new(WindowDrop::new()))
}

fn compact(config: &StageConfig) -> Result<Arc<dyn TrimStrategy>, String> {
    let compact = Compact::new(config.summarizer.clone()).with_background(config.background);
    let compact = config.summary.apply_compact(compact).map_err(cap_error)?;
    let summary = compact
        .summary()
        .clone()
        .with_rejection_observer(config.summarizer.rejection_observer());
    Ok(Arc::new(compact.with_summary(summary).map_err(cap_error)?))
}

/// The message for a `--summary-max-tokens` too small for any summary.
fn cap_error(error: memory_summary_engine::cap::CapTooSmall) -> String {
    format!("--summary-max-tokens: {error}")
}

fn thrift(config: &StageConfig) -> Result<Arc<dyn TrimStrategy>, String> {
    // Its trace comes back in each result's diagnostics.
    Ok(Arc::new(
        Thrift::new().with_relevance(config.relevance.clone()),
    ))
}

fn summarize(config: &StageConfig) -> Result<Arc<dyn TrimStrategy>, String> {
    let strategy = SummarizeStrategy::new(config.summarizer.clone());
    let strategy = config.summary.apply(strategy).map_err(cap_error)?;
    let summary = strategy
        .summary()
        .clone()
        .with_rejection_observer(config.summarizer.rejection_observer());
    Ok(Arc::new(strategy.with_summary(summary).map_err(cap_error)?))
}

/// Builds a counter from the text after `name:` (`FILE` in `hf:FILE`), or
/// says what is wrong with it.
pub type CounterFactory = fn(Option<&str>) -> Result<Arc<dyn TokenCounter>, String>;

/// One registered token counter.
#[derive(Debug, Clone, Copy)]
pub struct Counter {
    /// The name used in `--counter`.
    pub name: &'static str,
    /// What follows `name:` when the counter takes an argument (`FILE` for
    /// `hf:FILE`); `None` when it takes none.
    pub argument: Option<&'static str>,
    /// One line of help.
    pub about: &'static str,
    /// Builds it.
    pub build: CounterFactory,
}

impl Counter {
    /// How `--counter` spells it: `chars`, or `hf:FILE` for one that takes
    /// an argument.
    ///
    /// ```
    /// let usage: Vec<String> = memory_cli::registry::COUNTERS.iter().map(|c| c.usage()).collect();
    /// assert!(usage.contains(&"hf:FILE".to_string()));
    /// ```
    pub fn usage(&self) -> String {
        match self.argument {
            Some(argument) => format!("{}:{argument}", self.name),
            None => self.name.to_string(),
        }
    }
}

/// Every counter `--counter` accepts. The exact ones sit behind a
/// [`CachedCounter`], since a replay counts every context again.
///
/// ```
/// assert_eq!(memory_cli::registry::COUNTERS[0].name, "chars");
/// ```
pub const COUNTERS: &[Counter] = &[
    Counter {
        name: "chars",
        argument: None,
        about: "a CJK ideograph is 1 token, other characters 1/4 (CharTokenCounter)",
        build: chars,
    },
    Counter {
        name: "cl100k",
        argument: None,
        about: "OpenAI cl100k_base, exact (GPT-4, GPT-3.5)",
        build: cl100k,
    },
    Counter {
        name: "o200k",
        argument: None,
        about: "OpenAI o200k_base, exact (GPT-4o, GPT-4.1, GPT-5, o-series)",
        build: o200k,
    },
    Counter {
        name: "hf",
        argument: Some("FILE"),
        about: "a Hugging Face tokenizer.json at FILE, exact",
        build: hf,
    },
];

fn chars(_: Option<&str>) -> Result<Arc<dyn TokenCounter>, String> {
    Ok(Arc::new(CharTokenCounter))
}

fn cl100k(_: Option<&str>) -> Result<Arc<dyn TokenCounter>, String> {
    Ok(Arc::new(CachedCounter::new(Cl100k)))
}

fn o200k(_: Option<&str>) -> Result<Arc<dyn TokenCounter>, String> {
    Ok(Arc::new(CachedCounter::new(O200k)))
}

fn hf(file: Option<&str>) -> Result<Arc<dyn TokenCounter>, String> {
    let file = file.unwrap_or_default();
    match HfCounter::from_file(file) {
        Ok(counter) => Ok(Arc::new(CachedCounter::new(counter))),
        // The loader's own sentence, without the generic counting advice.
        Err(MemoryError::TokenCount(problem)) => Err(problem),
        Err(other) => Err(other.to_string()),
    }
}

/// Whether any stage of any spec calls the summarizer (unknown names are
/// left to [`stages`] to report).
///
/// ```
/// let specs = ["window".to_string(), "compact,thrift".to_string()];
/// assert!(memory_cli::registry::summarizes(&specs));
/// assert!(!memory_cli::registry::summarizes(&specs[..1]));
/// ```
pub fn summarizes(specs: &[String]) -> bool {
    specs
        .iter()
        .filter_map(|spec| stages(spec).ok())
        .flatten()
        .any(|stage| stage.summarizes)
}

/// The known stage names, comma-separated.
///
/// ```
/// assert!(memory_cli::registry::stage_names().contains("window"));
/// ```
pub fn stage_names() -> String {
    STAGES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

/// The known counters as `--counter` spells them, comma-separated.
///
/// ```
/// assert_eq!(memory_cli::registry::counter_names(), "chars, cl100k, o200k, hf:FILE");
/// ```
pub fn counter_names() -> String {
    COUNTERS
        .iter()
        .map(Counter::usage)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The counter `spec` names: a name, or `name:ARGUMENT` for a counter that
/// takes one (`hf:tokenizer.json`).
///
/// # Errors
///
/// [`CliError::UnknownCounter`], listing the known names;
/// [`CliError::Counter`] when the argument is missing, unexpected or
/// unusable (a tokenizer file that cannot be read).
///
/// ```
/// assert!(memory_cli::registry::counter("chars").is_ok());
/// assert!(memory_cli::registry::counter("cl100k").is_ok());
/// assert!(memory_cli::registry::counter("words").is_err());
/// let e = memory_cli::registry::counter("hf:no/such/tokenizer.json").err().unwrap();
/// assert_eq!(e.exit_code(), 2);
/// assert!(e.to_string().starts_with("--counter hf:no/such/tokenizer.json: cannot read"), "{e}");
/// ```
pub fn counter(spec: &str) -> Result<Arc<dyn TokenCounter>, CliError> {
    let (name, argument) = match spec.split_once(':') {
        Some((name, argument)) => (name, Some(argument)),
        None => (spec, None),
    };
    let found =
        COUNTERS
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| CliError::UnknownCounter {
                name: name.to_string(),
                known: counter_names(),
            })?;
    let problem = |problem: String| CliError::Counter {
        spec: spec.to_string(),
        problem,
    };
    match (found.argument, argument) {
        (Some(what), None | Some("")) => Err(problem(format!(
            "counter `{name}` needs a {what}: --counter {}",
            found.usage()
        ))),
        (None, Some(_)) => Err(problem(format!(
            "counter `{name}` takes no argument: --counter {name}"
        ))),
        _ => (found.build)(argument).map_err(problem),
    }
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
/// let config = StageConfig::new(memory_core::Budget::tokens(100), Arc::new(memory_core::CharTokenCounter));
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
