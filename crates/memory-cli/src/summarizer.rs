//! The summarizer the command's summarizing stages call, built from
//! [`SummarizerArgs`].

use std::sync::Arc;
use std::time::Duration;

use memory_core::{ChatRequest, ChatResponse, Provider, ProviderError};
use memory_openai::OpenAiProvider;
use memory_summarize::{ExtractiveSummarizer, FailureClass, FailureCounts};

use crate::CliError;
use crate::args::{SummarizerArgs, SummarizerKind};

/// Which summarizer `args` ask for: `--summarizer` when given, else
/// `openai` when `--base-url` or `--model` is (with a note saying so), else
/// `extractive`.
///
/// # Errors
///
/// [`CliError::Usage`] for `--summarizer extractive` with `--base-url` or
/// `--model`, which it would not use.
///
/// ```
/// use clap::Parser;
/// use memory_cli::args::SummarizerKind;
/// let parse = |extra: &[&str]| {
///     let mut argv = vec!["memory", "replay", "--input", "s.json", "--budget", "10", "--pipeline", "compact"];
///     argv.extend_from_slice(extra);
///     let memory_cli::Command::Replay(args) = memory_cli::Cli::try_parse_from(argv).unwrap().command else { unreachable!() };
///     memory_cli::summarizer::kind(&args.model)
/// };
/// assert_eq!(parse(&[]).unwrap(), (SummarizerKind::Extractive, None));
/// let (kind, note) = parse(&["--base-url", "http://127.0.0.1:8080/v1"]).unwrap();
/// assert_eq!(kind, SummarizerKind::Openai);
/// assert!(note.unwrap().contains("--summarizer openai"));
/// assert!(parse(&["--summarizer", "extractive", "--model", "m"]).is_err());
/// ```
pub fn kind(args: &SummarizerArgs) -> Result<(SummarizerKind, Option<String>), CliError> {
    let endpoint: Vec<&str> = [
        args.base_url.as_ref().map(|_| "--base-url"),
        args.model.as_ref().map(|_| "--model"),
    ]
    .into_iter()
    .flatten()
    .collect();
    match (args.summarizer, endpoint.is_empty()) {
        (Some(SummarizerKind::Extractive), false) => Err(CliError::Usage(format!(
            "{} is for --summarizer openai; the extractive summarizer calls no model (drop it, or use --summarizer openai)",
            endpoint.join(" and ")
        ))),
        (Some(kind), _) => Ok((kind, None)),
        (None, false) => Ok((
            SummarizerKind::Openai,
            Some(format!(
                "{} given: summarizing with --summarizer openai",
                endpoint.join(" and ")
            )),
        )),
        (None, true) => Ok((SummarizerKind::Extractive, None)),
    }
}

/// Builds the summarizer `kind` names from `args`.
///
/// # Errors
///
/// [`CliError::Usage`] when `openai` lacks `--base-url` or `--model`.
///
/// ```
/// use clap::Parser;
/// use memory_cli::args::SummarizerKind;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "replay", "--input", "s.json", "--budget", "10", "--pipeline", "summarize",
///     "--summarizer", "openai",
/// ]).unwrap();
/// let memory_cli::Command::Replay(args) = cli.command else { unreachable!() };
/// let Err(err) = memory_cli::summarizer::build(SummarizerKind::Openai, &args.model) else { panic!("needs an endpoint") };
/// assert!(err.to_string().contains("--base-url"));
/// ```
pub fn build(kind: SummarizerKind, args: &SummarizerArgs) -> Result<Arc<dyn Provider>, CliError> {
    let provider: Arc<dyn Provider> = match kind {
        SummarizerKind::Extractive => Arc::new(ExtractiveSummarizer::new()),
        SummarizerKind::Openai => {
            let (Some(base_url), Some(model)) = (&args.base_url, &args.model) else {
                return Err(CliError::Usage(
                    "--summarizer openai needs --base-url URL and --model M".into(),
                ));
            };
            Arc::new(OpenAiProvider::new(base_url, model).with_api_key_env(&args.api_key_env))
        }
    };
    Ok(match args.summarizer_latency_ms {
        0 => provider,
        ms => Arc::new(Delayed {
            inner: provider,
            delay: Duration::from_millis(ms),
        }),
    })
}

/// Prints one warning line on stderr for the first summarizer failure of
/// the process, naming its class, what the provider said and where; later
/// failures are only counted (in the report, and by [`failures_line`] at
/// the end).
///
/// ```
/// memory_cli::summarizer::warn_first_failure(
///     memory_summarize::FailureClass::Timeout,
///     "request timed out after 120000 ms",
///     "trajectory 0, message 12",
/// );
/// ```
pub fn warn_first_failure(class: FailureClass, message: &str, at: &str) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "memory: warning: a summarizer call failed ({}) before {at}: {message}; history was kept, later failures are counted in the report",
            class.name().replace('_', " ")
        );
    });
}

/// The closing line about failed summarizer calls, or `None` when none
/// failed.
///
/// ```
/// use memory_summarize::FailureCounts;
/// let f = FailureCounts { context_overflow: 9, ..Default::default() };
/// assert_eq!(
///     memory_cli::summarizer::failures_line(&f, 12).unwrap(),
///     "memory: 9 of 12 summarizer calls failed (9 context overflow)"
/// );
/// assert!(memory_cli::summarizer::failures_line(&FailureCounts::default(), 3).is_none());
/// ```
pub fn failures_line(failures: &FailureCounts, calls: u64) -> Option<String> {
    (!failures.is_empty()).then(|| {
        format!(
            "memory: {} of {calls} summarizer calls failed ({failures})",
            failures.total()
        )
    })
}

/// A provider that waits before every call: a stand-in for a slow model
/// around a fast one.
struct Delayed {
    inner: Arc<dyn Provider>,
    delay: Duration,
}

#[async_trait::async_trait]
impl Provider for Delayed {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        tokio::time::sleep(self.delay).await;
        self.inner.chat(request).await
    }
}
