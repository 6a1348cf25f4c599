//! One conversation brought to the state its questions are asked against.
//!
//! The conversation is recorded in a [`WindowMemory`] over a store of its
//! own, trimmed by the pipeline under evaluation, and contexts are taken as
//! the chosen [`Arrival`] says. Whatever a materializing stage stored
//! (compact's rolling summary, summarize's folded summary; see
//! [`TrimResult::to_store`](memory_core::TrimResult::to_store)) is written
//! back by the memory, so the store's view at the end is the state: the
//! messages, their counts and which of them are protected (summaries are).
//! A projecting pipeline (window, thrift) stores nothing, and its state is
//! the whole conversation.

use std::sync::Arc;
use std::time::Instant;

use memory_core::covered::Covered;
use memory_core::{History, InMemoryStore, Memory, MemoryError, Message, Pipeline, Store, summary};
use memory_layer::ProviderStats;
use memory_session::WindowMemory;

use crate::registry::StageConfig;

/// How a conversation reaches the state its questions are asked against.
///
/// ```
/// use memory_cli::eval::Arrival;
/// assert_eq!(Arrival::default(), Arrival::Live);
/// assert_eq!(Arrival::AtOnce.to_string(), "at once");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// As in a live chat: utterance by utterance, a context taken before
    /// every utterance of the second speaker (where the assistant replies),
    /// so a rolling summary forms over time, under the budget's pressure as
    /// it was then.
    #[default]
    Live,
    /// Recorded whole, then one context taken at the end: one trim sees
    /// the whole conversation.
    AtOnce,
}

impl std::fmt::Display for Arrival {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Arrival::Live => "live",
            Arrival::AtOnce => "at once",
        })
    }
}

/// A conversation's end state, and what reaching it took.
///
/// ```
/// use std::sync::Arc;
/// use memory_core::{Message, Pipeline};
/// use memory_cli::eval::{Arrival, EndState};
/// use memory_cli::registry::StageConfig;
///
/// let config = StageConfig::new(memory_core::Budget::tokens(100), Arc::new(memory_core::CharTokenCounter));
/// let chat = [Message::user("I adopted a cat."), Message::assistant("Lovely!")];
/// let pipeline = Arc::new(memory_cli::registry::pipeline("window", &config).unwrap());
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let state = EndState::reach(&chat, pipeline, &config, Arrival::Live).await.unwrap();
/// assert_eq!(state.messages, chat);
/// assert_eq!((state.contexts, state.usage.calls), (1, 0));
/// # });
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndState {
    /// The stored view at the end: what the questions are asked after.
    pub messages: Vec<Message>,
    /// Token count of each of `messages`.
    pub counts: Vec<usize>,
    /// Sorted indices of the protected messages and summaries.
    pub protected: Vec<usize>,
    /// Contexts taken on the way.
    pub contexts: usize,
    /// What the summarizer did on the way.
    pub usage: ProviderStats,
    /// Time taken, in microseconds.
    pub latency_us: u64,
    /// What the view's summary stands for, within reach of the questions'
    /// trims (see [`memory_core::covered`]).
    pub covered: Covered,
}

/// The session every conversation is recorded under (each in its own
/// store).
const SESSION: &str = "eval";

impl EndState {
    /// Records `conversation` through `pipeline` under `config`'s budget
    /// and counter, taking contexts as `arrival` says, and reads back the
    /// stored view.
    ///
    /// # Errors
    ///
    /// Counting, trimming and store errors.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use memory_core::{summary, Message};
    /// use memory_cli::eval::{Arrival, EndState};
    /// use memory_cli::registry::{self, StageConfig};
    ///
    /// let config = StageConfig::new(memory_core::Budget::tokens(60), Arc::new(memory_core::CharTokenCounter));
    /// let chat: Vec<Message> = (0..10)
    ///     .flat_map(|i| [Message::user(format!("Day {i}: I planted {i} tulips.")), Message::assistant("Lovely.")])
    ///     .collect();
    /// let pipeline = Arc::new(registry::pipeline("summarize", &config).unwrap());
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let state = EndState::reach(&chat, pipeline, &config, Arrival::AtOnce).await.unwrap();
    /// // One context at the end: one summary, stored, replaced the older days
    /// // but the first message, the task, kept verbatim before it.
    /// assert_eq!((state.contexts, state.usage.calls, state.summaries()), (1, 1, 1));
    /// assert_eq!(state.messages[0], chat[0]);
    /// assert!(summary::is_summary(&state.messages[1]));
    /// assert_eq!(state.protected, [0, 1]);
    /// # });
    /// ```
    pub async fn reach(
        conversation: &[Message],
        pipeline: Arc<Pipeline>,
        config: &StageConfig,
        arrival: Arrival,
    ) -> Result<Self, MemoryError> {
        let store = Arc::new(InMemoryStore::new());
        let mut memory = WindowMemory::with_budget(config.budget)
            .with_strategy(pipeline)
            .with_token_counter(config.counter.clone())
            .with_task(config.task_floor)
            .with_store(store.clone(), SESSION);
        let before = config.usage();
        let started = Instant::now();
        let mut contexts = 0;
        for (k, message) in conversation.iter().enumerate() {
            if arrival == Arrival::Live && message.is_assistant() && k > 0 {
                memory.trimmed().await?;
                contexts += 1;
            }
            memory.record(message.clone()).await?;
        }
        if arrival == Arrival::AtOnce && !conversation.is_empty() {
            memory.trimmed().await?;
            contexts += 1;
        }
        let latency = started.elapsed();
        let usage = config.usage().since(before);
        let mut state = EndState {
            contexts,
            usage,
            latency_us: u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
            covered: memory.covered(),
            ..EndState::default()
        };
        for (k, stored) in store.load(SESSION).await?.messages.into_iter().enumerate() {
            if stored.protected || summary::is_summary(&stored.message) {
                state.protected.push(k);
            }
            state.messages.push(stored.message);
            state.counts.push(stored.tokens);
        }
        Ok(state)
    }

