//! One summary from many parts, in as many calls as the summarizer's input
//! limit requires.
//!
//! The parts (rendered steps, earlier summaries) are packed in order into
//! chunks that fit the input limit together with the prompt and the running
//! summary. The first chunk is summarized; each later chunk is sent after the
//! running summary, which the summarizer folds into its reply. A part larger
//! than a whole chunk is shortened in the middle for the summarizer's eyes
//! only. When the summarizer reports a context overflow anyway, the chunk is
//! halved and packed again, and the halved size is kept as the cap of every
//! later chunk, in later folds too: a request the endpoint refused is not
//! sent again ([`OverflowCap`]). Any other failed or rejected call (a
//! reply that says nothing about its chunk included:
//! [`SummarySettings::accept`]) fails the whole fold: a partial summary
//! never stands for the whole.

use memory_core::{
    ChatRequest, MemoryError, Message, ModelOptions, Provider, ProviderError, TokenCounter,
    summary, transcript,
};

use memory_summary_engine::split::{self, OverflowCap};
use memory_summary_engine::{Rejection, SummarySettings, render};

/// How many times a context overflow may halve the input limit before the
/// fold gives up.
const MAX_OVERFLOW_RETRIES: usize = 6;

/// Why no summary was made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FoldError {
    /// A call failed.
    #[error("the summarizer call failed: {0}")]
    Provider(#[from] ProviderError),
    /// A reply could not be a summary.
    #[error("{0}")]
    Rejected(#[from] Rejection),
    /// The prompt and running summary leave no room for any history.
    #[error(
        "the summarizer's input limit ({limit} tokens) leaves no room for history after the prompt and the running summary ({used} tokens); raise with_max_input_tokens or shorten the prompt"
    )]
    InputLimit {
        /// The limit in force.
        limit: usize,
        /// Tokens already taken.
        used: usize,
    },
    /// Counting failed: not a summarizer failure, passed on to the caller.
    #[error(transparent)]
    Count(#[from] MemoryError),
}

/// The fixed parts of every call.
pub(crate) struct Fold<'a> {
    pub provider: &'a dyn Provider,
    pub counter: &'a dyn TokenCounter,
    pub prompt: &'a str,
    /// The options, the grounding check and the rejection observer.
    pub settings: &'a SummarySettings,
    pub max_tokens: u32,
    pub max_input_tokens: Option<usize>,
    /// The most history tokens per call since a context overflow, shared
    /// with the folds that come after.
    pub chunk_cap: &'a OverflowCap,
}

