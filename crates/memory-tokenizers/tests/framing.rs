//! A context that fits by our count fits by the provider's: the exact
//! counters' message counts include OpenAI's chat framing, and a memory
//! sets aside the request's, so that on the real agent trajectories every
//! context a memory says fits is within the budget as `tiktoken-rs`'s
//! `num_tokens_from_messages` (OpenAI's cookbook formula) counts it.
//!
//! Reads `MEMORY_DATA_DIR`; skipped with a notice when it is unset, failed
//! when it is unset under CI. `--nocapture` prints the rows over the budget
//! with a counter of the texts alone (as the counters were) and with the
//! framing.

use std::collections::HashMap;

use memory_core::test_util::DATA;
use memory_core::{Memory, MemoryError, Message, TokenCounter};
use memory_openai::wire;
use memory_session::WindowMemory;
use memory_tokenizers::{Cl100k, O200k};
use serde_json::Value;
use tiktoken_rs::{ChatCompletionRequestMessage, FunctionCall, num_tokens_from_messages};

const FILES: [&str; 2] = [
    "agent-trajectories/swe-gym-openhands.json",
    "agent-trajectories/swe-smith-text.json",
];

const BUDGETS: [usize; 5] = [1_000, 2_000, 4_000, 8_000, 16_000];

/// The trajectories of the data sets that are present.
fn trajectories() -> Vec<Vec<Message>> {
    let mut all = Vec::new();
    for file in FILES {
        let Some(path) = DATA.file(file) else {
            continue;
        };
        let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for trajectory in json.as_array().expect("a list of trajectories") {
            all.push(wire::from_value(&trajectory["messages"]).unwrap());
        }
    }
    all
}

/// `messages` as the provider receives them (the OpenAI wire format), in
/// `tiktoken-rs`'s terms.
fn wire(messages: &[Message]) -> Vec<ChatCompletionRequestMessage> {
    let text = |v: &Value| v.as_str().map(str::to_string);
    messages
        .iter()
        .map(|m| {
            let v = wire::message_to_value(m);
            let tool_calls = v["tool_calls"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|call| FunctionCall {
                    name: text(&call["function"]["name"]).unwrap_or_default(),
                    arguments: text(&call["function"]["arguments"]).unwrap_or_default(),
                })
                .collect();
            ChatCompletionRequestMessage {
                role: text(&v["role"]).unwrap(),
                content: text(&v["content"]),
                name: text(&v["name"]),
                tool_calls,
                ..Default::default()
            }
        })
        .collect()
}

/// The provider's count of each message of `trajectories` alone, the
/// reply's start left out, keyed by the message's JSON: the formula is a sum
/// over the messages plus 3 a request, so a context's count is the sum of
/// its messages' plus 3 (counting each context whole is the same sum, many
/// times slower).
fn provider_counts(trajectories: &[Vec<Message>], model: &str) -> HashMap<String, usize> {
    trajectories
        .iter()
        .flatten()
        .map(|m| {
            let one = wire(std::slice::from_ref(m));
            let tokens = num_tokens_from_messages(model, &one).unwrap() - 3;
            (serde_json::to_string(m).unwrap(), tokens)
        })
        .collect()
}

/// A counter of the texts alone, without the framing: what the exact
/// counters counted before they knew it.
struct TextsOnly<C>(C);

#[async_trait::async_trait]
impl<C: TokenCounter> TokenCounter for TextsOnly<C> {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        self.0.count(text).await
    }
}

/// Replays `trajectory` into a window memory of `budget` tokens counted by
/// `counter`, asking for the context before each model call (each
/// assistant message after the first message), as `memory replay` does;
/// returns the provider's count of each context the memory said fits.
async fn fitting_contexts(
    trajectory: &[Message],
    budget: usize,
    counter: impl TokenCounter + 'static,
    provider: &HashMap<String, usize>,
) -> Vec<usize> {
    // Without the index of what is left out and the floor's cuts: the
    // provider counted the trajectory's own messages.
    let mut memory = WindowMemory::new(budget)
        .with_token_counter(counter)
        .with_index(None)
        .with_floor_cut(false);
    let mut counts = Vec::new();
    for (i, message) in trajectory.iter().enumerate() {
        if i > 0 && message.is_assistant() {
            let context = memory.fitted().await.unwrap();
            if context.fits {
                let messages: usize = context
                    .messages
                    .iter()
                    .map(|m| provider[&serde_json::to_string(m).unwrap()])
                    .sum();
                counts.push(messages + 3);
            }
        }
        if i == 0 && message.is_system() {
            memory.record_protected(message.clone()).await.unwrap();
        } else {
            memory.record(message.clone()).await.unwrap();
        }
    }
    counts
}

#[tokio::test]
async fn every_message_counts_as_the_cookbook_formula_does() {
    let trajectories = trajectories();
    if trajectories.is_empty() {
        return;
    }
    let mut messages = 0;
    for message in trajectories.iter().flatten() {
        let one = wire(std::slice::from_ref(message));
        // The formula adds the reply's start (3) once per request.
        let cl100k = num_tokens_from_messages("gpt-4", &one).unwrap() - 3;
        let o200k = num_tokens_from_messages("gpt-4o", &one).unwrap() - 3;
        assert_eq!(
            Cl100k.count_message(message).await.unwrap(),
            cl100k,
            "{message:?}"
        );
        assert_eq!(
            O200k.count_message(message).await.unwrap(),
            o200k,
            "{message:?}"
        );
        messages += 1;
    }
    eprintln!("{messages} messages: cl100k and o200k counts equal tiktoken-rs's chat formula");
}

#[tokio::test]
async fn a_context_that_fits_by_our_count_fits_by_the_providers() {
    let trajectories = trajectories();
    if trajectories.is_empty() {
        return;
    }
    for (name, model) in [("cl100k", "gpt-4"), ("o200k", "gpt-4o")] {
        let provider = provider_counts(&trajectories, model);
        let (mut rows, mut over_before, mut worst_before, mut over_after) = (0, 0, 0, 0);
        for trajectory in &trajectories {
            for budget in BUDGETS {
                let (before, after) = if name == "cl100k" {
                    (
                        fitting_contexts(trajectory, budget, TextsOnly(Cl100k), &provider).await,
                        fitting_contexts(trajectory, budget, Cl100k, &provider).await,
                    )
                } else {
                    (
                        fitting_contexts(trajectory, budget, TextsOnly(O200k), &provider).await,
                        fitting_contexts(trajectory, budget, O200k, &provider).await,
                    )
                };
                for tokens in before {
                    if tokens > budget {
                        over_before += 1;
                        worst_before = worst_before.max(tokens - budget);
                    }
                }
                rows += after.len();
                over_after += after.iter().filter(|&&tokens| tokens > budget).count();
            }
        }
        eprintln!(
            "{name}: {} trajectories x budgets {BUDGETS:?}: {over_before} fitting contexts over \
             the budget by the provider's count with the texts alone (by at most {worst_before}), \
             {over_after} of {rows} with the framing",
            trajectories.len()
        );
        assert!(rows > 0, "{name}: no context fitted");
        assert_eq!(over_after, 0, "{name}: contexts over the budget");
        assert!(
            over_before > 0,
            "{name}: the texts alone never overran here, so this data cannot show the framing matters"
        );
    }
}
