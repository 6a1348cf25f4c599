//! Compaction as the Responses API asks for it (`POST /responses/compact`,
//! a `compaction_trigger` item, `context_management`), answered by the
//! server for any upstream, with no model call.
//!
//! A compaction is one `compaction` item whose `encrypted_content` is a
//! *handle*: it names the session and how many of its messages the
//! compaction stands for, and carries a MAC under the server's secret
//! over those and the caller's tenant, so that a forged handle, or one
//! of another principal, is refused. The session keeps every message, as
//! always: a later request holding the item gets, in its place, the
//! messages it stands for, and the session's pipeline fits them, as it
//! fits every call. Nothing is lost, and the client holds a short history.

use memory_core::Message;
use serde_json::{Value, json};

use crate::ApiError;
use crate::protocol::Decoded;
use crate::protocol::responses::reply::new_id;
use crate::sessions::Scope;
use crate::state::AppState;

/// The start of every handle this server makes (a version, so that a
/// later form can be told apart).
const PREFIX: &str = "mcmp1";

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
        let mac = blake3::keyed_hash(secret, format!("{tenant}\u{0}{body}").as_bytes());
        format!("{body}.{}", &mac.to_hex()[..32])
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
        let handle = parse(text).ok_or_else(refused)?;
        if handle.seal(secret, tenant) != text {
            return Err(refused());
        }
        Ok(Some(handle))
    }
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
pub(crate) fn item(handle: String) -> Value {
    json!({"type": "compaction", "id": new_id("cmp"), "encrypted_content": handle})
}

/// Puts, in place of each compaction item of this server in `request`,
/// the messages its handle stands for (and, for an upstream of the
/// client's protocol, their originals), dropping the messages before it
/// that those hold. A provider's own compaction stays as it came.
///
/// # Errors
///
/// A 400 for a handle not made for this caller, one of another of the
/// client's conversations (`group`), or one naming messages its session
/// no longer holds.
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
    let resumed = state
        .sessions
        .resume(scope, &handle.session, handle.length, request)
        .await?;
    let Some(held) = resumed else {
        return Err(ApiError::bad_request(
            format!("`{at}`: the compaction names messages its session no longer holds"),
            Some(&at),
        ));
    };
    // Only the last compaction counts: it stands for all before it.
    let before: Vec<Message> = request.messages.drain(..=*index).collect();
    let kept: Vec<Message> = before[..*index]
        .iter()
        .filter(|m| !held.contains(m))
        .cloned()
        .collect();
    let after = std::mem::take(&mut request.messages);
    request.messages = [held, kept, after].concat();
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
