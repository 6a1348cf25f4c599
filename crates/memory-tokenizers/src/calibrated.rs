//! [`Calibrated`]: a cheap estimate corrected by what the provider bills.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use memory_core::{MemoryError, Message, TokenCounter, Usage};

/// Scales a cheap estimate by a ratio learned from the input tokens a
/// provider reports, for models whose tokenizer is not public (Claude,
/// Gemini) or not at hand.
///
/// After each model call, [`observe`](Calibrated::observe) the *uncalibrated*
/// estimate of the prompt that was sent (see
/// [`estimate_messages`](Calibrated::estimate_messages)) next to the
/// `input_tokens` the provider reported. The ratio `reported / estimated` is
/// averaged over the first observations, then followed with an exponentially
/// weighted moving average, so it tracks the mix of text the agent sends.
/// Counts are `ceil(estimate * ratio)`; before any observation the ratio is
/// 1.0 (or what [`with_ratio`](Calibrated::with_ratio) set).
///
/// Reported input includes what the estimate never sees (per-message framing,
/// tool definitions), and the ratio absorbs it: good for a budget, which must
/// hold the whole prompt. Against absurd observations (a usage belonging to
/// another prompt, a cached prefix not billed), each sample is clamped to
/// [`bounds`](Calibrated::with_bounds) (0.25 to 4 by default) and prompts
/// estimated under 16 tokens, where framing dominates, are ignored.
///
/// Thread-safe: share it with an `Arc`, count from many tasks, observe from
/// the one that calls the model.
///
/// ```
/// use std::sync::Arc;
/// use memory_core::{CharTokenCounter, Message, TokenCounter, Usage};
/// use memory_tokenizers::Calibrated;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let counter = Arc::new(Calibrated::new(CharTokenCounter));
/// let prompt = vec![Message::user("word ".repeat(100))];
///
/// // ... send `prompt`; the provider bills 150 input tokens ...
/// let estimated = counter.estimate_messages(&prompt).await.unwrap(); // 125
/// counter.observe_usage(estimated, &Usage { input_tokens: 150, output_tokens: 7 });
///
/// assert!((counter.ratio() - 1.1).abs() < 1e-9); // halfway from the prior 1.0 to 1.2
/// assert_eq!(counter.count("abcdefgh").await.unwrap(), 3); // ceil(2 * 1.1)
/// # });
/// ```
pub struct Calibrated<C> {
    inner: C,
    /// The current ratio as `f64` bits, read without locking.
    ratio: AtomicU64,
    state: Mutex<State>,
    smoothing: f64,
    min_ratio: f64,
    max_ratio: f64,
    min_estimate: usize,
}

#[derive(Debug, Clone, Copy)]
struct State {
    ratio: f64,
    observations: u64,
}

impl<C> Calibrated<C> {
    /// The ratio before any observation.
    ///
    /// ```
    /// assert_eq!(memory_tokenizers::Calibrated::<()>::DEFAULT_RATIO, 1.0);
    /// ```
    pub const DEFAULT_RATIO: f64 = 1.0;

    /// Weight of a new observation once the warm-up is over.
    ///
    /// ```
    /// assert_eq!(memory_tokenizers::Calibrated::<()>::DEFAULT_SMOOTHING, 0.2);
    /// ```
    pub const DEFAULT_SMOOTHING: f64 = 0.2;

    /// Smallest and largest ratio a sample may have; others are clamped.
    ///
    /// ```
    /// assert_eq!(memory_tokenizers::Calibrated::<()>::DEFAULT_BOUNDS, (0.25, 4.0));
    /// ```
    pub const DEFAULT_BOUNDS: (f64, f64) = (0.25, 4.0);

    /// Estimates under this many tokens are not observed.
    ///
    /// ```
    /// assert_eq!(memory_tokenizers::Calibrated::<()>::MIN_ESTIMATE, 16);
    /// ```
    pub const MIN_ESTIMATE: usize = 16;

