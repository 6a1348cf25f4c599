//! [`RecallTool`]: the `recall` tool as a Rig tool, answered from a
//! conversation's store.

use std::sync::Arc;

use memory_core::recall::{self, RecallRequest};
use memory_core::{MemoryError, Store, TokenCounter};

/// Brings back, verbatim, what a handle in the context names (see
/// [`memory_core::recall`]), from the conversation's whole history in the
/// store. Made by [`RigMemory::recall_tool`](crate::RigMemory::recall_tool)
/// for one conversation; give it to the agent with `.tool(...)`.
///
/// ```
/// use memory_core::{Memory, Message, recall::{Handle, RecallRequest}};
/// use rig_core::tool::PortableTool;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = std::sync::Arc::new(memory_core::InMemoryStore::new());
/// let output = Message::tool_result("c1", "a long listing");
/// let mut window = memory_session::WindowMemory::new(100).with_store(store.clone(), "ticket-42");
/// window.record(output.clone()).await.unwrap();
///
/// let tool = memory_rig::RigMemory::new(100).with_store(store).recall_tool("ticket-42");
/// let args = RecallRequest::new(Handle::of(&[output]).to_string());
/// let text = tool.call(args).await.unwrap();
/// assert!(text.contains("a long listing"));
/// # });
/// ```
#[derive(Clone)]
pub struct RecallTool {
    store: Arc<dyn Store>,
    conversation: String,
    counter: Arc<dyn TokenCounter>,
}

impl std::fmt::Debug for RecallTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecallTool")
            .field("conversation", &self.conversation)
            .finish_non_exhaustive()
    }
}

impl RecallTool {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        conversation: &str,
        counter: Arc<dyn TokenCounter>,
    ) -> Self {
        Self {
            store,
            conversation: conversation.to_string(),
            counter,
        }
    }
}

impl rig_core::tool::PortableTool for RecallTool {
    const NAME: &'static str = recall::RECALL_TOOL;
    type Args = RecallRequest;
    type Output = String;
    type Error = MemoryError;

    fn description(&self) -> String {
        recall::tool_definition()["function"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn parameters(&self) -> serde_json::Value {
        recall::tool_definition()["function"]["parameters"].clone()
    }

    async fn call(&self, args: RecallRequest) -> Result<String, MemoryError> {
        let history = self.store.history(&self.conversation).await?;
        Ok(recall::resolve(&history, &args, &*self.counter).await?.text)
    }
}
