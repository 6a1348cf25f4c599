//! The replay loop: record each transcript message by message, take the
//! context where the agent would call its model (before each assistant
//! message), and measure it into a [`Row`].

use std::time::Instant;

use std::sync::Arc;

use memory_core::audit::{Audit, Given, Report};
use memory_core::{History, MemoryError, Message, Pipeline, Store, TokenCounter};
use memory_session::{PrefixKept, WindowMemory};

use crate::input::Input;
use crate::registry::{self, StageConfig};
use crate::report::Row;
use crate::support::{self, Support, searchable_text};
use crate::tally::Compactions;
use crate::{CliError, Progress};

/// Replays every trajectory of `input` through a fresh pipeline built from
/// `spec`, under `config`'s budget and counter. `file` names the input in
/// errors.
///
/// # Errors
///
/// [`CliError::Replay`] when recording or trimming fails, and the errors of
/// [`registry::pipeline`].
///
/// ```
/// use std::sync::Arc;
/// use memory_cli::registry::StageConfig;
///
/// let input = memory_cli::input::parse(br#"[
///   {"role": "system", "content": "You are a coding agent."},
///   {"role": "user", "content": "Run the tests."},
///   {"role": "assistant", "content": "All green."}
/// ]"#).unwrap();
/// let config = StageConfig::new(memory_core::Budget::tokens(100), Arc::new(memory_core::CharTokenCounter));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let rows = memory_cli::replay::replay(&input, "session.json", "window", &config).await.unwrap();
/// assert_eq!(rows.len(), 1);
/// assert_eq!((rows[0].turn, rows[0].messages_out), (2, 2));
/// assert!(rows[0].valid && rows[0].fits);
/// # });
/// ```
pub async fn replay(
    input: &Input,
    file: &str,
    spec: &str,
    config: &StageConfig,
) -> Result<Vec<Row>, CliError> {
    let progress = Progress::hidden(input.message_count() as u64);
    replay_with_progress(input, file, spec, config, &progress).await
}

/// [`replay`], advancing `progress` by one step per recorded message.
///
/// # Errors
///
/// As [`replay`].
///
/// ```
/// use std::sync::Arc;
/// use memory_cli::{registry::StageConfig, Progress};
///
/// let input = memory_cli::input::parse(br#"[{"role": "user", "content": "hi"},
///   {"role": "assistant", "content": "hello"}]"#).unwrap();
/// let config = StageConfig::new(memory_core::Budget::tokens(100), Arc::new(memory_core::CharTokenCounter));
/// let progress = Progress::hidden(2);
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// memory_cli::replay::replay_with_progress(&input, "s.json", "window", &config, &progress).await.unwrap();
/// assert_eq!(progress.position(), 2);
/// # });
/// ```
pub async fn replay_with_progress(
    input: &Input,
    file: &str,
    spec: &str,
    config: &StageConfig,
    progress: &Progress,
) -> Result<Vec<Row>, CliError> {
    let mut rows = Vec::new();
    let several = input.trajectories.len() > 1;
    for (index, trajectory) in input.trajectories.iter().enumerate() {
        let pipeline = registry::pipeline(spec, config)?;
        let failed = |turn: usize| {
            let position = trajectory.position(turn);
            move |source| CliError::Replay {
                file: file.to_string(),
                position,
                source,
            }
        };
        let mut resume_at = 0;
        let mut persist = None;
        if let Some((store, session)) = &config.store {
            let session = if several {
                format!("{session}/{spec}/{index}")
            } else {
                format!("{session}/{spec}")
            };
            let stored = store
                .history(&session)
                .await
                .map_err(|e| failed(0)(e.into()))?;
            if stored.len() > trajectory.messages.len()
                || stored[..] != trajectory.messages[..stored.len()]
            {
                return Err(CliError::Usage(format!(
                    "session `{session}` holds another transcript ({} messages that are not the start of this one); choose another --session",
                    stored.len()
                )));
            }
            resume_at = stored.len();
            persist = Some((store.clone(), session));
        }
        let mut replay = TrajectoryReplay::new(index, pipeline, config, persist);
        if let Some(task) = trajectory.task_after_demonstrations() {
            replay = replay.with_task_at(task);
        }
        for (turn, message) in trajectory.messages.iter().enumerate() {
            if turn < resume_at {
                replay.account(message).await.map_err(failed(turn))?;
            } else {
                replay
                    .step(turn, message, &mut rows)
                    .await
                    .map_err(failed(turn))?;
            }
            progress.inc(1);
        }
    }
    Ok(rows)
}

