//! SQLite errors as store errors, and how long a write waits for the lock
//! that their busy message names.

use std::time::Duration;

use memory_core::StoreError;
use rusqlite::ErrorCode;

/// How long a write waits for another process's write to finish.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A SQLite error as a store error; a lock that stayed taken past
/// [`BUSY_TIMEOUT`] says so.
pub(crate) fn backend(e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) {
        StoreError::Backend(format!(
            "the SQLite file stayed locked by another writer for over {} s; retry later ({e})",
            BUSY_TIMEOUT.as_secs()
        ))
    } else {
        StoreError::Backend(format!("sqlite: {e}"))
    }
}
