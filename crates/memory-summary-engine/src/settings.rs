//! [`SummarySettings`]: the knobs every summarizing strategy shares, named
//! the same in each, and the acceptance of a reply they configure.

use std::fmt;
use std::sync::Arc;

use memory_core::summary::DEFAULT_SUMMARY_TEMPERATURE;
use memory_core::{ChatResponse, ModelOptions};

use crate::{Rejection, RejectionObserver, SalientTerms, SummaryCheck, accept_reply};

/// What a summarizing strategy (`memory-summarize`'s `SummarizeStrategy`,
/// `memory-compact`'s `Compact`) asks of each summary and how it accepts
/// the reply: the cap, the input limit, the prompt, the request options,
/// the grounding check, and who hears of rejections. Each strategy takes
/// them whole (`with_summary`) or one by one through builder methods of
/// the same names; what a setting left unset means (the prompt, the input
/// limit, a cap that follows the budget) is the strategy's own default.
///
/// ```
/// use memory_summary_engine::{NoGrounding, SummarySettings};
///
/// let settings = SummarySettings::new()
///     .with_summary_max_tokens(512)
///     .with_max_input_tokens(6_000)
///     .with_temperature(0.2)
///     .with_grounding(NoGrounding);
/// assert_eq!(settings.summary_max_tokens(), Some(512));
/// assert_eq!(settings.max_input_tokens(), Some(6_000));
/// assert_eq!(settings.prompt(), None); // the strategy's own
/// assert_eq!(settings.options().temperature, Some(0.2));
/// ```
#[derive(Clone)]
pub struct SummarySettings {
    summary_max_tokens: Option<u32>,
    max_input_tokens: Option<usize>,
    prompt: Option<String>,
    options: ModelOptions,
    check: Arc<dyn SummaryCheck>,
    observer: Option<Arc<dyn RejectionObserver>>,
}

