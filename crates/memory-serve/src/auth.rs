//! Who a request is for ([`Caller`]), and which credential goes upstream.

use axum::http::{HeaderMap, HeaderName, HeaderValue, header::AUTHORIZATION};

use crate::principal::bearer;
use crate::{ApiError, Principal, Protocol, ServeConfig};

/// The header a client presents the server's key in when its own
/// `Authorization` is meant for the upstream.
pub const TOKEN_HEADER: &str = "x-memory-token";

/// The header Anthropic's clients send their key in.
const API_KEY_HEADER: &str = "x-api-key";

/// How Anthropic's sign-in (OAuth) tokens begin: sent as a bearer token,
/// never as `x-api-key`.
const OAUTH_TOKEN_PREFIX: &str = "sk-ant-oat";

/// A request's principal, and the credential sent upstream for it.
pub(crate) struct Caller {
    pub(crate) principal: Principal,
    pub(crate) upstream: Option<Credential>,
}

/// The credential sent upstream, as the client presented it.
#[derive(Debug, Clone)]
pub(crate) enum Credential {
    /// An `Authorization` header (or the configured upstream key, as
    /// `Bearer`).
    Authorization(HeaderValue),
    /// A bare key, as Anthropic's clients send it in `x-api-key`.
    Key(HeaderValue),
}

impl Credential {
    /// The header that carries it to an upstream of protocol `api`: its
    /// key in `x-api-key` for Messages, as `Authorization: Bearer` for
    /// Chat Completions; an `Authorization` of another scheme as it is.
    pub(crate) fn for_upstream(&self, api: Protocol) -> (HeaderName, HeaderValue) {
        let sensitive = |mut v: HeaderValue| {
            v.set_sensitive(true);
            v
        };
        match (self, api) {
            (Credential::Authorization(v), Protocol::Chat | Protocol::Responses) => {
                (AUTHORIZATION, sensitive(v.clone()))
            }
            (Credential::Key(k), Protocol::Chat | Protocol::Responses) => {
                let bearer = HeaderValue::from_bytes(&[b"Bearer ", k.as_bytes()].concat())
                    .unwrap_or_else(|_| k.clone());
                (AUTHORIZATION, sensitive(bearer))
            }
            (Credential::Authorization(v), Protocol::Messages) => {
                // An API key goes as Anthropic takes keys; a sign-in token
                // (Claude Code's OAuth, `sk-ant-oat...`) stays a bearer.
                let key = v
                    .to_str()
                    .ok()
                    .and_then(bearer)
                    .filter(|k| !k.starts_with(OAUTH_TOKEN_PREFIX))
                    .and_then(|k| HeaderValue::from_str(k).ok());
                match key {
                    Some(key) => (HeaderName::from_static(API_KEY_HEADER), sensitive(key)),
                    None => (AUTHORIZATION, sensitive(v.clone())),
                }
            }
            (Credential::Key(k), Protocol::Messages) => (
                HeaderName::from_static(API_KEY_HEADER),
                sensitive(k.clone()),
            ),
        }
    }
}

/// Finds the request's principal and says which credential to send
/// upstream.
///
/// A server that takes keys (`--keys`, `MEMORY_SERVE_TOKEN`) asks for one,
/// as `Authorization: Bearer <key>` or `x-api-key: <key>` (the configured
/// upstream key then goes upstream) or in [`TOKEN_HEADER`] (the client's
/// own `Authorization` or `x-api-key` then goes upstream, unless it is a
/// server key too); the principal is the key's. A server that takes none
/// hashes the client's upstream credential under `secret` into its
/// principal. A server key never goes upstream; the client's credential
/// goes nowhere else.
///
/// # Errors
///
/// 401 when the server takes keys and the request presents none of them.
pub(crate) fn identify(
    config: &ServeConfig,
    headers: &HeaderMap,
    secret: &[u8; 32],
) -> Result<Caller, ApiError> {
    let authorization = headers.get(AUTHORIZATION).cloned();
    let api_key = headers.get(API_KEY_HEADER).cloned();
    if !takes_keys(config) {
        let credential = authorization
            .as_ref()
            .or(api_key.as_ref())
            .and_then(|v| v.to_str().ok());
        let principal = Principal::of_credential(secret, credential);
        let upstream = authorization
            .map(Credential::Authorization)
            .or(api_key.map(Credential::Key))
            .or_else(|| upstream_key(config));
        return Ok(Caller {
            principal,
            upstream,
        });
    }
    let server_key = |v: &Option<HeaderValue>, bare: bool| {
        let text = v.as_ref()?.to_str().ok()?;
        principal_of(config, if bare { text.trim() } else { bearer(text)? })
    };
    let by_authorization = server_key(&authorization, false);
    let by_api_key = server_key(&api_key, true);
    if let Some(presented) = headers.get(TOKEN_HEADER) {
        let principal = presented
            .to_str()
            .ok()
            .and_then(|k| principal_of(config, k.trim()))
            .ok_or_else(ApiError::unauthorized)?;
        // The client's own credential goes upstream, unless it is a key of
        // this server.
        let own = authorization
            .filter(|_| by_authorization.is_none())
            .map(Credential::Authorization)
            .or(api_key
                .filter(|_| by_api_key.is_none())
                .map(Credential::Key));
        return Ok(Caller {
            principal,
            upstream: own.or_else(|| upstream_key(config)),
        });
    }
    match by_authorization.or(by_api_key) {
        Some(principal) => Ok(Caller {
            principal,
            upstream: upstream_key(config),
        }),
        None => Err(ApiError::unauthorized()),
    }
}

