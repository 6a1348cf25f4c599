//! Compaction as the Responses API asks for it (`POST /responses/compact`,
//! a `compaction_trigger` item, `context_management`), answered by the
//! server for any upstream, with no model call of its own.
//!
//! A compaction fits the session into [`COMPACTED_SHARE`] of the call's
//! budget with the session's pipeline (a summarizing stage summarizes
//! then, and falls back as it always does), keeps that context in the
//! store, and answers one `compaction` item whose `encrypted_content` is a
//! *handle*: it names the session and the compaction, and carries a MAC
//! under the server's secret over those and the caller's tenant, so that
//! a forged handle, or one of another principal, is refused. A later
//! request holding the item gets the kept context in its place. The
//! session the compaction was made from keeps every message.

use memory_core::{Message, Store, StoreError, StoreWrite};
use serde_json::{Value, json};

use crate::ApiError;
use crate::ledger::RESERVED_PREFIX;
use crate::protocol::Decoded;
use crate::protocol::responses::reply::new_id;
use crate::sessions::{OpenSession, Scope};
use crate::state::AppState;
use crate::upstream::Call;

/// The start of every handle this server makes (a version, so that a
/// later form can be told apart).
const PREFIX: &str = "mcmp1";

/// The share of the call's budget a compaction fits the context into: a
/// client that compacts when its context passes a limit below the budget
/// (Codex's `model_auto_compact_token_limit`) has the rest to work in
/// before it compacts again; a share near one would have it compact at
/// every turn, a small one sheds more than the compaction needs to.
pub(crate) const COMPACTED_SHARE: f64 = 0.5;

/// Where the context of the compaction of session `session` at `length`
/// messages is kept.
fn key(session: &str, length: usize) -> String {
    format!("{RESERVED_PREFIX}compactions/{session}/{length}")
}

/// The write that keeps `context`, the compaction of `session` at
/// `length` messages.
pub(crate) fn write(session: &str, length: usize, context: &[Message]) -> Option<StoreWrite> {
    crate::record::write(key(session, length), &context)
}

/// The context of the compaction `handle` names, when it is kept.
async fn load(store: &dyn Store, handle: &Handle) -> Result<Option<Vec<Message>>, StoreError> {
    crate::record::read(store, &key(&handle.session, handle.length)).await
}

/// Who answers a client's request to compact.
///
/// ```
/// use memory_serve::Compaction;
/// assert_eq!("ours".parse::<Compaction>().unwrap(), Compaction::Ours);
/// assert!("theirs".parse::<Compaction>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compaction {
    /// A Responses upstream compacts (its own opaque items pass through).
    Native,
    /// The server does, for any upstream.
    Ours,
}

impl std::str::FromStr for Compaction {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "native" => Ok(Compaction::Native),
            "ours" => Ok(Compaction::Ours),
            other => Err(format!("`{other}`: expected native or ours")),
        }
    }
}

/// What a handle names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handle {
    /// The session.
    pub(crate) session: String,
    /// How many of its messages the compaction stands for.
    pub(crate) length: usize,
    /// The client's name for its conversation when it was made, if any.
    pub(crate) group: Option<String>,
}

impl Handle {
    /// The handle's text, with its MAC for `tenant` under `secret`.
    pub(crate) fn seal(&self, secret: &[u8; 32], tenant: &str) -> String {
        let body = self.body();
        format!("{body}.{}", mac(secret, tenant, &body).to_hex())
    }

    fn body(&self) -> String {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        format!(
            "{PREFIX}.{}.{}.{}",
            b64.encode(&self.session),
            self.length,
            b64.encode(self.group.as_deref().unwrap_or_default())
        )
    }

    /// The handle `text` names, when this server made it for `tenant`;
    /// `None` for a handle of another form (a provider's own compaction).
    ///
    /// # Errors
    ///
    /// A 400 naming `at` when it has this server's form but was not made
    /// for this caller (forged, or another principal's).
    pub(crate) fn open(
        text: &str,
        secret: &[u8; 32],
        tenant: &str,
        at: &str,
    ) -> Result<Option<Handle>, ApiError> {
        if !text.starts_with(PREFIX) {
            return Ok(None);
        }
        let refused = || {
            ApiError::bad_request(
                format!(
                    "`{at}`: the compaction handle was not made by this server for this caller"
                ),
                Some(at),
            )
        };
        let (body, given) = text.rsplit_once('.').ok_or_else(refused)?;
        let given = blake3::Hash::from_hex(given).map_err(|_| refused())?;
        // Compared in constant time (`Hash`'s equality).
        if given != mac(secret, tenant, body) {
            return Err(refused());
        }
        let handle = parse(text).ok_or_else(refused)?;
        if handle.body() != body {
            return Err(refused());
        }
        Ok(Some(handle))
    }
}

/// The MAC of a handle's `body` for `tenant`, under a key of its own
/// derived from the server's secret (which also keys other things).
fn mac(secret: &[u8; 32], tenant: &str, body: &str) -> blake3::Hash {
    let key = blake3::derive_key("memory-serve 2026 compaction handle", secret);
    blake3::keyed_hash(&key, format!("{tenant}\u{0}{body}").as_bytes())
}

