//! [`MemoryError`], the one error type of the memory contracts.

use crate::provider::ProviderError;
use crate::store::StoreError;

/// What went wrong while recording, counting, trimming or storing.
///
/// Each message says what to do about it.
///
/// ```
/// use memory_core::MemoryError;
///
/// let error = MemoryError::TokenCount("service unavailable".into());
/// assert!(error.to_string().contains("service unavailable"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The token counter could not count.
    #[error(
        "token counting failed: {0}; check the counter (a remote counter may be unreachable) or fall back to CharTokenCounter"
    )]
    TokenCount(String),
    /// A model call made by a strategy failed and the strategy could not
    /// degrade.
    #[error("model call failed: {0}")]
    Provider(#[from] ProviderError),
    /// The store refused or failed an operation.
    #[error("store operation failed: {0}")]
    Store(#[from] StoreError),
    /// A transcript breaks the invariants (tool pairing, order).
    #[error("invalid transcript: {0}; call memory_core::repair on histories loaded from elsewhere")]
    InvalidTranscript(String),
    /// A recall could not be answered: a malformed handle, or one the
    /// session does not hold.
    #[error("recall failed: {0}")]
    Recall(String),
    /// A strategy was configured or called in a way it cannot honour.
    #[error("strategy `{strategy}` failed: {reason}")]
    Strategy {
        /// Name of the strategy.
        strategy: String,
        /// What went wrong and what to change.
        reason: String,
    },
}