/// Whether the server asks for a key.
pub(crate) fn takes_keys(config: &ServeConfig) -> bool {
    !config.keys.is_empty() || config.token.is_some()
}

/// The principal of a presented key, if the server takes it.
fn principal_of(config: &ServeConfig, key: &str) -> Option<Principal> {
    if let Some(p) = config.keys.principal(key) {
        return Some(p.clone());
    }
    let token = config.token.as_deref()?;
    crate::Keys::single(token).principal(key).cloned()
}

/// The configured upstream key, as a (sensitive) credential.
fn upstream_key(config: &ServeConfig) -> Option<Credential> {
    config
        .upstream_key
        .as_ref()
        .and_then(|k| HeaderValue::from_str(k).ok())
        .map(|mut v| {
            v.set_sensitive(true);
            Credential::Key(v)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const SECRET: [u8; 32] = [1; 32];

    fn config(token: Option<&str>, key: Option<&str>) -> ServeConfig {
        let mut c = ServeConfig::new(
            "http://u/v1",
            Arc::new(|| {
                Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>
            }),
            Arc::new(memory_core::InMemoryStore::new()),
        )
        .with_token(token.map(str::to_string));
        c.upstream_key = key.map(str::to_string);
        c
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn upstream(c: &ServeConfig, h: &[(&'static str, &str)]) -> Result<Option<String>, u16> {
        identify(c, &headers(h), &SECRET)
            .map(|caller| {
                caller.upstream.map(|c| {
                    c.for_upstream(Protocol::Chat)
                        .1
                        .to_str()
                        .unwrap()
                        .to_string()
                })
            })
            .map_err(|e| e.status().as_u16())
    }

    #[test]
    fn without_keys_the_clients_key_goes_upstream_and_names_the_principal() {
        let c = config(None, Some("k2"));
        assert_eq!(
            upstream(&c, &[("authorization", "Bearer sk-1")]),
            Ok(Some("Bearer sk-1".into()))
        );
        assert_eq!(upstream(&c, &[]), Ok(Some("Bearer k2".into())));
        let of = |h: &[(&'static str, &str)]| identify(&c, &headers(h), &SECRET).ok().unwrap();
        let a = of(&[("authorization", "Bearer sk-1")]).principal;
        assert_eq!(a, of(&[("authorization", "bearer sk-1")]).principal);
        assert_eq!(a, of(&[("x-api-key", "sk-1")]).principal);
        assert_ne!(a, of(&[("authorization", "Bearer sk-2")]).principal);
        assert_ne!(a, of(&[]).principal);
    }

    #[test]
    fn the_servers_key_is_asked_for_and_never_sent_upstream() {
        let c = config(Some("t0k"), Some("up"));
        assert_eq!(upstream(&c, &[]), Err(401));
        assert_eq!(upstream(&c, &[("authorization", "Bearer wrong")]), Err(401));
        assert_eq!(upstream(&c, &[("authorization", "Bearer t0")]), Err(401));
        assert_eq!(
            upstream(&c, &[("authorization", "Bearer t0k")]),
            Ok(Some("Bearer up".into()))
        );
        assert_eq!(
            upstream(&c, &[("authorization", "BEARER t0k")]),
            Ok(Some("Bearer up".into()))
        );
        assert_eq!(
            upstream(
                &c,
                &[("authorization", "Bearer sk-client"), (TOKEN_HEADER, "t0k")]
            ),
            Ok(Some("Bearer sk-client".into()))
        );
        // Sent in both places, the server's key still does not go upstream.
        assert_eq!(
            upstream(
                &c,
                &[("authorization", "Bearer t0k"), (TOKEN_HEADER, "t0k")]
            ),
            Ok(Some("Bearer up".into()))
        );
        assert_eq!(upstream(&c, &[(TOKEN_HEADER, "nope")]), Err(401));
    }

    #[test]
    fn a_credential_takes_the_upstreams_form() {
        let value = |c: &Credential, api| {
            let (name, v) = c.for_upstream(api);
            assert!(v.is_sensitive());
            format!("{name}: {}", v.to_str().unwrap())
        };
        let bearer = |t: &str| Credential::Authorization(HeaderValue::from_str(t).unwrap());
        let key = Credential::Key(HeaderValue::from_static("sk-ant-api-1"));
        assert_eq!(
            value(&key, Protocol::Chat),
            "authorization: Bearer sk-ant-api-1"
        );
        assert_eq!(value(&key, Protocol::Messages), "x-api-key: sk-ant-api-1");
        assert_eq!(
            value(&bearer("Bearer sk-1"), Protocol::Messages),
            "x-api-key: sk-1"
        );
        assert_eq!(
            value(&bearer("Bearer sk-ant-oat01-x"), Protocol::Messages),
            "authorization: Bearer sk-ant-oat01-x"
        );
    }

    #[test]
    fn each_key_is_its_principal() {
        let mut c = config(None, None);
        c.keys = crate::Keys::parse("alice ka\nbob kb\n").unwrap();
        let of = |k: &str| {
            identify(
                &c,
                &headers(&[("authorization", &format!("Bearer {k}"))]),
                &SECRET,
            )
            .map(|c| c.principal.tenant().to_string())
            .map_err(|e| e.status().as_u16())
        };
        assert_eq!(of("ka"), Ok("key-alice".into()));
        assert_eq!(of("kb"), Ok("key-bob".into()));
        assert_eq!(of("kc"), Err(401));
    }
}