fn parse(text: &str) -> Option<Handle> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts = text.split('.');
    let (_, session, length, group, _mac) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    let group = String::from_utf8(b64.decode(group).ok()?).ok()?;
    Some(Handle {
        session: String::from_utf8(b64.decode(session).ok()?).ok()?,
        length: length.parse().ok()?,
        group: (!group.is_empty()).then_some(group),
    })
}

/// The compaction item holding `handle`.
fn item(handle: String) -> Value {
    json!({"type": "compaction", "id": new_id("cmp"), "encrypted_content": handle})
}

/// Compacts `session` for `call`: its history fitted into
/// [`COMPACTED_SHARE`] of the call's budget and kept (with the originals
/// of the call's messages, for an upstream of the client's protocol);
/// the compaction item standing for it, and its size in tokens.
pub(crate) async fn make(
    state: &AppState,
    session: &mut OpenSession,
    call: &Call,
) -> Result<(Value, usize), ApiError> {
    let budget = state.config.budget.for_call(call.request.max_tokens);
    let share = (budget as f64 * COMPACTED_SHARE) as usize;
    let fitted = state.sessions.fit(session, share).await?;
    let handle = Handle {
        session: session.id.clone(),
        length: session.length,
        group: call.group.clone(),
    };
    let mut writes: Vec<StoreWrite> = write(&handle.session, handle.length, &fitted.messages)
        .into_iter()
        .collect();
    if call.request.front == state.config.upstream_api {
        let originals = call.request.originals.kept_for(&call.messages);
        writes.extend(crate::kept::write(&handle.session, originals));
    }
    for result in call.scope.store().write_all(writes).await {
        result?;
    }
    let secret = state.sessions.secret().await?;
    let sealed = handle.seal(&secret, call.scope.tenant());
    Ok((item(sealed), fitted.tokens()))
}

/// Puts, in place of the last compaction item of this server in
/// `request` (it stands for all before it), the context it stands for
/// (and, for an upstream of the client's protocol, the originals of its
/// messages), dropping the messages before it that the context holds. A
/// provider's own compaction stays as it came.
///
/// # Errors
///
/// A 400 for a handle not made for this caller, one of another of the
/// client's conversations (`group`), or one whose context is not kept.
pub(crate) async fn expand(
    state: &AppState,
    scope: &Scope,
    request: &mut Decoded,
    group: Option<&str>,
) -> Result<(), ApiError> {
    let compactions = std::mem::take(&mut request.asks.compactions);
    let Some((index, item, text)) = compactions.last() else {
        return Ok(());
    };
    let at = format!("input[{item}].encrypted_content");
    let secret = state.sessions.secret().await?;
    let Some(handle) = Handle::open(text, &secret, scope.tenant(), &at)? else {
        return Ok(());
    };
    if let (Some(mine), Some(theirs)) = (group, handle.group.as_deref())
        && mine != theirs
    {
        return Err(ApiError::bad_request(
            format!("`{at}`: the compaction belongs to another conversation"),
            Some(&at),
        ));
    }
    let Some(held) = load(&*scope.store(), &handle).await? else {
        return Err(ApiError::bad_request(
            format!("`{at}`: the compaction's context is no longer kept"),
            Some(&at),
        ));
    };
    // What the client sends again before the item (its instructions, its
    // environment, earlier requests of the user) and the context does not
    // hold goes after the context's own instructions, before the rest.
    let before: Vec<Message> = request.messages.drain(..=*index).collect();
    let kept: Vec<Message> = before[..*index]
        .iter()
        .filter(|m| !held.contains(m))
        .cloned()
        .collect();
    let after = std::mem::take(&mut request.messages);
    let lead = held.iter().take_while(|m| m.is_system()).count();
    let (instructions, rest) = held.split_at(lead);
    request.messages = [instructions, &kept, rest, &after].concat();
    if request.front == state.config.upstream_api {
        request.stored = state
            .sessions
            .kept_originals(scope, &handle.session)
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_opens_for_its_maker_and_tenant_only() {
        let handle = Handle {
            session: "s.1/x".into(),
            length: 42,
            group: Some("g".into()),
        };
        let secret = [7; 32];
        let text = handle.seal(&secret, "alice");
        assert_eq!(
            Handle::open(&text, &secret, "alice", "at").unwrap(),
            Some(handle.clone())
        );
        assert!(Handle::open(&text, &secret, "bob", "at").is_err());
        assert!(Handle::open(&text, &[8; 32], "alice", "at").is_err());
        let forged = text.replace(".42.", ".41.");
        let e = Handle::open(&forged, &secret, "alice", "input[3].encrypted_content").unwrap_err();
        assert!(e.to_string().contains("input[3].encrypted_content"), "{e}");
        assert_eq!(
            Handle::open("gAAAA-native", &secret, "alice", "at").unwrap(),
            None
        );
    }
}