impl Fold<'_> {
    /// Summarizes `parts`, in order, into one summary body.
    pub async fn run(&self, parts: &[String]) -> Result<String, FoldError> {
        let mut counts = Vec::with_capacity(parts.len());
        for part in parts {
            counts.push(self.counter.count(part).await?);
        }
        let prompt_tokens = self.counter.count(self.prompt).await?;
        let limit = self.max_input_tokens.unwrap_or(usize::MAX);
        // Lowered by context overflows: the most history tokens per call.
        let mut chunk_cap = self.chunk_cap.get();
        let mut overflows = 0;
        let mut running: Option<String> = None;
        let mut next = 0;
        while next < parts.len() {
            let previous = running
                .as_ref()
                .map(|s| transcript::message_to_text(&summary::message(s)));
            let previous_tokens = match &previous {
                Some(p) => self.counter.count(p).await? + 1,
                None => 0,
            };
            let used = prompt_tokens + previous_tokens;
            let Some(room) = limit.checked_sub(used).filter(|&r| r > 0) else {
                return Err(FoldError::InputLimit { limit, used });
            };
            let (chunk, chunk_tokens, end) =
                self.pack(parts, &counts, next, room.min(chunk_cap)).await?;
            let transcript = match previous {
                Some(p) => format!("{p}\n{chunk}"),
                None => chunk,
            };
            match self.call(transcript).await {
                Ok(summary) => {
                    running = Some(summary);
                    next = end;
                }
                Err(FoldError::Provider(ref error))
                    if split::is_overflow(error)
                        && overflows < MAX_OVERFLOW_RETRIES
                        && chunk_tokens > 1 =>
                {
                    overflows += 1;
                    chunk_cap = chunk_cap.min(chunk_tokens / 2);
                    self.chunk_cap.halve(chunk_tokens);
                    tracing::debug!(
                        chunk_cap,
                        "summarizer context overflow; halving the chunk, for this and later calls"
                    );
                }
                Err(e) => return Err(e),
            }
        }
        running.ok_or(FoldError::Rejected(Rejection::Empty))
    }

    /// The parts from `start` that fit `room` tokens, joined, their tokens
    /// and the index after the last one taken. At least one part is taken,
    /// shortened when it alone exceeds `room`.
    async fn pack(
        &self,
        parts: &[String],
        counts: &[usize],
        start: usize,
        room: usize,
    ) -> Result<(String, usize, usize), FoldError> {
        let mut end = start;
        let mut used = 0usize;
        while end < parts.len() {
            // One token for the newline that joins two parts.
            let add = counts[end] + usize::from(end > start);
            if used + add > room {
                break;
            }
            used += add;
            end += 1;
        }
        if end == start {
            let clipped = render::clip(&parts[start], counts[start], room, self.counter).await?;
            let tokens = self.counter.count(&clipped).await?;
            return Ok((clipped, tokens, start + 1));
        }
        Ok((parts[start..end].join("\n"), used, end))
    }

    /// One call; the accepted summary text (grounded in `transcript`).
    async fn call(&self, transcript: String) -> Result<String, FoldError> {
        let source = transcript.clone();
        let request = ChatRequest {
            messages: vec![Message::system(self.prompt), Message::user(transcript)],
            tools: Vec::new(),
            options: ModelOptions {
                max_tokens: Some(self.max_tokens),
                ..self.settings.options().clone()
            },
        };
        let reply = self.provider.chat(request).await?;
        Ok(self.settings.accept(&source, &reply)?.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{CharTokenCounter, FakeProvider, FakeReply, ProviderError};

    static SETTINGS: std::sync::LazyLock<SummarySettings> =
        std::sync::LazyLock::new(|| SummarySettings::new().with_temperature(None));

    /// A fold with no cap learned yet (each its own, for test isolation).
    fn fold<'a>(provider: &'a FakeProvider, max_input_tokens: Option<usize>) -> Fold<'a> {
        let cap = Box::leak(Box::new(OverflowCap::new()));
        fold_with(provider, max_input_tokens, cap)
    }

    fn fold_with<'a>(
        provider: &'a FakeProvider,
        max_input_tokens: Option<usize>,
        chunk_cap: &'a OverflowCap,
    ) -> Fold<'a> {
        Fold {
            provider,
            counter: &CharTokenCounter,
            prompt: "Summarize.",
            settings: &SETTINGS,
            max_tokens: 50,
            max_input_tokens,
            chunk_cap,
        }
    }

    fn sent(provider: &FakeProvider, call: usize) -> String {
        provider.requests()[call].messages[1].text()
    }

    fn parts() -> Vec<String> {
        (1..=6)
            .map(|i| format!("user: part number {i:02}"))
            .collect()
    }

    #[tokio::test]
    async fn without_a_limit_one_call_takes_everything() {
        let fake = FakeProvider::new([FakeReply::Text("all, number 01 to 06".into())]);
        let out = fold(&fake, None).run(&parts()).await.unwrap();
        assert_eq!(out, "all, number 01 to 06");
        assert_eq!(fake.requests().len(), 1);
        assert_eq!(sent(&fake, 0), parts().join("\n"));
    }

    #[tokio::test]
    async fn a_small_limit_folds_chunks_into_the_running_summary() {
        // Prompt 3 tokens; each part 5 tokens; limit 17 → 14 for the first
        // chunk (two parts: 5 + 1 + 5); later chunks carry the running summary.
        let fake = FakeProvider::new((1..=6).map(|i| FakeReply::Text(format!("s{i} number"))));
        let out = fold(&fake, Some(17)).run(&parts()).await.unwrap();
        let requests = fake.requests();
        assert!(requests.len() >= 3, "{} calls", requests.len());
        assert_eq!(out, format!("s{} number", requests.len()));
        assert_eq!(sent(&fake, 0), "user: part number 01\nuser: part number 02");
        assert!(sent(&fake, 1).starts_with("previous summary: s1 number\nuser: part number 03"));
        let all: String = (0..requests.len()).map(|c| sent(&fake, c)).collect();
        for p in parts() {
            assert!(all.contains(&p), "{p} never sent");
        }
    }

    #[tokio::test]
    async fn any_failed_chunk_fails_the_fold() {
        let fake = FakeProvider::new([
            FakeReply::Text("s1 number".into()),
            FakeReply::Error(ProviderError::Network("reset".into())),
        ]);
        let err = fold(&fake, Some(17)).run(&parts()).await.unwrap_err();
        assert!(matches!(
            err,
            FoldError::Provider(ProviderError::Network(_))
        ));
    }

    #[tokio::test]
    async fn a_context_overflow_halves_the_chunk() {
        let fake = FakeProvider::new([
            FakeReply::Error(ProviderError::ContextOverflow("too long".into())),
            FakeReply::Text("half of number 01".into()),
            FakeReply::Text("rest of number 02".into()),
        ]);
        let two = vec![parts()[0].clone(), parts()[1].clone()];
        let cap = OverflowCap::new();
        let out = fold_with(&fake, None, &cap).run(&two).await.unwrap();
        assert_eq!(out, "rest of number 02");
        assert_eq!(sent(&fake, 1), two[0]);
        assert_eq!(
            sent(&fake, 2),
            format!("previous summary: half of number 01\n{}", two[1])
        );
        // The halved size is kept: the next fold starts small.
        assert_eq!(cap.get(), 5);
        fake.push(FakeReply::Text("next number".into()));
        fake.push(FakeReply::Text("next number, merged".into()));
        fold_with(&fake, None, &cap).run(&two).await.unwrap();
        assert_eq!(fake.requests().len(), 5, "split at once, no overflow first");
        assert_eq!(sent(&fake, 3), two[0]);
    }

    #[tokio::test]
    async fn an_oversized_part_is_shortened_for_the_summarizer() {
        let fake = FakeProvider::new([FakeReply::Text("short: it printed xxxxxxxx".into())]);
        let long = vec![format!("tool result: {}", "x".repeat(4_000))];
        fold(&fake, Some(103)).run(&long).await.unwrap();
        let text = sent(&fake, 0);
        assert!(text.contains("characters omitted"));
        assert!(CharTokenCounter::estimate(&text) <= 100);
    }

    #[tokio::test]
    async fn a_prompt_larger_than_the_limit_is_an_input_limit_error() {
        let fake = FakeProvider::new([]);
        let err = fold(&fake, Some(2)).run(&parts()).await.unwrap_err();
        assert!(matches!(err, FoldError::InputLimit { limit: 2, used: 3 }));
        assert!(fake.requests().is_empty());
    }
}
