//! `memory eval locomo`: evidence recall of pipelines on LoCoMo.
//!
//! For each sample the conversation is counted once. Each question with
//! usable evidence is then asked as the newest user message after the whole
//! conversation (questions do not accumulate), every pipeline trims that
//! history to the budget with the counts already known, and the question is
//! *recalled* when every evidence utterance's text is in the context as a
//! whole message, verbatim.

mod report;

use std::collections::HashSet;
use std::time::Instant;

use memory_core::{History, MemoryError, Message, Pipeline, TrimStrategy, count_messages};

use crate::input::Locomo;
use crate::registry::{self, StageConfig};
use crate::{CliError, Progress};
use memory_summarize::ProviderStats;

pub use report::{CategoryRecall, EvalReport, EvalSection, EvalTotals, QuestionRow, SampleInfo};

/// Asks every question with usable evidence of every sample, once per
/// pipeline in `specs`, under `config`'s budget and counter; returns the
/// rows of each pipeline, in the order of `specs`. `file` names the input
/// in errors; `progress` advances by one per question and pipeline.
///
/// # Errors
///
/// [`CliError::Replay`] when counting or trimming fails, and the errors of
/// [`registry::pipeline`].
///
/// ```
/// use std::sync::Arc;
/// use memory_cli::{registry::StageConfig, Progress};
///
/// let locomo = memory_cli::input::parse_locomo(br#"[{"sample_id": "s1",
///   "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
///     "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
///                   {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! Mine is a dog."}]},
///   "qa": [{"question": "What is the cat called?", "answer": "Miso", "evidence": ["D1:1"], "category": 1}]}]"#).unwrap();
/// let config = StageConfig::new(memory_core::Budget::tokens(1000), Arc::new(memory_core::CharTokenCounter));
/// let specs = ["window".to_string()];
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let rows = memory_cli::eval::evaluate(&locomo, "l.json", &specs, &config, &Progress::hidden(1)).await.unwrap();
/// assert_eq!(rows[0].len(), 1);
/// assert!(rows[0][0].recalled);
/// assert_eq!(rows[0][0].messages_out, 3);
/// # });
/// ```
pub async fn evaluate(
    locomo: &Locomo,
    file: &str,
    specs: &[String],
    config: &StageConfig,
    progress: &Progress,
) -> Result<Vec<Vec<QuestionRow>>, CliError> {
    let mut rows = vec![Vec::new(); specs.len()];
    let counter = config.counter.as_ref();
    let failed = |position: &str, source| CliError::Replay {
        file: file.to_string(),
        position: position.to_string(),
        source,
    };
    for (index, sample) in locomo.samples.iter().enumerate() {
        let mut messages = sample.messages.clone();
        let mut counts = count_messages(counter, &messages)
            .await
            .map_err(|e| failed(&sample.name(index), e))?;
        let total: usize = counts.iter().sum();
        for (q, question) in sample.questions.iter().enumerate() {
            let evidence = sample.evidence(question);
            if !evidence.is_usable() {
                continue;
            }
            let at = format!("{}, qa {q}", sample.name(index));
            let ask = Message::user(question.text.clone());
            let ask_count = counter
                .count_message(&ask)
                .await
                .map_err(|e| failed(&at, e))?;
            messages.push(ask);
            counts.push(ask_count);
            let history = History::from_parts(&messages, &counts, &[], total + ask_count)
                .map_err(|e| failed(&at, e))?;
            for (p, spec) in specs.iter().enumerate() {
                // A fresh pipeline per question: no state carries over.
                let pipeline = registry::pipeline(spec, config)?;
                let measured = measure(&pipeline, &history, config)
                    .await
                    .map_err(|e| failed(&at, e))?;
                let found = found(&measured.context, &sample.messages, &evidence.messages);
                rows[p].push(QuestionRow {
                    sample: index,
                    question: q,
                    category: question.category,
                    evidence: evidence.messages.len(),
                    found,
                    recalled: found == evidence.messages.len(),
                    tokens_out: measured.tokens,
                    messages_out: measured.context.len(),
                    fits: measured.fits,
                    summarizer_calls: measured.usage.calls,
                    summarizer_input_tokens: measured.usage.input_tokens,
                    summarizer_output_tokens: measured.usage.output_tokens,
                    latency_us: measured.latency_us,
                });
                progress.inc(1);
            }
            messages.pop();
            counts.pop();
        }
    }
    Ok(rows)
}

/// One trimmed context and what it cost.
struct Measured {
    context: Vec<Message>,
    tokens: usize,
    fits: bool,
    usage: ProviderStats,
    latency_us: u64,
}

/// Trims `history` through `pipeline`, timing the trim and metering the
/// model calls it makes.
async fn measure(
    pipeline: &Pipeline,
    history: &History<'_>,
    config: &StageConfig,
) -> Result<Measured, MemoryError> {
    let before = config.usage();
    let started = Instant::now();
    let result = pipeline
        .trim_with_counts(history, &config.budget, config.counter.as_ref())
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

/// How many of the `evidence` utterances of `conversation` appear in
/// `context` as whole messages with the same text. The context's last
/// message, the question itself, does not count.
fn found(context: &[Message], conversation: &[Message], evidence: &[usize]) -> usize {
    let shown = context.split_last().map_or(&[][..], |(_, earlier)| earlier);
    let texts: HashSet<String> = shown.iter().map(Message::text).collect();
    evidence
        .iter()
        .filter(|&&i| {
            conversation
                .get(i)
                .is_some_and(|m| texts.contains(&m.text()))
        })
        .count()
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
}
