//! [`Compact`]: the strategy, its settings and its defaults.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use memory_core::{
    Budget, History, MemoryError, ModelOptions, Provider, TokenCounter, TrimResult, TrimStrategy,
};

use crate::call::Policy;
use crate::prompt::{DEFAULT_MAX_INPUT_CHARS, DEFAULT_PROMPT};
use crate::state::{BackgroundStatus, Phase, Shared, State, lock};
use crate::{CompactHook, CompactObserver, FileOps};

/// Turns kept verbatim by default.
pub const DEFAULT_KEEP_VERBATIM: usize = 2;

/// Tokens of new older material that trigger a summary by default.
pub const DEFAULT_SUMMARISE_AT_TOKENS: usize = 2_500;

/// Default cap on a summary's length, in output tokens (a summary cut off
/// at the cap is rejected).
pub const DEFAULT_SUMMARY_MAX_TOKENS: u32 = 1_024;

/// Share of the token budget past which background mode starts a summary.
pub const DEFAULT_TRIGGER_RATIO: f32 = 0.6;

/// How long one background summary request may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// How often a background request is tried again after a retryable failure.
pub const DEFAULT_RETRIES: u32 = 3;

/// Wait before the first retry, doubled for each further one.
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(1);

/// Keeps the newest turns verbatim and folds the older history into one
/// rolling summary, made by a model, once it has grown past a threshold.
///
/// **Turns.** In the newest round (the current request) each step is a
/// turn; before it each whole round is one. The newest
/// [`keep_verbatim`](Compact::with_keep_verbatim) turns (default 2) and the
/// current question stay as they are, so an agent loop keeps its newest
/// steps and a chat its newest exchanges. Protected messages (with their
/// steps), the leading system messages and other strategies' summaries stay
/// in place, verbatim. The cut falls between steps only: a tool call never
/// loses its results.
///
/// **When.** Once the messages older than the kept turns, and not yet
/// summarized, pass [`summarise_at_tokens`](Compact::with_summarise_at_tokens)
/// (default 2,500), one request folds them, together with the previous
/// summary, into one new summary, which replaces them (the result
/// materializes: `replace: true`; a memory keeps what it replaced readable).
/// Until then they stay verbatim: nothing leaves the context uncovered, and
/// no call is made on turns that add less than the threshold. When the
/// newest round is itself cut (a long agent task), its older steps are
/// summarized by a second request of their own, and the custom instructions
/// reach both. Paths read and modified by tool calls are listed at the end
/// of the summary and carried from one summary to the next.
///
/// **Failure.** A failed call, or a reply that is cut off, refused, empty,
/// not an assistant message, or asks for tools, replaces nothing: the
/// history is returned as it is, or, over the budget, with its oldest
/// history dropped from view by [`WindowDrop`](memory_window::WindowDrop)
/// (a projection; storage keeps everything). The next attempt waits until
/// the older material has grown by the threshold again.
///
/// **Fit.** When the compacted history still exceeds the budget, the view is
/// `WindowDrop`'s projection of it (the summary is protected), and the
/// compacted history is what is stored
/// ([`TrimResult::to_store`]). For the tightest fit, run
/// `Compact` upstream of a subtractive stage such as thrift:
/// `Pipeline::new().then(compact).then(thrift)`.
///
/// **Background mode** ([`with_background`](Compact::with_background)): the
/// request starts off the hot path once the history passes
/// [`trigger_ratio`](Compact::with_trigger_ratio) of the token budget, and is
/// spliced in when the budget is crossed, if the messages it summarized are
/// unchanged; meanwhile (and without a tokio runtime) the turn is fitted by
/// `WindowDrop`'s projection. See [`with_background`](Compact::with_background).
///
/// ```
/// use std::sync::Arc;
/// use memory_compact::{Compact, EventLog};
/// use memory_core::{summary, FakeProvider, FakeReply, Memory, Message};
/// use memory_window::WindowMemory;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let model = Arc::new(FakeProvider::new([FakeReply::Text("## Goals\nRename the fields.".into())]));
/// let log = Arc::new(EventLog::new());
/// let compact = Compact::new(model.clone())
///     .with_summarise_at_tokens(20)
///     .with_observer(log.clone());
/// let mut memory = WindowMemory::new(1_000).with_strategy(compact);
/// memory.record_protected(Message::system("You are a coding agent.")).await.unwrap();
/// for i in 1..=4 {
///     memory.record(Message::user(format!("Rename field_{i} in src/model.rs, please."))).await.unwrap();
///     memory.record(Message::assistant(format!("Renamed field_{i}; its serde name and the tests that use it are unchanged."))).await.unwrap();
/// }
/// let context = memory.context().await.unwrap();
/// // The system prompt, the summary of rounds 1 and 2, rounds 3 and 4 verbatim.
/// assert_eq!(context.len(), 6);
/// assert!(summary::is_summary(&context[1]));
/// assert_eq!(context[2], Message::user("Rename field_3 in src/model.rs, please."));
/// assert_eq!(model.requests().len(), 1);
/// assert_eq!(log.cost().calls, 1);
/// # });
/// ```
pub struct Compact {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) keep_verbatim: usize,
    pub(crate) summarise_at_tokens: usize,
    pub(crate) prompt: String,
    pub(crate) instructions: Option<String>,
    pub(crate) options: ModelOptions,
    pub(crate) max_input_chars: usize,
    pub(crate) background: bool,
    pub(crate) trigger_ratio: f32,
    pub(crate) timeout: Option<Duration>,
    pub(crate) retries: Option<u32>,
    pub(crate) backoff: Duration,
    pub(crate) observer: Option<Arc<dyn CompactObserver>>,
    pub(crate) hook: Option<Arc<dyn CompactHook>>,
    pub(crate) state: Shared,
}