    /// Calibrates `inner`, starting at a ratio of 1.0.
    ///
    /// ```
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter);
    /// assert_eq!(counter.ratio(), 1.0);
    /// ```
    pub fn new(inner: C) -> Self {
        let (min_ratio, max_ratio) = Self::DEFAULT_BOUNDS;
        Self {
            inner,
            ratio: AtomicU64::new(Self::DEFAULT_RATIO.to_bits()),
            state: Mutex::new(State {
                ratio: Self::DEFAULT_RATIO,
                observations: 0,
            }),
            smoothing: Self::DEFAULT_SMOOTHING,
            min_ratio,
            max_ratio,
            min_estimate: Self::MIN_ESTIMATE,
        }
    }

    /// Starts from `ratio` instead of 1.0 (one learned in an earlier run,
    /// say); it weighs as one observation. Clamped to the bounds; a ratio
    /// that is not a finite positive number is ignored.
    ///
    /// ```
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter).with_ratio(1.25);
    /// assert_eq!(counter.ratio(), 1.25);
    /// ```
    pub fn with_ratio(self, ratio: f64) -> Self {
        if !(ratio.is_finite() && ratio > 0.0) {
            return self;
        }
        let ratio = ratio.clamp(self.min_ratio, self.max_ratio);
        self.set(State {
            ratio,
            observations: 0,
        });
        self
    }

    /// Weight of each new observation after the warm-up, in `(0, 1]`: higher
    /// follows changes faster, lower smooths noise more. Out-of-range values
    /// are clamped.
    ///
    /// ```
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter).with_smoothing(0.5);
    /// # let _ = counter;
    /// ```
    pub fn with_smoothing(mut self, weight: f64) -> Self {
        self.smoothing = if weight.is_nan() {
            Self::DEFAULT_SMOOTHING
        } else {
            weight.clamp(1e-3, 1.0)
        };
        self
    }

    /// The smallest and largest ratio a sample may have (samples outside are
    /// clamped to them), and so the range of the ratio. Swapped if given in
    /// the wrong order; ignored unless both are finite and positive.
    ///
    /// ```
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter)
    ///     .with_bounds(0.5, 2.0);
    /// counter.observe(1_000, 100_000);
    /// assert_eq!(counter.ratio(), 1.5); // the sample 100 counts as 2.0
    /// ```
    pub fn with_bounds(mut self, min: f64, max: f64) -> Self {
        let valid = |x: f64| x.is_finite() && x > 0.0;
        if !(valid(min) && valid(max)) {
            return self;
        }
        self.min_ratio = min.min(max);
        self.max_ratio = min.max(max);
        let state = self.snapshot();
        self.set(State {
            ratio: state.ratio.clamp(self.min_ratio, self.max_ratio),
            ..state
        });
        self
    }

    /// Records one model call: the uncalibrated estimate of the prompt sent
    /// and the input tokens the provider reported for it. Returns whether the
    /// observation was used: one with a zero on either side or an estimate
    /// under [`MIN_ESTIMATE`](Self::MIN_ESTIMATE) is ignored.
    ///
    /// ```
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter);
    /// assert!(counter.observe(1_000, 1_300));
    /// assert!(!counter.observe(0, 1_300));
    /// assert!((counter.ratio() - 1.15).abs() < 1e-9);
    /// ```
    pub fn observe(&self, estimated_tokens: usize, reported_input_tokens: u64) -> bool {
        if estimated_tokens < self.min_estimate.max(1) || reported_input_tokens == 0 {
            return false;
        }
        let sample = (reported_input_tokens as f64 / estimated_tokens as f64)
            .clamp(self.min_ratio, self.max_ratio);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // The prior counts as one observation; the first samples are averaged
        // with it, and once 1/(n+1) falls below the smoothing weight each new
        // sample gets that weight.
        let weight = (1.0 / (state.observations as f64 + 2.0)).max(self.smoothing);
        state.ratio =
            (state.ratio + weight * (sample - state.ratio)).clamp(self.min_ratio, self.max_ratio);
        state.observations += 1;
        self.ratio.store(state.ratio.to_bits(), Ordering::Relaxed);
        true
    }

    /// [`observe`](Self::observe) with the [`Usage`] of a `ChatResponse`.
    ///
    /// ```
    /// use memory_core::Usage;
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter);
    /// counter.observe_usage(100, &Usage { input_tokens: 90, output_tokens: 5 });
    /// assert!((counter.ratio() - 0.95).abs() < 1e-9);
    /// ```
    pub fn observe_usage(&self, estimated_tokens: usize, usage: &Usage) -> bool {
        self.observe(estimated_tokens, usage.input_tokens)
    }

    /// The current ratio of reported to estimated tokens.
    ///
    /// ```
    /// assert_eq!(memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter).ratio(), 1.0);
    /// ```
    pub fn ratio(&self) -> f64 {
        f64::from_bits(self.ratio.load(Ordering::Relaxed))
    }

    /// How many observations were used.
    ///
    /// ```
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter);
    /// counter.observe(100, 120);
    /// assert_eq!(counter.observations(), 1);
    /// ```
    pub fn observations(&self) -> u64 {
        self.snapshot().observations
    }

    /// The wrapped (uncalibrated) counter.
    ///
    /// ```
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter);
    /// assert_eq!(memory_core::CharTokenCounter::estimate("abcd"), 1);
    /// let _inner: &memory_core::CharTokenCounter = counter.inner();
    /// ```
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// `estimate` scaled by the current ratio, rounded up.
    ///
    /// ```
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter).with_ratio(1.3);
    /// assert_eq!(counter.scale(10), 13);
    /// assert_eq!(counter.scale(11), 15);
    /// ```
    pub fn scale(&self, estimate: usize) -> usize {
        if estimate == 0 {
            return 0;
        }
        let scaled = estimate as f64 * self.ratio();
        // Forgive floating-point dust: 10 * 1.3 is 13, not 14.
        (scaled - 1e-9).ceil().max(0.0) as usize
    }

    fn snapshot(&self) -> State {
        *self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, state: State) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
        self.ratio.store(state.ratio.to_bits(), Ordering::Relaxed);
    }
}

