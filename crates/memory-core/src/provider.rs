//! The [`Provider`] contract: one chat call to a model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::message::Message;

/// Options of one request: sampling, limits, headers, vendor extras.
///
/// ```
/// let mut options = memory_core::ModelOptions::default();
/// options.max_tokens = Some(512);
/// options.headers.insert("x-tenant".into(), "acme".into());
/// assert_eq!(options.headers.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelOptions {
    /// Sampling temperature; `None` for the vendor's default.
    pub temperature: Option<f32>,
    /// Most tokens in the reply; `None` for the vendor's default.
    pub max_tokens: Option<u32>,
    /// Extra HTTP headers (a gateway route, a tenant id).
    pub headers: BTreeMap<String, String>,
    /// Extra body fields, sent verbatim.
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// One chat request.
///
/// ```
/// use memory_core::{ChatRequest, Message};
/// let request = ChatRequest::new(vec![Message::user("hi")]);
/// assert!(request.tools.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation to send.
    pub messages: Vec<Message>,
    /// Tool definitions, in the vendor's JSON shape.
    pub tools: Vec<serde_json::Value>,
    /// Request options.
    pub options: ModelOptions,
}

impl ChatRequest {
    /// A request with default options and no tools.
    ///
    /// ```
    /// # use memory_core::{ChatRequest, Message};
    /// assert_eq!(ChatRequest::new(vec![]).messages.len(), 0);
    /// ```
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }
}

/// Why the model stopped.
///
/// ```
/// assert!(memory_core::StopReason::Stop.is_complete());
/// assert!(!memory_core::StopReason::Length.is_complete());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// A natural end.
    Stop,
    /// The reply hit the token limit: it is truncated.
    Length,
    /// The model refused (content filter, safety).
    Refusal,
    /// The model asked for tools.
    ToolCalls,
    /// The provider reported an error mid-reply.
    Error,
}

impl StopReason {
    /// Whether the reply ended normally (not truncated, refused or failed).
    ///
    /// ```
    /// assert!(!memory_core::StopReason::Refusal.is_complete());
    /// ```
    pub fn is_complete(self) -> bool {
        matches!(self, StopReason::Stop | StopReason::ToolCalls)
    }
}

/// Tokens a call consumed, as the provider reported them.
///
/// ```
/// let usage = memory_core::Usage { input_tokens: 100, output_tokens: 20 };
/// assert_eq!(usage.total(), 120);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Reply tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output.
    ///
    /// ```
    /// assert_eq!(memory_core::Usage::default().total(), 0);
    /// ```
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// A model's reply.
///
/// ```
/// use memory_core::{ChatResponse, Message, StopReason};
/// let reply = ChatResponse::text("ok");
/// assert_eq!(reply.stop_reason, StopReason::Stop);
/// assert_eq!(reply.message, Message::assistant("ok"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The reply, normally an assistant message.
    pub message: Message,
    /// Token usage of the call.
    pub usage: Usage,
    /// Why the model stopped.
    pub stop_reason: StopReason,
}

impl ChatResponse {
    /// A completed assistant reply with no usage recorded.
    ///
    /// ```
    /// assert_eq!(memory_core::ChatResponse::text("x").usage.total(), 0);
    /// ```
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            message: Message::assistant(content),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
        }
    }
}

/// Why a model call failed. Each message says what to do.
///
/// ```
/// let e = memory_core::ProviderError::RateLimited { retry_after_ms: Some(2000), message: "slow down".into() };
/// assert!(e.is_retryable());
/// assert!(!memory_core::ProviderError::Authentication("bad key".into()).is_retryable());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The endpoint could not be reached.
    #[error("network error: {0}; check the base URL and that the server is up")]
    Network(String),
    /// The call took longer than allowed.
    #[error("request timed out after {0} ms; raise the timeout or use a faster model")]
    Timeout(u64),
    /// Too many requests.
    #[error("rate limited: {message}; retry later or lower the request rate")]
    RateLimited {
        /// What the server asked to wait, when it said.
        retry_after_ms: Option<u64>,
        /// The server's message.
        message: String,
    },
    /// The key was missing, wrong or not allowed.
    #[error("authentication failed: {0}; check the API key and its permissions")]
    Authentication(String),
    /// The request is larger than the model's context window.
    #[error("context overflow: {0}; send less (summarize in chunks or trim first)")]
    ContextOverflow(String),
    /// The reply could not be understood.
    #[error("malformed reply: {0}; check that the endpoint speaks the expected API")]
    MalformedReply(String),
    /// The server failed (5xx).
    #[error("server error {status}: {message}; retry later")]
    Server {
        /// HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// Anything else the provider reported.
    #[error("{0}")]
    Other(String),
    /// A circuit breaker refused the call without sending it: the provider
    /// failed too often in a row (see
    /// `memory_layer::CircuitBreaker`).
    #[error(
        "not sent, the circuit is open: {message}; one probe call goes through in {retry_in_ms} ms, check that the endpoint is up"
    )]
    CircuitOpen {
        /// How long until the breaker lets one probe call through.
        retry_in_ms: u64,
        /// How many calls failed in a row, and the last failure.
        message: String,
    },
}

impl ProviderError {
    /// Whether trying again later may succeed.
    ///
    /// ```
    /// assert!(memory_core::ProviderError::Timeout(10).is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::Network(_)
                | ProviderError::Timeout(_)
                | ProviderError::RateLimited { .. }
                | ProviderError::Server { .. }
        )
    }

    /// How long the server asked to wait before the next call, when it
    /// said (a rate limit's `Retry-After`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use memory_core::ProviderError;
    /// let limited = ProviderError::RateLimited { retry_after_ms: Some(1500), message: "slow down".into() };
    /// assert_eq!(limited.retry_after(), Some(Duration::from_millis(1500)));
    /// assert_eq!(ProviderError::Network("reset".into()).retry_after(), None);
    /// ```
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ProviderError::RateLimited {
                retry_after_ms: Some(ms),
                ..
            } => Some(std::time::Duration::from_millis(*ms)),
            _ => None,
        }
    }
}

/// A chat model behind some API.
///
/// ```
/// use memory_core::{ChatRequest, ChatResponse, Provider, ProviderError};
///
/// /// Replies with the number of messages it was sent.
/// struct Counting;
///
/// #[async_trait::async_trait]
/// impl Provider for Counting {
///     async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
///         Ok(ChatResponse::text(request.messages.len().to_string()))
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// Sends one request.
    ///
    /// # Errors
    ///
    /// A [`ProviderError`] classifying the failure.
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError>;
}

#[async_trait::async_trait]
impl<T: Provider + ?Sized> Provider for std::sync::Arc<T> {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        (**self).chat(request).await
    }
}

#[async_trait::async_trait]
impl<T: Provider + ?Sized> Provider for Box<T> {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        (**self).chat(request).await
    }
}
