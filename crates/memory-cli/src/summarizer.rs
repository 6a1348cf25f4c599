//! The summarizer the command's summarizing stages call, built from
//! [`SummarizerArgs`].

use std::sync::Arc;
use std::time::Duration;

use memory_core::{ChatRequest, ChatResponse, Provider, ProviderError};
use memory_openai::OpenAiProvider;
use memory_summarize::ExtractiveSummarizer;

use crate::CliError;
use crate::args::{SummarizerArgs, SummarizerKind};

/// Builds the summarizer `args` ask for.
///
/// # Errors
///
/// [`CliError::Usage`] when `--summarizer openai` lacks `--base-url` or
/// `--model`.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "replay", "--input", "s.json", "--budget", "10", "--pipeline", "summarize",
///     "--summarizer", "openai",
/// ]).unwrap();
/// let memory_cli::Command::Replay(args) = cli.command else { unreachable!() };
/// let Err(err) = memory_cli::summarizer::build(&args.model) else { panic!("needs an endpoint") };
/// assert!(err.to_string().contains("--base-url"));
/// ```
pub fn build(args: &SummarizerArgs) -> Result<Arc<dyn Provider>, CliError> {
    let provider: Arc<dyn Provider> = match args.summarizer {
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
