//! [`ServeConfig`]: what the server manages context with, and where it
//! sends the result.

use std::sync::Arc;
use std::time::Duration;

use memory_core::{Store, TokenCounter, TrimStrategy};

use crate::summarizer_stats::StatsSource;

/// Builds a fresh pipeline for a new session (a strategy may keep state
/// from call to call, so sessions do not share one).
pub type PipelineFactory = Arc<dyn Fn() -> Arc<dyn TrimStrategy> + Send + Sync>;

/// How many tokens a call's messages may take.
///
/// ```
/// use memory_serve::BudgetMode;
/// assert_eq!(BudgetMode::Tokens(4_000).for_call(Some(500)), 4_000);
/// // A context window leaves room for the reply the request asks for...
/// assert_eq!(BudgetMode::ContextWindow(8_192).for_call(Some(1_000)), 7_192);
/// // ... or for a default reply when it asks for none.
/// assert_eq!(BudgetMode::ContextWindow(8_192).for_call(None), 8_192 - memory_serve::DEFAULT_REPLY_TOKENS);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetMode {
    /// At most this many tokens of messages, whatever the reply asks for.
    Tokens(usize),
    /// The model's context window: the messages get what the reply
    /// (`max_completion_tokens` or `max_tokens`) leaves.
    ContextWindow(usize),
}

/// The room a context window keeps for a reply whose request names no
/// limit: a long answer or a large tool call fits in it, and it is an
/// eighth of the default window, so most of the window stays history.
pub const DEFAULT_REPLY_TOKENS: usize = 1_024;

/// The context window assumed when none is given: what local servers
/// (llama.cpp, Ollama) commonly load small models with.
pub const DEFAULT_CONTEXT_WINDOW: usize = 8_192;

/// The fewest tokens a call's messages get, however large the reply the
/// request asks for: enough for a short question and its task.
pub const MIN_CALL_BUDGET: usize = 256;

impl BudgetMode {
    /// The token budget of one call's messages, given the reply limit the
    /// request names.
    ///
    /// ```
    /// // A reply larger than the window still leaves the minimum.
    /// assert_eq!(memory_serve::BudgetMode::ContextWindow(1_000).for_call(Some(5_000)), memory_serve::MIN_CALL_BUDGET);
    /// ```
    pub fn for_call(self, reply: Option<usize>) -> usize {
        match self {
            BudgetMode::Tokens(n) => n,
            BudgetMode::ContextWindow(window) => window
                .saturating_sub(reply.unwrap_or(DEFAULT_REPLY_TOKENS))
                .max(MIN_CALL_BUDGET),
        }
    }
}

