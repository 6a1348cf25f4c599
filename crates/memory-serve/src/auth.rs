//! Who may call the server, and which `Authorization` goes upstream.

use axum::http::{HeaderMap, HeaderValue, header::AUTHORIZATION};

use crate::{ApiError, ServeConfig};

/// The header a client presents the server's token in when its own
/// `Authorization` is meant for the upstream.
pub const TOKEN_HEADER: &str = "x-memory-token";

/// Checks the client's token (when the server has one) and says which
/// `Authorization` header to send upstream: the client's own, unless it
/// was the server's token; the configured upstream key otherwise. The
/// client's `Authorization` goes nowhere else.
///
/// # Errors
///
/// 401 when the server has a token and the request does not present it,
/// as `Authorization: Bearer <token>` or in [`TOKEN_HEADER`].
pub(crate) fn upstream_authorization(
    config: &ServeConfig,
    headers: &HeaderMap,
) -> Result<Option<HeaderValue>, ApiError> {
    let client = headers.get(AUTHORIZATION).cloned();
    let key = || {
        config
            .upstream_key
            .as_ref()
            .and_then(|k| HeaderValue::from_str(&format!("Bearer {k}")).ok())
            .map(|mut v| {
                v.set_sensitive(true);
                v
            })
    };
    let Some(token) = &config.token else {
        return Ok(client.or_else(key));
    };
    if headers
        .get(TOKEN_HEADER)
        .is_some_and(|v| same(v.as_bytes(), token.as_bytes()))
    {
        return Ok(client.or_else(key));
    }
    let bearer = client
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_some_and(|b| same(b.trim().as_bytes(), token.as_bytes())) {
        return Ok(key());
    }
    Err(ApiError::unauthorized())
}

/// Whether the server's token was presented, for routes that send
/// nothing upstream.
pub(crate) fn check(config: &ServeConfig, headers: &HeaderMap) -> Result<(), ApiError> {
    upstream_authorization(config, headers).map(|_| ())
}

/// Compares in time that does not depend on where the two differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

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

    #[test]
    fn without_a_token_the_clients_key_goes_upstream() {
        let up = upstream_authorization(
            &config(None, None),
            &headers(&[("authorization", "Bearer sk-1")]),
        )
        .unwrap();
        assert_eq!(up.unwrap(), "Bearer sk-1");
        let up = upstream_authorization(&config(None, Some("k2")), &HeaderMap::new()).unwrap();
        assert_eq!(up.unwrap(), "Bearer k2");
    }

    #[test]
    fn the_servers_token_is_asked_for_and_never_sent_upstream() {
        let c = config(Some("t0k"), Some("up"));
        assert_eq!(
            upstream_authorization(&c, &HeaderMap::new())
                .unwrap_err()
                .status(),
            401
        );
        assert_eq!(
            upstream_authorization(&c, &headers(&[("authorization", "Bearer wrong")]))
                .unwrap_err()
                .status(),
            401
        );
        let up = upstream_authorization(&c, &headers(&[("authorization", "Bearer t0k")])).unwrap();
        assert_eq!(up.unwrap(), "Bearer up");
        let up = upstream_authorization(
            &c,
            &headers(&[("authorization", "Bearer sk-client"), (TOKEN_HEADER, "t0k")]),
        )
        .unwrap();
        assert_eq!(up.unwrap(), "Bearer sk-client");
    }
}
