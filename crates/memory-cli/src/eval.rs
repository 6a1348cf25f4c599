//! `memory eval locomo`: evidence recall and answer recall of pipelines on
//! LoCoMo.
//!
//! | item | what it is |
//! |---|---|
//! | [`evaluate`] | asks every question of every sample through each pipeline |
//! | [`EndState`], [`Arrival`] | one conversation recorded up to the state its questions are asked against |
//! | [`answer`] | the answer words: tokenizer, stop words, matching |
//! | [`EvalReport`] and its rows and totals | the report and its human summary |
//!
//! **One replay per conversation.** LoCoMo asks every question after the
//! whole conversation. So for each sample and pipeline one pipeline is
//! built and the conversation is recorded through it once, in a memory
//! that writes back what a materializing stage stores; the store's view at
//! the end is the conversation's *end state* ([`EndState`]). Every question
//! is then asked alone against that state: the state plus the question (as
//! the newest user message) is trimmed by the same pipeline instance, and
//! nothing is written back, so questions do not accumulate, and what the
//! strategies made on the way (Compact's rolling summary, the summary
//! Summarize folded) is shared by all the questions of the sample instead
//! of being made again for each. A question's row counts only what asking
//! it cost; what recording cost is in the sample's [`ConversationRow`].
//!
//! **Live, by default.** The conversation is recorded as a live chat would
//! be ([`Arrival::Live`]): utterance by utterance, with a context taken
//! before every utterance of the second speaker, where the assistant
//! replies. That is the state a deployed memory is in when the question
//! comes: its summaries were made turn by turn, under the budget's
//! pressure at the time, and folded into each other. One trim at the end
//! ([`Arrival::AtOnce`]) would instead summarize the whole conversation in
//! one go, a state no live chat reaches; it is kept for comparison.
//!
//! **Evidence recall.** A question is recalled when every evidence
//! utterance's text is in the context as a whole message, verbatim. The
//! question itself, the context's last message, does not count.
//!
//! **Answer recall** (categories 1-4; category 5, adversarial, has no
//! answer). A question is recalled when every content word of its gold
//! answer is among the words of the context's messages, summaries and the
//! sessions' time markers included (a temporal answer is often a session's
//! date), the question excepted (see [`answer`]). An answer without a
//! content word is not judged and is counted as skipped.

pub mod answer;
mod conversation;
mod report;
mod summary;

use std::sync::Arc;
use std::time::Instant;

use memory_core::{History, MemoryError, Message, Pipeline, TokenCounter, TrimStrategy};
use memory_layer::ProviderStats;
use memory_session::left_out;

use crate::input::{Locomo, Sample};
use crate::registry::{self, StageConfig};
use crate::{CliError, Progress};

pub use conversation::{Arrival, Asking, EndState};
pub use report::{
    ADVERSARIAL, CategoryRecall, ConversationRow, EvalReport, EvalSection, EvalTotals, QuestionRow,
    SampleInfo,
};

