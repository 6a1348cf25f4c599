//! [`RigMemory`]: a Rig [`ConversationMemory`] over our stores and strategies.

use std::sync::Arc;

use memory_core::{
    Budget, CharTokenCounter, Context, InMemoryStore, Memory, Message, Store, StoredMessage,
    TokenCounter, TrimStrategy,
};
use memory_session::{SessionPool, WindowMemory};
use memory_window::WindowDrop;
use rig_core::completion::Message as RigMessage;
use rig_core::id::ConversationId;
use rig_core::memory::{ConversationMemory, MemoryError as RigError};
use rig_core::wasm_compat::WasmBoxedFuture;

use crate::recorded::{Carry, Recorded};

/// The suffix of the session that keeps a conversation's carries.
const CARRY_SUFFIX: &str = "#rig-carry";

/// One conversation: its memory and what it recorded.
struct Session {
    memory: WindowMemory,
    recorded: Option<Recorded>,
}

/// A Rig conversation memory that keeps every message in one of our
/// [`Store`]s and hands the agent the context a [`TrimStrategy`] (or a
/// [`Pipeline`](memory_core::Pipeline)) fits into a [`Budget`], counted by a
/// [`TokenCounter`].
///
/// `append` records Rig's messages (converted by [`to_ours`](crate::to_ours),
/// each with what the conversion cannot hold kept beside it); `load` trims
/// and returns the context in Rig's types, every message shown unchanged
/// being the very message Rig appended. A conversation id is a session of
/// the store (its carries sit in the session `<id>#rig-carry`); a
/// compaction commits to the store, so a restarted process goes on from the
/// summary instead of compacting again. `clear` empties what the agent is
/// shown; nothing is deleted from the store's history.
///
/// ```
/// use memory_rig::RigMemory;
/// use rig_core::completion::Message;
/// use rig_core::memory::ConversationMemory;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let memory = RigMemory::new(8_000);
/// let id = "thread-1".into();
/// memory.append(&id, vec![Message::user("My name is Alice."), Message::assistant("Hello, Alice!")]).await.unwrap();
/// assert_eq!(memory.load(&id).await.unwrap().len(), 2);
/// # });
/// ```
pub struct RigMemory {
    budget: Budget,
    strategy: Arc<dyn TrimStrategy>,
    counter: Arc<dyn TokenCounter>,
    store: Arc<dyn Store>,
    sessions: SessionPool<Session>,
}

impl std::fmt::Debug for RigMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RigMemory")
            .field("budget", &self.budget)
            .field("strategy", &self.strategy.name())
            .finish_non_exhaustive()
    }
}

impl RigMemory {
    /// A memory with a token budget, the window strategy, the character
    /// counter and a fresh in-memory store.
    ///
    /// ```
    /// assert_eq!(memory_rig::RigMemory::new(4_096).budget().max_tokens, Some(4_096));
    /// ```
    pub fn new(max_tokens: usize) -> Self {
        Self::with_budget(Budget::tokens(max_tokens))
    }

    /// A memory with any [`Budget`].
    ///
    /// ```
    /// let memory = memory_rig::RigMemory::with_budget(memory_core::Budget::both(4_096, 10));
    /// assert_eq!(memory.budget().max_rounds, Some(10));
    /// ```
    pub fn with_budget(budget: Budget) -> Self {
        Self {
            budget,
            strategy: Arc::new(WindowDrop::new()),
            counter: Arc::new(CharTokenCounter),
            store: Arc::new(InMemoryStore::new()),
            sessions: SessionPool::default(),
        }
    }

    /// Keeps at most `sessions` idle conversations open (default
    /// [`DEFAULT_OPEN_SESSIONS`](memory_session::DEFAULT_OPEN_SESSIONS)),
    /// least recently used closed first; a closed conversation is read
    /// back from the store when it returns.
    ///
    /// ```
    /// let memory = memory_rig::RigMemory::new(4_096).with_max_open_sessions(64);
    /// # let _ = memory;
    /// ```
    pub fn with_max_open_sessions(mut self, sessions: usize) -> Self {
        self.sessions = SessionPool::new(sessions);
        self
    }

