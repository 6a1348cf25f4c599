//! `memory serve`: the command's options turned into a running
//! [`memory_serve`] server.

use std::net::SocketAddr;
use std::sync::Arc;

use memory_core::{Budget, TrimStrategy};
use memory_serve::{BudgetMode, PipelineFactory, ServeConfig, StatsSource, SummarizerStats};
use memory_window::WindowDrop;

use crate::registry::{self, StageConfig};
use crate::summarizer::{self, Summarizer, SummaryFlags};
use crate::{CliError, ServeArgs, store};

/// The environment variable that holds the token clients must present.
pub const TOKEN_VAR: &str = "MEMORY_SERVE_TOKEN";

/// Runs the server until the process is interrupted (Ctrl-C or SIGTERM).
///
/// Prints `memory serve: listening on http://ADDR` on stderr once it
/// listens (with port 0, ADDR has the port the system chose).
///
/// # Errors
///
/// Bad options (exit 2): an unknown stage or counter, an unusable store,
/// a non-loopback address without MEMORY_SERVE_TOKEN, an unset
/// --upstream-key-env variable. An address that cannot be bound (1).
pub async fn serve_command(args: &ServeArgs) -> Result<(), CliError> {
    let listen = listen_address(&args.listen).await?;
    let config = serve_config(args, &listen).await?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| CliError::Serve(format!("cannot listen on {listen}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| CliError::Serve(e.to_string()))?;
    eprintln!(
        "memory serve: listening on http://{bound}, upstream {}, pipeline {}, counter {}, store {}",
        memory_serve::shown_url(&config.upstream),
        args.pipeline,
        args.counter,
        args.store
    );
    memory_serve::serve(listener, config, shutdown())
        .await
        .map_err(|e| CliError::Serve(e.to_string()))
}

/// The server's configuration from the options; every option checked.
///
/// # Errors
///
/// As [`serve_command`], for the options.
pub async fn serve_config(args: &ServeArgs, listen: &SocketAddr) -> Result<ServeConfig, CliError> {
    let token = std::env::var(TOKEN_VAR).ok().filter(|t| !t.is_empty());
    let keys = match &args.keys {
        Some(path) => read_keys(path)?,
        None => memory_serve::Keys::default(),
    };
    if !listen.ip().is_loopback() && token.is_none() && keys.is_empty() {
        return Err(CliError::Usage(format!(
            "--listen {listen} is not a loopback address: give --keys FILE, or set {TOKEN_VAR} to a secret that clients then send (as their API key, or in X-Memory-Token)"
        )));
    }
    memory_serve::check_upstream(&args.upstream)
        .map_err(|e| CliError::Usage(format!("--upstream: {e}")))?;
    let upstream_key = match &args.upstream_key_env {
        Some(var) => Some(std::env::var(var).map_err(|_| {
            CliError::Usage(format!("--upstream-key-env {var}: the variable is not set"))
        })?),
        None => None,
    };
    let budget = match (args.budget, args.context_window) {
        (Some(tokens), _) => BudgetMode::Tokens(tokens),
        (None, Some(window)) => BudgetMode::ContextWindow(window),
        (None, None) => BudgetMode::ContextWindow(memory_serve::DEFAULT_CONTEXT_WINDOW),
    };
    let counter = registry::counter(&args.counter)?;
    let stages = stage_config(args, budget, counter.clone())?;
    let mut config = ServeConfig::new(
        &args.upstream,
        factory(&args.pipeline, &stages)?,
        store::open_for_server(&args.store).await?,
    )
    .with_budget(budget)
    .with_counter(counter)
    .with_strict(args.strict)
    .with_token(token)
    .with_keys(keys);
    config.upstream_key = upstream_key;
    config.allowed_origins = args.allow_origins.clone();
    config.allowed_hosts = args.allow_hosts.clone();
    config.first_byte_timeout = std::time::Duration::from_secs(args.first_byte_timeout);
    config.idle_timeout = std::time::Duration::from_secs(args.idle_timeout);
    config.limits = memory_serve::Limits {
        requests_per_minute: args.rate_limit,
        sessions: args.max_sessions,
        messages_per_request: args.max_messages,
    };
    config.session_ttl = args.session_ttl.map(std::time::Duration::from_secs);
    config.max_body_bytes = args.max_body_bytes;
    config.task_floor = !args.no_task_floor;
    config.recall = args.recall;
    config.upstream_api = args.upstream_api;
    config.compaction = compaction(args)?;
    if registry::summarizes(std::slice::from_ref(&args.pipeline)) {
        config.summarizer_stats = Some(stats(stages.summarizer.clone()));
    }
    Ok(config)
}

/// `--compaction`, checked against the upstream's protocol.
fn compaction(args: &ServeArgs) -> Result<Option<memory_serve::Compaction>, CliError> {
    if args.compaction == Some(memory_serve::Compaction::Native)
        && args.upstream_api != memory_serve::Protocol::Responses
    {
        return Err(CliError::Usage(
            "--compaction native needs --upstream-api responses: only a Responses upstream compacts"
                .into(),
        ));
    }
    Ok(args.compaction)
}

/// The keys of `--keys FILE`.
fn read_keys(path: &std::path::Path) -> Result<memory_serve::Keys, CliError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("--keys {shown}: {e}")))?;
    let keys = memory_serve::Keys::parse(&text)
        .map_err(|e| CliError::Usage(format!("--keys {shown}: {e}")))?;
    if keys.is_empty() {
        return Err(CliError::Usage(format!(
            "--keys {shown}: the file holds no key"
        )));
    }
    Ok(keys)
}

/// What every session's stages are built from.
fn stage_config(
    args: &ServeArgs,
    budget: BudgetMode,
    counter: Arc<dyn memory_core::TokenCounter>,
) -> Result<StageConfig, CliError> {
    registry::stages(&args.pipeline)?;
    let (kind, note) = summarizer::kind(&args.model)?;
    let mut config = StageConfig::new(Budget::tokens(budget.for_call(None)), counter)
        .with_background(args.model.background);
    if registry::summarizes(std::slice::from_ref(&args.pipeline)) {
        if let Some(note) = note {
            eprintln!("memory: {note}");
        }
        config = config.with_summarizer(summarizer::build(kind, &args.model)?);
        config.summary = SummaryFlags::of(&args.model);
    }
    config.task_floor = !args.no_task_floor;
    Ok(config)
}

/// Builds a fresh pipeline per session (checked once here).
fn factory(spec: &str, stages: &StageConfig) -> Result<PipelineFactory, CliError> {
    registry::pipeline(spec, stages)?;
    let spec = spec.to_string();
    let stages = stages.clone();
    Ok(Arc::new(move || match registry::pipeline(&spec, &stages) {
        Ok(pipeline) => Arc::new(pipeline) as Arc<dyn TrimStrategy>,
        // Not reached: the same spec and stages built above.
        Err(_) => Arc::new(WindowDrop::new()),
    }))
}

/// The summarizer's calls and failures, as `/metrics` shows them.
fn stats(summarizer: Summarizer) -> StatsSource {
    Arc::new(move || {
        let s = summarizer.snapshot();
        SummarizerStats {
            calls: s.calls,
            failures: s
                .by_class
                .classes()
                .iter()
                .map(|(class, n)| (class.name().to_string(), *n))
                .collect(),
        }
    })
}

/// `--listen`: an address, or a host name with its port.
async fn listen_address(text: &str) -> Result<SocketAddr, CliError> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    tokio::net::lookup_host(text)
        .await
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--listen {text:?}: expected HOST:PORT, e.g. 127.0.0.1:7878"
            ))
        })
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
