//! Driver errors as store errors.

use memory_core::StoreError;

/// A driver error as a store error, with the server's message.
pub(crate) fn backend(e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Backend(format!(
            "postgres: {} {}: {}{}",
            db.severity(),
            db.code().code(),
            db.message(),
            db.detail().map(|d| format!(" ({d})")).unwrap_or_default()
        )),
        None => {
            // The driver's message names the step ("error performing TLS
            // handshake"); its sources say what went wrong.
            let mut text = format!("postgres: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            StoreError::Backend(text)
        }
    }
}
