//! [`Key`]: the checked `(tenant, session)` key of a session.

use memory_core::StoreError;
use memory_core::store::check_session;

/// The `(tenant, session)` key of a session, both checked.
///
/// ```
/// use memory_store_support::Key;
/// let key = Key::new(Some("acme"), "s1").unwrap();
/// assert_eq!((key.tenant.as_str(), key.session.as_str()), ("acme", "s1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The tenant, `""` for the unnamed namespace.
    pub tenant: String,
    /// The session id.
    pub session: String,
}

impl Key {
    /// `tenant` is `None` for the unnamed namespace (stored as `''`).
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidSession`] for an empty id or one with control
    /// characters, in the session or the tenant.
    ///
    /// ```
    /// use memory_store_support::Key;
    /// assert_eq!(Key::new(None, "s").unwrap().tenant, "");
    /// assert!(Key::new(Some("a\tb"), "s").is_err());
    /// ```
    pub fn new(tenant: Option<&str>, session: &str) -> Result<Self, StoreError> {
        check_session(session)?;
        let tenant = match tenant {
            None => String::new(),
            Some(t) => {
                if check_session(t).is_err() {
                    return Err(StoreError::InvalidSession(format!("{t}/{session}")));
                }
                t.to_string()
            }
        };
        Ok(Self {
            tenant,
            session: session.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_and_sessions_are_checked() {
        assert_eq!(Key::new(None, "s").unwrap().tenant, "");
        assert_eq!(Key::new(Some("acme"), "s").unwrap().tenant, "acme");
        assert!(Key::new(Some(""), "s").is_err());
        assert!(Key::new(Some("a\tb"), "s").is_err());
        assert!(Key::new(None, "").is_err());
    }
}
