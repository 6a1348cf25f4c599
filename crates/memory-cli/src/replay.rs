//! The replay loop: record each transcript message by message, take the
//! context where the agent would call its model (before each assistant
//! message), and measure it into a [`Row`].

use std::time::Instant;

use memory_core::{
    History, Memory, MemoryError, Message, Pipeline, TokenCounter, structure, summary, validate,
};
use std::sync::Arc;

use memory_core::Store;
use memory_window::WindowMemory;

use crate::input::Input;
use crate::registry::{self, StageConfig};
use crate::report::Row;
use crate::support::{Support, searchable_text};
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
    budget: usize,
    memory: WindowMemory,
    recorded: Vec<Message>,
    counts: Vec<usize>,
    total: usize,
    /// Length of the leading run of system messages (recorded protected).
    protected: usize,
    /// Whether the leading run of system messages is still going.
    in_head: bool,
    previous: Option<Vec<Message>>,
    /// The summarizer's totals when the previous call was measured.
    usage: memory_core::layer::ProviderStats,
    /// The compactions counted when the previous call was measured.
    compactions: Compactions,
    /// The searchable text of everything recorded, and where the newest
    /// message's starts (for support recall).
    history_text: String,
    newest_at: usize,
}

impl<'c> TrajectoryReplay<'c> {
    fn new(
        index: usize,
        pipeline: Pipeline,
        config: &'c StageConfig,
        store: Option<(Arc<dyn Store>, String)>,
    ) -> Self {
        let budget = config.budget.max_tokens.unwrap_or(usize::MAX);
        let mut memory = WindowMemory::with_budget(config.budget)
            .with_strategy(pipeline)
            .with_token_counter(config.counter.clone());
        if let Some((store, session)) = store {
            memory = memory.with_store(store, session);
        }
        Self {
            index,
            config,
            budget,
            memory,
            recorded: Vec::new(),
            counts: Vec::new(),
            total: 0,
            protected: 0,
            in_head: true,
            previous: None,
            usage: config.usage(),
            compactions: config.compactions.snapshot(),
            history_text: String::new(),
            newest_at: 0,
        }
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
        let count = self.config.counter.count_message(message).await?;
        self.in_head &= message.is_system();
        if self.in_head {
            self.memory.record_protected(message.clone()).await?;
            self.protected += 1;
        } else {
            self.memory.record(message.clone()).await?;
        }
        self.book(message, count);
        Ok(())
    }

    /// One model call: the context, timed and measured; `next` is the
    /// assistant message the agent went on to write.
    async fn call(&mut self, turn: usize, next: &Message) -> Result<Row, MemoryError> {
        self.config.take_thrift_trace();
        let started = Instant::now();
        let result = self.memory.trimmed().await?;
        let latency = started.elapsed();
        // Since the previous call: background summaries finish between calls.
        let now = self.config.usage();
        let usage = now.since(self.usage);
        self.usage = now;
        if usage.failures > 0
            && let Some((class, message)) = self.config.summarizer.first_failure()
        {
            let at = format!("trajectory {}, message {turn}", self.index);
            crate::summarizer::warn_first_failure(class, &message, &at);
        }
        let compactions = self.config.compactions.snapshot();
        let compacted = compactions.since(self.compactions);
        self.compactions = compactions;

        let context = result.messages;
        let context_counts =
            memory_core::count_messages(self.config.counter.as_ref(), &context).await?;
        let tokens_out: usize = context_counts.iter().sum();
        let kept = self
            .previous
            .as_deref()
            .map_or(0, |previous| common_prefix(previous, &context));
        let cache_break = self
            .previous
            .as_deref()
            .is_some_and(|previous| kept < previous.len());
        let checked = check(&Call {
            recorded: &self.recorded,
            recorded_counts: &self.counts,
            protected: self.protected,
            context: &context,
            context_counts: &context_counts,
            context_protected: &result.protected,
            reported_counts: &result.counts,
            fits: result.fits,
            budget: self.budget,
        })?;
        let context_text: Vec<String> = context.iter().map(searchable_text).collect();
        let support = Support::measure(
            next,
            &self.history_text,
            &self.history_text[self.newest_at..],
            &context_text.join("\n"),
        );
        let prefix_kept_tokens: usize = context_counts[..kept].iter().sum();
        let row = Row {
            trajectory: self.index,
            turn,
            tokens_in: self.total,
            tokens_out,
            messages_out: context.len(),
            floor_tokens: checked.floor_tokens,
            summarizer_calls: usage.calls,
            summarizer_input_tokens: usage.input_tokens,
            summarizer_output_tokens: usage.output_tokens,
            summarizer_failures: usage.by_class,
            summaries_started: compacted.started,
            background_summaries_started: compacted.background_started,
            summaries_landed: compacted.landed,
            prefix_kept_tokens,
            cached_tokens: prefix_kept_tokens,
            uncached_tokens: tokens_out - prefix_kept_tokens,
            cost: self.config.pricing.cost(
                tokens_out - prefix_kept_tokens,
                prefix_kept_tokens,
                usage.input_tokens,
                usage.output_tokens,
            ),
            support_wanted: support.wanted,
            support_found: support.found,
            support_recall: support.recall(),
            cache_break,
            latency_us: u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
            valid: checked.problems.is_empty(),
            fits: result.fits,
            problems: checked.problems,
            thrift: self.config.take_thrift_trace(),
        };
        self.previous = Some(context);
        Ok(row)
    }
}