/// Asks every question with usable evidence of every sample, once per
/// pipeline in `specs`, under `config`'s budget and counter: each sample's
/// conversation is recorded once per pipeline as `arrival` says, and each
/// question is asked alone against the state it reached. Returns one
/// section per pipeline, in the order of `specs`. `file` names the input
/// in errors; `progress` advances by one per question and pipeline.
///
/// # Errors
///
/// [`CliError::Replay`] when counting or trimming fails, and the errors of
/// [`registry::pipeline`].
///
/// ```
/// use std::sync::Arc;
/// use memory_cli::{eval::Arrival, registry::StageConfig, Progress};
///
/// let json = br#"[{"sample_id": "s1",
///   "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
///     "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
///                   {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! Mine is a dog."}]},
///   "qa": [{"question": "What is the cat called?", "answer": "Miso", "evidence": ["D1:1"], "category": 1}]}]"#;
/// let locomo = memory_cli::input::parse_locomo(json).unwrap();
/// let config = StageConfig::new(memory_core::Budget::tokens(1000), Arc::new(memory_core::CharTokenCounter));
/// let specs = ["window".to_string()];
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let sections = memory_cli::eval::evaluate(
///     &locomo, "l.json", &specs, &config, Arrival::Live, &Progress::hidden(1),
/// ).await.unwrap();
/// let row = &sections[0].rows[0];
/// assert!(row.recalled);
/// assert_eq!(row.answer_recalled, Some(true));
/// assert_eq!(row.messages_out, 3);
/// assert_eq!(sections[0].conversations[0].contexts, 1);
/// # });
/// ```
pub async fn evaluate(
    locomo: &Locomo,
    file: &str,
    specs: &[String],
    config: &StageConfig,
    arrival: Arrival,
    progress: &Progress,
) -> Result<Vec<EvalSection>, CliError> {
    let samples: Vec<SampleInfo> = locomo
        .samples
        .iter()
        .enumerate()
        .map(|(index, sample)| SampleInfo::of(index, sample))
        .collect();
    let mut rows = vec![Vec::new(); specs.len()];
    let mut conversations = vec![Vec::new(); specs.len()];
    for (index, sample) in locomo.samples.iter().enumerate() {
        let failed = |position: String| {
            move |source| CliError::Replay {
                file: file.to_string(),
                position,
                source,
            }
        };
        let questions = prepare(sample, index, config.counter.as_ref())
            .await
            .map_err(failed(sample.name(index)))?;
        if questions.is_empty() {
            continue;
        }
        for (p, spec) in specs.iter().enumerate() {
            let pipeline = Arc::new(registry::pipeline(spec, config)?);
            let mut state = EndState::reach(&sample.messages, pipeline.clone(), config, arrival)
                .await
                .map_err(failed(sample.name(index)))?;
            warn_on_failure(config, state.usage.failures, &sample.name(index));
            conversations[p].push(conversation_row(index, sample, &state));
            let asked = asked_through(pipeline, config);
            for question in &questions {
                let at = format!("{}, qa {}", sample.name(index), question.row.question);
                let row = ask(&*asked, &mut state, sample, question, config)
                    .await
                    .map_err(failed(at.clone()))?;
                warn_on_failure(config, row.summarizer_failures.total(), &at);
                rows[p].push(row);
                progress.inc(1);
            }
        }
    }
    Ok(specs
        .iter()
        .zip(rows.into_iter().zip(conversations))
        .map(|(spec, (rows, conversations))| EvalSection::new(spec, rows, conversations, &samples))
        .collect())
}

/// What a sample's questions are asked through: `pipeline`, with the
/// index of what it leaves out as `WindowMemory` shows it, one for all the
/// sample's questions (it keeps what the next question would read again).
fn asked_through(pipeline: Arc<Pipeline>, config: &StageConfig) -> Box<dyn TrimStrategy> {
    match config.index {
        Some(settings) => Box::new(left_out::Indexed::new(pipeline, settings)),
        None => Box::new(pipeline),
    }
}

/// One question, ready to ask: its row so far (what does not depend on
/// the context), the message, its tokens and its gold answer.
struct Prepared<'a> {
    row: QuestionRow,
    evidence: Vec<usize>,
    message: Message,
    tokens: usize,
    answer: Option<&'a str>,
}

/// The questions of `sample` (number `index`) with usable evidence,
/// counted once for all pipelines. Category 5 keeps no answer.
async fn prepare<'a>(
    sample: &'a Sample,
    index: usize,
    counter: &dyn TokenCounter,
) -> Result<Vec<Prepared<'a>>, MemoryError> {
    let mut prepared = Vec::new();
    for (q, question) in sample.questions.iter().enumerate() {
        let evidence = sample.evidence(question);
        if !evidence.is_usable() {
            continue;
        }
        let message = Message::user(question.text.clone());
        prepared.push(Prepared {
            row: QuestionRow {
                sample: index,
                question: q,
                category: question.category,
                evidence: evidence.messages.len(),
                ..QuestionRow::default()
            },
            evidence: evidence.messages,
            tokens: counter.count_message(&message).await?,
            message,
            answer: question
                .answer
                .as_deref()
                .filter(|_| question.category != ADVERSARIAL),
        });
    }
    Ok(prepared)
}