impl fmt::Debug for SummarySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummarySettings")
            .field("summary_max_tokens", &self.summary_max_tokens)
            .field("max_input_tokens", &self.max_input_tokens)
            .field(
                "prompt_chars",
                &self.prompt.as_ref().map(|p| p.chars().count()),
            )
            .field("options", &self.options)
            .field("observer", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for SummarySettings {
    fn default() -> Self {
        Self::new()
    }
}

impl SummarySettings {
    /// Nothing set: the strategy's defaults, summaries asked for at
    /// [`DEFAULT_SUMMARY_TEMPERATURE`], grounded by [`SalientTerms`].
    ///
    /// ```
    /// let settings = memory_summary_engine::SummarySettings::new();
    /// assert_eq!(settings.summary_max_tokens(), None);
    /// assert_eq!(settings.options().temperature, Some(0.0));
    /// ```
    pub fn new() -> Self {
        Self {
            summary_max_tokens: None,
            max_input_tokens: None,
            prompt: None,
            options: ModelOptions {
                temperature: Some(DEFAULT_SUMMARY_TEMPERATURE),
                ..ModelOptions::default()
            },
            check: Arc::new(SalientTerms),
            observer: None,
        }
    }

    /// The cap on a summary message, its framing included, in tokens of
    /// the strategy's counter. Less the framing, it is sent as each
    /// request's `max_tokens` (whatever the options say); a reply cut off
    /// there, or a message over it, is refused. A strategy refuses a cap
    /// that cannot hold its framing when it is built.
    ///
    /// ```
    /// let s = memory_summary_engine::SummarySettings::new().with_summary_max_tokens(256);
    /// assert_eq!(s.summary_max_tokens(), Some(256));
    /// ```
    pub fn with_summary_max_tokens(mut self, tokens: u32) -> Self {
        self.summary_max_tokens = Some(tokens);
        self
    }

    /// The limit on one request's input (prompt, what is summarized, and
    /// whatever the strategy adds), in tokens of the strategy's counter.
    ///
    /// ```
    /// let s = memory_summary_engine::SummarySettings::new().with_max_input_tokens(6_000);
    /// assert_eq!(s.max_input_tokens(), Some(6_000));
    /// ```
    pub fn with_max_input_tokens(mut self, tokens: usize) -> Self {
        self.max_input_tokens = Some(tokens);
        self
    }

    /// The instruction sent as each request's system message.
    ///
    /// ```
    /// let s = memory_summary_engine::SummarySettings::new().with_prompt("Summarize; keep ticket numbers.");
    /// assert_eq!(s.prompt(), Some("Summarize; keep ticket numbers."));
    /// ```
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    /// Options for every request: headers, sampling, extra body fields.
    /// Their `max_tokens` is replaced by the cap when sent; a
    /// `temperature` left unset keeps the one in force.
    ///
    /// ```
    /// let mut options = memory_core::ModelOptions::default();
    /// options.headers.insert("x-tenant".into(), "acme".into());
    /// let s = memory_summary_engine::SummarySettings::new().with_options(options);
    /// assert_eq!(s.options().headers["x-tenant"], "acme");
    /// assert_eq!(s.options().temperature, Some(0.0));
    /// ```
    pub fn with_options(mut self, options: ModelOptions) -> Self {
        let temperature = options.temperature.or(self.options.temperature);
        self.options = ModelOptions {
            temperature,
            ..options
        };
        self
    }

    /// Samples summaries at `temperature`; `None` sends none (the
    /// endpoint's default).
    ///
    /// ```
    /// let s = memory_summary_engine::SummarySettings::new().with_temperature(None);
    /// assert_eq!(s.options().temperature, None);
    /// ```
    pub fn with_temperature(mut self, temperature: impl Into<Option<f32>>) -> Self {
        self.options.temperature = temperature.into();
        self
    }

    /// Replaces the grounding check ([`SalientTerms`] by default):
    /// [`NoGrounding`](crate::NoGrounding) turns it off, any
    /// [`SummaryCheck`] replaces it.
    ///
    /// ```
    /// use memory_core::ChatResponse;
    /// use memory_summary_engine::{NoGrounding, SummarySettings};
    /// let s = SummarySettings::new().with_grounding(NoGrounding);
    /// assert!(s.accept("user: fix src/lib.rs", &ChatResponse::text("Done.")).is_ok());
    /// ```
    pub fn with_grounding(mut self, check: impl SummaryCheck + 'static) -> Self {
        self.check = Arc::new(check);
        self
    }

    /// Tells `observer` of every reply [`accept`](Self::accept) refuses.
    ///
    /// ```
    /// use memory_summary_engine::{Rejection, SummarySettings};
    /// let s = SummarySettings::new().with_rejection_observer(|r: &Rejection| eprintln!("{r}"));
    /// # let _ = s;
    /// ```
    pub fn with_rejection_observer(mut self, observer: impl RejectionObserver + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The cap, if set.
    ///
    /// ```
    /// assert_eq!(memory_summary_engine::SummarySettings::new().summary_max_tokens(), None);
    /// ```
    pub fn summary_max_tokens(&self) -> Option<u32> {
        self.summary_max_tokens
    }

    /// The input limit, if set.
    ///
    /// ```
    /// assert_eq!(memory_summary_engine::SummarySettings::new().max_input_tokens(), None);
    /// ```
    pub fn max_input_tokens(&self) -> Option<usize> {
        self.max_input_tokens
    }

    /// The prompt, if set.
    ///
    /// ```
    /// assert_eq!(memory_summary_engine::SummarySettings::new().prompt(), None);
    /// ```
    pub fn prompt(&self) -> Option<&str> {
        self.prompt.as_deref()
    }

    /// The options every request carries.
    ///
    /// ```
    /// assert!(memory_summary_engine::SummarySettings::new().options().headers.is_empty());
    /// ```
    pub fn options(&self) -> &ModelOptions {
        &self.options
    }

    /// The text of `reply` when it may become a summary of `source` (what
    /// the request asked to summarize): [`accept_reply`]'s rules, then the
    /// grounding check. A refusal is told to the rejection observer.
    ///
    /// # Errors
    ///
    /// The [`Rejection`] that says why not.
    ///
    /// ```
    /// use memory_core::ChatResponse;
    /// use memory_summary_engine::{Rejection, SummarySettings};
    /// let source = "user: rename parse_amount in tidyledger/importer.py";
    /// let s = SummarySettings::new();
    /// assert_eq!(s.accept(source, &ChatResponse::text(" Renamed parse_amount. ")), Ok("Renamed parse_amount."));
    /// assert_eq!(s.accept(source, &ChatResponse::text("")), Err(Rejection::Empty));
    /// ```
    pub fn accept<'r>(&self, source: &str, reply: &'r ChatResponse) -> Result<&'r str, Rejection> {
        let judged = accept_reply(reply).and_then(|text| {
            self.check.check(source, text)?;
            Ok(text)
        });
        if let (Err(rejection), Some(observer)) = (&judged, &self.observer) {
            observer.on_rejection(rejection);
        }
        judged
    }
}
