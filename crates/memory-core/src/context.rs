//! [`Context`]: what a [`Memory`](crate::Memory) hands the model on one call.

use crate::message::Message;
use crate::strategy::TrimResult;

/// The context for one model call: the messages, their tokens under the
/// memory's counter, and whether they fit the budget.
///
/// `fits` is false only when what the strategy may never shed (its floor:
/// protected messages, the summary, the current question, the newest step)
/// exceeds the budget on its own; the messages are then as few as the
/// strategy can make them. A caller can then raise the budget, start a new
/// session or tell the user, instead of sending a request the model will
/// refuse.
///
/// ```
/// use memory_core::{Context, Message};
/// let context = Context::new(vec![Message::user("hi")], 1, true);
/// assert!(context.fits);
/// assert_eq!(context.tokens, 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Context {
    /// The messages to send, in order.
    pub messages: Vec<Message>,
    /// Their total tokens, as the memory counted them.
    pub tokens: usize,
    /// Whether they fit the budget (see the type's documentation).
    pub fits: bool,
}

impl Context {
    /// A context of `messages` holding `tokens` tokens.
    ///
    /// ```
    /// let empty = memory_core::Context::new(Vec::new(), 0, true);
    /// assert!(empty.messages.is_empty());
    /// ```
    pub fn new(messages: Vec<Message>, tokens: usize, fits: bool) -> Self {
        Self {
            messages,
            tokens,
            fits,
        }
    }
}

impl From<TrimResult> for Context {
    /// What a strategy's result shows the model.
    ///
    /// ```
    /// use memory_core::{Budget, Context, History, Message, TrimResult};
    /// let m = [Message::user("hello")];
    /// let h = History::new(&m, &[2]).unwrap();
    /// let context = Context::from(TrimResult::unchanged(&h, &Budget::tokens(1)));
    /// assert_eq!((context.tokens, context.fits), (2, false));
    /// ```
    fn from(result: TrimResult) -> Self {
        let tokens = result.tokens();
        Self::new(result.messages, tokens, result.fits)
    }
}
