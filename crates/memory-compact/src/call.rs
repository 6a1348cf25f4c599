//! The model work of one compaction: the hook, then one request (two for a
//! split turn), each under the timeout and retries allowed (core's provider
//! layers), split in halves when it overflows the model's context.

use std::time::Duration;

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use memory_core::{ChatRequest, ChatResponse, Provider, ProviderError};
use memory_layer::{Retry, RetryPolicy, Timeout};
use memory_summary_engine::{SummarySettings, split};

use crate::split::Piece;

use crate::{CompactCost, CompactHook, Failure, HookDecision, Preparation};

/// The heading under which a split turn's own summary follows the history's.
pub(crate) const TURN_HEADING: &str = "## Earlier steps of the current request";

/// Everything one compaction sends, owned so that it can run in a task.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    /// What the hook sees.
    pub preparation: Preparation,
    /// One request, or two for a split turn (history first, then the turn).
    pub requests: Vec<ChatRequest>,
    /// What each request is made of, to split it when it overflows the
    /// model's context (empty: such a request is not split).
    pub pieces: Vec<Piece>,
}

/// How long a request may take and how often it is tried again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    /// Limit of one attempt; `None` for none.
    pub timeout: Option<Duration>,
    /// Attempts after the first, for retryable failures and timeouts.
    pub retries: u32,
    /// Wait before the first retry, doubled for each further one.
    pub backoff: Duration,
}

/// How the model work ended.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// A summary text (without header or file sections).
    Summary {
        text: String,
        cost: CompactCost,
        from_hook: bool,
    },
    /// The hook declined.
    Declined,
    /// No usable summary.
    Failed { failure: Failure, cost: CompactCost },
}

/// Who answers a compaction's requests, and how a reply is accepted.
#[derive(Clone, Copy)]
pub(crate) struct Caller<'a> {
    pub provider: &'a dyn Provider,
    pub policy: Policy,
    /// Accepts a reply (the grounding check, the rejection observer).
    pub summary: &'a SummarySettings,
}

/// Runs the hook and the requests of `job`.
pub(crate) async fn run(job: &Job, caller: Caller<'_>, hook: Option<&dyn CompactHook>) -> Outcome {
    if let Some(hook) = hook {
        match hook.before_compaction(&job.preparation).await {
            HookDecision::Proceed => {}
            HookDecision::Decline => return Outcome::Declined,
            HookDecision::Summary(text) => return supplied(&text),
        }
    }
    let mut cost = CompactCost::default();
    let mut texts = Vec::with_capacity(job.requests.len());
    for (i, request) in job.requests.iter().enumerate() {
        let piece = job.pieces.get(i).cloned();
        match ask(caller, request.clone(), piece, &mut cost, 0).await {
            Ok(text) => texts.push(text),
            Err(failure) => return Outcome::Failed { failure, cost },
        }
    }
    let text = match texts.as_slice() {
        [history, turn] => format!("{history}\n\n{TURN_HEADING}\n{turn}"),
        _ => texts.concat(),
    };
    Outcome::Summary {
        text,
        cost,
        from_hook: false,
    }
}

/// The outcome of a summary a hook supplied: used, trimmed, unless blank.
fn supplied(text: &str) -> Outcome {
    let text = text.trim();
    if text.is_empty() {
        Outcome::Failed {
            failure: Failure::BlankFromHook,
            cost: CompactCost::default(),
        }
    } else {
        Outcome::Summary {
            text: text.to_string(),
            cost: CompactCost::default(),
            from_hook: true,
        }
    }
}

