//! [`Memory`]: what an agent loop records into and reads its context from.

use crate::{MemoryError, Message};

/// Records a conversation and hands back the context to send to the model.
///
/// ```
/// use memory_core::{Memory, MemoryError, Message};
///
/// /// Keeps everything, trims nothing.
/// #[derive(Default)]
/// struct Everything(Vec<Message>);
///
/// #[async_trait::async_trait]
/// impl Memory for Everything {
///     async fn record(&mut self, message: Message) -> Result<(), MemoryError> {
///         self.0.push(message);
///         Ok(())
///     }
///     async fn record_protected(&mut self, message: Message) -> Result<(), MemoryError> {
///         self.record(message).await
///     }
///     async fn context(&mut self) -> Result<Vec<Message>, MemoryError> {
///         Ok(self.0.clone())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut memory = Everything::default();
/// memory.record(Message::user("hi")).await.unwrap();
/// assert_eq!(memory.context().await.unwrap().len(), 1);
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

    /// The context for the next model call, fitted to the budget.
    ///
    /// # Errors
    ///
    /// Counting, strategy or storage errors. History is never lost on error.
    async fn context(&mut self) -> Result<Vec<Message>, MemoryError>;
}