/// Warns, once per process, when `failures` says a summarizer call failed.
fn warn_on_failure(config: &StageConfig, failures: u64, at: &str) {
    if failures > 0
        && let Some((class, message)) = config.summarizer.first_failure()
    {
        crate::summarizer::warn_first_failure(class, &message, at);
    }
}

/// What recording one conversation came to.
fn conversation_row(index: usize, sample: &Sample, state: &EndState) -> ConversationRow {
    ConversationRow {
        sample: index,
        utterances: sample.utterances(),
        contexts: state.contexts,
        state_messages: state.messages.len(),
        state_tokens: state.tokens(),
        summaries: state.summaries(),
        summarizer_calls: state.usage.calls,
        summarizer_failures: state.usage.by_class,
        summarizer_input_tokens: state.usage.input_tokens,
        summarizer_output_tokens: state.usage.output_tokens,
        latency_us: state.latency_us,
    }
}

/// Asks `question` against `state` through `pipeline`: trims the state
/// and the question, and measures the context.
async fn ask(
    strategy: &dyn TrimStrategy,
    state: &mut EndState,
    sample: &Sample,
    question: &Prepared<'_>,
    config: &StageConfig,
) -> Result<QuestionRow, MemoryError> {
    let asking = state.asking(question.message.clone(), question.tokens);
    let mut history = asking.history()?;
    if !config.task_floor {
        history = history.forget_task();
    }
    let measured = measure(strategy, &history, config).await?;
    let within_reach = within_reach(&history, &measured.context, config);
    drop(asking);
    let found = found(&measured.context, &sample.messages, &question.evidence);
    let reachable_found = found_or_reachable(
        &measured.context,
        &within_reach,
        &sample.messages,
        &question.evidence,
    );
    let shown = before_question(&measured.context);
    let answer = question
        .answer
        .map(|a| answer::AnswerMatch::of(a, shown))
        .unwrap_or_default();
    Ok(QuestionRow {
        found,
        recalled: found == question.evidence.len(),
        reachable_found,
        reachable: reachable_found == question.evidence.len(),
        handles: memory_core::recall::handles_in(&measured.context).len(),
        answer_words: answer.words,
        answer_found: answer.found,
        answer_recalled: answer.recalled(),
        tokens_out: measured.tokens,
        messages_out: measured.context.len(),
        fits: measured.fits,
        summarizer_calls: measured.usage.calls,
        summarizer_failures: measured.usage.by_class,
        summarizer_input_tokens: measured.usage.input_tokens,
        summarizer_output_tokens: measured.usage.output_tokens,
        latency_us: measured.latency_us,
        ..question.row.clone()
    })
}

/// The messages of `history` that one recall of a handle in `context`
/// brings back whole. A recall reads the session's history, the originals
/// a summary stands for included: handles are looked up with the covered
/// set in place.
fn within_reach(history: &History<'_>, context: &[Message], config: &StageConfig) -> Vec<Message> {
    let expanded = memory_core::covered::Expanded::of(history);
    let recalled = expanded
        .as_ref()
        .map_or_else(|| history.clone(), memory_core::covered::Expanded::history);
    let max = memory_core::recall::max_reachable_tokens(&config.budget);
    memory_core::recall::reachable(recalled.messages(), recalled.counts(), context, max)
        .into_iter()
        .filter(memory_core::recall::Reached::is_whole)
        .flat_map(|r| recalled.messages()[r.messages].to_vec())
        .collect()
}

