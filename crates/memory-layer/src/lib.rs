//! Layers: [`Provider`](memory_core::Provider) wrappers that add retries,
//! timeouts, metering and a circuit breaker to any provider, in the style
//! of tower (as `tower` keeps its middlewares apart from `tower-service`,
//! this crate keeps them apart from the contracts in `memory-core`). Each
//! is a provider itself, so they stack, and [`ProviderExt`] stacks them in
//! one line:
//!
//! ```
//! use std::time::Duration;
//! use memory_layer::{BreakerPolicy, ProviderExt, RetryPolicy};
//! # let backend = memory_core::FakeProvider::default();
//! let provider = backend
//!     .with_timeout(Duration::from_secs(60))      // each attempt
//!     .with_retry(RetryPolicy::default())           // retryable failures, Retry-After honoured
//!     .with_circuit_breaker(BreakerPolicy::default()); // fail fast while it is down
//! # let _ = provider;
//! ```
//!
//! The order is the nesting: a [`Timeout`] under a [`Retry`] limits each
//! attempt, over it the whole call; a [`Metered`] under a [`Retry`] counts
//! every request sent, over it every call made. Timers ([`Timeout`], the
//! waits of [`Retry`]) run inside a tokio runtime with timers enabled;
//! outside one, calls are not limited and retries follow at once.
//!
//! | item | what it is |
//! |---|---|
//! | [`ProviderExt`] | `with_retry`, `with_timeout`, `metered`, `with_circuit_breaker` on every provider |
//! | [`EmbedderExt`] | `with_retry`, `with_timeout` on every [`Embedder`](memory_core::Embedder): [`Retry`] and [`Timeout`] wrap embedders too |
//! | [`Retry`], [`RetryPolicy`], [`RetryBudget`], [`parse_retry_after`] | retries of retryable failures: backoff, `Retry-After`, a budget as a share of recent calls |
//! | [`Timeout`] | a limit on one call ([`ProviderError::Timeout`](memory_core::ProviderError::Timeout)) |
//! | [`Metered`], [`Meter`], [`ProviderStats`] | calls, tokens and failures counted |
//! | [`FailureClass`], [`FailureCounts`] | why a call came to nothing usable, counted by class (how it ended; a reader that refuses a reply adds it with [`Meter::fail`]) |
//! | [`CallEvent`], [`CallObserver`] | each call's cost and outcome, reported as it ends |
//! | [`CircuitBreaker`], [`BreakerPolicy`] | fail fast after repeated failures, probe after a cool-down |
//! | [`CachedEmbedder`] | an [`Embedder`](memory_core::Embedder) behind a cache keyed by text, batching what it has not seen |

mod breaker;
mod breaker_policy;
mod cached_embedder;
mod embedder_ext;
mod ext;
mod failure;
mod meter;
mod metered;
mod observer;
mod retry;
mod retry_budget;
mod retry_policy;
mod timeout;

pub use breaker::CircuitBreaker;
pub use breaker_policy::BreakerPolicy;
pub use cached_embedder::CachedEmbedder;
pub use embedder_ext::EmbedderExt;
pub use ext::ProviderExt;
pub use failure::{FailureClass, FailureCounts};
pub use meter::{Meter, ProviderStats};
pub use metered::Metered;
pub use observer::{CallEvent, CallObserver};
pub use retry::Retry;
pub use retry_budget::RetryBudget;
pub use retry_policy::{RetryPolicy, parse_retry_after};
pub use timeout::Timeout;
