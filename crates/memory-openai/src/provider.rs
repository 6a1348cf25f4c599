//! [`OpenAiProvider`]: a [`Provider`] over HTTP for any OpenAI-compatible
//! Chat Completions endpoint.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use memory_core::{ChatRequest, ChatResponse, Provider, ProviderError};
use reqwest::header::{
    AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER,
};

use memory_layer::parse_retry_after;

use crate::chat::{parse_reply, request_body};
use crate::error::{classify_status, classify_transport};
use crate::key::ApiKey;

/// How long connecting to the endpoint may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A chat model behind an OpenAI-compatible `/chat/completions` endpoint:
/// OpenAI, vLLM, the llama.cpp server, Ollama, gateways.
///
/// - The API key, if any, goes in an `Authorization: Bearer` header, and
///   only where it is meant to go. By default it is read from
///   `OPENAI_API_KEY` ([`DEFAULT_API_KEY_ENV`](crate::DEFAULT_API_KEY_ENV))
///   and sent only to the OpenAI API (`https://api.openai.com`, see
///   [`is_openai_api`](crate::is_openai_api)): a local server, a gateway
///   or a third party gets no key unless one is named for it, read from a
///   variable named with [`with_api_key_env`](Self::with_api_key_env) (a
///   named variable that is unset fails the call with an error naming it)
///   or given with [`with_api_key`](Self::with_api_key). Variables are
///   read at each call, so a rotated key is picked up. The key is never
///   printed: `Debug` shows `<redacted>`.
/// - Headers set with [`with_header`](Self::with_header) go with every call,
///   and a request's [`ModelOptions::headers`](memory_core::ModelOptions)
///   after them (they win).
/// - Each [`chat`](Provider::chat) sends one request and makes one
///   attempt: retries, a limit on how long a call may take, metering and a
///   circuit breaker are [layers](memory_layer) stacked on it, so
///   that they happen in one place. Connecting gives up after 10 s (a
///   network error). A `Retry-After` header of a 429, or of a 503, goes
///   into the [`ProviderError::RateLimited`] it returns, for a
///   [`Retry`](memory_layer::Retry) layer to honour.
/// - `finish_reason` becomes the [`StopReason`](memory_core::StopReason)
///   (`content_filter` a refusal), `usage` the
///   [`Usage`](memory_core::Usage); failures are classified into
///   [`ProviderError`]s that say what to do (see
///   [`classify_status`](crate::classify_status)).
///
/// ```no_run
/// use std::time::Duration;
/// use memory_layer::{ProviderExt, RetryPolicy};
/// use memory_core::{ChatRequest, Message, Provider};
/// use memory_openai::OpenAiProvider;
///
/// # async fn run() -> Result<(), memory_core::ProviderError> {
/// // A local llama.cpp or vLLM server gets no key; OpenAI gets
/// // $OPENAI_API_KEY; a gateway the key of the variable named for it.
/// let local = OpenAiProvider::new("http://127.0.0.1:8080/v1", "qwen2.5-7b-instruct");
/// let gateway = OpenAiProvider::new("https://llm.internal.example/v1", "qwen3")
///     .with_api_key_env("GATEWAY_API_KEY");
/// let openai = OpenAiProvider::new("https://api.openai.com/v1", "gpt-4o-mini")
///     .with_timeout(Duration::from_secs(60))
///     .with_retry(RetryPolicy::default());
/// let reply = openai.chat(ChatRequest::new(vec![Message::user("Say hi")])).await?;
/// println!("{}", reply.message.text());
/// # let _ = (local, gateway);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct OpenAiProvider {
    /// The client, or why it could not be set up (reported at each call).
    client: Result<reqwest::Client, String>,
    base_url: String,
    model: String,
    api_key: ApiKey,
    headers: BTreeMap<String, String>,
    max_tokens_field: &'static str,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.api_key.describe(&self.base_url);
        // Header values may hold credentials too: names only.
        let headers: Vec<&str> = self.headers.keys().map(String::as_str).collect();
        f.debug_struct("OpenAiProvider")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &key)
            .field("headers", &headers)
            .finish()
    }
}

