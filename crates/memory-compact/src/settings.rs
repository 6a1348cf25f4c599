//! What a [`Compact`](crate::Compact) is configured with, fixed once it is
//! built, and the defaults (those of the request itself, the prompt and the
//! input limit, are the [prompt's](crate::prompt)).
//!
//! [`Settings`] is the builder's product: the provider, thresholds, request
//! options, observer and hook. Foreground and background compaction read it
//! and never change it; what changes from turn to turn lives in the
//! [`CompactState`](crate::compact_state).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use memory_core::summary::DEFAULT_SUMMARY_MAX_TOKENS;
use memory_core::{Budget, History, ModelOptions, Provider};
use memory_summary_engine::SummarySettings;

use crate::call::Policy;
use crate::prompt::{DEFAULT_COMPACT_PROMPT, DEFAULT_MAX_INPUT_TOKENS, Template};
use crate::turns::Plan;
use crate::{CompactEvent, CompactHook, CompactObserver, event, scaled};

/// Turns kept verbatim by default.
///
/// ```
/// assert_eq!(memory_compact::DEFAULT_KEEP_VERBATIM, 2);
/// ```
pub const DEFAULT_KEEP_VERBATIM: usize = 2;

/// Tokens of new older material that trigger a summary by default.
///
/// ```
/// assert_eq!(memory_compact::DEFAULT_SUMMARIZE_AT_TOKENS, 2_500);
/// ```
pub const DEFAULT_SUMMARIZE_AT_TOKENS: usize = 2_500;

/// The least new material, as a share of the token budget, that a summary
/// made by default timing folds: a summary is asked for only when a cut is
/// due (the history is over the budget, so the prompt's prefix changes on
/// this call anyway) and there is this much to fold, so that the prefix it
/// makes lasts for several calls.
///
/// ```
/// assert_eq!(memory_compact::DEFAULT_DEPTH_RATIO, 0.75);
/// ```
pub const DEFAULT_DEPTH_RATIO: f32 = 0.75;

/// Share of the token budget past which background mode may start a
/// summary, once there is as much to fold as the foreground folds (three
/// quarters of the budget, so a ratio below that decides only when a
/// threshold is set with `with_summarize_at_tokens`).
///
/// ```
/// assert_eq!(memory_compact::DEFAULT_TRIGGER_RATIO, 0.6);
/// ```
pub const DEFAULT_TRIGGER_RATIO: f32 = 0.6;

/// How long one background summary request may run.
///
/// ```
/// assert_eq!(memory_compact::DEFAULT_TIMEOUT.as_secs(), 120);
/// ```
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// How often a background request is tried again after a retryable failure.
///
/// ```
/// assert_eq!(memory_compact::DEFAULT_RETRIES, 3);
/// ```
pub const DEFAULT_RETRIES: u32 = 3;

/// Wait before the first retry, doubled for each further one.
///
/// ```
/// assert_eq!(memory_compact::DEFAULT_BACKOFF.as_secs(), 1);
/// ```
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(1);

/// Where summaries are made: during the turn that needs them, or off the
/// hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Foreground,
    Background,
}

/// Who asked for a compaction: the threshold, or the caller through
/// [`compact_now`](crate::Compact::compact_now).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    Threshold,
    Manual,
}

/// Which settings the caller chose, rather than left to the defaults.
#[derive(Debug, Clone, Copy, Default)]
struct Chosen {
    threshold: bool,
    cap: bool,
    input: bool,
}

