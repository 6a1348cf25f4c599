//! [`Pipeline`]: strategies chained, each seeing the previous one's output.

use std::sync::Arc;

use crate::budget::Budget;
use crate::counter::TokenCounter;
use crate::error::MemoryError;
use crate::history::History;
use crate::strategy::{TrimResult, TrimStrategy};

/// Stages run in order; stage `b` sees stage `a`'s output. A pipeline is
/// itself a [`TrimStrategy`].
///
/// Storage rule: what is written back is the output of the longest leading
/// run of stages that materialized or changed nothing; what is shown is the
/// last stage's output. A projection never reaches storage, and neither does
/// anything a stage computed from a projection.
///
/// ```
/// use memory_core::{Budget, CharTokenCounter, Message, Pipeline, TrimStrategy};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let empty = Pipeline::new();
/// let result = empty
///     .trim(&[Message::user("hi")], &Budget::tokens(10), &CharTokenCounter)
///     .await
///     .unwrap();
/// assert_eq!(result.messages, vec![Message::user("hi")]);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct Pipeline {
    stages: Vec<Arc<dyn TrimStrategy>>,
    name: String,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("stages", &self.name)
            .finish()
    }
}

impl Pipeline {
    /// A pipeline with no stages (it changes nothing).
    ///
    /// ```
    /// assert!(memory_core::Pipeline::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a stage.
    ///
    /// ```
    /// # use memory_core::{Budget, History, MemoryError, TokenCounter, TrimResult, TrimStrategy};
    /// # struct Same;
    /// # #[async_trait::async_trait]
    /// # impl TrimStrategy for Same {
    /// #     fn name(&self) -> &str { "same" }
    /// #     async fn trim_with_counts(&self, h: &History<'_>, b: &Budget, _: &dyn TokenCounter)
    /// #         -> Result<TrimResult, MemoryError> { Ok(TrimResult::unchanged(h, b)) }
    /// # }
    /// let p = memory_core::Pipeline::new().then(Same).then(Same);
    /// assert_eq!(p.len(), 2);
    /// assert_eq!(memory_core::TrimStrategy::name(&p), "same,same");
    /// ```
    pub fn then(self, stage: impl TrimStrategy + 'static) -> Self {
        self.then_arc(Arc::new(stage))
    }

    /// Appends a shared stage.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// let p = memory_core::Pipeline::new().then_arc(Arc::new(memory_core::Pipeline::new()));
    /// assert_eq!(p.len(), 1);
    /// ```
    pub fn then_arc(mut self, stage: Arc<dyn TrimStrategy>) -> Self {
        if !self.name.is_empty() {
            self.name.push(',');
        }
        self.name.push_str(stage.name());
        self.stages.push(stage);
        self
    }

    /// Number of stages.
    ///
    /// ```
    /// assert_eq!(memory_core::Pipeline::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether there are no stages.
    ///
    /// ```
    /// assert!(memory_core::Pipeline::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

#[async_trait::async_trait]
impl TrimStrategy for Pipeline {
    fn name(&self) -> &str {
        &self.name
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let Some((first, rest)) = self.stages.split_first() else {
            return Ok(TrimResult::unchanged(history, budget));
        };
        let mut current = first.trim_with_counts(history, budget, counter).await?;
        let mut stored: Option<TrimResult> = None;
        let mut run_open = true;
        absorb(&mut stored, &mut run_open, &mut current, history.messages());
        for stage in rest {
            let mut next = {
                let input = current.as_history()?;
                stage.trim_with_counts(&input, budget, counter).await?
            };
            absorb(&mut stored, &mut run_open, &mut next, &current.messages);
            next.diagnostics
                .follow(std::mem::take(&mut current.diagnostics));
            current = next;
        }
        match stored {
            // Every stage after the last materializing one changed nothing:
            // what is shown is what is stored.
            Some(s) if run_open && s.messages == current.messages => {
                current.replace = true;
                current.write_back = None;
                // The stored view's covered set is the one its summary
                // made, whatever a later stage showed of it.
                current.covered = s.covered;
            }
            other => {
                current.replace = false;
                current.write_back = other.map(Box::new);
            }
        }
        Ok(current)
    }
}

/// Folds one stage's output into the storage run.
fn absorb(
    stored: &mut Option<TrimResult>,
    run_open: &mut bool,
    output: &mut TrimResult,
    input: &[crate::message::Message],
) {
    if !*run_open {
        output.write_back = None;
        return;
    }
    if output.replace {
        let mut s = output.clone();
        s.write_back = None;
        *stored = Some(s);
    } else if output.messages.as_slice() != input {
        if let Some(inner) = output.write_back.take() {
            *stored = Some(*inner);
        }
        *run_open = false;
    }
}