/// Number of leading messages `a` and `b` share.
fn common_prefix(a: &[Message], b: &[Message]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// What one call's checks look at.
struct Call<'a> {
    /// Everything recorded so far, and its counts.
    recorded: &'a [Message],
    recorded_counts: &'a [usize],
    /// The first `protected` recorded messages are protected.
    protected: usize,
    /// The context, counted by the replay's counter.
    context: &'a [Message],
    context_counts: &'a [usize],
    /// The result's protected indices and its own counts.
    context_protected: &'a [usize],
    reported_counts: &'a [usize],
    /// The result's verdict.
    fits: bool,
    budget: usize,
}

/// The outcome of [`check`].
struct Checked {
    /// Tokens of the recorded transcript's floor.
    floor_tokens: usize,
    /// Every invariant that does not hold; empty when the row is valid.
    problems: Vec<String>,
}

/// Checks the invariants that are cheap to check on one context:
///
/// 1. tool pairing ([`memory_core::validate`]);
/// 2. order kept, nothing invented: the context, less summaries, is a
///    subsequence of the recorded messages;
/// 3. the floor of the recorded transcript (its protected messages, the
///    current question, the newest step) is in the context, each of its
///    steps whole;
/// 4. `fits` is honest: a fitting result is within the budget, and a result
///    that does not fit has a floor (the context's own, summaries included)
///    over the budget;
/// 5. the result's token counts are the counter's.
fn check(call: &Call<'_>) -> Result<Checked, MemoryError> {
    let mut problems = Vec::new();

    if let Some(v) = validate(call.context).first() {
        problems.push(format!("context: {v}"));
    }

    if let Some(k) = first_not_from(call.context, call.recorded) {
        problems.push(format!(
            "context message {k} ({}) is not in the transcript, or is out of order",
            call.context[k].role()
        ));
    }

    let protected: Vec<usize> = (0..call.protected).collect();
    let history = History::new(call.recorded, call.recorded_counts)?.protect(&protected);
    let floor = structure::floor(&history);
    let floor_steps = floor.ranges.iter().flat_map(|range| {
        structure::steps(&call.recorded[range.clone()])
            .map(move |step| range.start + step.start..range.start + step.end)
    });
    // A subtractive stage may show a floor step shrunk (its oversized tool
    // output cut, say), never without it.
    let mut floor_shrunk = false;
    for step in floor_steps {
        let want = &call.recorded[step.clone()];
        let shown = call.context.windows(want.len()).find(|w| {
            w.iter()
                .zip(want)
                .all(|(got, was)| memory_core::is_shrunk_from(was, got))
        });
        match shown {
            Some(w) => floor_shrunk |= w != want,
            None => problems.push(format!(
                "floor messages {}..{} (protected, current question or newest step) are not in the context whole",
                step.start, step.end
            )),
        }
    }

    let tokens_out: usize = call.context_counts.iter().sum();
    if call.fits && tokens_out > call.budget {
        problems.push(format!(
            "the result says it fits, but the context has {tokens_out} tokens, over the budget of {}",
            call.budget
        ));
    }
    if !call.fits {
        let context =
            History::new(call.context, call.context_counts)?.protect(call.context_protected);
        let context_floor = structure::floor(&context).tokens;
        if context_floor <= call.budget {
            problems.push(format!(
                "the result says it does not fit, but its floor is {context_floor} tokens, within the budget of {}",
                call.budget
            ));
        }
    }
    if floor.tokens > call.budget && call.fits && !floor_shrunk {
        problems.push(format!(
            "the result says it fits, but the transcript's floor alone is {} tokens, over the budget of {}",
            floor.tokens, call.budget
        ));
    }

    if call.reported_counts != call.context_counts {
        problems.push("the result's token counts differ from the counter's".to_string());
    }

    Ok(Checked {
        floor_tokens: floor.tokens,
        problems,
    })
}

