//! [`TrimStrategy`] and [`TrimResult`]: how a history is fitted into a budget.

use std::ops::Range;

use crate::budget::Budget;
use crate::counter::{TokenCounter, count_messages};
use crate::covered::Covered;
use crate::diagnostics::Diagnostics;
use crate::error::MemoryError;
use crate::history::History;
use crate::message::Message;

/// Fits a history into a [`Budget`].
///
/// Implement [`trim_with_counts`](TrimStrategy::trim_with_counts); `trim`
/// counts the messages first and then calls it. A strategy must keep the
/// invariants of the workspace: tool calls and their results stay together,
/// order is kept, protected messages and summaries are never shed, and a
/// result that fits is returned unchanged when trimmed again.
///
/// ```
/// use memory_core::{Budget, History, MemoryError, Message, TokenCounter, TrimResult, TrimStrategy};
///
/// /// Keeps everything (a strategy that never trims).
/// struct KeepAll;
///
/// #[async_trait::async_trait]
/// impl TrimStrategy for KeepAll {
///     fn name(&self) -> &str {
///         "keep-all"
///     }
///     async fn trim_with_counts(
///         &self,
///         history: &History<'_>,
///         budget: &Budget,
///         _counter: &dyn TokenCounter,
///     ) -> Result<TrimResult, MemoryError> {
///         Ok(TrimResult::unchanged(history, budget))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let result = KeepAll
///     .trim(&[Message::user("hello")], &Budget::tokens(1), &memory_core::CharTokenCounter)
///     .await
///     .unwrap();
/// assert_eq!(result.messages.len(), 1);
/// assert!(!result.fits); // 2 tokens in a budget of 1
/// # });
/// ```
#[async_trait::async_trait]
pub trait TrimStrategy: Send + Sync {
    /// A short name for reports and logs.
    fn name(&self) -> &str;

    /// Counts `messages` with `counter`, then trims. Summaries are protected;
    /// nothing else is.
    ///
    /// # Errors
    ///
    /// Counting errors, and whatever the strategy cannot recover from.
    async fn trim(
        &self,
        messages: &[Message],
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let counts = count_messages(counter, messages).await?;
        let history = History::new(messages, &counts)?;
        self.trim_with_counts(&history, budget, counter).await
    }

    /// Trims a history whose counts are already known.
    ///
    /// # Errors
    ///
    /// Whatever the strategy cannot recover from. A failing model call is
    /// not such an error: strategies degrade instead.
    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError>;
}

#[async_trait::async_trait]
impl<T: TrimStrategy + ?Sized> TrimStrategy for std::sync::Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        (**self).trim_with_counts(history, budget, counter).await
    }
}

#[async_trait::async_trait]
impl<T: TrimStrategy + ?Sized> TrimStrategy for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        (**self).trim_with_counts(history, budget, counter).await
    }
}

/// What a strategy returns.
///
/// `replace: true` materializes: a [`Memory`](crate::Memory) writes
/// `messages` back to its store (which keeps what it replaced readable).
/// `replace: false` is a projection: a view for this call only.
///
/// ```
/// use memory_core::{Budget, History, Message, TrimResult};
/// let m = [Message::user("hi")];
/// let h = History::new(&m, &[1]).unwrap();
/// let r = TrimResult::unchanged(&h, &Budget::tokens(10));
/// assert!(r.fits && !r.replace);
/// assert_eq!(r.tokens(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TrimResult {
    /// The context to show the model.
    pub messages: Vec<Message>,
    /// Token count of each message of `messages`.
    pub counts: Vec<usize>,
    /// Sorted indices into `messages` of the protected messages and
    /// summaries.
    pub protected: Vec<usize>,
    /// Whether `messages` replaces the stored history.
    pub replace: bool,
    /// False only when the strategy's floor alone exceeds the budget; the
    /// result is then as small as the strategy can make it.
    pub fits: bool,
    /// For a [`Pipeline`](crate::Pipeline) whose leading stages materialized
    /// before a later stage projected: what to store, which differs from
    /// what is shown.
    pub write_back: Option<Box<TrimResult>>,
    /// The originals the result's summary stands for, within reach of the
    /// stages after this one (see [`crate::covered`]); never shown by
    /// themselves. Carried from the input by a stage that does not show
    /// them (moved before the oldest message it keeps when it dropped the
    /// one they stood before; see [`crate::covered::after_dropping`]),
    /// extended by one that summarizes, empty after one that chose among
    /// them.
    pub covered: Covered,
    /// What the stages said about how they reached this result (a trace
    /// of what was shed, say), in stage order; not part of its value.
    pub diagnostics: Diagnostics,
}

impl TrimResult {
    /// The history as it is, as a projection; `fits` says whether it is
    /// within the budget's token limit.
    ///
    /// ```
    /// # use memory_core::{Budget, History, Message, TrimResult};
    /// let m = [Message::user("hello")];
    /// let h = History::new(&m, &[2]).unwrap();
    /// assert!(!TrimResult::unchanged(&h, &Budget::tokens(1)).fits);
    /// ```
    pub fn unchanged(history: &History<'_>, budget: &Budget) -> Self {
        Self {
            messages: history.messages().to_vec(),
            counts: history.counts().to_vec(),
            protected: history.protected().to_vec(),
            replace: false,
            fits: budget.admits_tokens(history.total()),
            write_back: None,
            covered: history.covered().clone(),
            diagnostics: Diagnostics::default(),
        }
    }

