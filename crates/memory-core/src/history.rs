//! [`History`]: the counted messages a strategy trims.

use std::borrow::Cow;

use crate::covered::set::Covered;
use crate::error::MemoryError;
use crate::message::Message;
use crate::summary;

/// Messages with their token counts and the indices that must never be shed
/// (protected messages, summaries and the [task](crate::structure::task)),
/// as handed to a [`TrimStrategy`](crate::TrimStrategy).
///
/// The task, the session's first user request, is protected by default so
/// that no strategy or fallback loses what the session is for;
/// [`forget_task`](History::forget_task) turns that off.
///
/// ```
/// use memory_core::{History, Message};
///
/// let messages = [Message::system("rules"), Message::user("hi")];
/// let history = History::new(&messages, &[2, 1]).unwrap().protect(&[0]);
/// assert_eq!(history.total(), 3);
/// assert!(history.is_protected(0));
/// // The first user message is the task.
/// assert!(history.is_protected(1));
/// assert!(!history.forget_task().is_protected(1));
/// ```
#[derive(Debug, Clone)]
pub struct History<'a> {
    messages: &'a [Message],
    counts: &'a [usize],
    protected: Cow<'a, [usize]>,
    total: usize,
    /// The task's index when this history protected it (rather than the
    /// caller).
    task: Option<usize>,
    /// Originals the view's summary stands for (see [`crate::covered`]).
    covered: Covered,
}