impl<C: TokenCounter> Calibrated<C> {
    /// The uncalibrated estimate of a prompt: the sum of the inner counter's
    /// message counts, the figure to [`observe`](Self::observe) next to the
    /// provider's report.
    ///
    /// # Errors
    ///
    /// The first error of the inner counter.
    ///
    /// ```
    /// use memory_core::Message;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let counter = memory_tokenizers::Calibrated::new(memory_core::CharTokenCounter).with_ratio(2.0);
    /// let prompt = [Message::user("abcd"), Message::assistant("abcdefgh")];
    /// assert_eq!(counter.estimate_messages(&prompt).await.unwrap(), 3);
    /// # });
    /// ```
    pub async fn estimate_messages(&self, messages: &[Message]) -> Result<usize, MemoryError> {
        let mut total = 0;
        for message in messages {
            total += self.inner.count_message(message).await?;
        }
        Ok(total)
    }
}

impl<C: std::fmt::Debug> std::fmt::Debug for Calibrated<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Calibrated")
            .field("inner", &self.inner)
            .field("ratio", &self.ratio())
            .field("observations", &self.observations())
            .finish()
    }
}

#[async_trait::async_trait]
impl<C: TokenCounter> TokenCounter for Calibrated<C> {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        Ok(self.scale(self.inner.count(text).await?))
    }

    /// Scales the inner counter's whole-message count, rounding once.
    async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
        Ok(self.scale(self.inner.count_message(message).await?))
    }

    /// The inner counter's.
    fn framing(&self) -> memory_core::Framing {
        self.inner.framing()
    }
}

#[cfg(test)]
mod tests {
    use memory_core::CharTokenCounter;

    use super::*;