/// Everything a compaction is configured with.
#[derive(Clone)]
pub(crate) struct Settings {
    provider: Arc<dyn Provider>,
    keep_verbatim: usize,
    summarize_at_tokens: usize,
    summary_max_tokens: u32,
    /// Which of the threshold, the summary cap and the input limit were
    /// set by the caller (the others follow the budget).
    chosen: Chosen,
    /// The shared settings as the caller gave them (the prompt, options,
    /// grounding and observer are read from here; the cap and the input
    /// limit are resolved into the fields beside it).
    summary: SummarySettings,
    instructions: Option<String>,
    max_input_tokens: usize,
    mode: Mode,
    trigger_ratio: f32,
    timeout: Option<Duration>,
    retries: Option<u32>,
    backoff: Duration,
    observer: Option<Arc<dyn CompactObserver>>,
    hook: Option<Arc<dyn CompactHook>>,
    /// Events since the last trim took them, for its diagnostics; shared
    /// with the background tasks, which tell theirs when they land.
    pending: Arc<std::sync::Mutex<Vec<CompactEvent>>>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("keep_verbatim", &self.keep_verbatim)
            .field("summarize_at_tokens", &self.summarize_at_tokens)
            .field("summary_max_tokens", &self.summary_max_tokens)
            .field("max_input_tokens", &self.max_input_tokens)
            .field("mode", &self.mode)
            .field("trigger_ratio", &self.trigger_ratio)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// The defaults, summarizing with `provider` in the foreground.
    pub fn new(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            keep_verbatim: DEFAULT_KEEP_VERBATIM,
            summarize_at_tokens: DEFAULT_SUMMARIZE_AT_TOKENS,
            summary_max_tokens: DEFAULT_SUMMARY_MAX_TOKENS,
            chosen: Chosen::default(),
            summary: SummarySettings::new(),
            instructions: None,
            max_input_tokens: DEFAULT_MAX_INPUT_TOKENS,
            mode: Mode::Foreground,
            trigger_ratio: DEFAULT_TRIGGER_RATIO,
            timeout: None,
            retries: None,
            backoff: DEFAULT_BACKOFF,
            observer: None,
            hook: None,
            pending: Arc::default(),
        }
    }

    /// Turns kept verbatim; 0 is taken as 1.
    pub fn set_keep_verbatim(&mut self, turns: usize) {
        self.keep_verbatim = turns.max(1);
    }

    pub fn set_summarize_at_tokens(&mut self, tokens: usize) {
        self.summarize_at_tokens = tokens;
        self.chosen.threshold = true;
    }

    /// The shared summary settings; a cap or an input limit they leave
    /// unset follows the budget.
    pub fn set_summary(&mut self, summary: SummarySettings) {
        self.chosen.cap = summary.summary_max_tokens().is_some();
        self.summary_max_tokens = summary
            .summary_max_tokens()
            .unwrap_or(DEFAULT_SUMMARY_MAX_TOKENS);
        self.chosen.input = summary.max_input_tokens().is_some();
        self.max_input_tokens = summary
            .max_input_tokens()
            .unwrap_or(DEFAULT_MAX_INPUT_TOKENS);
        self.summary = summary;
    }

    /// The shared summary settings as given.
    pub fn summary(&self) -> &SummarySettings {
        &self.summary
    }

    pub fn set_instructions(&mut self, instructions: String) {
        self.instructions = Some(instructions);
    }

    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    /// Clamped to 0.05..=1.0; a value that is not a number is the default.
    pub fn set_trigger_ratio(&mut self, ratio: f32) {
        self.trigger_ratio = if ratio.is_nan() {
            DEFAULT_TRIGGER_RATIO
        } else {
            ratio.clamp(0.05, 1.0)
        };
    }

    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = Some(timeout);
    }

    pub fn set_retries(&mut self, retries: u32) {
        self.retries = Some(retries);
    }

    pub fn set_backoff(&mut self, backoff: Duration) {
        self.backoff = backoff;
    }

    pub fn set_observer(&mut self, observer: Arc<dyn CompactObserver>) {
        self.observer = Some(observer);
    }

    pub fn set_hook(&mut self, hook: Arc<dyn CompactHook>) {
        self.hook = Some(hook);
    }

    pub fn keep_verbatim(&self) -> usize {
        self.keep_verbatim
    }

    pub fn summarize_at_tokens(&self) -> usize {
        self.summarize_at_tokens
    }

    /// Whether the caller set the threshold (else the timing follows the
    /// budget).
    pub fn threshold_chosen(&self) -> bool {
        self.chosen.threshold
    }

    /// These settings for a turn of `history` at `budget`: a summary cap
    /// and an input limit the caller did not set scale with a token budget
    /// and the room the history's protected messages leave in it (see
    /// [`scaled`]); borrowed when nothing changes.
    pub fn for_budget(&self, budget: &Budget, history: &History<'_>) -> Cow<'_, Settings> {
        let Some(max) = budget.max_tokens else {
            return Cow::Borrowed(self);
        };
        let cap = if self.chosen.cap {
            self.summary_max_tokens
        } else {
            let cap = scaled::cap_in_room(max, memory_summary_engine::cap::held(history));
            u32::try_from(cap).unwrap_or(self.summary_max_tokens)
        };
        let input = if self.chosen.input {
            self.max_input_tokens
        } else {
            scaled::input(max)
        };
        if (cap, input) == (self.summary_max_tokens, self.max_input_tokens) {
            return Cow::Borrowed(self);
        }
        let mut settings = self.clone();
        settings.summary_max_tokens = cap;
        settings.max_input_tokens = input;
        Cow::Owned(settings)
    }

    pub fn summary_max_tokens(&self) -> u32 {
        self.summary_max_tokens
    }

    pub fn prompt(&self) -> &str {
        self.summary.prompt().unwrap_or(DEFAULT_COMPACT_PROMPT)
    }

    pub fn options(&self) -> &ModelOptions {
        self.summary.options()
    }

    pub fn max_input_tokens(&self) -> usize {
        self.max_input_tokens
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn trigger_ratio(&self) -> f32 {
        self.trigger_ratio
    }

    pub fn provider(&self) -> &dyn Provider {
        &*self.provider
    }

    pub fn hook(&self) -> Option<&dyn CompactHook> {
        self.hook.as_deref()
    }

    /// What a compaction of `history` keeps and folds.
    pub fn plan(&self, history: &memory_core::History<'_>) -> Plan {
        Plan::new(history, self.keep_verbatim)
    }

    /// Whether `plan`'s new material passes the threshold.
    pub fn is_due(&self, plan: &Plan) -> bool {
        plan.new_tokens > self.summarize_at_tokens
    }

    /// How long a request of `mode` may take and how often it is tried
    /// again: background mode has a timeout and retries by default, the
    /// foreground neither.
    pub fn policy(&self, mode: Mode) -> Policy {
        let (timeout, retries) = match mode {
            Mode::Background => (
                Some(self.timeout.unwrap_or(DEFAULT_TIMEOUT)),
                self.retries.unwrap_or(DEFAULT_RETRIES),
            ),
            Mode::Foreground => (self.timeout, self.retries.unwrap_or(0)),
        };
        Policy {
            timeout,
            retries,
            backoff: self.backoff,
        }
    }

    /// The standing instructions followed by `extra`.
    pub fn instructions(&self, extra: Option<&str>) -> Option<String> {
        match (self.instructions.as_deref(), extra) {
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (a, b) => a.or(b).map(str::to_string),
        }
    }

    /// How requests are written: the prompt, `instructions`, the input
    /// limit, and the options with the summary cap as `max_tokens`.
    pub fn template<'a>(&'a self, instructions: Option<&'a str>) -> Template<'a> {
        Template {
            prompt: self.prompt(),
            instructions,
            max_input_tokens: self.max_input_tokens,
            options: ModelOptions {
                max_tokens: Some(self.summary_max_tokens),
                ..self.options().clone()
            },
        }
    }

    /// Tells `event` to the observer and to `tracing`.
    pub fn emit(&self, event: CompactEvent) {
        event::trace(&event);
        if let Some(observer) = &self.observer {
            observer.on_event(&event);
        }
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
    }

    /// The events told since the last call, taken.
    pub fn take_events(&self) -> Vec<CompactEvent> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use memory_core::{FakeProvider, Message};

    use super::*;

    fn settings() -> Settings {
        Settings::new(Arc::new(FakeProvider::default()))
    }

    #[test]
    fn the_cap_leaves_half_the_room_the_protected_messages_leave() {
        let m = [
            Message::system("rules"),
            memory_core::summary::message("Earlier: the parser."),
            Message::user("Write the lexer."),
            Message::assistant("Done."),
        ];
        let budget = Budget::tokens(4_000);
        let cap = |settings: &Settings, counts: &[usize]| {
            let history = History::new(&m, counts).unwrap().protect(&[0, 1, 2]);
            settings.for_budget(&budget, &history).summary_max_tokens()
        };
        // A short prompt and task: the budget's cap.
        assert_eq!(cap(&settings(), &[100, 400, 100, 50]), 333);
        // A long prompt and task hold 3,700: half of the 300 they leave,
        // the summary (protected too) not among them.
        let long = [3_200, 400, 500, 50];
        assert_eq!(cap(&settings(), &long), 150);
        // A cap the caller chose stands.
        let mut chosen = settings();
        chosen.set_summary(SummarySettings::new().with_summary_max_tokens(500));
        assert_eq!(cap(&chosen, &long), 500);
    }

    #[test]
    fn the_cap_is_sent_as_max_tokens_whatever_the_options_say() {
        let mut s = settings();
        let options = ModelOptions {
            max_tokens: Some(9),
            ..ModelOptions::default()
        };
        s.set_summary(s.summary().clone().with_options(options));
        s.set_summary(s.summary().clone().with_summary_max_tokens(300));
        assert_eq!(s.template(None).options.max_tokens, Some(300));
    }

    #[test]
    fn summaries_are_asked_for_at_temperature_zero_unless_configured() {
        let mut s = settings();
        assert_eq!(s.template(None).options.temperature, Some(0.0));
        s.set_summary(s.summary().clone().with_options(ModelOptions::default()));
        assert_eq!(s.template(None).options.temperature, Some(0.0));
        let options = ModelOptions {
            temperature: Some(0.7),
            ..ModelOptions::default()
        };
        s.set_summary(s.summary().clone().with_options(options));
        assert_eq!(s.template(None).options.temperature, Some(0.7));
    }

    #[test]
    fn the_foreground_waits_and_retries_only_when_told_to() {
        let mut s = settings();
        let fg = s.policy(Mode::Foreground);
        assert_eq!((fg.timeout, fg.retries), (None, 0));
        let bg = s.policy(Mode::Background);
        assert_eq!(
            (bg.timeout, bg.retries),
            (Some(DEFAULT_TIMEOUT), DEFAULT_RETRIES)
        );
        s.set_retries(1);
        s.set_timeout(Duration::from_secs(5));
        let fg = s.policy(Mode::Foreground);
        assert_eq!((fg.timeout, fg.retries), (Some(Duration::from_secs(5)), 1));
    }
}
