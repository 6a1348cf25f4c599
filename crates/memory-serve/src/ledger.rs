//! [`Ledger`]: where the server keeps, in the sessions' own [`Store`], which
//! session each history belongs to, and each session's state.
//!
//! Both live as small sessions of the store, so every store (in-memory,
//! SQLite, PostgreSQL) holds them with no schema of its own, and every
//! replica over one store sees them:
//!
//! - `memory-serve/prefix/<link>`: the session whose history, up to some
//!   length, ends at that link of the [`Chain`]: one JSON system message
//!   `{"session", "length"}`. The first one appended wins.
//! - `memory-serve/head/<session>`: the session's state, a
//!   [`SessionState`], rewritten with [`Store::replace_view`] against the
//!   version read, so that two replicas writing one state at once find out.
//!   The key still says `head`, the type's former name, so that what
//!   stores already hold is read as before.

use std::sync::Arc;

use memory_core::{Message, Store, StoreError, StoreWrite, StoredMessage, Version};
use serde::{Deserialize, Serialize};

use crate::{CallReport, Chain};

/// What sessions of the server are named with, which no client may use.
pub const RESERVED_PREFIX: &str = "memory-serve/";

/// A session's state as the server keeps it in the store: how long its
/// history is, the link it ends at, its tokens, and the report of its last
/// call.
///
/// ```
/// let state = memory_serve::SessionState::default();
/// assert_eq!(state.length, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// Messages in the history.
    pub length: usize,
    /// The history's last link, in hex.
    pub link: String,
    /// Tokens of the whole history, by the server's counter.
    pub history_tokens: usize,
    /// The report of the session's last call, if any.
    pub last_call: Option<CallReport>,
    /// When the session was last written, in seconds since the Unix
    /// epoch (0: before this was kept); what `--session-ttl` counts from.
    #[serde(default)]
    pub updated: u64,
}

/// The former name of [`SessionState`], kept for one release.
///
/// ```
/// #[allow(deprecated)]
/// let head = memory_serve::Head::default();
/// assert_eq!(head, memory_serve::SessionState::default());
/// ```
#[deprecated(note = "renamed to SessionState")]
pub type Head = SessionState;

/// An entry of the prefix index.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    session: String,
    length: usize,
}

/// The prefix index and the sessions' states, over a [`Store`].
#[derive(Clone)]
pub(crate) struct Ledger {
    store: Arc<dyn Store>,
}

fn prefix_key(link: &Chain) -> String {
    format!("{RESERVED_PREFIX}prefix/{}", link.to_hex())
}

/// The store session (outside every tenant) that holds the server's
/// secret.
const SECRET_KEY: &str = "memory-serve/secret";

/// The store session that holds `session`'s state.
fn state_key(session: &str) -> String {
    format!("{RESERVED_PREFIX}head/{session}")
}

fn record(value: &impl Serialize) -> Vec<StoredMessage> {
    let text = serde_json::to_string(value).unwrap_or_default();
    vec![StoredMessage::new(Message::system(text), 0, true)]
}

fn parse<T: for<'de> Deserialize<'de>>(stored: &[StoredMessage]) -> Option<T> {
    match stored.first().map(|s| &s.message) {
        Some(Message::System(text)) => serde_json::from_str(text).ok(),
        _ => None,
    }
}