/// One request through the provider layers of `memory_layer`: each
/// attempt limited by [`Timeout`] (when the policy has a limit), retryable
/// failures tried again by [`Retry`] with the policy's backoff (a rate
/// limit's own delay wins), every attempt counted into `cost`. A request
/// too large for the model's context is split: its `piece` is summarized in
/// two halves cut between steps, the first half's summary merged into the
/// second's, each half split again if it still overflows, down to
/// [`MAX_SPLITS`] levels. Timers are used only inside a tokio runtime;
/// without one a request has no limit and retries follow at once.
fn ask<'a>(
    caller: Caller<'a>,
    request: ChatRequest,
    piece: Option<Piece>,
    cost: &'a mut CompactCost,
    depth: u32,
) -> Pin<Box<dyn Future<Output = Result<String, Failure>> + Send + 'a>> {
    Box::pin(async move {
        let result = attempt(caller, &request, cost).await;
        let overflowed = matches!(&result, Err(Failure::Provider(e)) if split::is_overflow(e));
        let halves = piece
            .filter(|_| overflowed && depth < MAX_SPLITS)
            .and_then(|piece| piece.halves());
        let Some((first, mut second)) = halves else {
            return result;
        };
        tracing::debug!(
            target: "memory_compact",
            depth = depth + 1,
            "summary request too large for the model; summarizing it in two halves"
        );
        let request = first.request().await.map_err(unrenderable)?;
        let summary = ask(caller, request, Some(first), &mut *cost, depth + 1).await?;
        second.previous = Some(summary);
        let request = second.request().await.map_err(unrenderable)?;
        ask(caller, request, Some(second), cost, depth + 1).await
    })
}

/// How many times a request that overflows the model's context is split
/// again (at most `2^MAX_SPLITS` requests stand for it).
pub(crate) const MAX_SPLITS: u32 = 3;

/// A half's request could not be written.
fn unrenderable(error: memory_core::MemoryError) -> Failure {
    Failure::Provider(ProviderError::Other(format!(
        "cannot write the request for half of a split summary: {error}"
    )))
}

/// One request under the policy's timeout and retries, counted into `cost`.
async fn attempt(
    caller: Caller<'_>,
    request: &ChatRequest,
    cost: &mut CompactCost,
) -> Result<String, Failure> {
    let Caller {
        provider,
        policy,
        summary,
    } = caller;
    let timers = tokio::runtime::Handle::try_current().is_ok();
    let source = memory_summary_engine::grounding::source_of(request);
    let counted = Counted {
        inner: provider,
        cost: Mutex::new(CompactCost::default()),
    };
    let result = {
        let limited: Box<dyn Provider + '_> = match policy.timeout {
            Some(limit) if timers => Box::new(Timeout::new(&counted, limit)),
            _ => Box::new(&counted),
        };
        let retries = RetryPolicy::new(policy.retries, policy.backoff)
            .with_max_delay(Duration::MAX)
            .with_budget(None);
        Retry::new(limited, retries).chat(request.clone()).await
    };
    cost.add(counted.cost.into_inner().unwrap_or_else(|e| e.into_inner()));
    match result {
        // A rejected reply is the model's answer, not an accident: asking
        // again would pay for the same answer.
        Ok(reply) => summary
            .accept(&source, &reply)
            .map(str::to_string)
            .map_err(Failure::Rejected),
        Err(ProviderError::Timeout(ms)) => match policy.timeout {
            Some(limit) if u128::from(ms) == limit.as_millis() => Err(Failure::TimedOut(limit)),
            _ => Err(Failure::Provider(ProviderError::Timeout(ms))),
        },
        Err(error) => Err(Failure::Provider(error)),
    }
}

/// A provider that counts every attempt made through it, with the usage
/// the provider reported (nothing for an attempt that failed or was
/// abandoned).
struct Counted<'a> {
    inner: &'a dyn Provider,
    cost: Mutex<CompactCost>,
}

impl Counted<'_> {
    fn count(&self, usage: Option<memory_core::Usage>) {
        self.cost
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add_call(usage);
    }
}

#[async_trait::async_trait]
impl Provider for &Counted<'_> {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        // Counted when it ends, or as a failure when it is abandoned.
        struct Pending<'c, 'a>(&'c Counted<'a>, bool);
        impl Drop for Pending<'_, '_> {
            fn drop(&mut self) {
                if !self.1 {
                    self.0.count(None);
                }
            }
        }
        let mut pending = Pending(self, false);
        let result = self.inner.chat(request).await;
        pending.1 = true;
        self.count(result.as_ref().ok().map(|reply| reply.usage));
        result
    }
}

#[cfg(test)]
mod tests {
    use memory_core::{FakeProvider, FakeReply, Message, ProviderError};
    use memory_summary_engine::Rejection;

