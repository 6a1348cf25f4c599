//! [`Principal`]: whom a request is for, and [`Keys`]: the keys a server
//! takes, by principal.
//!
//! Everything the server keeps of a session (its messages, its name, its
//! links in the prefix index, its state, the handles that recall from it)
//! lives in its principal's namespace of the store
//! ([`Store::for_tenant`](memory_core::Store::for_tenant)), so a request
//! never sees, continues or recalls another principal's session: to it,
//! such a session is one that does not exist.
//!
//! A request's principal is the name of the key it presents (`--keys`, or
//! `MEMORY_SERVE_TOKEN`, whose principal is [`TOKEN_PRINCIPAL`]); on a
//! server that takes no keys, a keyed hash of the credential the client
//! sends for the upstream, under a secret kept in the store (so that
//! replicas over one store agree, and the credential itself is never
//! kept).

use std::collections::HashMap;

/// The principal of `MEMORY_SERVE_TOKEN`, the one-key shortcut.
pub const TOKEN_PRINCIPAL: &str = "default";

/// Whom a request is for: the tenant its sessions are kept under.
///
/// ```
/// let keys = memory_serve::Keys::parse("alice sk-alice\nbob sk-bob\n").unwrap();
/// assert_eq!(keys.principal("sk-bob").unwrap().tenant(), "key-bob");
/// assert!(keys.principal("sk-carol").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    tenant: String,
}

impl Principal {
    /// The principal of a key named `name`.
    fn of_key(name: &str) -> Self {
        Self {
            tenant: format!("key-{name}"),
        }
    }

    /// The principal of an upstream credential, hashed under `secret`;
    /// `None`: the client sent no credential (every such client is one
    /// principal).
    ///
    /// ```
    /// use memory_serve::Principal;
    /// let secret = [7u8; 32];
    /// let a = Principal::of_credential(&secret, Some("Bearer sk-a"));
    /// assert_eq!(a, Principal::of_credential(&secret, Some("bearer  sk-a")));
    /// assert_ne!(a, Principal::of_credential(&secret, Some("Bearer sk-b")));
    /// assert_ne!(a, Principal::of_credential(&[8u8; 32], Some("Bearer sk-a")));
    /// assert!(!a.tenant().contains("sk-a"));
    /// ```
    pub fn of_credential(secret: &[u8; 32], credential: Option<&str>) -> Self {
        let Some(credential) = credential else {
            return Self {
                tenant: "anonymous".into(),
            };
        };
        let token = bearer(credential).unwrap_or(credential).trim();
        let hash = blake3::keyed_hash(secret, token.as_bytes());
        // 128 bits of the hash name the principal: no two credentials
        // share one in practice, and the name stays short in every row.
        let hex = hash.to_hex();
        Self {
            tenant: format!("cred-{}", &hex[..32]),
        }
    }

    /// The tenant its sessions are kept under in the store.
    ///
    /// ```
    /// let p = memory_serve::Principal::of_credential(&[0; 32], None);
    /// assert_eq!(p.tenant(), "anonymous");
    /// ```
    pub fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// The token of an `Authorization` value of the Bearer scheme, whatever
/// the case of the scheme's name.
pub(crate) fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// The keys a server takes, each with its principal's name; only their
/// hashes are held.
///
/// The file form (`--keys FILE`) has one key per line: a principal's name
/// (letters, digits, `.`, `_`, `-`), a space, and the key itself or its
/// hash as `blake3:HEX` (what `memory serve` prints for a key). Blank
/// lines and lines starting with `#` are skipped. A principal may have
/// several keys.
///
/// ```
/// let hash = memory_serve::Keys::hash("sk-bob");
/// let keys = memory_serve::Keys::parse(&format!("# the team\nalice sk-alice\nbob {hash}\n")).unwrap();
/// assert_eq!(keys.len(), 2);
/// assert_eq!(keys.principal("sk-bob").unwrap().tenant(), "key-bob");
/// assert!(memory_serve::Keys::parse("alice").is_err());
/// ```
#[derive(Clone, Default)]
pub struct Keys {
    by_hash: HashMap<[u8; 32], Principal>,
}

impl Keys {
    /// Reads keys from their file form.
    ///
    /// # Errors
    ///
    /// A line without a name and a key, a name with other characters, a
    /// malformed hash, or a key given twice; the message names the line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut keys = Keys::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = || format!("line {}", n + 1);
            let Some((name, key)) = line.split_once(char::is_whitespace) else {
                return Err(format!("{}: expected `NAME KEY`", at()));
            };
            let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
            if !name.chars().all(valid) {
                return Err(format!(
                    "{}: the name `{name}` may hold only letters, digits, `.`, `_` and `-`",
                    at()
                ));
            }
            let hash = match key.trim().strip_prefix("blake3:") {
                Some(hex) => blake3::Hash::from_hex(hex)
                    .map_err(|e| format!("{}: the hash is not 64 hex digits: {e}", at()))?,
                None => blake3::hash(key.trim().as_bytes()),
            };
            if keys
                .by_hash
                .insert(*hash.as_bytes(), Principal::of_key(name))
                .is_some()
            {
                return Err(format!("{}: the same key is given twice", at()));
            }
        }
        Ok(keys)
    }

    /// The one key of `MEMORY_SERVE_TOKEN`, for [`TOKEN_PRINCIPAL`].
    ///
    /// ```
    /// let keys = memory_serve::Keys::single("s3cret");
    /// assert_eq!(keys.principal("s3cret").unwrap().tenant(), "key-default");
    /// ```
    pub fn single(key: &str) -> Self {
        let mut keys = Keys::default();
        keys.by_hash.insert(
            *blake3::hash(key.as_bytes()).as_bytes(),
            Principal::of_key(TOKEN_PRINCIPAL),
        );
        keys
    }

    /// Adds every key of `other`.
    ///
    /// ```
    /// let mut keys = memory_serve::Keys::single("a");
    /// keys.extend(memory_serve::Keys::parse("bob b").unwrap());
    /// assert_eq!(keys.len(), 2);
    /// ```
    pub fn extend(&mut self, other: Keys) {
        self.by_hash.extend(other.by_hash);
    }

    /// How a key is written hashed in a keys file.
    ///
    /// ```
    /// assert!(memory_serve::Keys::hash("k").starts_with("blake3:"));
    /// ```
    pub fn hash(key: &str) -> String {
        format!("blake3:{}", blake3::hash(key.as_bytes()).to_hex())
    }

    /// The principal of a presented key. The key is hashed first, so the
    /// time taken does not depend on how it compares with any key held.
    pub fn principal(&self, key: &str) -> Option<&Principal> {
        self.by_hash.get(blake3::hash(key.as_bytes()).as_bytes())
    }

    /// How many keys it holds.
    ///
    /// ```
    /// assert!(memory_serve::Keys::default().is_empty());
    /// ```
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Whether it holds no key.
    ///
    /// ```
    /// assert_eq!(memory_serve::Keys::single("k").is_empty(), false);
    /// ```
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("keys", &self.by_hash.len())
            .finish()
    }
}