/// Index of the first context message that breaks "a subsequence of the
/// recorded messages"; summaries may appear anywhere. `None` when all hold.
///
/// A stage may add summaries and show a recorded message shrunk (see
/// [`memory_core::is_shrunk_from`]); nothing else.
fn first_not_from(context: &[Message], recorded: &[Message]) -> Option<usize> {
    let mut next = 0;
    for (k, message) in context.iter().enumerate() {
        if summary::is_summary(message) {
            continue;
        }
        match recorded[next..]
            .iter()
            .position(|r| memory_core::is_shrunk_from(r, message))
        {
            Some(offset) => next += offset + 1,
            None => return Some(k),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ToolCall;

    fn transcript() -> Vec<Message> {
        vec![
            Message::system("rules"),
            Message::user("fix it"),
            Message::assistant_with_tools(
                "",
                vec![
                    ToolCall::new("a", "read", "{}"),
                    ToolCall::new("b", "read", "{}"),
                ],
            ),
            Message::tool_result("a", "aaaa"),
            Message::tool_result("b", "bbbb"),
        ]
    }

    fn call<'a>(
        recorded: &'a [Message],
        counts: &'a [usize],
        context: &'a [Message],
        context_counts: &'a [usize],
        fits: bool,
        budget: usize,
    ) -> Call<'a> {
        Call {
            recorded,
            recorded_counts: counts,
            protected: 1,
            context,
            context_counts,
            context_protected: &[0],
            reported_counts: context_counts,
            fits,
            budget,
        }
    }

    #[test]
    fn a_faithful_trim_is_valid() {
        let m = transcript();
        let counts = [5, 5, 5, 5, 5];
        let c = check(&call(&m, &counts, &m, &counts, true, 25)).unwrap();
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(c.floor_tokens, 25);
        let c = check(&call(&m, &counts, &m, &counts, false, 24)).unwrap();
        assert!(c.problems.is_empty(), "{:?}", c.problems);
    }

    #[test]
    fn each_broken_invariant_is_reported() {
        let m = transcript();
        let counts = [5, 5, 5, 5, 5];
        // A split step (a result without its sibling) and a missing prompt.
        let split = [m[1].clone(), m[2].clone(), m[3].clone()];
        let c = check(&call(&m, &counts, &split, &[5, 5, 5], true, 100)).unwrap();
        assert!(
            c.problems.iter().any(|p| p.starts_with("context: ")),
            "{:?}",
            c.problems
        );
        assert!(
            c.problems
                .iter()
                .any(|p| p.starts_with("floor messages 0..1")),
            "{:?}",
            c.problems
        );
        // Reordered.
        let reordered = [
            m[1].clone(),
            m[0].clone(),
            m[2].clone(),
            m[3].clone(),
            m[4].clone(),
        ];
        let c = check(&call(&m, &counts, &reordered, &counts, true, 100)).unwrap();
        assert!(
            c.problems.iter().any(|p| p.contains("out of order")),
            "{:?}",
            c.problems
        );
        // Invented.
        let mut invented = m.clone();
        invented.insert(2, Message::assistant("I made this up"));
        let c = check(&call(&m, &counts, &invented, &[5; 6], true, 100)).unwrap();
        assert!(
            c.problems
                .iter()
                .any(|p| p.contains("not in the transcript")),
            "{:?}",
            c.problems
        );
        // Silent overflow, and giving up while the floor fits.
        let c = check(&call(&m, &counts, &m, &counts, true, 20)).unwrap();
        assert!(
            c.problems.iter().any(|p| p.contains("says it fits")),
            "{:?}",
            c.problems
        );
        let c = check(&call(&m, &counts, &m, &counts, false, 30)).unwrap();
        assert!(
            c.problems.iter().any(|p| p.contains("does not fit")),
            "{:?}",
            c.problems
        );
    }

    #[test]
    fn summaries_may_be_added() {
        let m = transcript();
        let counts = [5, 5, 5, 5, 5];
        let mut context = vec![m[0].clone(), summary::message("earlier work")];
        context.extend_from_slice(&m[1..]);
        let c = Call {
            context_protected: &[0, 1],
            ..call(&m, &counts, &context, &[5; 6], true, 30)
        };
        let c = check(&c).unwrap();
        assert!(c.problems.is_empty(), "{:?}", c.problems);
    }

    #[test]
    fn prefixes_are_counted_message_by_message() {
        let m = transcript();
        assert_eq!(common_prefix(&m, &m[..3]), 3);
        assert_eq!(common_prefix(&m[1..], &m), 0);
    }
}