    /// Total tokens of `messages`.
    ///
    /// ```
    /// # use memory_core::{Budget, History, Message, TrimResult};
    /// # let m = [Message::user("hello")];
    /// # let h = History::new(&m, &[2]).unwrap();
    /// assert_eq!(TrimResult::unchanged(&h, &Budget::default()).tokens(), 2);
    /// ```
    pub fn tokens(&self) -> usize {
        self.counts.iter().sum()
    }

    /// What a memory should write back: `self` when it materializes, the
    /// pipeline's stored stage output when there is one, else nothing.
    ///
    /// ```
    /// # use memory_core::{Budget, History, Message, TrimResult};
    /// # let m = [Message::user("hello")];
    /// # let h = History::new(&m, &[2]).unwrap();
    /// assert!(TrimResult::unchanged(&h, &Budget::default()).to_store().is_none());
    /// ```
    pub fn to_store(&self) -> Option<&TrimResult> {
        if self.replace {
            Some(self)
        } else {
            self.write_back.as_deref()
        }
    }

    /// The result as a history, for the next stage of a pipeline.
    ///
    /// # Errors
    ///
    /// Never for results built through this crate's constructors.
    ///
    /// ```
    /// # use memory_core::{Budget, History, Message, TrimResult};
    /// # let m = [Message::user("hello")];
    /// # let h = History::new(&m, &[2]).unwrap();
    /// let r = TrimResult::unchanged(&h, &Budget::default());
    /// assert_eq!(r.as_history().unwrap().total(), 2);
    /// ```
    pub fn as_history(&self) -> Result<History<'_>, MemoryError> {
        Ok(
            History::as_given(&self.messages, &self.counts, &self.protected, self.tokens())?
                .with_covered(self.covered.clone()),
        )
    }
}

/// Builds a [`TrimResult`] from pieces of a history, carrying their counts
/// and protection along, plus new messages (summaries, truncation markers).
///
/// ```
/// use memory_core::{Budget, History, Message, Selection};
/// let m = [Message::user("a"), Message::assistant("b"), Message::user("c")];
/// let h = History::new(&m, &[1, 1, 1]).unwrap();
/// let mut s = Selection::new(&h);
/// s.keep(2..3);
/// let r = s.finish(false, true);
/// assert_eq!(r.messages, vec![Message::user("c")]);
/// ```
#[derive(Debug)]
pub struct Selection<'h, 'a> {
    history: &'h History<'a>,
    messages: Vec<Message>,
    counts: Vec<usize>,
    protected: Vec<usize>,
}

impl<'h, 'a> Selection<'h, 'a> {
    /// An empty selection over `history`.
    ///
    /// ```
    /// # use memory_core::{History, Selection};
    /// let h = History::new(&[], &[]).unwrap();
    /// assert!(Selection::new(&h).finish(false, true).messages.is_empty());
    /// ```
    pub fn new(history: &'h History<'a>) -> Self {
        Self {
            history,
            messages: Vec::new(),
            counts: Vec::new(),
            protected: Vec::new(),
        }
    }

    /// Appends the history's messages in `range`, as they are.
    ///
    /// ```
    /// # use memory_core::{History, Message, Selection};
    /// # let m = [Message::user("a")];
    /// # let h = History::new(&m, &[1]).unwrap();
    /// let mut s = Selection::new(&h);
    /// s.keep(0..1);
    /// assert_eq!(s.len(), 1);
    /// ```
    pub fn keep(&mut self, range: Range<usize>) {
        let protected = self.history.protected();
        let first = protected.partition_point(|&p| p < range.start);
        let base = self.messages.len();
        for &p in protected[first..].iter().take_while(|&&p| p < range.end) {
            self.protected.push(base + p - range.start);
        }
        self.messages
            .extend_from_slice(&self.history.messages()[range.clone()]);
        self.counts.extend_from_slice(&self.history.counts()[range]);
    }

    /// Appends a message of the strategy's own (a summary, a shortened
    /// message) with its token count.
    ///
    /// ```
    /// # use memory_core::{History, Message, Selection, summary};
    /// let h = History::new(&[], &[]).unwrap();
    /// let mut s = Selection::new(&h);
    /// s.push(summary::message("so far"), 4, true);
    /// assert_eq!(s.finish(true, true).protected, vec![0]);
    /// ```
    pub fn push(&mut self, message: Message, tokens: usize, protected: bool) {
        if protected {
            self.protected.push(self.messages.len());
        }
        self.messages.push(message);
        self.counts.push(tokens);
    }

    /// Number of messages selected so far.
    ///
    /// ```
    /// # use memory_core::{History, Selection};
    /// # let h = History::new(&[], &[]).unwrap();
    /// assert_eq!(Selection::new(&h).len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether nothing is selected yet.
    ///
    /// ```
    /// # use memory_core::{History, Selection};
    /// # let h = History::new(&[], &[]).unwrap();
    /// assert!(Selection::new(&h).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The result: `replace` materializes, `fits` as in [`TrimResult::fits`].
    ///
    /// ```
    /// # use memory_core::{History, Selection};
    /// # let h = History::new(&[], &[]).unwrap();
    /// assert!(Selection::new(&h).finish(true, true).replace);
    /// ```
    pub fn finish(self, replace: bool, fits: bool) -> TrimResult {
        TrimResult {
            messages: self.messages,
            counts: self.counts,
            protected: self.protected,
            replace,
            fits,
            write_back: None,
            covered: self.history.covered().clone(),
            diagnostics: Diagnostics::default(),
        }
    }
}
