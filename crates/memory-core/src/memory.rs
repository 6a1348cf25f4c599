//! [`Memory`]: what an agent loop records into and reads its context from.

use crate::context::Context;
use crate::counter::CharTokenCounter;
use crate::error::MemoryError;
use crate::message::Message;
use crate::recall::{RecallRequest, Recalled};
use crate::store::StoredMessage;

/// Records a conversation and hands back the context to send to the model.
///
/// Implement [`record`](Memory::record),
/// [`record_protected`](Memory::record_protected), [`fitted`](Memory::fitted)
/// and the two inspections, [`view`](Memory::view) and
/// [`history`](Memory::history); [`context`](Memory::context) is the
/// messages of `fitted`.
///
/// ```
/// use memory_core::{Context, Memory, MemoryError, Message, StoredMessage};
///
/// /// Keeps everything, trims nothing, counts a token per message.
/// #[derive(Default)]
/// struct Everything(Vec<StoredMessage>);
///
/// #[async_trait::async_trait]
/// impl Memory for Everything {
///     async fn record(&mut self, message: Message) -> Result<(), MemoryError> {
///         self.0.push(StoredMessage::new(message, 1, false));
///         Ok(())
///     }
///     async fn record_protected(&mut self, message: Message) -> Result<(), MemoryError> {
///         self.0.push(StoredMessage::new(message, 1, true));
///         Ok(())
///     }
///     async fn fitted(&mut self) -> Result<Context, MemoryError> {
///         let messages: Vec<Message> = self.0.iter().map(|s| s.message.clone()).collect();
///         Ok(Context::new(messages, self.0.len(), true))
///     }
///     async fn view(&self) -> Result<Vec<StoredMessage>, MemoryError> {
///         Ok(self.0.clone())
///     }
///     async fn history(&self) -> Result<Vec<Message>, MemoryError> {
///         Ok(self.0.iter().map(|s| s.message.clone()).collect())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut memory = Everything::default();
/// memory.record(Message::user("hi")).await.unwrap();
/// assert_eq!(memory.context().await.unwrap().len(), 1);
/// let context = memory.fitted().await.unwrap();
/// assert!(context.fits && context.tokens == 1);
/// # });
/// ```
#[async_trait::async_trait]
pub trait Memory: Send {
    /// Appends a message.
    ///
    /// # Errors
    ///
    /// Counting or storage errors; the message is then not recorded.
    async fn record(&mut self, message: Message) -> Result<(), MemoryError>;

    /// Appends a message that trimming must never shed (a system prompt,
    /// standing instructions).
    ///
    /// # Errors
    ///
    /// As [`record`](Memory::record).
    async fn record_protected(&mut self, message: Message) -> Result<(), MemoryError>;

    /// The context for the next model call, fitted to the budget, with its
    /// token count and whether it fits (false only when what may never be
    /// shed exceeds the budget on its own).
    ///
    /// # Errors
    ///
    /// Counting, strategy or storage errors. History is never lost on error.
    async fn fitted(&mut self) -> Result<Context, MemoryError>;

    /// The messages of [`fitted`](Memory::fitted): the context for the next
    /// model call.
    ///
    /// # Errors
    ///
    /// As [`fitted`](Memory::fitted).
    async fn context(&mut self) -> Result<Vec<Message>, MemoryError> {
        Ok(self.fitted().await?.messages)
    }

    /// The stored view the next trim starts from: everything recorded, less
    /// what materializing stages replaced (a rolling summary in place of
    /// older turns), with each message's count and protection. For
    /// inspection.
    ///
    /// # Errors
    ///
    /// Storage errors.
    async fn view(&self) -> Result<Vec<StoredMessage>, MemoryError>;

    /// Every message ever recorded, in order, including what compactions
    /// replaced in the view. For inspection.
    ///
    /// # Errors
    ///
    /// Storage errors.
    async fn history(&self) -> Result<Vec<Message>, MemoryError>;

    /// Answers a `recall` call (see [`recall`](crate::recall)): the
    /// originals a handle names, from [`history`](Memory::history), whole
    /// or cut to the request's cap (measured, by default, with
    /// [`CharTokenCounter`]; a memory with a counter of its own uses it).
    ///
    /// # Errors
    ///
    /// [`MemoryError::Recall`] for a malformed handle or one this session
    /// does not hold; storage errors.
    ///
    /// ```
    /// use memory_core::{recall::{Handle, RecallRequest}, Message, Memory};
    /// # use memory_core::{Context, MemoryError, StoredMessage};
    /// # #[derive(Default)] struct Everything(Vec<Message>);
    /// # #[async_trait::async_trait]
    /// # impl Memory for Everything {
    /// #     async fn record(&mut self, m: Message) -> Result<(), MemoryError> { self.0.push(m); Ok(()) }
    /// #     async fn record_protected(&mut self, m: Message) -> Result<(), MemoryError> { self.0.push(m); Ok(()) }
    /// #     async fn fitted(&mut self) -> Result<Context, MemoryError> { Ok(Context::new(self.0.clone(), 0, true)) }
    /// #     async fn view(&self) -> Result<Vec<StoredMessage>, MemoryError> { Ok(vec![]) }
    /// #     async fn history(&self) -> Result<Vec<Message>, MemoryError> { Ok(self.0.clone()) }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mut memory = Everything::default();
    /// memory.record(Message::tool_result("c1", "a long output")).await.unwrap();
    /// let handle = Handle::of(&[Message::tool_result("c1", "a long output")]);
    /// let recalled = memory.recall(&RecallRequest::new(handle.to_string())).await.unwrap();
    /// assert_eq!(recalled.messages, vec![Message::tool_result("c1", "a long output")]);
    /// # });
    /// ```
    async fn recall(&self, request: &RecallRequest) -> Result<Recalled, MemoryError> {
        let history = self.history().await?;
        crate::recall::resolve(&history, request, &CharTokenCounter).await
    }
}