impl Ledger {
    pub(crate) fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// The server's secret (what it hashes credentials with), made and
    /// kept by the first replica that asks: the first one appended wins,
    /// so every replica over one store reads the same.
    pub(crate) async fn secret(&self) -> Result<[u8; 32], StoreError> {
        let parse = |stored: &[StoredMessage]| match stored.first().map(|s| &s.message) {
            Some(Message::System(hex)) => blake3::Hash::from_hex(hex.trim())
                .ok()
                .map(|h| *h.as_bytes()),
            _ => None,
        };
        if let Some(secret) = parse(&self.store.load(SECRET_KEY).await?.messages) {
            return Ok(secret);
        }
        // Two random UUIDs: 244 random bits from the system's source.
        let mut fresh = [0u8; 32];
        fresh[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        fresh[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        let text = blake3::Hash::from_bytes(fresh).to_hex().to_string();
        self.store
            .append(
                SECRET_KEY,
                vec![StoredMessage::new(Message::system(text), 0, true)],
            )
            .await?;
        parse(&self.store.load(SECRET_KEY).await?.messages)
            .ok_or_else(|| StoreError::Backend(format!("`{SECRET_KEY}` holds no secret")))
    }

    /// The session and length that `link` ends, if any history does.
    pub(crate) async fn find(&self, link: &Chain) -> Result<Option<(String, usize)>, StoreError> {
        let snapshot = self.store.load(&prefix_key(link)).await?;
        Ok(parse::<Entry>(&snapshot.messages).map(|e| (e.session, e.length)))
    }

    /// Notes that `session`'s history of `length` messages ends at `link`.
    pub(crate) async fn note(
        &self,
        link: &Chain,
        session: &str,
        length: usize,
    ) -> Result<(), StoreError> {
        let entry = Entry {
            session: session.to_string(),
            length,
        };
        self.store.append(&prefix_key(link), record(&entry)).await?;
        Ok(())
    }

    /// The write [`note`](Self::note) makes, to go with others.
    pub(crate) fn note_write(link: &Chain, session: &str, length: usize) -> StoreWrite {
        let entry = Entry {
            session: session.to_string(),
            length,
        };
        StoreWrite::Append {
            session: prefix_key(link),
            messages: record(&entry),
        }
    }

    /// The write [`set_session_state`](Self::set_session_state) makes, to
    /// go with others; its answer is read by [`state_written`].
    pub(crate) fn state_write(
        session: &str,
        state: &SessionState,
        read: Option<Version>,
    ) -> StoreWrite {
        let key = state_key(session);
        match read {
            Some(expected) => StoreWrite::Replace {
                session: key,
                expected,
                view: record(state),
            },
            None => StoreWrite::Append {
                session: key,
                messages: record(state),
            },
        }
    }

    /// Erases the session's state.
    pub(crate) async fn forget(&self, session: &str) -> Result<(), StoreError> {
        self.store.delete(&crate::kept::key(session)).await?;
        self.store.delete(&state_key(session)).await
    }

    /// The session's state and the version it was read at; `None` for a
    /// session with no state stored.
    pub(crate) async fn session_state(
        &self,
        session: &str,
    ) -> Result<Option<(SessionState, Version)>, StoreError> {
        let snapshot = self.store.load(&state_key(session)).await?;
        Ok(parse::<SessionState>(&snapshot.messages).map(|state| (state, snapshot.version)))
    }

    /// Writes the session's state over the one read at `read` (`None`:
    /// there was none); returns the new version.
    ///
    /// A [`StoreError::Conflict`] says another replica wrote it first.
    pub(crate) async fn set_session_state(
        &self,
        session: &str,
        state: &SessionState,
        read: Option<Version>,
    ) -> Result<Version, StoreError> {
        let write = Self::state_write(session, state, read);
        let answer = self.store.write_all(vec![write]).await.remove(0);
        state_written(session, read, answer)
    }
}

/// The new version of a session's state from the answer of its
/// [`Ledger::state_write`] over the state read at `read`.
///
/// A [`StoreError::Conflict`] says another replica wrote it first.
pub(crate) fn state_written(
    session: &str,
    read: Option<Version>,
    answer: Result<Version, StoreError>,
) -> Result<Version, StoreError> {
    let version = answer?;
    if read.is_none() && version != 1 {
        // Another replica created it in the meantime.
        return Err(StoreError::Conflict {
            session: state_key(session),
            expected: 0,
            actual: version,
        });
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::InMemoryStore;

    #[tokio::test]
    async fn the_secret_is_made_once_and_read_by_every_replica() {
        let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
        let a = Ledger::new(store.clone()).secret().await.unwrap();
        let b = Ledger::new(store).secret().await.unwrap();
        assert_eq!(a, b);
        assert_ne!(
            a,
            Ledger::new(Arc::new(InMemoryStore::new()))
                .secret()
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn the_first_note_wins_and_states_are_compared_and_set() {
        let ledger = Ledger::new(Arc::new(InMemoryStore::new()));
        let link = Chain::START.then(&Message::user("hi"));
        assert_eq!(ledger.find(&link).await.unwrap(), None);
        ledger.note(&link, "a", 1).await.unwrap();
        ledger.note(&link, "b", 1).await.unwrap();
        assert_eq!(ledger.find(&link).await.unwrap(), Some(("a".into(), 1)));

        assert!(ledger.session_state("a").await.unwrap().is_none());
        let state = SessionState {
            length: 1,
            link: link.to_hex(),
            history_tokens: 1,
            last_call: None,
            updated: 0,
        };
        let v = ledger.set_session_state("a", &state, None).await.unwrap();
        assert_eq!(
            ledger.session_state("a").await.unwrap(),
            Some((state.clone(), v))
        );
        let v2 = ledger
            .set_session_state("a", &state, Some(v))
            .await
            .unwrap();
        assert!(matches!(
            ledger.set_session_state("a", &state, Some(v)).await,
            Err(StoreError::Conflict { .. })
        ));
        assert!(v2 > v);
        assert!(ledger.set_session_state("a", &state, None).await.is_err());
    }
}