impl OpenAiProvider {
    /// Calls `model` at `base_url` (the part before `/chat/completions`,
    /// e.g. `https://api.openai.com/v1`). When `base_url` is the OpenAI API
    /// the key is `$OPENAI_API_KEY` (none while it is unset); any other
    /// endpoint gets no key until one is named for it.
    ///
    /// ```
    /// let p = memory_openai::OpenAiProvider::new("http://127.0.0.1:11434/v1/", "llama3.2");
    /// assert_eq!(p.endpoint(), "http://127.0.0.1:11434/v1/chat/completions");
    /// assert!(format!("{p:?}").contains("goes only to the OpenAI API"));
    /// ```
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            client: reqwest::Client::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .build()
                .map_err(|e| e.to_string()),
            base_url: base_url.into().trim_end_matches('/').to_string(),
            model: model.into(),
            api_key: ApiKey::Default,
            headers: BTreeMap::new(),
            max_tokens_field: "max_tokens",
        }
    }

    /// Reads the API key from environment variable `var` at each call and
    /// sends it to this endpoint, whatever its host. While `var` is unset or
    /// empty, calls fail with [`ProviderError::Authentication`] naming it,
    /// and nothing is sent.
    ///
    /// ```
    /// let p = memory_openai::OpenAiProvider::new("http://127.0.0.1:4000/v1", "m")
    ///     .with_api_key_env("GATEWAY_API_KEY");
    /// assert!(format!("{p:?}").contains("GATEWAY_API_KEY"));
    /// ```
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key = ApiKey::Env(var.into());
        self
    }

    /// Uses `key` as the API key, for this endpoint whatever its host.
    ///
    /// ```
    /// let p = memory_openai::OpenAiProvider::new("https://api.openai.com/v1", "gpt-4o-mini")
    ///     .with_api_key("sk-secret");
    /// assert!(!format!("{p:?}").contains("sk-secret"));
    /// ```
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = ApiKey::Given(key.into());
        self
    }

    /// Sends requests through `client` (a proxy, other root certificates,
    /// other timeouts) instead of the default one, which gives up
    /// connecting after 10 s.
    ///
    /// ```
    /// let client = reqwest::Client::builder().no_proxy().build().unwrap();
    /// let p = memory_openai::OpenAiProvider::new("http://127.0.0.1:4000/v1", "m")
    ///     .with_client(client);
    /// # let _ = p;
    /// ```
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = Ok(client);
        self
    }

    /// Whether the key can be had now: an error naming the variable when
    /// one was named with [`with_api_key_env`](Self::with_api_key_env) and
    /// is unset or empty (every call would fail so), to check before
    /// starting work.
    ///
    /// # Errors
    ///
    /// [`ProviderError::Authentication`] naming the variable.
    ///
    /// ```
    /// let p = memory_openai::OpenAiProvider::new("http://127.0.0.1:4000/v1", "m")
    ///     .with_api_key_env("MEMORY_DOC_NEVER_SET");
    /// let err = p.check_api_key().unwrap_err();
    /// assert!(err.to_string().contains("MEMORY_DOC_NEVER_SET"));
    /// ```
    pub fn check_api_key(&self) -> Result<(), ProviderError> {
        self.api_key.for_endpoint(&self.base_url).map(drop)
    }

    /// Sends header `name: value` with every call.
    ///
    /// ```
    /// let p = memory_openai::OpenAiProvider::new("http://127.0.0.1:4000/v1", "m")
    ///     .with_header("x-route", "summarizer");
    /// assert!(format!("{p:?}").contains("x-route"));
    /// ```
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Sends the reply cap as `max_completion_tokens`, which OpenAI's
    /// reasoning models require, instead of `max_tokens`, which
    /// OpenAI-compatible servers understand.
    ///
    /// ```
    /// let p = memory_openai::OpenAiProvider::new("https://api.openai.com/v1", "o3-mini")
    ///     .with_max_completion_tokens();
    /// # let _ = p;
    /// ```
    pub fn with_max_completion_tokens(mut self) -> Self {
        self.max_tokens_field = "max_completion_tokens";
        self
    }

    /// The URL requests are posted to.
    ///
    /// ```
    /// let p = memory_openai::OpenAiProvider::new("https://api.openai.com/v1", "gpt-4o-mini");
    /// assert_eq!(p.endpoint(), "https://api.openai.com/v1/chat/completions");
    /// ```
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    /// The model name sent with each request.
    ///
    /// ```
    /// assert_eq!(memory_openai::OpenAiProvider::new("http://x/v1", "m1").model(), "m1");
    /// ```
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The URL of `path` under the base URL.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base_url)
    }

    pub(crate) fn headers(&self, request: &ChatRequest) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = self.api_key.for_endpoint(&self.base_url)? {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.trim())).map_err(|_| {
                    ProviderError::Authentication(
                        "the API key holds characters a header cannot carry; check its value"
                            .into(),
                    )
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        for (name, value) in self.headers.iter().chain(&request.options.headers) {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                ProviderError::Other(format!(
                    "`{name}` is not a valid header name; fix the header options"
                ))
            })?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                ProviderError::Other(format!(
                    "the value of header `{name}` is not valid in a header; fix the header options"
                ))
            })?;
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// Posts `body` once to `path` under the base URL (`chat/completions`,
    /// `embeddings`): the body of a successful response, or the classified
    /// failure.
    pub(crate) async fn post(
        &self,
        path: &str,
        headers: HeaderMap,
        body: &serde_json::Value,
    ) -> Result<String, ProviderError> {
        let client = self.client.as_ref().map_err(|e| {
            ProviderError::Other(format!(
                "the HTTP client could not be set up: {e}; check the system's TLS configuration"
            ))
        })?;
        let response = client
            .post(self.url(path))
            .headers(headers)
            .json(body)
            .send()
            .await
            .map_err(|e| classify_transport(&e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let text = response.text().await.map_err(|e| classify_transport(&e))?;
        if status.is_success() {
            Ok(text)
        } else {
            Err(classify_status(status.as_u16(), retry_after, &text))
        }
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let headers = self.headers(&request)?;
        let body = request_body(&self.model, &request, self.max_tokens_field);
        parse_reply(&self.post("chat/completions", headers, &body).await?)
    }
}
