//! Compaction in the foreground: the summary is made during the turn that
//! needs it, and [`Compact::compact_now`].

use memory_core::{Budget, History, MemoryError, TokenCounter, TrimResult};

use crate::call::{self, Outcome};
use crate::covering::{Applied, Covering};
use crate::settle::Report;
use crate::turns::Plan;
use crate::{Compact, CompactEvent, FallbackReason, body};

/// What one summary attempt came to.
enum Made {
    /// The compacted history, its cost, and its covering restated for the
    /// history the call was given.
    Compacted(Box<(TrimResult, Report, Option<Covering>)>),
    Declined,
    Failed,
}

impl Compact {
    /// One turn in the foreground.
    pub(crate) async fn trim_foreground(
        &self,
        raw: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let known = self.known(raw, counter).await?;
        let work = Self::work(raw, &known)?;
        let plan = Plan::new(&work, self.keep_verbatim);
        let mut reason = FallbackReason::NotDue;
        if plan.new_tokens > self.summarise_at_tokens && !self.backed_off(&work, &plan) {
            match self
                .summarize(raw, &work, &plan, known.as_ref(), None, false, counter)
                .await?
            {
                Made::Compacted(made) => {
                    let (compacted, report, covering) = *made;
                    // Remembered even when it cannot be shown at this
                    // budget: it is not paid for again.
                    self.remember(covering);
                    return Ok(match self.accept(raw, compacted, budget, Some(report))? {
                        Some(result) => result,
                        None => self.fallback_unsummarized(raw, budget)?,
                    });
                }
                Made::Declined => reason = FallbackReason::Declined,
                Made::Failed => reason = FallbackReason::Failed,
            }
        }
        self.settle_known(raw, known, budget, reason)
    }

    /// Compacts `history` now, whatever its size, adding `instructions` to
    /// the standing ones, and waits for the summary (in background mode
    /// too). The newest turns are kept as usual.
    ///
    /// Returns the compacted history, materializing (`replace: true`), to be
    /// written back as a [`Memory`](memory_core::Memory) does; or, when there
    /// is nothing to summarize, a hook declines, or the summary fails or is
    /// rejected, the history unchanged (`replace: false`, and an event says
    /// why). No budget applies: trim the result to fit one.
    ///
    /// # Errors
    ///
    /// Counting the summary failed.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use memory_compact::Compact;
    /// use memory_core::{summary, CharTokenCounter, FakeProvider, FakeReply, History, Message};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let model = Arc::new(FakeProvider::new([FakeReply::Text("## Goals\nA CSV parser.".into())]));
    /// let compact = Compact::new(model.clone()).with_keep_verbatim(1);
    /// let messages = [
    ///     Message::user("Write a CSV parser."),
    ///     Message::assistant("Done: src/csv.rs."),
    ///     Message::user("Add tests."),
    ///     Message::assistant("Added tests/csv.rs."),
    ///     Message::user("Add quoting."),
    /// ];
    /// // Keeping one turn: the question and the round before it.
    /// let counts = [50, 50, 3, 5, 3];
    /// let history = History::new(&messages, &counts).unwrap();
    /// let result = compact
    ///     .compact_now(&history, &CharTokenCounter, Some("Name every file."))
    ///     .await
    ///     .unwrap();
    /// assert!(result.replace);
    /// assert!(summary::is_summary(&result.messages[0]));
    /// assert_eq!(result.messages[1..], messages[2..]);
    /// assert!(model.requests()[0].messages[1].text().contains("Name every file."));
    /// # });
    /// ```
    pub async fn compact_now(
        &self,
        history: &History<'_>,
        counter: &dyn TokenCounter,
        instructions: Option<&str>,
    ) -> Result<TrimResult, MemoryError> {
        let known = self.known(history, counter).await?;
        let work = Self::work(history, &known)?;
        let plan = Plan::new(&work, self.keep_verbatim);
        if plan.has_new()
            && let Made::Compacted(made) = self
                .summarize(
                    history,
                    &work,
                    &plan,
                    known.as_ref(),
                    instructions,
                    true,
                    counter,
                )
                .await?
        {
            let (compacted, report, covering) = *made;
            if let Some(result) =
                self.accept(history, compacted, &Budget::default(), Some(report))?
            {
                self.remember(covering);
                return Ok(result);
            }
        }
        Ok(match known {
            Some((_, applied)) => applied.result,
            None => TrimResult::unchanged(history, &Budget::default()),
        })
    }

    /// Makes the summary for `plan` of `work` (which is `raw` with `known`
    /// applied, when given) and applies it.
    #[allow(clippy::too_many_arguments)]
    async fn summarize(
        &self,
        raw: &History<'_>,
        work: &History<'_>,
        plan: &Plan,
        known: Option<&(Covering, Applied)>,
        extra: Option<&str>,
        manual: bool,
        counter: &dyn TokenCounter,
    ) -> Result<Made, MemoryError> {
        let job = self.prepare(work, plan, extra, manual, false);
        self.emit(CompactEvent::Started {
            tokens_before: raw.total(),
            messages: plan.folded(),
            tokens: plan.new_tokens,
            split: plan.is_split(),
            background: false,
        });
        let outcome = call::run(
            &job,
            &*self.provider,
            self.hook.as_deref(),
            self.policy(false),
        )
        .await;
        match outcome {
            Outcome::Summary {
                text,
                cost,
                from_hook,
            } => {
                let files = job.preparation.files;
                let covering = Covering::new(
                    work,
                    plan.region.clone(),
                    body::message(&text, &files),
                    files,
                );
                let applied = covering.apply(work, counter).await?;
                // A summary no shorter than what it covers replaces nothing.
                if !self.shrinks(raw, work.total(), &applied.result, cost) {
                    self.back_off(work, plan);
                    return Ok(Made::Failed);
                }
                let restated = match known {
                    Some((base, base_applied)) => covering.over(base, base_applied, raw),
                    None => Some(covering),
                };
                Ok(Made::Compacted(Box::new((
                    applied.result,
                    Report {
                        cost,
                        from_hook,
                        messages: plan.folded(),
                    },
                    restated,
                ))))
            }
            Outcome::Declined => {
                self.emit(CompactEvent::Declined {
                    tokens_before: raw.total(),
                });
                Ok(Made::Declined)
            }
            Outcome::Failed { failure, cost } => {
                self.emit(CompactEvent::Failed {
                    tokens_before: raw.total(),
                    failure,
                    cost,
                });
                self.back_off(work, plan);
                Ok(Made::Failed)
            }
        }
    }
}