impl<'a> History<'a> {
    /// Messages and their counts. Summary messages (see [`crate::summary`])
    /// and the task are protected from the start.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidTranscript`] when the two lengths differ.
    ///
    /// ```
    /// use memory_core::{History, Message};
    /// assert!(History::new(&[Message::user("a")], &[]).is_err());
    /// ```
    pub fn new(messages: &'a [Message], counts: &'a [usize]) -> Result<Self, MemoryError> {
        check_lengths(messages, counts)?;
        let protected: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| summary::is_summary(m))
            .map(|(i, _)| i)
            .collect();
        Ok(Self {
            messages,
            counts,
            protected: Cow::Owned(protected),
            total: counts.iter().sum(),
            task: None,
            covered: Covered::default(),
        }
        .with_task())
    }

    /// Parts already known to the caller, taken as they are: `protected`
    /// sorted ascending and holding every summary (the task is added when
    /// it is not among them), `total` the sum of
    /// `counts`. This is how a [`Memory`](crate::Memory) that keeps these
    /// figures up to date hands them over without a pass over the history.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidTranscript`] when the lengths differ or a
    /// protected index is out of range.
    ///
    /// ```
    /// use memory_core::{History, Message};
    /// let messages = [Message::user("a"), Message::assistant("b")];
    /// let history = History::from_parts(&messages, &[1, 1], &[], 2).unwrap();
    /// assert_eq!(history.len(), 2);
    /// ```
    pub fn from_parts(
        messages: &'a [Message],
        counts: &'a [usize],
        protected: &'a [usize],
        total: usize,
    ) -> Result<Self, MemoryError> {
        Ok(Self::as_given(messages, counts, protected, total)?.with_task())
    }

    /// [`from_parts`](History::from_parts) without adding the task: for a
    /// stage's output, which carries its input's protection (the task's
    /// included, unless it was forgotten).
    pub(crate) fn as_given(
        messages: &'a [Message],
        counts: &'a [usize],
        protected: &'a [usize],
        total: usize,
    ) -> Result<Self, MemoryError> {
        check_lengths(messages, counts)?;
        if let Some(&last) = protected.last()
            && last >= messages.len()
        {
            return Err(MemoryError::InvalidTranscript(format!(
                "protected index {last} is out of range for {} messages",
                messages.len()
            )));
        }
        debug_assert!(protected.windows(2).all(|w| w[0] < w[1]));
        debug_assert_eq!(total, counts.iter().sum::<usize>());
        Ok(Self {
            messages,
            counts,
            protected: Cow::Borrowed(protected),
            total,
            task: None,
            covered: Covered::default(),
        })
    }

    /// A view with its covered set placed back ([`crate::covered::Expanded`]):
    /// parts known to be consistent, the task as the view protected it.
    pub(crate) fn expanded(
        messages: &'a [Message],
        counts: &'a [usize],
        protected: &'a [usize],
        total: usize,
        task: Option<usize>,
    ) -> Self {
        debug_assert_eq!(messages.len(), counts.len());
        Self {
            messages,
            counts,
            protected: Cow::Borrowed(protected),
            total,
            task,
            covered: Covered::default(),
        }
    }

    /// This history with `covered`, the originals its summary stands for,
    /// within reach of the stages that may show them (see
    /// [`crate::covered`]).
    ///
    /// ```
    /// use memory_core::covered::Covered;
    /// use memory_core::{summary, History, Message};
    /// let m = [summary::message("so far"), Message::user("next")];
    /// let c = Covered::new(vec![Message::user("first")], vec![2]).unwrap();
    /// let h = History::new(&m, &[3, 1]).unwrap().with_covered(c);
    /// assert_eq!(h.covered().len(), 1);
    /// assert_eq!(h.total(), 4); // the view's tokens only
    /// ```
    pub fn with_covered(mut self, covered: Covered) -> Self {
        self.covered = covered;
        self
    }

    /// The originals this history's summary stands for, kept within reach;
    /// empty unless [`with_covered`](History::with_covered) gave some. They
    /// are not among [`messages`](History::messages) nor in
    /// [`total`](History::total).
    ///
    /// ```
    /// # use memory_core::{History, Message};
    /// assert!(History::new(&[], &[]).unwrap().covered().is_empty());
    /// ```
    pub fn covered(&self) -> &Covered {
        &self.covered
    }

    /// Protects the task when it is not protected yet.
    fn with_task(mut self) -> Self {
        let Some(task) = task(self.messages) else {
            return self;
        };
        if let Err(at) = self.protected.binary_search(&task) {
            self.protected.to_mut().insert(at, task);
            self.task = Some(task);
        }
        self
    }

    /// Leaves the task unprotected (unless the caller protected it): for
    /// sessions whose first request is not a standing task, such as a chat.
    ///
    /// ```
    /// use memory_core::{History, Message};
    /// let m = [Message::user("write a parser"), Message::assistant("done")];
    /// let h = History::new(&m, &[3, 1]).unwrap();
    /// assert_eq!(h.protected(), &[0]);
    /// assert!(h.forget_task().protected().is_empty());
    /// ```
    pub fn forget_task(mut self) -> Self {
        if let Some(task) = self.task.take()
            && let Ok(at) = self.protected.binary_search(&task)
        {
            self.protected.to_mut().remove(at);
        }
        self
    }

    /// Index of the task when this history protects it.
    ///
    /// ```
    /// # use memory_core::{History, Message};
    /// let m = [Message::system("rules"), Message::user("write a parser")];
    /// assert_eq!(History::new(&m, &[1, 3]).unwrap().task(), Some(1));
    /// ```
    pub fn task(&self) -> Option<usize> {
        self.task
    }

    /// Marks more messages as protected (indices; out-of-range ones are
    /// ignored).
    ///
    /// ```
    /// use memory_core::{History, Message};
    /// let m = [Message::user("a"), Message::user("b")];
    /// let h = History::new(&m, &[1, 1]).unwrap().protect(&[1, 7]);
    /// assert_eq!(h.protected(), &[0, 1]); // the task, 0, and 1
    /// assert_eq!(h.forget_task().protected(), &[1]);
    /// ```
    pub fn protect(mut self, indices: &[usize]) -> Self {
        let mut all: Vec<usize> = self.protected.iter().copied().collect();
        all.extend(indices.iter().copied().filter(|&i| i < self.messages.len()));
        all.sort_unstable();
        all.dedup();
        if self.task.is_some_and(|t| indices.contains(&t)) {
            // The caller protects it too: it stays when the task is
            // forgotten.
            self.task = None;
        }
        self.protected = Cow::Owned(all);
        self
    }

    /// The messages.
    ///
    /// ```
    /// # use memory_core::{History, Message};
    /// # let m = [Message::user("a")];
    /// assert_eq!(History::new(&m, &[1]).unwrap().messages().len(), 1);
    /// ```
    pub fn messages(&self) -> &'a [Message] {
        self.messages
    }

    /// The token count of each message.
    ///
    /// ```
    /// # use memory_core::{History, Message};
    /// # let m = [Message::user("a")];
    /// assert_eq!(History::new(&m, &[1]).unwrap().counts(), &[1]);
    /// ```
    pub fn counts(&self) -> &'a [usize] {
        self.counts
    }

    /// Sorted indices of the protected messages and summaries (the task
    /// among them unless it was forgotten).
    ///
    /// ```
    /// # use memory_core::{History, Message};
    /// # let m = [Message::user("a")];
    /// assert_eq!(History::new(&m, &[1]).unwrap().protected(), &[0]);
    /// assert!(History::new(&m, &[1]).unwrap().forget_task().protected().is_empty());
    /// ```
    pub fn protected(&self) -> &[usize] {
        &self.protected
    }

    /// Whether message `index` is protected.
    ///
    /// ```
    /// # use memory_core::{History, Message};
    /// # let m = [Message::user("a")];
    /// assert!(History::new(&m, &[1]).unwrap().protect(&[0]).is_protected(0));
    /// ```
    pub fn is_protected(&self, index: usize) -> bool {
        self.protected.binary_search(&index).is_ok()
    }

    /// Sum of all counts.
    ///
    /// ```
    /// # use memory_core::{History, Message};
    /// # let m = [Message::user("a"), Message::user("b")];
    /// assert_eq!(History::new(&m, &[3, 4]).unwrap().total(), 7);
    /// ```
    pub fn total(&self) -> usize {
        self.total
    }

    /// Number of messages.
    ///
    /// ```
    /// # use memory_core::History;
    /// assert_eq!(History::new(&[], &[]).unwrap().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are no messages.
    ///
    /// ```
    /// # use memory_core::History;
    /// assert!(History::new(&[], &[]).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Whether the history is within `budget` as it is (tokens and
    /// rounds): a strategy returns such a history unchanged.
    ///
    /// ```
    /// # use memory_core::{Budget, History, Message};
    /// # let m = [Message::user("a"), Message::user("b")];
    /// let h = History::new(&m, &[3, 4]).unwrap();
    /// assert!(h.fits(&Budget::tokens(7)));
    /// assert!(!h.fits(&Budget::both(7, 1)));
    /// ```
    pub fn fits(&self, budget: &crate::budget::Budget) -> bool {
        budget.admits_tokens(self.total) && budget.admits_rounds(self.messages)
    }

    /// Tokens of `range`.
    ///
    /// ```
    /// # use memory_core::{History, Message};
    /// # let m = [Message::user("a"), Message::user("b"), Message::user("c")];
    /// assert_eq!(History::new(&m, &[1, 2, 3]).unwrap().tokens(1..3), 5);
    /// ```
    pub fn tokens(&self, range: std::ops::Range<usize>) -> usize {
        self.counts[range].iter().sum()
    }

    /// The history as it stood before message `end` (the first `end`
    /// messages, clamped to the length), with this history's protection
    /// of them and no covered set: what an earlier call saw, to compare
    /// this call's fit with.
    ///
    /// ```
    /// # use memory_core::{History, Message};
    /// let m = [Message::system("rules"), Message::user("a"), Message::assistant("b"), Message::user("c")];
    /// let h = History::new(&m, &[1, 2, 3, 4]).unwrap().protect(&[0]);
    /// let earlier = h.before(2);
    /// assert_eq!((earlier.len(), earlier.total()), (2, 3));
    /// assert_eq!(earlier.protected(), &[0, 1]);
    /// ```
    pub fn before(&self, end: usize) -> History<'a> {
        let end = end.min(self.messages.len());
        let kept = self.protected.partition_point(|&i| i < end);
        History {
            messages: &self.messages[..end],
            counts: &self.counts[..end],
            protected: Cow::Owned(self.protected[..kept].to_vec()),
            total: self.total - self.tokens(end..self.messages.len()),
            task: self.task.filter(|&t| t < end),
            covered: Covered::default(),
        }
    }
}

fn check_lengths(messages: &[Message], counts: &[usize]) -> Result<(), MemoryError> {
    if messages.len() == counts.len() {
        Ok(())
    } else {
        Err(MemoryError::InvalidTranscript(format!(
            "{} token counts given for {} messages; pass one count per message",
            counts.len(),
            messages.len()
        )))
    }
}

/// Index of the task: the first user message, unless a summary comes
/// before it (then the summary carries the task and there is none to mark).
/// Linear in the number of messages before the first user message.
///
/// ```
/// use memory_core::{structure, summary, Message};
/// let m = [Message::system("rules"), Message::user("fix the bug"), Message::user("go on")];
/// assert_eq!(structure::task(&m), Some(1));
/// let compacted = [summary::message("fixed half"), Message::user("go on")];
/// assert_eq!(structure::task(&compacted), None);
/// ```
pub fn task(messages: &[Message]) -> Option<usize> {
    for (i, m) in messages.iter().enumerate() {
        if m.is_user() {
            return Some(i);
        }
        if summary::is_summary(m) {
            return None;
        }
    }
    None
}