    /// Tokens of the state.
    ///
    /// ```
    /// assert_eq!(memory_cli::eval::EndState::default().tokens(), 0);
    /// ```
    pub fn tokens(&self) -> usize {
        self.counts.iter().sum()
    }

    /// Summary messages in the state.
    ///
    /// ```
    /// assert_eq!(memory_cli::eval::EndState::default().summaries(), 0);
    /// ```
    pub fn summaries(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| summary::is_summary(m))
            .count()
    }

    /// The state followed by `question` (counted `tokens`), until the
    /// returned guard is dropped: then the state is as it was, since
    /// questions do not accumulate.
    ///
    /// ```
    /// use memory_core::Message;
    /// let mut state = memory_cli::eval::EndState::default();
    /// {
    ///     let asking = state.asking(Message::user("Why?"), 2);
    ///     assert_eq!(asking.history().unwrap().total(), 2);
    /// }
    /// assert!(state.messages.is_empty());
    /// ```
    pub fn asking(&mut self, question: Message, tokens: usize) -> Asking<'_> {
        self.messages.push(question);
        self.counts.push(tokens);
        Asking { state: self }
    }
}

/// An [`EndState`] with a question after it; see [`EndState::asking`].
///
/// ```
/// use memory_core::Message;
/// let mut state = memory_cli::eval::EndState::default();
/// let asking = state.asking(Message::user("When?"), 2);
/// assert_eq!(asking.history().unwrap().messages(), [Message::user("When?")]);
/// drop(asking);
/// assert!(state.counts.is_empty());
/// ```
#[derive(Debug)]
pub struct Asking<'s> {
    state: &'s mut EndState,
}

impl Asking<'_> {
    /// The state and the question, as a history to trim.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidTranscript`] when the state's parts disagree
    /// (never for a state [`EndState::reach`] made).
    ///
    /// ```
    /// use memory_core::Message;
    /// let mut state = memory_cli::eval::EndState::default();
    /// let asking = state.asking(Message::user("Why?"), 2);
    /// assert_eq!(asking.history().unwrap().len(), 1);
    /// ```
    pub fn history(&self) -> Result<History<'_>, MemoryError> {
        let s = &*self.state;
        Ok(
            History::from_parts(&s.messages, &s.counts, &s.protected, s.tokens())?
                .with_covered(s.covered.clone()),
        )
    }
}

impl Drop for Asking<'_> {
    /// Takes the question away again.
    fn drop(&mut self) {
        self.state.messages.pop();
        self.state.counts.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::Budget;

    fn chat(rounds: usize) -> Vec<Message> {
        (0..rounds)
            .flat_map(|i| {
                [
                    Message::user(format!("Round {i}: my garden has {i} tomato plants now.")),
                    Message::assistant(format!("Round {i}: that is a fine number of plants.")),
                ]
            })
            .collect()
    }

    async fn reach(spec: &str, budget: usize, arrival: Arrival) -> EndState {
        let config = StageConfig::new(
            Budget::tokens(budget),
            Arc::new(memory_core::CharTokenCounter),
        );
        let pipeline = Arc::new(crate::registry::pipeline(spec, &config).unwrap());
        EndState::reach(&chat(40), pipeline, &config, arrival)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_projection_leaves_the_whole_conversation() {
        let state = reach("window", 100, Arrival::Live).await;
        assert_eq!(state.messages, chat(40));
        assert_eq!((state.contexts, state.summaries()), (40, 0));
        assert!(state.protected.is_empty());
    }

    #[tokio::test]
    async fn a_materialized_summary_is_the_state() {
        for arrival in [Arrival::Live, Arrival::AtOnce] {
            let state = reach("summarize", 200, arrival).await;
            assert_eq!(state.summaries(), 1, "{arrival}");
            assert!(state.messages.len() < 80, "{arrival}");
            // The task (the first utterance) stays verbatim before it.
            assert_eq!(state.messages[state.protected[0]], chat(40)[0]);
            assert!(summary::is_summary(&state.messages[state.protected[1]]));
            assert!(state.usage.calls >= 1, "{arrival}");
        }
        let once = reach("summarize", 200, Arrival::AtOnce).await;
        assert_eq!((once.contexts, once.usage.calls), (1, 1));
    }
}