/// Everything the server runs with.
///
/// ```
/// use std::sync::Arc;
/// use memory_core::{CharTokenCounter, InMemoryStore, TrimStrategy};
/// use memory_serve::{BudgetMode, ServeConfig};
///
/// let config = ServeConfig::new(
///     "http://127.0.0.1:8080/v1",
///     Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
///     Arc::new(InMemoryStore::new()),
/// )
/// .with_budget(BudgetMode::Tokens(4_000))
/// .with_counter(Arc::new(CharTokenCounter));
/// assert_eq!(config.budget, BudgetMode::Tokens(4_000));
/// ```
#[derive(Clone)]
pub struct ServeConfig {
    /// The upstream's base URL (requests go to `URL/chat/completions`).
    pub upstream: String,
    /// Builds each session's pipeline.
    pub pipeline: PipelineFactory,
    /// Where sessions are kept.
    pub store: Arc<dyn Store>,
    /// The budget of each call's messages.
    pub budget: BudgetMode,
    /// The counter the budget is measured with.
    pub counter: Arc<dyn TokenCounter>,
    /// Refuse an invalid transcript (an orphaned tool result, an
    /// unanswered call) instead of repairing it.
    pub strict: bool,
    /// The token clients must present; `None`: none is asked. The
    /// one-key shortcut: its principal is
    /// [`TOKEN_PRINCIPAL`](crate::TOKEN_PRINCIPAL).
    pub token: Option<String>,
    /// The keys clients present, each naming its principal (`--keys`);
    /// empty with no token: the server takes no keys, and a client's
    /// principal is the hash of its upstream credential.
    pub keys: crate::Keys,
    /// The key sent upstream when the client's own `Authorization` is the
    /// server's token (or absent).
    pub upstream_key: Option<String>,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How long to wait for the upstream to connect.
    pub connect_timeout: Duration,
    /// How long to wait for the upstream's answer to begin (its status and
    /// headers; for a call that is not streamed, that is the whole reply
    /// being written).
    pub first_byte_timeout: Duration,
    /// The longest pause a stream may take, on either side: between two
    /// pieces of the upstream's answer, or before a client takes the next
    /// event. Past it the call ends, and its session is released.
    pub idle_timeout: Duration,
    /// The `Origin`s whose requests are taken (a browser's cross-site
    /// request names one); a request with any other `Origin` is refused.
    pub allowed_origins: Vec<String>,
    /// The host names a request's `Host` may carry besides the listening
    /// address (and `localhost` when it is a loopback one).
    pub allowed_hosts: Vec<String>,
    /// What each principal may ask: requests a minute, sessions,
    /// messages a request.
    pub limits: crate::Limits,
    /// How long a session may go untouched before the server erases it;
    /// `None`: kept until deleted.
    pub session_ttl: Option<Duration>,
    /// The address the server listens on, when known: its `Host` checks
    /// against it ([`serve`](crate::serve) sets it).
    pub listening: Option<std::net::SocketAddr>,
    /// Whether the task (a session's first user request) is in the floor.
    pub task_floor: bool,
    /// The summarizer's statistics, for `/metrics`.
    pub summarizer_stats: Option<StatsSource>,
    /// The most sessions kept loaded in the process; others are read from
    /// the store when they come back.
    pub max_loaded_sessions: usize,
    /// Whether the model is offered the `recall` tool, and who answers it.
    pub recall: crate::RecallMode,
    /// The protocol the upstream speaks (`--upstream-api`).
    pub upstream_api: crate::Protocol,
    /// Who answers a Responses client's request to compact
    /// (`--compaction`); `None`: the upstream when it speaks Responses,
    /// the server otherwise ([`ServeConfig::compaction_mode`]).
    pub compaction: Option<crate::Compaction>,
}

/// The default limit on a request body: a long agent session with large
/// tool outputs, sent whole, stays well under it.
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The default wait for an upstream's answer to begin: a model writing a
/// long reply that is not streamed sends nothing until it is done, and
/// local servers on small machines take minutes on long prompts.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(600);

/// The default longest pause in a stream: streaming models send a piece
/// every few tens of milliseconds, and a reasoning model's silent thinking
/// is streamed as pieces too; a minute without one is a stall.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The default number of sessions kept loaded.
pub const DEFAULT_LOADED_SESSIONS: usize = memory_session::DEFAULT_OPEN_SESSIONS;

impl ServeConfig {
    /// Who answers a request to compact: as configured, or a Responses
    /// upstream (whose compaction is opaque and its own), or the server.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let factory: memory_serve::PipelineFactory = Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>);
    /// use memory_serve::{Compaction, Protocol, ServeConfig};
    /// let mut config = ServeConfig::new("http://u/v1", factory, Arc::new(memory_core::InMemoryStore::new()));
    /// assert_eq!(config.compaction_mode(), Compaction::Ours);
    /// config.upstream_api = Protocol::Responses;
    /// assert_eq!(config.compaction_mode(), Compaction::Native);
    /// ```
    pub fn compaction_mode(&self) -> crate::Compaction {
        match (self.compaction, self.upstream_api) {
            (Some(mode), crate::Protocol::Responses) => mode,
            (_, crate::Protocol::Responses) => crate::Compaction::Native,
            _ => crate::Compaction::Ours,
        }
    }

    /// A configuration with the defaults: a context window of
    /// [`DEFAULT_CONTEXT_WINDOW`], the chars counter (the `memory serve`
    /// command defaults to cl100k), repair of invalid transcripts, no
    /// token, the task in the floor.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let factory: memory_serve::PipelineFactory = Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>);
    /// let config = memory_serve::ServeConfig::new("http://u/v1", factory, Arc::new(memory_core::InMemoryStore::new()));
    /// assert!(!config.strict && config.token.is_none());
    /// ```
    pub fn new(
        upstream: impl Into<String>,
        pipeline: PipelineFactory,
        store: Arc<dyn Store>,
    ) -> Self {
        Self {
            upstream: upstream.into().trim_end_matches('/').to_string(),
            pipeline,
            store,
            budget: BudgetMode::ContextWindow(DEFAULT_CONTEXT_WINDOW),
            counter: Arc::new(memory_core::CharTokenCounter),
            strict: false,
            token: None,
            keys: crate::Keys::default(),
            upstream_key: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            limits: crate::Limits::default(),
            session_ttl: None,
            listening: None,
            task_floor: true,
            summarizer_stats: None,
            max_loaded_sessions: DEFAULT_LOADED_SESSIONS,
            recall: crate::RecallMode::Off,
            upstream_api: crate::Protocol::Chat,
            compaction: None,
        }
    }