impl std::fmt::Debug for Compact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compact")
            .field("keep_verbatim", &self.keep_verbatim)
            .field("summarise_at_tokens", &self.summarise_at_tokens)
            .field("background", &self.background)
            .field("trigger_ratio", &self.trigger_ratio)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("status", &self.background_status())
            .finish_non_exhaustive()
    }
}

impl Compact {
    /// Compaction with `provider` as the summarizer, in the foreground, with
    /// the defaults.
    ///
    /// ```
    /// let compact = memory_compact::Compact::new(memory_core::FakeProvider::default());
    /// assert_eq!(compact.keep_verbatim(), 2);
    /// assert_eq!(compact.summarise_at_tokens(), 2_500);
    /// ```
    pub fn new(provider: impl Provider + 'static) -> Self {
        Self::from_arc(Arc::new(provider))
    }

    /// Compaction with a shared provider.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use memory_core::Provider;
    /// let provider: Arc<dyn Provider> = Arc::new(memory_core::FakeProvider::default());
    /// let compact = memory_compact::Compact::from_arc(provider);
    /// assert!(!compact.is_background());
    /// ```
    pub fn from_arc(provider: Arc<dyn Provider>) -> Self {
        let options = ModelOptions {
            max_tokens: Some(DEFAULT_SUMMARY_MAX_TOKENS),
            ..ModelOptions::default()
        };
        Self {
            provider,
            keep_verbatim: DEFAULT_KEEP_VERBATIM,
            summarise_at_tokens: DEFAULT_SUMMARISE_AT_TOKENS,
            prompt: DEFAULT_PROMPT.to_string(),
            instructions: None,
            options,
            max_input_chars: DEFAULT_MAX_INPUT_CHARS,
            background: false,
            trigger_ratio: DEFAULT_TRIGGER_RATIO,
            timeout: None,
            retries: None,
            backoff: DEFAULT_BACKOFF,
            observer: None,
            hook: None,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// Compaction in background mode (see
    /// [`with_background`](Compact::with_background)).
    ///
    /// ```
    /// let compact = memory_compact::Compact::background(memory_core::FakeProvider::default());
    /// assert!(compact.is_background());
    /// ```
    pub fn background(provider: impl Provider + 'static) -> Self {
        Self::new(provider).with_background(true)
    }

    /// Keeps the newest `turns` turns verbatim (0 is taken as 1: the newest
    /// step is always kept).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_keep_verbatim(4);
    /// assert_eq!(c.keep_verbatim(), 4);
    /// ```
    pub fn with_keep_verbatim(mut self, turns: usize) -> Self {
        self.keep_verbatim = turns.max(1);
        self
    }

    /// Summarizes once the older, not yet summarized messages hold more than
    /// `tokens` tokens. Lower it for tight budgets: the summary then comes
    /// before the budget forces history out of view.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_summarise_at_tokens(1_000);
    /// assert_eq!(c.summarise_at_tokens(), 1_000);
    /// ```
    pub fn with_summarise_at_tokens(mut self, tokens: usize) -> Self {
        self.summarise_at_tokens = tokens;
        self
    }

    /// Caps a summary at `tokens` output tokens (the request's
    /// `max_tokens`). A summary cut off at the cap is rejected, never used.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_summary_max_tokens(2_000);
    /// # let _ = c;
    /// ```
    pub fn with_summary_max_tokens(mut self, tokens: u32) -> Self {
        self.options.max_tokens = Some(tokens);
        self
    }

    /// Replaces the summarizer's prompt ([`DEFAULT_PROMPT`]).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_prompt("Summarize tersely. Keep exact paths.");
    /// # let _ = c;
    /// ```
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// Custom instructions added to every summary request (both requests of
    /// a split turn).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_instructions("Record every failing test by name.");
    /// # let _ = c;
    /// ```
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Request options (temperature, headers, vendor extras). Its
    /// `max_tokens`, when set, is the summary cap.
    ///
    /// ```
    /// let mut options = memory_core::ModelOptions::default();
    /// options.temperature = Some(0.0);
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_options(options);
    /// # let _ = c;
    /// ```
    pub fn with_options(mut self, options: ModelOptions) -> Self {
        let max_tokens = options.max_tokens.or(self.options.max_tokens);
        self.options = options;
        self.options.max_tokens = max_tokens;
        self
    }

    /// Caps the characters of one request's transcript (default 48,000):
    /// past it, each message longer than its share is shortened in the
    /// middle.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_max_input_chars(100_000);
    /// # let _ = c;
    /// ```
    pub fn with_max_input_chars(mut self, chars: usize) -> Self {
        self.max_input_chars = chars;
        self
    }

    /// Background mode: summaries are made off the hot path.
    ///
    /// - Once the history passes [`trigger_ratio`](Compact::with_trigger_ratio)
    ///   of the token budget (default 0.6) and its older, not yet summarized
    ///   messages hold at least the smaller of
    ///   [`summarise_at_tokens`](Compact::with_summarise_at_tokens) and a
    ///   quarter of the budget, the request is spawned on the current tokio
    ///   runtime; `trim` never waits for it.
    /// - When the budget is crossed and the summary is ready, it is spliced
    ///   in, only if the messages it summarized (and all before them) are
    ///   unchanged, byte for byte; a stale summary is discarded (and
    ///   reported). A cut-off, refused or empty summary is never spliced.
    /// - Each attempt has a timeout (default 120 s) and retryable failures are
    ///   tried again (default 3 times, backoff from 1 s, doubling); the slot
    ///   is freed however the task ends (a panic included).
    /// - While the summary is pending, or without a tokio runtime, a crossed
    ///   budget is met by `WindowDrop`'s projection, which leaves storage,
    ///   and so the pending summary, intact.
    /// - Dropping the strategy cancels the request.
    ///
    /// The task uses tokio's timers: the runtime needs them enabled.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_background(true);
    /// assert!(c.is_background());
    /// ```
    pub fn with_background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    /// Share of the token budget past which background mode starts a
    /// summary, clamped to 0.05..=1.0 (a value that is not a number is
    /// taken as the default).
    ///
    /// ```
    /// let c = memory_compact::Compact::background(memory_core::FakeProvider::default())
    ///     .with_trigger_ratio(0.5);
    /// assert_eq!(c.trigger_ratio(), 0.5);
    /// ```
    pub fn with_trigger_ratio(mut self, ratio: f32) -> Self {
        self.trigger_ratio = if ratio.is_nan() {
            DEFAULT_TRIGGER_RATIO
        } else {
            ratio.clamp(0.05, 1.0)
        };
        self
    }

    /// Limits how long one attempt may take. Background mode uses
    /// [`DEFAULT_TIMEOUT`] unless this is set; in the foreground there is no
    /// limit unless this is set. Applies only inside a tokio runtime (with
    /// timers enabled).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_timeout(std::time::Duration::from_secs(30));
    /// # let _ = c;
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How often a request is tried again after a retryable failure
    /// (network, timeout, rate limit, server error). Background mode uses
    /// [`DEFAULT_RETRIES`] unless this is set; in the foreground a failed
    /// request is not retried on the turn's critical path unless this is
    /// set (the next threshold crossing tries again).
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_retries(1);
    /// # let _ = c;
    /// ```
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    /// Wait before the first retry (default 1 s), doubled for each further
    /// one; a rate limit's own delay is used when the provider gives one.
    ///
    /// ```
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default())
    ///     .with_backoff(std::time::Duration::from_millis(200));
    /// # let _ = c;
    /// ```
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// Reports every compaction's events and cost to `observer` (they are
    /// also logged through `tracing`, target `memory_compact`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let log = Arc::new(memory_compact::EventLog::new());
    /// let c = memory_compact::Compact::new(memory_core::FakeProvider::default()).with_observer(log);
    /// # let _ = c;
    /// ```
    pub fn with_observer(mut self, observer: Arc<dyn CompactObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Runs `hook` before every compaction: it may let it go ahead, decline
    /// it, or supply the summary.
    ///
    /// ```
    /// use memory_compact::{Compact, HookDecision, Preparation};
    /// let c = Compact::new(memory_core::FakeProvider::default())
    ///     .with_before_compaction(|_: &Preparation| HookDecision::Decline);
    /// # let _ = c;
    /// ```
    pub fn with_before_compaction(mut self, hook: impl CompactHook + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// Turns kept verbatim.
    ///
    /// ```
    /// assert_eq!(memory_compact::Compact::new(memory_core::FakeProvider::default()).keep_verbatim(), 2);
    /// ```
    pub fn keep_verbatim(&self) -> usize {
        self.keep_verbatim
    }

    /// The summary threshold, in tokens.
    ///
    /// ```
    /// assert_eq!(memory_compact::Compact::new(memory_core::FakeProvider::default()).summarise_at_tokens(), 2_500);
    /// ```
    pub fn summarise_at_tokens(&self) -> usize {
        self.summarise_at_tokens
    }

    /// Whether background mode is on.
    ///
    /// ```
    /// assert!(!memory_compact::Compact::new(memory_core::FakeProvider::default()).is_background());
    /// ```
    pub fn is_background(&self) -> bool {
        self.background
    }

    /// The background trigger ratio.
    ///
    /// ```
    /// assert_eq!(memory_compact::Compact::new(memory_core::FakeProvider::default()).trigger_ratio(), 0.6);
    /// ```
    pub fn trigger_ratio(&self) -> f32 {
        self.trigger_ratio
    }

    /// The files listed in the last summary this strategy made (empty before
    /// the first).
    ///
    /// ```
    /// assert!(memory_compact::Compact::new(memory_core::FakeProvider::default()).file_ops().is_empty());
    /// ```
    pub fn file_ops(&self) -> FileOps {
        lock(&self.state)
            .files
            .as_ref()
            .map(|(_, files)| files.clone())
            .unwrap_or_default()
    }

    /// Where the background summary stands.
    ///
    /// ```
    /// use memory_compact::{BackgroundStatus, Compact};
    /// assert_eq!(Compact::new(memory_core::FakeProvider::default()).background_status(), BackgroundStatus::Idle);
    /// ```
    pub fn background_status(&self) -> BackgroundStatus {
        match lock(&self.state).phase {
            Phase::Idle => BackgroundStatus::Idle,
            Phase::InFlight(_) => BackgroundStatus::InFlight,
            Phase::Ready(_) => BackgroundStatus::Ready,
        }
    }

    /// The request policy of the mode: background or not.
    pub(crate) fn policy(&self, background: bool) -> Policy {
        if background {
            Policy {
                timeout: Some(self.timeout.unwrap_or(DEFAULT_TIMEOUT)),
                retries: self.retries.unwrap_or(DEFAULT_RETRIES),
                backoff: self.backoff,
            }
        } else {
            Policy {
                timeout: self.timeout,
                retries: self.retries.unwrap_or(0),
                backoff: self.backoff,
            }
        }
    }
}

impl Drop for Compact {
    /// Cancels a background request still running: nothing keeps paying for
    /// a summary no one will read.
    fn drop(&mut self) {
        if let Some(task) = lock(&self.state).task.take() {
            task.abort();
        }
    }
}

#[async_trait::async_trait]
impl TrimStrategy for Compact {
    fn name(&self) -> &str {
        "compact"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        if self.background {
            self.trim_background(history, budget, counter).await
        } else {
            self.trim_foreground(history, budget, counter).await
        }
    }
}
