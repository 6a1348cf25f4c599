//! The summarizer the command's summarizing stages call, built from
//! [`SummarizerArgs`] as a stack of provider layers, and what those stages
//! ask of each summary.

use std::sync::Arc;
use std::time::Duration;

use memory_compact::Compact;
use memory_core::{ChatRequest, ChatResponse, Provider, ProviderError};
use memory_layer::{FailureClass, FailureCounts, Meter, ProviderExt, ProviderStats, RetryPolicy};
use memory_openai::{DEFAULT_API_KEY_ENV, OpenAiProvider, is_openai_api};
use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
use memory_summary_engine::cap::CapTooSmall;
use memory_summary_engine::{Rejection, RejectionObserver};

use crate::CliError;

/// Room for the backoff between two attempts of one request.
const BACKOFF_ROOM: Duration = Duration::from_secs(30);

/// What "no limit" on a request means to a stage that needs one: a day.
const NO_LIMIT: Duration = Duration::from_secs(86_400);
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

/// The provider at `base_url`, with the key the library's rule gives it:
/// from the variable `api_key_env` names, whatever the host (it must be
/// set), else from `OPENAI_API_KEY` for `https://api.openai.com` only. A
/// note on stderr says when `OPENAI_API_KEY` is set but not sent.
fn openai(
    base_url: &str,
    model: &str,
    api_key_env: Option<&str>,
) -> Result<OpenAiProvider, CliError> {
    let provider = OpenAiProvider::new(base_url, model);
    let Some(var) = api_key_env else {
        let default_set = std::env::var(DEFAULT_API_KEY_ENV).is_ok_and(|k| !k.trim().is_empty());
        if default_set && !is_openai_api(base_url) {
            eprintln!(
                "memory: {DEFAULT_API_KEY_ENV} goes only to https://api.openai.com; {base_url} \
                 gets no key (name the variable that holds its key with --api-key-env)"
            );
        }
        return Ok(provider);
    };
    let provider = provider.with_api_key_env(var);
    provider
        .check_api_key()
        .map_err(|e| CliError::Usage(format!("--api-key-env {var}: {e}")))?;
    Ok(provider)
}

/// The summarizer every stage of a run calls: a stack of provider layers,
/// with the [`Meter`] inside it that counts every request sent to the
/// endpoint (retries included). Clones share the stack and the counts.
///
/// ```
/// use std::sync::Arc;
/// use memory_cli::summarizer::Summarizer;
/// let summarizer = Summarizer::metered(Arc::new(memory_summarize::ExtractiveSummarizer::new()));
/// assert_eq!(summarizer.snapshot().calls, 0);
/// assert!(summarizer.first_failure().is_none());
/// ```
#[derive(Clone)]
pub struct Summarizer {
    stack: Arc<dyn Provider>,
    meter: Meter,
}

impl Summarizer {
    /// `provider`, metered as it is: every call made through it counts.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = memory_cli::summarizer::Summarizer::metered(Arc::new(memory_core::FakeProvider::default()));
    /// # let _ = s;
    /// ```
    pub fn metered(provider: Arc<dyn Provider>) -> Self {
        let metered = provider.metered();
        let meter = metered.meter();
        Self {
            stack: Arc::new(metered),
            meter,
        }
    }

    /// The calls, tokens and failures counted so far.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let s = memory_cli::summarizer::Summarizer::metered(Arc::new(memory_core::FakeProvider::default()));
    /// assert_eq!(s.snapshot().input_tokens, 0);
    /// ```
    pub fn snapshot(&self) -> ProviderStats {
        self.meter.snapshot()
    }

    /// The first failed call's class and message, if any failed.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let s = memory_cli::summarizer::Summarizer::metered(Arc::new(memory_core::FakeProvider::default()));
    /// assert!(s.first_failure().is_none());
    /// ```
    pub fn first_failure(&self) -> Option<(FailureClass, String)> {
        self.meter.first_failure()
    }

    /// Counts the replies a summarizing stage refuses for what they say
    /// (not an assistant message, asking for tools, blank:
    /// `malformed_reply`; saying nothing about what they cover:
    /// `ungrounded`) into this summarizer's failures. How a call ended (an
    /// error, a refusal, a cut-off reply) the meter counts itself.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use memory_summary_engine::{Rejection, RejectionObserver};
    /// let s = memory_cli::summarizer::Summarizer::metered(Arc::new(memory_core::FakeProvider::default()));
    /// s.rejection_observer().on_rejection(&Rejection::Empty);
    /// assert_eq!(s.snapshot().by_class.malformed_reply, 1);
    /// ```
    pub fn rejection_observer(&self) -> impl RejectionObserver + 'static {
        let meter = self.meter.clone();
        move |rejection: &Rejection| {
            if let Some(class) = class_of(rejection) {
                meter.fail(class, rejection.to_string());
            }
        }
    }
}