    /// Sets the budget.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let factory: memory_serve::PipelineFactory = Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>);
    /// let config = memory_serve::ServeConfig::new("http://u/v1", factory, Arc::new(memory_core::InMemoryStore::new()))
    ///     .with_budget(memory_serve::BudgetMode::Tokens(100));
    /// assert_eq!(config.budget.for_call(None), 100);
    /// ```
    pub fn with_budget(mut self, budget: BudgetMode) -> Self {
        self.budget = budget;
        self
    }

    /// Sets the counter.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let factory: memory_serve::PipelineFactory = Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>);
    /// let config = memory_serve::ServeConfig::new("http://u/v1", factory, Arc::new(memory_core::InMemoryStore::new()))
    ///     .with_counter(Arc::new(memory_core::CharTokenCounter));
    /// # let _ = config;
    /// ```
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// Asks clients for `token`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let factory: memory_serve::PipelineFactory = Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>);
    /// let config = memory_serve::ServeConfig::new("http://u/v1", factory, Arc::new(memory_core::InMemoryStore::new()))
    ///     .with_token(Some("s3cret".into()));
    /// assert!(config.token.is_some());
    /// ```
    pub fn with_token(mut self, token: Option<String>) -> Self {
        self.token = token.filter(|t| !t.is_empty());
        self
    }

    /// Takes `keys`, each for its principal (with the token, if any).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let factory: memory_serve::PipelineFactory = Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>);
    /// let keys = memory_serve::Keys::parse("alice ka\nbob kb").unwrap();
    /// let config = memory_serve::ServeConfig::new("http://u/v1", factory, Arc::new(memory_core::InMemoryStore::new()))
    ///     .with_keys(keys);
    /// assert_eq!(config.keys.len(), 2);
    /// ```
    pub fn with_keys(mut self, keys: crate::Keys) -> Self {
        self.keys = keys;
        self
    }

    /// Refuses invalid transcripts instead of repairing them.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # let factory: memory_serve::PipelineFactory = Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>);
    /// let config = memory_serve::ServeConfig::new("http://u/v1", factory, Arc::new(memory_core::InMemoryStore::new()))
    ///     .with_strict(true);
    /// assert!(config.strict);
    /// ```
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }
}

/// The upstream URL as the server shows it (logs, errors): without any
/// `user:password@`.
///
/// ```
/// assert_eq!(memory_serve::shown_url("http://me:pw@host:8080/v1"), "http://host:8080/v1");
/// ```
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => "(an invalid URL)".to_string(),
    }
}

/// Checks an upstream URL: absolute, `http` or `https`, with a host.
///
/// # Errors
///
/// What is wrong with it, the URL shown without credentials.
///
/// ```
/// assert!(memory_serve::check_upstream("http://127.0.0.1:8080/v1").is_ok());
/// assert!(memory_serve::check_upstream("127.0.0.1:8080/v1").is_err());
/// let e = memory_serve::check_upstream("ftp://me:pw@host/v1").unwrap_err();
/// assert!(!e.contains("pw"), "{e}");
/// ```
pub fn check_upstream(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        format!("the upstream URL is not an absolute URL ({e}); e.g. http://127.0.0.1:8080/v1")
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "the upstream URL {} is not http or https",
            shown_url(url)
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("the upstream URL {} names no host", shown_url(url)));
    }
    Ok(())
}

impl std::fmt::Debug for ServeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeConfig")
            .field("upstream", &shown_url(&self.upstream))
            .field("upstream_api", &self.upstream_api)
            .field("compaction", &self.compaction)
            .field("budget", &self.budget)
            .field("strict", &self.strict)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("keys", &self.keys.len())
            .field("upstream_key", &self.upstream_key.as_ref().map(|_| "<set>"))
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}