    /// Trims with `strategy` (a `Pipeline` too).
    ///
    /// ```
    /// use memory_core::Pipeline;
    /// use memory_window::WindowDrop;
    /// let memory = memory_rig::RigMemory::new(4_096).with_strategy(Pipeline::new().then(WindowDrop::new()));
    /// # let _ = memory;
    /// ```
    pub fn with_strategy(mut self, strategy: impl TrimStrategy + 'static) -> Self {
        self.strategy = Arc::new(strategy);
        self
    }

    /// Counts with `counter`.
    ///
    /// ```
    /// let memory = memory_rig::RigMemory::new(4_096).with_token_counter(memory_core::CharTokenCounter);
    /// # let _ = memory;
    /// ```
    pub fn with_token_counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// Keeps the conversations in `store` (SQLite, PostgreSQL, in-memory,
    /// any [`Store`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let memory = memory_rig::RigMemory::new(4_096).with_store(Arc::new(memory_core::InMemoryStore::new()));
    /// # let _ = memory;
    /// ```
    pub fn with_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = store;
        self
    }

    /// The budget.
    ///
    /// ```
    /// assert_eq!(memory_rig::RigMemory::new(7).budget().max_tokens, Some(7));
    /// ```
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The `recall` tool for `conversation`: it brings back what a handle
    /// in the conversation's context names, from its store.
    ///
    /// ```
    /// let tool = memory_rig::RigMemory::new(100).recall_tool("ticket-42");
    /// # let _ = tool;
    /// ```
    pub fn recall_tool(&self, conversation: &str) -> crate::RecallTool {
        crate::RecallTool::new(self.store.clone(), conversation, self.counter.clone())
    }

    /// The context the agent is given next for `conversation`, in our
    /// types, with its tokens and whether it fits.
    ///
    /// # Errors
    ///
    /// Store, counting or strategy errors.
    ///
    /// ```
    /// use rig_core::memory::ConversationMemory;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let memory = memory_rig::RigMemory::new(100);
    /// memory.append(&"t".into(), vec![rig_core::completion::Message::user("hi")]).await.unwrap();
    /// let context = memory.fitted("t").await.unwrap();
    /// assert!(context.fits && context.tokens == 1);
    /// # });
    /// ```
    pub async fn fitted(&self, conversation: &str) -> Result<Context, memory_core::MemoryError> {
        let session = self.session(conversation);
        let mut session = session.lock().await;
        session.memory.fitted().await
    }

    /// Every Rig message ever appended to `conversation`, in order, what
    /// compaction or `clear` did to the context notwithstanding.
    ///
    /// # Errors
    ///
    /// Store errors, or carries that do not fit their messages.
    ///
    /// ```
    /// use rig_core::completion::Message;
    /// use rig_core::memory::ConversationMemory;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let memory = memory_rig::RigMemory::new(100);
    /// memory.append(&"t".into(), vec![Message::user("hi")]).await.unwrap();
    /// assert_eq!(memory.history("t").await.unwrap(), vec![Message::user("hi")]);
    /// # });
    /// ```
    pub async fn history(&self, conversation: &str) -> Result<Vec<RigMessage>, RigError> {
        let session = self.session(conversation);
        let mut session = session.lock().await;
        Ok(self
            .recorded(conversation, &mut session)
            .await?
            .originals()
            .to_vec())
    }

    fn session(&self, conversation: &str) -> Arc<tokio::sync::Mutex<Session>> {
        self.sessions.open(conversation, || Session {
            memory: self.window(conversation),
            recorded: None,
        })
    }

    fn window(&self, conversation: &str) -> WindowMemory {
        WindowMemory::with_budget(self.budget)
            .with_strategy(self.strategy.clone())
            .with_token_counter(self.counter.clone())
            .with_store(self.store.clone(), conversation)
    }

    /// What the conversation recorded, read from the store on first use.
    async fn recorded<'s>(
        &self,
        conversation: &str,
        session: &'s mut Session,
    ) -> Result<&'s mut Recorded, RigError> {
        if session.recorded.is_none() {
            let messages = self.store.history(conversation).await.map_err(backend)?;
            let carries = self
                .store
                .history(&carry_session(conversation))
                .await
                .map_err(backend)?
                .iter()
                .map(carry_from_message)
                .collect::<Result<Vec<_>, _>>()?;
            let recorded = Recorded::from_parts(messages, carries).map_err(policy)?;
            session.recorded = Some(recorded);
        }
        Ok(session.recorded.as_mut().expect("loaded above"))
    }
}