/// The failure class of a refused reply that the meter did not count.
fn class_of(rejection: &Rejection) -> Option<FailureClass> {
    match rejection {
        Rejection::NotAssistant(_) | Rejection::ToolCalls | Rejection::Empty => {
            Some(FailureClass::MalformedReply)
        }
        Rejection::Ungrounded { .. } => Some(FailureClass::Ungrounded),
        // Incomplete: the meter counts it from the stop reason; over the
        // cap or not shorter: the call itself did not fail.
        _ => None,
    }
}

impl std::fmt::Debug for Summarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Summarizer")
            .field("stats", &self.snapshot())
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Provider for Summarizer {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.stack.chat(request).await
    }
}

/// Builds the summarizer `kind` names from `args`, as one stack: the
/// backend, the added latency (`--summarizer-latency-ms`), the meter, and
/// for `openai` a limit on each request (`--timeout-ms`) and retries of
/// failed ones (`--retries`), so every request sent is counted.
///
/// # Errors
///
/// [`CliError::Usage`] when `openai` lacks `--base-url` or `--model`, or
/// the variable `--api-key-env` names is unset.
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
/// let offline = memory_cli::summarizer::build(SummarizerKind::Extractive, &args.model).unwrap();
/// assert_eq!(offline.snapshot().calls, 0);
/// ```
pub fn build(kind: SummarizerKind, args: &SummarizerArgs) -> Result<Summarizer, CliError> {
    let backend: Arc<dyn Provider> = match kind {
        SummarizerKind::Extractive => Arc::new(ExtractiveSummarizer::new()),
        SummarizerKind::Openai => {
            let (Some(base_url), Some(model)) = (&args.base_url, &args.model) else {
                return Err(CliError::Usage(
                    "--summarizer openai needs --base-url URL and --model M".into(),
                ));
            };
            Arc::new(openai(base_url, model, args.api_key_env.as_deref())?)
        }
    };
    let backend: Arc<dyn Provider> = match args.summarizer_latency_ms {
        0 => backend,
        ms => Arc::new(Delayed::new(backend, Duration::from_millis(ms))),
    };
    if kind == SummarizerKind::Extractive {
        return Ok(Summarizer::metered(backend));
    }
    let metered = backend.metered();
    let meter = metered.meter();
    let retries = RetryPolicy::new(args.retries, Duration::from_millis(500));
    let stack: Arc<dyn Provider> = match args.timeout_ms {
        0 => Arc::new(metered.with_retry(retries)),
        ms => Arc::new(
            metered
                .with_timeout(Duration::from_millis(ms))
                .with_retry(retries),
        ),
    };
    Ok(Summarizer { stack, meter })
}

/// Renamed [`SummaryFlags`]: `memory_summary_engine::SummarySettings` is
/// the strategies' settings, these are the command's flags for them.
///
/// ```
/// #![allow(deprecated)]
/// let _ = memory_cli::summarizer::SummarySettings::default();
/// ```
#[deprecated(note = "renamed SummaryFlags")]
pub type SummarySettings = SummaryFlags;

/// What summarizing stages ask of each summary, from the command line;
/// `None` keeps a stage's own default.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "replay", "--input", "s.json", "--budget", "4000", "--pipeline", "summarize",
///     "--summary-max-tokens", "512", "--max-input-tokens", "6000", "--temperature", "0.2",
/// ]).unwrap();
/// let memory_cli::Command::Replay(args) = cli.command else { unreachable!() };
/// let settings = memory_cli::summarizer::SummaryFlags::of(&args.model);
/// assert_eq!(settings.summary_max_tokens, Some(512));
/// assert_eq!(settings.max_input_tokens, Some(6_000));
/// assert_eq!(settings.temperature, Some(0.2));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SummaryFlags {
    /// The cap on one summary (`--summary-max-tokens`).
    pub summary_max_tokens: Option<u32>,
    /// The limit on one request's input (`--max-input-tokens`).
    pub max_input_tokens: Option<usize>,
    /// The sampling temperature (`--temperature`).
    pub temperature: Option<f32>,
    /// How long one summary request may take through the summarizer's
    /// stack, its retries included (`--timeout-ms` times the attempts, plus
    /// room for the backoff); `None` when requests have no limit.
    pub request_limit: Option<Duration>,
}

