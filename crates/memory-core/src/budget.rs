//! [`Budget`]: how much context a trim may keep.

use crate::framing::Framing;
use crate::message::Message;

/// The limits a trimmed context must respect.
///
/// `None` means unlimited. A rounds limit of 0 is taken as 1: the newest
/// round is always kept.
///
/// ```
/// use memory_core::Budget;
///
/// assert_eq!(Budget::tokens(4096).max_tokens, Some(4096));
/// assert_eq!(Budget::rounds(8).max_rounds, Some(8));
/// let both = Budget::both(4096, 8);
/// assert!(both.max_tokens.is_some() && both.max_rounds.is_some());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Most tokens the context may hold.
    pub max_tokens: Option<usize>,
    /// Most rounds (user turns) the context may hold.
    pub max_rounds: Option<usize>,
}

impl Budget {
    /// A token limit only.
    ///
    /// ```
    /// assert_eq!(memory_core::Budget::tokens(10).max_rounds, None);
    /// ```
    pub fn tokens(max_tokens: usize) -> Self {
        Self {
            max_tokens: Some(max_tokens),
            max_rounds: None,
        }
    }

    /// A rounds limit only.
    ///
    /// ```
    /// assert_eq!(memory_core::Budget::rounds(3).max_tokens, None);
    /// ```
    pub fn rounds(max_rounds: usize) -> Self {
        Self {
            max_tokens: None,
            max_rounds: Some(max_rounds),
        }
    }

    /// Both limits; the smaller window wins.
    ///
    /// ```
    /// let b = memory_core::Budget::both(100, 2);
    /// assert_eq!((b.max_tokens, b.max_rounds), (Some(100), Some(2)));
    /// ```
    pub fn both(max_tokens: usize, max_rounds: usize) -> Self {
        Self {
            max_tokens: Some(max_tokens),
            max_rounds: Some(max_rounds),
        }
    }

    /// The rounds limit as used: at least 1.
    ///
    /// ```
    /// assert_eq!(memory_core::Budget::rounds(0).round_limit(), Some(1));
    /// ```
    pub fn round_limit(&self) -> Option<usize> {
        self.max_rounds.map(|r| r.max(1))
    }

    /// Whether `tokens` tokens in `rounds` rounds are within the budget.
    ///
    /// ```
    /// let b = memory_core::Budget::both(10, 2);
    /// assert!(b.admits(10, 2));
    /// assert!(!b.admits(11, 1));
    /// assert!(!b.admits(5, 3));
    /// ```
    pub fn admits(&self, tokens: usize, rounds: usize) -> bool {
        self.max_tokens.is_none_or(|t| tokens <= t)
            && self.round_limit().is_none_or(|r| rounds <= r)
    }

    /// Whether `messages` hold no more rounds (user messages) than the
    /// limit; counts from the newest back and stops at the limit, so the
    /// cost is that of the kept window, not of the history.
    ///
    /// ```
    /// use memory_core::{Budget, Message};
    /// let m = [Message::user("a"), Message::assistant("b"), Message::user("c")];
    /// assert!(Budget::rounds(2).admits_rounds(&m));
    /// assert!(!Budget::rounds(1).admits_rounds(&m));
    /// assert!(Budget::tokens(1).admits_rounds(&m));
    /// ```
    pub fn admits_rounds(&self, messages: &[Message]) -> bool {
        self.round_limit().is_none_or(|limit| {
            messages
                .iter()
                .rev()
                .filter(|m| m.is_user())
                .nth(limit)
                .is_none()
        })
    }

    /// The budget left for the messages once `framing`'s per-request
    /// tokens are set aside: the token limit less
    /// [`per_request`](Framing::per_request) (at least 0); the rounds limit
    /// as it is. A context fitted to it, counted with a counter of that
    /// framing, fits this budget by the provider's count.
    ///
    /// ```
    /// use memory_core::{Budget, Framing};
    /// assert_eq!(Budget::both(1000, 4).for_messages(Framing::OPENAI_CHAT), Budget::both(997, 4));
    /// assert_eq!(Budget::tokens(2).for_messages(Framing::OPENAI_CHAT).max_tokens, Some(0));
    /// assert_eq!(Budget::rounds(3).for_messages(Framing::OPENAI_CHAT), Budget::rounds(3));
    /// ```
    pub fn for_messages(&self, framing: Framing) -> Self {
        Self {
            max_tokens: self
                .max_tokens
                .map(|t| t.saturating_sub(framing.per_request)),
            max_rounds: self.max_rounds,
        }
    }

    /// Whether `tokens` are within the token limit.
    ///
    /// ```
    /// assert!(memory_core::Budget::rounds(1).admits_tokens(usize::MAX));
    /// ```
    pub fn admits_tokens(&self, tokens: usize) -> bool {
        self.max_tokens.is_none_or(|t| tokens <= t)
    }
}
