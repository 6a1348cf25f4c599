//! The model work of one compaction: the hook, then one request (two for a
//! split turn), each under the timeout and retries allowed.

use std::time::Duration;

use memory_core::{ChatRequest, Provider};

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

/// Runs the hook and the requests of `job`.
pub(crate) async fn run(
    job: &Job,
    provider: &dyn Provider,
    hook: Option<&dyn CompactHook>,
    policy: Policy,
) -> Outcome {
    if let Some(hook) = hook {
        match hook.before_compaction(&job.preparation).await {
            HookDecision::Proceed => {}
            HookDecision::Decline => return Outcome::Declined,
            HookDecision::Summary(text) => return supplied(&text),
        }
    }
    let mut cost = CompactCost::default();
    let mut texts = Vec::with_capacity(job.requests.len());
    for request in &job.requests {
        match ask(provider, request, policy, &mut cost).await {
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

/// One request, tried again after retryable failures and timeouts. Timers
/// are used only inside a tokio runtime; without one a request has no
/// timeout and retries follow at once.
async fn ask(
    provider: &dyn Provider,
    request: &ChatRequest,
    policy: Policy,
    cost: &mut CompactCost,
) -> Result<String, Failure> {
    let timers = tokio::runtime::Handle::try_current().is_ok();
    let mut attempt = 0u32;
    loop {
        let result = match policy.timeout {
            Some(limit) if timers => {
                match tokio::time::timeout(limit, provider.chat(request.clone())).await {
                    Ok(reply) => reply.map_err(Failure::Provider),
                    Err(_) => Err(Failure::TimedOut(limit)),
                }
            }
            _ => provider
                .chat(request.clone())
                .await
                .map_err(Failure::Provider),
        };
        let failure = match result {
            Ok(reply) => {
                cost.add_call(Some(reply.usage));
                // A rejected reply is the model's answer, not an accident:
                // asking again would pay for the same answer.
                return memory_core::accept_reply(&reply)
                    .map(str::to_string)
                    .map_err(Failure::Rejected);
            }
            Err(failure) => failure,
        };
        cost.add_call(None);
        let Some(delay) = retry_delay(&failure, attempt, policy) else {
            return Err(failure);
        };
        tracing::debug!(
            target: "memory_compact",
            attempt = attempt + 1,
            ?delay,
            "summary request failed ({failure}); retrying"
        );
        if timers && !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        attempt += 1;
    }
}

/// How long to wait before trying again after `failure` on attempt
/// `attempt` (0 for the first); `None` when it is not tried again: the
/// failure is permanent or the retries are spent. A rate limit's own delay
/// wins over the backoff.
fn retry_delay(failure: &Failure, attempt: u32, policy: Policy) -> Option<Duration> {
    let retry_after = match failure {
        Failure::TimedOut(_) => Some(None),
        Failure::Provider(memory_core::ProviderError::RateLimited { retry_after_ms, .. }) => {
            Some(retry_after_ms.map(Duration::from_millis))
        }
        Failure::Provider(e) if e.is_retryable() => Some(None),
        _ => None,
    };
    let retry_after = retry_after.filter(|_| attempt < policy.retries)?;
    Some(retry_after.unwrap_or_else(|| {
        policy
            .backoff
            .saturating_mul(2u32.saturating_pow(attempt.min(16)))
    }))
}

#[cfg(test)]
mod tests {
    use memory_core::{FakeProvider, FakeReply, Message, ProviderError, Rejection};

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
        let outcome = futures::executor::block_on(run(&job(1), &fake, None, NO_WAIT));
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
        let outcome = futures::executor::block_on(run(&job(1), &fake, None, NO_WAIT));
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
        let outcome = futures::executor::block_on(run(&job(1), &fake, None, NO_WAIT));
        assert!(matches!(outcome, Outcome::Failed { cost, .. } if cost.calls == 1));
        let fake = FakeProvider::new([FakeReply::Text("  ".into())]);
        let outcome = futures::executor::block_on(run(&job(1), &fake, None, NO_WAIT));
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
        let outcome = futures::executor::block_on(run(&job(2), &fake, None, NO_WAIT));
        assert!(
            matches!(outcome, Outcome::Summary { ref text, .. } if text == &format!("history\n\n{TURN_HEADING}\nturn"))
        );
        let fake = FakeProvider::new([FakeReply::Text("history".into())]);
        let policy = Policy {
            retries: 0,
            ..NO_WAIT
        };
        let outcome = futures::executor::block_on(run(&job(2), &fake, None, policy));
        assert!(matches!(outcome, Outcome::Failed { cost, .. } if cost.calls == 2));
    }

    #[test]
    fn a_hook_declines_or_supplies_without_a_call() {
        let fake = FakeProvider::default();
        let decline = |_: &Preparation| HookDecision::Decline;
        let outcome = futures::executor::block_on(run(&job(1), &fake, Some(&decline), NO_WAIT));
        assert!(matches!(outcome, Outcome::Declined));
        let supply = |_: &Preparation| HookDecision::Summary(" mine ".into());
        let outcome = futures::executor::block_on(run(&job(1), &fake, Some(&supply), NO_WAIT));
        assert!(
            matches!(outcome, Outcome::Summary { ref text, from_hook: true, cost } if text == "mine" && cost.calls == 0)
        );
        let blank = |_: &Preparation| HookDecision::Summary(" ".into());
        let outcome = futures::executor::block_on(run(&job(1), &fake, Some(&blank), NO_WAIT));
        assert!(matches!(
            outcome,
            Outcome::Failed {
                failure: Failure::BlankFromHook,
                ..
            }
        ));
        assert!(fake.requests().is_empty());
    }
}