    /// A deterministic stream in [0, 1).
    fn uniform(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn converges_to_the_true_ratio() {
        let counter = Calibrated::new(CharTokenCounter);
        let mut seed = 7;
        let mut converged_at = None;
        for i in 0..200 {
            let estimated = 500 + (uniform(&mut seed) * 20_000.0) as usize;
            // True ratio 1.3, each report off by up to 2% either way.
            let noise = 1.0 + (uniform(&mut seed) - 0.5) * 0.04;
            let reported = (estimated as f64 * 1.3 * noise).round() as u64;
            assert!(counter.observe(estimated, reported));
            let error = (counter.ratio() - 1.3).abs() / 1.3;
            if error <= 0.02 {
                converged_at.get_or_insert(i);
            }
            if i >= 30 {
                assert!(error <= 0.02, "ratio {} at {i}", counter.ratio());
            }
        }
        assert!(converged_at.expect("converged") < 15, "{converged_at:?}");
        assert_eq!(counter.observations(), 200);
    }

    #[test]
    fn exact_samples_converge_fast_and_follow_changes() {
        let counter = Calibrated::new(CharTokenCounter);
        for _ in 0..12 {
            counter.observe(1_000, 1_300);
        }
        assert!(
            (counter.ratio() - 1.3).abs() / 1.3 < 0.02,
            "{}",
            counter.ratio()
        );
        // The model (or the mix of text) changes: the ratio follows.
        for _ in 0..25 {
            counter.observe(1_000, 900);
        }
        assert!(
            (counter.ratio() - 0.9).abs() / 0.9 < 0.02,
            "{}",
            counter.ratio()
        );
    }

    #[test]
    fn absurd_observations_are_bounded_or_ignored() {
        let counter = Calibrated::new(CharTokenCounter);
        assert!(!counter.observe(0, 100));
        assert!(!counter.observe(100, 0));
        assert!(!counter.observe(3, 100)); // too small to say anything
        assert_eq!(counter.ratio(), 1.0);
        assert_eq!(counter.observations(), 0);
        for _ in 0..100 {
            counter.observe(100, u64::MAX);
        }
        assert!((counter.ratio() - 4.0).abs() < 1e-6, "{}", counter.ratio());
        for _ in 0..100 {
            counter.observe(usize::MAX, 1);
        }
        assert!((counter.ratio() - 0.25).abs() < 1e-6, "{}", counter.ratio());
        assert!(counter.ratio() >= 0.25);
        assert!(counter.ratio().is_finite());
    }

    #[test]
    fn settings_are_sanitized() {
        let counter = Calibrated::new(CharTokenCounter)
            .with_ratio(f64::NAN)
            .with_smoothing(f64::NAN)
            .with_bounds(f64::INFINITY, 2.0);
        assert_eq!(counter.ratio(), 1.0);
        let counter = Calibrated::new(CharTokenCounter)
            .with_bounds(2.0, 0.5)
            .with_ratio(10.0);
        assert_eq!(counter.ratio(), 2.0);
        let counter = Calibrated::new(CharTokenCounter)
            .with_ratio(3.0)
            .with_bounds(0.5, 2.0);
        assert_eq!(counter.ratio(), 2.0);
    }

    #[tokio::test]
    async fn counts_are_the_estimate_scaled_and_rounded_up() {
        let counter = Calibrated::new(CharTokenCounter).with_ratio(1.3);
        assert_eq!(counter.count("").await.unwrap(), 0);
        assert_eq!(counter.count(&"a".repeat(40)).await.unwrap(), 13);
        assert_eq!(counter.count(&"a".repeat(41)).await.unwrap(), 15); // ceil(11 * 1.3)
        // A message is scaled once, not per part.
        let message = Message::Assistant {
            content: "abcd".into(),
            reasoning: Some("abcd".into()),
            tool_calls: vec![],
        };
        assert_eq!(counter.count_message(&message).await.unwrap(), 3); // ceil(2 * 1.3)
    }

    #[tokio::test]
    async fn shared_between_tasks() {
        let counter = std::sync::Arc::new(Calibrated::new(CharTokenCounter));
        let mut handles = Vec::new();
        for _ in 0..4 {
            let counter = counter.clone();
            handles.push(std::thread::spawn(move || {
                for _ in 0..100 {
                    counter.observe(1_000, 1_300);
                }
            }));
        }
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(counter.observations(), 400);
        assert!((counter.ratio() - 1.3).abs() < 1e-6);
        assert_eq!(counter.count(&"a".repeat(400)).await.unwrap(), 130);
    }
}
