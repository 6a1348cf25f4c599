//! The relevance scorer `thrift` stages use, from the command line.

use std::sync::Arc;
use std::time::Duration;

use memory_layer::CachedEmbedder;
use memory_layer::{EmbedderExt, RetryPolicy};
use memory_openai::OpenAiEmbedder;
use memory_thrift::{Lexical, Relevance, Semantic};

use crate::CliError;
use crate::args::{RelevanceArgs, RelevanceKind};

/// The scorer `args` names: [`Lexical`], or [`Semantic`] over the endpoint
/// with each text embedded once per run (questions and turns cached apart,
/// with retries and a timeout on each request).
///
/// # Errors
///
/// [`CliError::Usage`] when `embeddings` is asked for without a URL.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "eval", "locomo", "--input", "l.json", "--budget", "1000", "--pipeline", "thrift",
/// ]).unwrap();
/// let memory_cli::Command::Eval(memory_cli::Eval::Locomo(args)) = cli.command else { unreachable!() };
/// let relevance = memory_cli::relevance::build(&args.stages.relevance).unwrap();
/// assert_eq!(relevance.name(), "lexical");
/// ```
pub fn build(args: &RelevanceArgs) -> Result<Arc<dyn Relevance>, CliError> {
    match args.relevance {
        RelevanceKind::Lexical => Ok(Arc::new(Lexical)),
        RelevanceKind::Embeddings => {
            let Some(url) = &args.embeddings_url else {
                return Err(CliError::Usage(
                    "--relevance embeddings needs --embeddings-url".to_string(),
                ));
            };
            let mut endpoint = OpenAiEmbedder::new(url.clone(), args.embeddings_model.clone());
            if let Some(var) = &args.embeddings_key_env {
                endpoint = endpoint.with_api_key_env(var.clone());
            }
            let timeout = Duration::from_millis(args.embeddings_timeout_ms);
            let layered = |kind: &str| {
                let endpoint = if args.embeddings_input_types {
                    endpoint.clone().with_input_type(kind)
                } else {
                    endpoint.clone()
                };
                CachedEmbedder::new(
                    endpoint
                        .with_timeout(timeout)
                        .with_retry(RetryPolicy::default()),
                )
            };
            let semantic = Semantic::with_embedders(layered("query"), layered("passage"))
                .with_weight(args.embeddings_weight);
            Ok(Arc::new(semantic))
        }
    }
}