/// One trimmed context and what it cost.
struct Measured {
    context: Vec<Message>,
    tokens: usize,
    fits: bool,
    usage: ProviderStats,
    latency_us: u64,
}

/// Trims `history` through `strategy`, timing the trim and metering the
/// model calls it makes.
async fn measure(
    strategy: &dyn TrimStrategy,
    history: &History<'_>,
    config: &StageConfig,
) -> Result<Measured, MemoryError> {
    let before = config.usage();
    let started = Instant::now();
    // The request's framing (the reply's start) is not in any message.
    let budget = config.budget.for_messages(config.counter.framing());
    let result = strategy
        .trim_with_counts(history, &budget, config.counter.as_ref())
        .await?;
    let latency = started.elapsed();
    Ok(Measured {
        tokens: result.tokens(),
        fits: result.fits,
        context: result.messages,
        usage: config.usage().since(before),
        latency_us: u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
    })
}

/// The context without its last message, the question.
fn before_question(context: &[Message]) -> &[Message] {
    context.split_last().map_or(&[][..], |(_, earlier)| earlier)
}

/// How many of the `evidence` utterances of `conversation` appear in
/// `context` as whole messages with the same text. The context's last
/// message, the question itself, does not count.
fn found(context: &[Message], conversation: &[Message], evidence: &[usize]) -> usize {
    found_or_reachable(context, &[], conversation, evidence)
}

/// Evidence utterances in the context before the question, or among
/// `reachable` (what one recall from the context brings back whole).
fn found_or_reachable(
    context: &[Message],
    reachable: &[Message],
    conversation: &[Message],
    evidence: &[usize],
) -> usize {
    // The evidence's texts are looked for; the context's are not
    // collected.
    let wanted: Vec<String> = evidence
        .iter()
        .filter_map(|&i| conversation.get(i).map(Message::text))
        .collect();
    let mut found = vec![false; wanted.len()];
    for text in before_question(context)
        .iter()
        .chain(reachable)
        .map(Message::text)
    {
        for (k, w) in wanted.iter().enumerate() {
            found[k] |= *w == text;
        }
    }
    found.into_iter().filter(|&f| f).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_counts_only_as_whole_verbatim_messages_before_the_question() {
        let conversation = [
            Message::user("I adopted a cat."),
            Message::assistant("Nice."),
            Message::user("It is grey."),
        ];
        let context = [
            Message::user("I adopted a cat!"),
            Message::assistant("Nice."),
            Message::user("It is grey."),
        ];
        assert_eq!(found(&context, &conversation, &[0, 1, 2]), 1);
        assert_eq!(found(&context[..2], &conversation, &[1]), 0);
        assert_eq!(found(&[], &conversation, &[0]), 0);
        assert_eq!(found(&context, &conversation, &[9]), 0);
    }

    #[test]
    fn evidence_within_reach_counts_when_a_handle_to_a_small_stretch_is_shown() {
        use memory_core::recall::{Handle, reachable};
        let conversation = [
            Message::user("I adopted a cat."),
            Message::assistant("Nice."),
            Message::user("It is grey."),
            Message::assistant("Lovely."),
        ];
        let counts = [4, 2, 3, 2];
        let marker = format!("[left out: {}]", Handle::of(&conversation[..2]));
        let context = [
            Message::user(marker),
            conversation[2].clone(),
            conversation[3].clone(),
            Message::user("What pet?"),
        ];
        let near: Vec<Message> = reachable(&conversation, &counts, &context, 6)
            .into_iter()
            .flat_map(|r| conversation[r.messages].to_vec())
            .collect();
        assert_eq!(found(&context, &conversation, &[0, 2]), 1);
        assert_eq!(
            found_or_reachable(&context, &near, &conversation, &[0, 2]),
            2
        );
        // A stretch larger than the piece limit brings nothing within reach.
        assert!(reachable(&conversation, &counts, &context, 5).is_empty());
    }
}
