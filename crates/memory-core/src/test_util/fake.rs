//! [`FakeProvider`]: a scripted model for tests.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::message::Message;
use crate::provider::{ChatRequest, ChatResponse, Provider, ProviderError, StopReason, Usage};

/// One scripted reply.
///
/// ```
/// use memory_core::{FakeReply, ProviderError};
/// let script = [
///     FakeReply::Error(ProviderError::Network("down".into())),
///     FakeReply::Text("summary".into()),
/// ];
/// assert_eq!(script.len(), 2);
/// ```
#[derive(Debug, Clone)]
pub enum FakeReply {
    /// A completed assistant reply with this text.
    Text(String),
    /// A full response (another role, a stop reason, usage).
    Response(ChatResponse),
    /// A failure.
    Error(ProviderError),
}

/// Replies from a script, in order, and records every request. Stands in for
/// a model's judgement in tests; when the script runs out it fails every
/// further call with [`ProviderError::Other`].
///
/// ```
/// use memory_core::{ChatRequest, FakeProvider, FakeReply, Message, Provider};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let fake = FakeProvider::new([FakeReply::Text("hello".into())]);
/// let reply = fake.chat(ChatRequest::new(vec![Message::user("hi")])).await.unwrap();
/// assert_eq!(reply.message, Message::assistant("hello"));
/// assert_eq!(fake.requests().len(), 1);
/// assert!(fake.chat(ChatRequest::default()).await.is_err());
/// # });
/// ```
#[derive(Debug, Default)]
pub struct FakeProvider {
    script: Mutex<VecDeque<FakeReply>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl FakeProvider {
    /// A provider that plays `script`.
    ///
    /// ```
    /// let fake = memory_core::FakeProvider::new([]);
    /// assert!(fake.requests().is_empty());
    /// ```
    pub fn new(script: impl IntoIterator<Item = FakeReply>) -> Self {
        Self {
            script: Mutex::new(script.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Appends replies to the script.
    ///
    /// ```
    /// let fake = memory_core::FakeProvider::default();
    /// fake.push(memory_core::FakeReply::Text("later".into()));
    /// ```
    pub fn push(&self, reply: FakeReply) {
        self.script
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(reply);
    }

    /// Every request received so far.
    ///
    /// ```
    /// assert!(memory_core::FakeProvider::default().requests().is_empty());
    /// ```
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[async_trait::async_trait]
impl Provider for FakeProvider {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request);
        let next = self
            .script
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        match next {
            Some(FakeReply::Text(text)) => Ok(ChatResponse {
                usage: Usage {
                    input_tokens: 0,
                    output_tokens: crate::CharTokenCounter::estimate(&text) as u64,
                },
                message: Message::assistant(text),
                stop_reason: StopReason::Stop,
            }),
            Some(FakeReply::Response(response)) => Ok(response),
            Some(FakeReply::Error(error)) => Err(error),
            None => Err(ProviderError::Other(
                "FakeProvider script exhausted; script more replies".into(),
            )),
        }
    }
}
