//! Versions and counts to and from the signed 64-bit columns SQL offers.

use memory_core::StoreError;

/// A stored 64-bit value as the unsigned number it stands for.
///
/// # Errors
///
/// [`StoreError::Backend`] for a negative value; `what` names it.
///
/// ```
/// assert_eq!(memory_store_support::to_u64(7, "version").unwrap(), 7);
/// let e = memory_store_support::to_u64(-1, "version").unwrap_err();
/// assert!(e.to_string().contains("version of -1"));
/// ```
pub fn to_u64(value: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| {
        StoreError::Backend(format!(
            "a stored {what} of {value} is negative: the database was altered outside this library"
        ))
    })
}

/// A number as a 64-bit column holds it.
///
/// # Errors
///
/// [`StoreError::Backend`] past `i64::MAX`; `what` names it.
///
/// ```
/// assert_eq!(memory_store_support::to_i64(7, "version").unwrap(), 7);
/// assert!(memory_store_support::to_i64(u64::MAX, "version").is_err());
/// ```
pub fn to_i64(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| {
        StoreError::Backend(format!("a {what} of {value} does not fit a 64-bit column"))
    })
}