fn carry_session(conversation: &str) -> String {
    format!("{conversation}{CARRY_SUFFIX}")
}

fn carry_to_message(carry: &Carry) -> Result<Message, RigError> {
    serde_json::to_string(carry)
        .map(Message::system)
        .map_err(|e| RigError::Internal(format!("a carry could not be written as JSON: {e}")))
}

fn carry_from_message(message: &Message) -> Result<Carry, RigError> {
    let Message::System(json) = message else {
        return Err(RigError::Policy(format!(
            "the carry session holds a {} message, not a carry; it was not written by memory-rig",
            message.role()
        )));
    };
    serde_json::from_str(json)
        .map_err(|e| RigError::Policy(format!("a stored carry is not readable ({e}): {json}")))
}

fn backend(error: impl std::error::Error + Send + Sync + 'static) -> RigError {
    RigError::backend(error)
}

fn policy(error: impl std::fmt::Display) -> RigError {
    RigError::Policy(error.to_string())
}

fn check_id(conversation: &ConversationId) -> Result<&str, RigError> {
    let id = conversation.as_str();
    if id.ends_with(CARRY_SUFFIX) {
        return Err(RigError::Policy(format!(
            "conversation id {id:?} ends in {CARRY_SUFFIX:?}, which names a conversation's carries; choose another id"
        )));
    }
    Ok(id)
}

impl ConversationMemory for RigMemory {
    fn load<'a>(
        &'a self,
        conversation_id: &'a ConversationId,
    ) -> WasmBoxedFuture<'a, Result<Vec<RigMessage>, RigError>> {
        Box::pin(async move {
            let id = check_id(conversation_id)?;
            let session = self.session(id);
            let mut session = session.lock().await;
            let context = session.memory.fitted().await.map_err(backend)?;
            let recorded = self.recorded(id, &mut session).await?;
            recorded.restore(&context.messages).map_err(policy)
        })
    }

    fn append<'a>(
        &'a self,
        conversation_id: &'a ConversationId,
        messages: Vec<RigMessage>,
    ) -> WasmBoxedFuture<'a, Result<(), RigError>> {
        Box::pin(async move {
            let id = check_id(conversation_id)?;
            let session = self.session(id);
            let mut session = session.lock().await;
            self.recorded(id, &mut session).await?;
            for message in &messages {
                let first = session.recorded.as_ref().is_some_and(Recorded::is_empty);
                let parts = session
                    .recorded
                    .as_mut()
                    .expect("loaded above")
                    .record(message);
                // Messages first, then their carries: a write cut short
                // between the two leaves messages that go back by the
                // default conversion, never carries without messages.
                for (ours, _) in &parts {
                    let protected = first && ours.is_system();
                    let recorded = if protected {
                        session.memory.record_protected(ours.clone()).await
                    } else {
                        session.memory.record(ours.clone()).await
                    };
                    if let Err(e) = recorded {
                        session.recorded = None;
                        return Err(backend(e));
                    }
                }
                let carries = parts
                    .iter()
                    .map(|(_, carry)| {
                        carry_to_message(carry).map(|m| StoredMessage::new(m, 0, false))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if let Err(e) = self.store.append(&carry_session(id), carries).await {
                    session.recorded = None;
                    return Err(backend(e));
                }
            }
            Ok(())
        })
    }

    fn clear<'a>(
        &'a self,
        conversation_id: &'a ConversationId,
    ) -> WasmBoxedFuture<'a, Result<(), RigError>> {
        Box::pin(async move {
            let id = check_id(conversation_id)?;
            let session = self.session(id);
            let mut session = session.lock().await;
            let snapshot = self.store.load(id).await.map_err(backend)?;
            if !snapshot.messages.is_empty() {
                self.store
                    .replace_view(id, snapshot.version, Vec::new())
                    .await
                    .map_err(backend)?;
            }
            // The memory reads the emptied view afresh.
            session.memory = self.window(id);
            Ok(())
        })
    }
}