impl SummaryFlags {
    /// The settings `args` give.
    ///
    /// ```
    /// # use clap::Parser;
    /// # let cli = memory_cli::Cli::try_parse_from(["memory", "replay", "--input", "s.json", "--budget", "10", "--pipeline", "window"]).unwrap();
    /// # let memory_cli::Command::Replay(args) = cli.command else { unreachable!() };
    /// let settings = memory_cli::summarizer::SummaryFlags::of(&args.model);
    /// assert_eq!(settings.summary_max_tokens, None);
    /// // Four attempts of at most 120 s, and room for the backoff between them.
    /// assert_eq!(settings.request_limit, Some(std::time::Duration::from_secs(4 * 120 + 4 * 30)));
    /// ```
    pub fn of(args: &SummarizerArgs) -> Self {
        let attempts = args.retries.saturating_add(1);
        Self {
            summary_max_tokens: args.summary_max_tokens,
            max_input_tokens: args.max_input_tokens,
            temperature: args.temperature,
            request_limit: (args.timeout_ms > 0).then(|| {
                Duration::from_millis(args.timeout_ms).saturating_mul(attempts)
                    + BACKOFF_ROOM.saturating_mul(attempts)
            }),
        }
    }

    /// `compact` with the settings that are given. The summarizer's stack
    /// already times out and retries each request, so the stage itself
    /// does not retry (attempts would multiply) and waits as long as the
    /// stack may take.
    ///
    /// ```
    /// use memory_cli::summarizer::SummaryFlags;
    /// use memory_compact::Compact;
    /// let settings = SummaryFlags {
    ///     summary_max_tokens: Some(300), max_input_tokens: Some(6_000), temperature: Some(0.5),
    ///     ..Default::default()
    /// };
    /// let compact = settings.apply_compact(Compact::new(memory_core::FakeProvider::default())).unwrap();
    /// assert_eq!((compact.summary_max_tokens(), compact.max_input_tokens()), (300, 6_000));
    /// assert_eq!(compact.options().temperature, Some(0.5));
    /// ```
    ///
    /// # Errors
    ///
    /// [`CapTooSmall`] for a summary cap that cannot hold the summary's
    /// own framing.
    pub fn apply_compact(&self, compact: Compact) -> Result<Compact, CapTooSmall> {
        let summary = self.onto(compact.summary().clone());
        Ok(compact
            .with_summary(summary)?
            .with_retries(0)
            .with_timeout(self.request_limit.unwrap_or(NO_LIMIT)))
    }

    /// `strategy` with the settings that are given.
    ///
    /// ```
    /// use memory_cli::summarizer::SummaryFlags;
    /// use memory_summarize::{ExtractiveSummarizer, SummarizeStrategy};
    /// let settings = SummaryFlags { summary_max_tokens: Some(256), ..Default::default() };
    /// let strategy = settings.apply(SummarizeStrategy::new(ExtractiveSummarizer::new())).unwrap();
    /// assert_eq!(strategy.summary_max_tokens(), 256);
    /// assert_eq!(strategy.max_input_tokens(), memory_summarize::DEFAULT_MAX_INPUT_TOKENS);
    /// ```
    ///
    /// # Errors
    ///
    /// [`CapTooSmall`] for a summary cap that cannot hold the summary's
    /// own framing.
    pub fn apply(&self, strategy: SummarizeStrategy) -> Result<SummarizeStrategy, CapTooSmall> {
        let summary = self.onto(strategy.summary().clone());
        strategy.with_summary(summary)
    }

    /// `summary` with the settings that are given: the one place both
    /// stages take them from.
    fn onto(
        &self,
        mut summary: memory_summary_engine::SummarySettings,
    ) -> memory_summary_engine::SummarySettings {
        if let Some(tokens) = self.summary_max_tokens {
            summary = summary.with_summary_max_tokens(tokens);
        }
        if let Some(tokens) = self.max_input_tokens {
            summary = summary.with_max_input_tokens(tokens);
        }
        if let Some(temperature) = self.temperature {
            summary = summary.with_temperature(temperature);
        }
        summary
    }
}

/// Prints one warning line on stderr for the first summarizer failure of
/// the process, naming its class, what the provider said and where; later
/// failures are only counted (in the report, and by [`failures_line`] at
/// the end).
///
/// ```
/// memory_cli::summarizer::warn_first_failure(
///     memory_layer::FailureClass::Timeout,
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
/// use memory_layer::FailureCounts;
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

/// A provider layer that waits before every call: a stand-in for a slow
/// model around a fast one.
struct Delayed<P> {
    inner: P,
    delay: Duration,
}

impl<P> Delayed<P> {
    fn new(inner: P, delay: Duration) -> Self {
        Self { inner, delay }
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for Delayed<P> {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        tokio::time::sleep(self.delay).await;
        self.inner.chat(request).await
    }
}
