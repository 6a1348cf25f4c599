//! [`Covered`]: the set of messages a summary of the view stands for.

use std::sync::Arc;

use crate::error::MemoryError;
use crate::message::Message;

/// Messages a summary of the view stands for, oldest first, with their
/// token counts. Cheap to clone (shared).
///
/// ```
/// use memory_core::covered::Covered;
/// use memory_core::Message;
/// let c = Covered::new(vec![Message::user("a")], vec![1]).unwrap();
/// assert_eq!((c.len(), c.total()), (1, 1));
/// assert!(Covered::default().is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Covered {
    messages: Arc<[Message]>,
    counts: Arc<[usize]>,
    total: usize,
    /// The view message that followed the covered messages where they
    /// stood: the set is placed right before it.
    next: Option<Arc<Message>>,
}

impl Covered {
    /// A covered set of `messages` counted `counts`.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidTranscript`] when the lengths differ or the
    /// first message is a tool result (the set is whole steps).
    ///
    /// ```
    /// use memory_core::covered::Covered;
    /// use memory_core::Message;
    /// assert!(Covered::new(vec![Message::user("a")], vec![]).is_err());
    /// assert!(Covered::new(vec![Message::tool_result("x", "out")], vec![2]).is_err());
    /// ```
    pub fn new(messages: Vec<Message>, counts: Vec<usize>) -> Result<Self, MemoryError> {
        if messages.len() != counts.len() {
            return Err(MemoryError::InvalidTranscript(format!(
                "{} token counts given for {} covered messages; pass one count per message",
                counts.len(),
                messages.len()
            )));
        }
        if messages.first().is_some_and(Message::is_tool_result) {
            return Err(MemoryError::InvalidTranscript(
                "the covered messages start with a tool result; a covered set is whole steps"
                    .into(),
            ));
        }
        Ok(Self {
            total: counts.iter().sum(),
            messages: messages.into(),
            counts: counts.into(),
            next: None,
        })
    }

    /// This set, standing right before `next` in the view (the message
    /// that followed the covered messages when they were replaced). A set
    /// is placed only where its `next` is found after the view's first
    /// summary ([`anchor`](crate::covered::anchor)).
    ///
    /// ```
    /// use memory_core::covered::Covered;
    /// use memory_core::Message;
    /// let c = Covered::new(vec![Message::user("a")], vec![1]).unwrap();
    /// let c = c.before(Some(Message::user("b")));
    /// assert_eq!(c.next(), Some(&Message::user("b")));
    /// ```
    pub fn before(mut self, next: Option<Message>) -> Self {
        self.next = next.map(Arc::new);
        self
    }

    /// The message the set stands right before, if known.
    ///
    /// ```
    /// assert!(memory_core::covered::Covered::default().next().is_none());
    /// ```
    pub fn next(&self) -> Option<&Message> {
        self.next.as_deref()
    }

    /// The covered messages, oldest first.
    ///
    /// ```
    /// assert!(memory_core::covered::Covered::default().messages().is_empty());
    /// ```
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The token count of each covered message.
    ///
    /// ```
    /// assert!(memory_core::covered::Covered::default().counts().is_empty());
    /// ```
    pub fn counts(&self) -> &[usize] {
        &self.counts
    }

    /// Sum of the counts.
    ///
    /// ```
    /// assert_eq!(memory_core::covered::Covered::default().total(), 0);
    /// ```
    pub fn total(&self) -> usize {
        self.total
    }

    /// Number of covered messages.
    ///
    /// ```
    /// assert_eq!(memory_core::covered::Covered::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether nothing is covered.
    ///
    /// ```
    /// assert!(memory_core::covered::Covered::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// This set followed by `more` (newer messages with their counts),
    /// then cut to the newest whole steps within `horizon` tokens.
    ///
    /// ```
    /// use memory_core::covered::Covered;
    /// use memory_core::{Message, ToolCall};
    /// let c = Covered::default().extended(
    ///     [
    ///         (Message::user("old"), 5),
    ///         (Message::assistant_with_tools("", vec![ToolCall::new("a", "ls", "{}")]), 3),
    ///         (Message::tool_result("a", "out"), 3),
    ///         (Message::user("new"), 2),
    ///     ],
    ///     7,
    /// );
    /// // The step of the call and its result (6 tokens) cannot be split.
    /// assert_eq!(c.messages(), &[Message::user("new")]);
    /// ```
    pub fn extended(
        &self,
        more: impl IntoIterator<Item = (Message, usize)>,
        horizon: usize,
    ) -> Self {
        let mut messages: Vec<Message> = self.messages.to_vec();
        let mut counts: Vec<usize> = self.counts.to_vec();
        for (m, c) in more {
            messages.push(m);
            counts.push(c);
        }
        let mut total: usize = counts.iter().sum();
        let mut start = 0;
        while start < messages.len() && (total > horizon || messages[start].is_tool_result()) {
            total -= counts[start];
            start += 1;
        }
        messages.drain(..start);
        counts.drain(..start);
        Self {
            messages: messages.into(),
            counts: counts.into(),
            total,
            next: self.next.clone(),
        }
    }

    /// The newest whole steps of this set within `horizon` tokens.
    ///
    /// ```
    /// use memory_core::covered::Covered;
    /// use memory_core::Message;
    /// let c = Covered::new(vec![Message::user("a"), Message::user("b")], vec![3, 2]).unwrap();
    /// assert_eq!(c.within(4).messages(), &[Message::user("b")]);
    /// assert_eq!(c.within(5), c);
    /// ```
    pub fn within(&self, horizon: usize) -> Self {
        if self.total <= horizon {
            return self.clone();
        }
        self.extended(std::iter::empty(), horizon)
    }

    /// Whether `other` is this set itself (its shared messages and counts,
    /// placed before the same message), not merely an equal copy: a check
    /// in constant time whatever the set's size.
    pub(crate) fn is_shared_with(&self, other: &Covered) -> bool {
        Arc::ptr_eq(&self.messages, &other.messages)
            && Arc::ptr_eq(&self.counts, &other.counts)
            && self.next == other.next
    }
}