/// The state of one trajectory's replay.
struct TrajectoryReplay<'c> {
    index: usize,
    config: &'c StageConfig,
    memory: WindowMemory,
    recorded: Vec<Message>,
    counts: Vec<usize>,
    total: usize,
    /// Length of the leading run of system messages (recorded protected).
    protected: usize,
    /// The task when it is not the first user message (recorded
    /// protected, the memory's own task floor off).
    task_at: Option<usize>,
    /// Whether the leading run of system messages is still going.
    in_head: bool,
    previous: Option<Vec<Message>>,
    /// The summarizer's totals when the previous call was measured.
    usage: memory_layer::ProviderStats,
    /// The searchable text of everything recorded, and where the newest
    /// message's starts (for support recall).
    history_text: String,
    newest_at: usize,
    /// Where each recorded message first stands, for the handles a
    /// context shows (read once each).
    keys: memory_core::recall::FirstKeys,
}

impl<'c> TrajectoryReplay<'c> {
    fn new(
        index: usize,
        pipeline: Pipeline,
        config: &'c StageConfig,
        store: Option<(Arc<dyn Store>, String)>,
    ) -> Self {
        let mut memory = WindowMemory::with_budget(config.budget)
            .with_strategy(pipeline)
            .with_token_counter(config.counter.clone())
            .with_task(config.task_floor)
            .with_index(config.index);
        if let Some((store, session)) = store {
            memory = memory.with_store(store, session);
        }
        Self {
            index,
            config,
            memory,
            recorded: Vec::new(),
            counts: Vec::new(),
            total: 0,
            protected: 0,
            task_at: None,
            in_head: true,
            keys: memory_core::recall::FirstKeys::default(),
            previous: None,
            usage: config.usage(),
            history_text: String::new(),
            newest_at: 0,
        }
    }

    /// Takes message `task` for the task rather than the first user
    /// message (a SWE-agent trajectory's demonstrations come first): it is
    /// recorded protected, when the task floor is on, and the memory's own
    /// task floor, which would protect the first user message, is off.
    fn with_task_at(mut self, task: usize) -> Self {
        if self.config.task_floor {
            self.task_at = Some(task);
            self.memory = self.memory.with_task(false);
        }
        self
    }

    /// [`task_at`](Self::task_at), once it is recorded.
    fn recorded_task_at(&self) -> Option<usize> {
        self.task_at.filter(|&t| t < self.recorded.len())
    }

    /// Books `message` as recorded: its count and its searchable text.
    fn book(&mut self, message: &Message, count: usize) {
        self.recorded.push(message.clone());
        self.counts.push(count);
        self.total += count;
        self.newest_at = self.history_text.len();
        self.history_text.push_str(&searchable_text(message));
        self.history_text.push('\n');
    }

    /// Books a message the store already holds (a resumed session): the
    /// bookkeeping of [`step`](Self::step) without recording or measuring.
    async fn account(&mut self, message: &Message) -> Result<(), MemoryError> {
        let count = self.config.counter.count_message(message).await?;
        self.in_head &= message.is_system();
        if self.in_head {
            self.protected += 1;
        }
        self.book(message, count);
        Ok(())
    }

    /// Takes a measured context first when `message` is an assistant
    /// message (and anything was recorded), then records `message`.
    async fn step(
        &mut self,
        turn: usize,
        message: &Message,
        rows: &mut Vec<Row>,
    ) -> Result<(), MemoryError> {
        if message.is_assistant() && !self.recorded.is_empty() {
            rows.push(self.call(turn, message).await?);
            if !self.config.turn_delay.is_zero() {
                // The model call the agent would make now.
                tokio::time::sleep(self.config.turn_delay).await;
            }
        }
        // Counted once: the memory takes the count.
        let count = self.config.counter.count_message(message).await?;
        self.in_head &= message.is_system();
        let protected = self.in_head || self.task_at == Some(turn);
        if self.in_head {
            self.protected += 1;
        }
        self.memory
            .record_counted(message.clone(), count, protected)
            .await?;
        self.book(message, count);
        Ok(())
    }

    /// One model call: the context, timed and measured; `next` is the
    /// assistant message the agent went on to write.
    async fn call(&mut self, turn: usize, next: &Message) -> Result<Row, MemoryError> {
        let started = Instant::now();
        let result = self.memory.trimmed().await?;
        let latency = started.elapsed();
        let usage = self.since_previous_call(turn);
        // The strategy's counts: each message is counted once, when
        // recorded (or by the stage that shortened it).
        let report = self.audit(&result, &result.counts)?;
        let mut row = self.cache_measures(&result.messages, &result.counts, usage);
        let context = &result.messages;
        let (support, reachable) = self.support(next, context);
        row.trajectory = self.index;
        row.turn = turn;
        row.floor_tokens = report.floor_tokens;
        // Summaries started, and landed since the previous call, as the
        // compact stages said in the result.
        let compacted = Compactions::of(&result.diagnostics);
        row.summaries_started = compacted.started;
        row.background_summaries_started = compacted.background_started;
        row.summaries_landed = compacted.landed;
        row.support_wanted = support.wanted;
        row.support_found = support.found;
        row.support_recall = support.recall();
        row.reachable_support_found = reachable.found;
        row.reachable_support_recall = reachable.recall();
        row.handles = memory_core::recall::handles_in(context).len();
        row.index_tokens = (context.iter().zip(&result.counts))
            .filter(|(m, _)| memory_session::left_out::is_index(m))
            .map(|(_, &n)| n)
            .sum();
        row.protected_tokens = result.protected.iter().map(|&i| result.counts[i]).sum();
        row.latency_us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        row.valid = report.is_clean();
        row.fits = result.fits;
        row.task_kept = self
            .recorded_task_at()
            .or_else(|| memory_core::structure::task(&self.recorded))
            .map(|t| context.contains(&self.recorded[t]));
        row.problems = report.breaches.iter().map(ToString::to_string).collect();
        row.thrift = result
            .diagnostics
            .get::<memory_thrift::ThriftTrace>()
            .cloned();
        row.context = self.config.keep_contexts.then(|| context.clone());
        self.previous = Some(result.messages);
        Ok(row)
    }