    use super::*;
    use crate::FileOps;

    fn job(requests: usize) -> Job {
        Job {
            preparation: Preparation {
                messages: vec![Message::user("x")],
                turn_prefix: Vec::new(),
                previous_summary: None,
                files: FileOps::new(),
                instructions: None,
                tokens: 1,
                tokens_before: 1,
                background: false,
                manual: false,
            },
            requests: vec![ChatRequest::new(vec![Message::user("x")]); requests],
            pieces: Vec::new(),
        }
    }

    static SUMMARY: std::sync::LazyLock<SummarySettings> =
        std::sync::LazyLock::new(SummarySettings::new);

    fn caller(provider: &dyn Provider, policy: Policy) -> Caller<'_> {
        Caller {
            provider,
            policy,
            summary: &SUMMARY,
        }
    }

    const NO_WAIT: Policy = Policy {
        timeout: None,
        retries: 2,
        backoff: Duration::ZERO,
    };

    #[test]
    fn retryable_failures_are_retried_up_to_the_limit_and_counted() {
        let fake = FakeProvider::new([
            FakeReply::Error(ProviderError::Network("reset".into())),
            FakeReply::Error(ProviderError::Server {
                status: 503,
                message: "busy".into(),
            }),
            FakeReply::Text("## State\nok".into()),
        ]);
        let outcome = futures::executor::block_on(run(&job(1), caller(&fake, NO_WAIT), None));
        let Outcome::Summary { text, cost, .. } = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(text, "## State\nok");
        assert_eq!(cost.calls, 3);
        // One more failure than retries allowed: it fails.
        let fake = FakeProvider::new(std::iter::repeat_n(
            FakeReply::Error(ProviderError::Timeout(5)),
            3,
        ));
        let outcome = futures::executor::block_on(run(&job(1), caller(&fake, NO_WAIT), None));
        assert!(matches!(
            outcome,
            Outcome::Failed { failure: Failure::Provider(ProviderError::Timeout(5)), cost } if cost.calls == 3
        ));
    }

    #[test]
    fn permanent_failures_and_rejections_are_not_retried() {
        let fake = FakeProvider::new([FakeReply::Error(ProviderError::Authentication(
            "bad key".into(),
        ))]);
        let outcome = futures::executor::block_on(run(&job(1), caller(&fake, NO_WAIT), None));
        assert!(matches!(outcome, Outcome::Failed { cost, .. } if cost.calls == 1));
        let fake = FakeProvider::new([FakeReply::Text("  ".into())]);
        let outcome = futures::executor::block_on(run(&job(1), caller(&fake, NO_WAIT), None));
        assert!(
            matches!(outcome, Outcome::Failed { failure: Failure::Rejected(Rejection::Empty), cost } if cost.calls == 1)
        );
    }

    #[test]
    fn a_split_turn_joins_both_summaries_and_fails_if_either_fails() {
        let fake = FakeProvider::new([
            FakeReply::Text("history".into()),
            FakeReply::Text("turn".into()),
        ]);
        let outcome = futures::executor::block_on(run(&job(2), caller(&fake, NO_WAIT), None));
        assert!(
            matches!(outcome, Outcome::Summary { ref text, .. } if text == &format!("history\n\n{TURN_HEADING}\nturn"))
        );
        let fake = FakeProvider::new([FakeReply::Text("history".into())]);
        let policy = Policy {
            retries: 0,
            ..NO_WAIT
        };
        let outcome = futures::executor::block_on(run(&job(2), caller(&fake, policy), None));
        assert!(matches!(outcome, Outcome::Failed { cost, .. } if cost.calls == 2));
    }

    #[test]
    fn a_hook_declines_or_supplies_without_a_call() {
        let fake = FakeProvider::default();
        let decline = |_: &Preparation| HookDecision::Decline;
        let outcome =
            futures::executor::block_on(run(&job(1), caller(&fake, NO_WAIT), Some(&decline)));
        assert!(matches!(outcome, Outcome::Declined));
        let supply = |_: &Preparation| HookDecision::Summary(" mine ".into());
        let outcome =
            futures::executor::block_on(run(&job(1), caller(&fake, NO_WAIT), Some(&supply)));
        assert!(
            matches!(outcome, Outcome::Summary { ref text, from_hook: true, cost } if text == "mine" && cost.calls == 0)
        );
        let blank = |_: &Preparation| HookDecision::Summary(" ".into());
        let outcome =
            futures::executor::block_on(run(&job(1), caller(&fake, NO_WAIT), Some(&blank)));
        assert!(matches!(
            outcome,
            Outcome::Failed {
                failure: Failure::BlankFromHook,
                ..
            }
        ));
        assert!(fake.requests().is_empty());
    }

    /// What [`Small`] answers: about the parser, as the exchanges are.
    const SHORT: &str = "## State\nparser questions 10 to 15: short enough";

    /// Rejects every request whose user text is longer than `max`
    /// characters as a context overflow; answers the others.
    #[derive(Default)]
    struct Small {
        max: usize,
        seen: std::sync::Mutex<Vec<usize>>,
        answered: std::sync::Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl Provider for Small {
        async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
            let length = request.messages[1].text().chars().count();
            self.seen.lock().unwrap().push(length);
            if length > self.max {
                Err(ProviderError::ContextOverflow(format!(
                    "{length} > {}",
                    self.max
                )))
            } else {
                self.answered
                    .lock()
                    .unwrap()
                    .push(request.messages[1].text());
                Ok(ChatResponse::text(SHORT))
            }
        }
    }

    /// A job over `n` exchanges, its one request and its makings.
    fn long_job(n: usize) -> Job {
        let messages: Vec<Message> = (0..n)
            .flat_map(|i| {
                [
                    Message::user(format!("question {i} on the parser {}", "q".repeat(200))),
                    Message::assistant(format!("answer {i} {}", "a".repeat(200))),
                ]
            })
            .collect();
        let piece = Piece {
            messages,
            previous: Some("the summary so far".into()),
            question: None,
            prompt: "prompt".into(),
            instructions: None,
            max_input_tokens: 100_000,
            options: memory_core::ModelOptions::default(),
        };
        let request = futures::executor::block_on(piece.request()).unwrap();
        Job {
            requests: vec![request],
            pieces: vec![piece],
            ..job(1)
        }
    }

    #[test]
    fn a_request_that_overflows_is_summarized_in_halves_that_merge() {
        let job = long_job(16);
        let small = Small {
            max: 3_000,
            ..Small::default()
        };
        let outcome = futures::executor::block_on(run(&job, caller(&small, NO_WAIT), None));
        assert!(
            matches!(outcome, Outcome::Summary { ref text, cost, .. } if text == SHORT && cost.calls > 2),
            "{outcome:?}"
        );
        let seen = small.seen.lock().unwrap().clone();
        // The whole request overflowed; every request that answered fit.
        assert!(seen[0] > 3_000, "{seen:?}");
        assert!(
            seen.iter().filter(|&&n| n <= 3_000).count() >= 2,
            "{seen:?}"
        );
        // Every exchange reached a request that answered, and the second
        // half merged the first half's summary.
        let answered: Vec<String> = small.answered.lock().unwrap().clone();
        for i in 0..16 {
            let needle = format!("question {i} ");
            assert!(
                answered.iter().any(|t| t.contains(&needle)),
                "exchange {i} never summarized"
            );
        }
        assert!(
            answered.iter().any(|t| t.contains("short enough")),
            "no half merged the other's summary"
        );
    }

    #[test]
    fn splitting_stops_at_its_depth_and_fails_keeping_history() {
        let job = long_job(16);
        let tiny = Small {
            max: 10,
            ..Small::default()
        };
        let outcome = futures::executor::block_on(run(&job, caller(&tiny, NO_WAIT), None));
        assert!(
            matches!(
                outcome,
                Outcome::Failed {
                    failure: Failure::Provider(ProviderError::ContextOverflow(_)),
                    ..
                }
            ),
            "{outcome:?}"
        );
        // One request per level down the first halves: 1 + MAX_SPLITS.
        assert_eq!(tiny.seen.lock().unwrap().len() as u32, 1 + MAX_SPLITS);
    }
}
