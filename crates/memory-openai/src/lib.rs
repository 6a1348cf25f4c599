//! [`OpenAiProvider`]: a [`Provider`](memory_core::Provider) for any
//! OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, the llama.cpp
//! server, Ollama, gateways), over `reqwest` with rustls. Each call is one
//! request, one attempt; retries, timeouts, metering and a circuit breaker
//! are [`memory_layer`]s, stacked in one line. [`OpenAiEmbedder`] is
//! the same client for `/embeddings`, and [`wire`] the OpenAI chat wire
//! format of a message, which the `memory` command's readers and the server
//! use too.
//!
//! | item | what it is |
//! |---|---|
//! | [`OpenAiProvider`] | the provider: endpoint, model, key, headers |
//! | [`OpenAiEmbedder`] | an [`Embedder`](memory_core::Embedder) over `/embeddings`, endpoint, model, key and headers as the provider's |
//! | [`DEFAULT_API_KEY_ENV`], [`is_openai_api`] | where the key goes: `$OPENAI_API_KEY` only to the OpenAI API, any other endpoint only a key named for it |
//! | [`classify_status`] | HTTP errors as [`ProviderError`](memory_core::ProviderError)s |
//! | [`request_body`], [`parse_reply`], [`stop_reason`] | a Chat Completions request body out, its reply in |
//! | [`wire`] | the OpenAI chat wire format of a message, in and out: [`wire::from_json_str`], [`wire::from_value`], [`wire::to_value`], [`wire::message_from_value`], [`wire::message_to_value`], [`wire::ImportError`], [`wire::kind`] |
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use memory_layer::{ProviderExt, RetryPolicy};
//! use memory_openai::OpenAiProvider;
//!
//! // A local server gets the key of the variable named for it, if any;
//! // `$OPENAI_API_KEY` is sent only to https://api.openai.com.
//! let summarizer = OpenAiProvider::new("http://127.0.0.1:8000/v1", "Qwen/Qwen2.5-7B-Instruct")
//!     .with_api_key_env("VLLM_API_KEY")
//!     .with_timeout(Duration::from_secs(60))
//!     .with_retry(RetryPolicy::default());
//! let provider: Arc<dyn memory_core::Provider> = Arc::new(summarizer);
//! # let _ = provider;
//! ```

mod chat;
mod embedder;
mod error;
mod key;
mod provider;
pub mod wire;

pub use chat::{parse_reply, request_body, stop_reason};
pub use embedder::OpenAiEmbedder;
pub use error::classify_status;
pub use key::{DEFAULT_API_KEY_ENV, is_openai_api};
pub use provider::OpenAiProvider;