    /// A row with what the call sends and costs: tokens, the prefix kept
    /// from the previous call, the summarizer's spending.
    fn cache_measures(
        &self,
        context: &[Message],
        counts: &[usize],
        usage: memory_layer::ProviderStats,
    ) -> Row {
        let tokens_out: usize = counts.iter().sum();
        let kept = PrefixKept::between(
            self.previous.as_deref().unwrap_or_default(),
            context,
            counts,
        );
        let prefix_kept_tokens = kept.tokens;
        let uncached = tokens_out - prefix_kept_tokens;
        Row {
            tokens_in: self.total,
            tokens_out,
            messages_out: context.len(),
            summarizer_calls: usage.calls,
            summarizer_input_tokens: usage.input_tokens,
            summarizer_output_tokens: usage.output_tokens,
            summarizer_failures: usage.by_class,
            prefix_kept_tokens,
            cached_tokens: prefix_kept_tokens,
            uncached_tokens: uncached,
            cost: self.config.pricing.cost(
                uncached,
                prefix_kept_tokens,
                usage.input_tokens,
                usage.output_tokens,
            ),
            cache_break: kept.cache_break,
            ..Row::default()
        }
    }

    /// What the summarizer spent since the previous call (background
    /// summaries finish between calls); warns once about the first
    /// summarizer failure.
    fn since_previous_call(&mut self, turn: usize) -> memory_layer::ProviderStats {
        let now = self.config.usage();
        let usage = now.since(self.usage);
        self.usage = now;
        if usage.failures > 0
            && let Some((class, message)) = self.config.summarizer.first_failure()
        {
            let at = format!("trajectory {}, message {turn}", self.index);
            crate::summarizer::warn_first_failure(class, &message, &at);
        }
        usage
    }

    /// Support recall of `next` in `context`: plain, and within reach of
    /// one recall.
    fn support(&mut self, next: &Message, context: &[Message]) -> (Support, Support) {
        let wanted = support::wanted(
            next,
            &self.history_text,
            &self.history_text[self.newest_at..],
        );
        // Nothing to look for: no text is built.
        if wanted.is_empty() {
            return (Support::default(), Support::default());
        }
        let mut context_text: Vec<String> = context.iter().map(searchable_text).collect();
        let measure = |text: &[String]| Support::in_context(&wanted, &text.join("\n"));
        let plain = measure(&context_text);
        // Everything found in the context: the text within reach (up to a
        // recall's reach of tokens) could only find more, and is not built.
        if plain.found == plain.wanted {
            return (plain.clone(), plain);
        }
        let max = memory_core::recall::max_reachable_tokens(&self.config.budget);
        let reach = self
            .keys
            .reachable(&self.recorded, &self.counts, context, max);
        if reach.is_empty() {
            return (plain.clone(), plain);
        }
        for piece in reach {
            match piece.chars {
                None => {
                    context_text.extend(self.recorded[piece.messages].iter().map(searchable_text))
                }
                Some(_) => context_text.push(piece.text(&self.recorded)),
            }
        }
        (plain, measure(&context_text))
    }

    /// Audits a context against everything recorded (the transcript, its
    /// leading system prompt protected, and its task unless the task floor
    /// is off) and the budget: the memory trimmed
    /// a view of that transcript, which compactions may have changed.
    fn audit(
        &self,
        result: &memory_core::TrimResult,
        context_counts: &[usize],
    ) -> Result<Report, MemoryError> {
        let mut protected: Vec<usize> = (0..self.protected).collect();
        protected.extend(self.recorded_task_at());
        let mut history = History::new(&self.recorded, &self.counts)?;
        if !self.config.task_floor || self.task_at.is_some() {
            history = history.forget_task();
        }
        let history = history.protect(&protected);
        Audit::new(&history, self.config.budget)
            .given(Given::View)
            .check(result, context_counts)
    }
}
