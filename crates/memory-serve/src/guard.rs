//! What every request is checked for before its route runs: that a
//! browser page of another site did not send it (`Origin`), that it is
//! addressed to this server (`Host`, against DNS rebinding), and that a
//! body is JSON (a cross-site form or `text/plain` post is not).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::ServeConfig;
use crate::state::AppState;

/// Refuses what [`refusal`] refuses; passes the rest on.
pub(crate) async fn guard(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    match refusal(&state.config, request.method(), request.headers()) {
        Some(e) => {
            state.metrics.count_request("refused", e.status().as_u16());
            e.into_response()
        }
        None => next.run(request).await,
    }
}

/// Why a request is refused, if it is.
fn refusal(config: &ServeConfig, method: &Method, headers: &HeaderMap) -> Option<crate::ApiError> {
    if let Some(origin) = headers.get(ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !config.allowed_origins.iter().any(|o| o == origin) {
            return Some(crate::ApiError::forbidden(format!(
                "requests from the page `{origin}` are refused; start the server with --allow-origin {origin} to take them"
            )));
        }
    }
    if let Some(host) = headers.get(HOST) {
        let host = host.to_str().unwrap_or("");
        if !host_allowed(config, host) {
            return Some(crate::ApiError::forbidden(format!(
                "`Host: {host}` is not this server; name its address, or start it with --allow-host NAME"
            )));
        }
    }
    if *method == Method::POST {
        let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
        if !content_type.is_some_and(is_json) {
            return Some(crate::ApiError::not_json(content_type));
        }
    }
    None
}

/// Whether a media type is JSON (`application/json`, any parameters).
fn is_json(content_type: &str) -> bool {
    let media = content_type.split(';').next().unwrap_or("").trim();
    media.eq_ignore_ascii_case("application/json")
}

/// Whether `host` (a `Host` header: a name or address, maybe a port)
/// names this server: a name of `--allow-host`, the listening address
/// (any address when it listens on all of them), or `localhost` when it
/// listens on a loopback address. A server that does not know its
/// address takes addresses and `localhost`: a page's rebinding of a
/// domain name is what is refused.
fn host_allowed(config: &ServeConfig, host: &str) -> bool {
    let name = host_name(host);
    if config
        .allowed_hosts
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name))
    {
        return true;
    }
    let address = name.parse::<IpAddr>().ok();
    let localhost = name.eq_ignore_ascii_case("localhost");
    match config.listening.map(|l: SocketAddr| l.ip()) {
        None => address.is_some() || localhost,
        Some(ip) if ip.is_unspecified() => address.is_some() || localhost,
        Some(ip) => address == Some(ip) || (localhost && ip.is_loopback()),
    }
}

/// The name or address of a `Host` header, without its port or an IPv6
/// address's brackets.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn config(listening: Option<&str>) -> ServeConfig {
        let mut c = ServeConfig::new(
            "http://u/v1",
            Arc::new(|| {
                Arc::new(memory_window::WindowDrop::new()) as Arc<dyn memory_core::TrimStrategy>
            }),
            Arc::new(memory_core::InMemoryStore::new()),
        );
        c.listening = listening.map(|l| l.parse().unwrap());
        c
    }

    fn refused(c: &ServeConfig, method: Method, pairs: &[(&'static str, &str)]) -> Option<u16> {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        refusal(c, &method, &h).map(|e| e.status().as_u16())
    }

    #[test]
    fn a_cross_site_page_and_a_body_that_is_not_json_are_refused() {
        let mut c = config(Some("127.0.0.1:7878"));
        let json = ("content-type", "application/json; charset=utf-8");
        assert_eq!(refused(&c, Method::POST, &[json]), None);
        assert_eq!(
            refused(&c, Method::POST, &[("content-type", "text/plain")]),
            Some(415)
        );
        assert_eq!(refused(&c, Method::POST, &[]), Some(415));
        assert_eq!(refused(&c, Method::GET, &[]), None);
        let page = ("origin", "https://evil.test");
        assert_eq!(refused(&c, Method::POST, &[json, page]), Some(403));
        c.allowed_origins.push("https://evil.test".into());
        assert_eq!(refused(&c, Method::POST, &[json, page]), None);
    }

    #[test]
    fn the_host_must_name_the_server() {
        let c = config(Some("127.0.0.1:7878"));
        for ok in ["127.0.0.1:7878", "localhost:7878", "LOCALHOST", "127.0.0.1"] {
            assert_eq!(refused(&c, Method::GET, &[("host", ok)]), None, "{ok}");
        }
        for bad in ["evil.test:7878", "10.0.0.1:7878", "[::1]:7878"] {
            assert_eq!(
                refused(&c, Method::GET, &[("host", bad)]),
                Some(403),
                "{bad}"
            );
        }
        let mut all = config(Some("0.0.0.0:7878"));
        assert_eq!(
            refused(&all, Method::GET, &[("host", "10.0.0.1:7878")]),
            None
        );
        assert_eq!(
            refused(&all, Method::GET, &[("host", "memory.internal")]),
            Some(403)
        );
        all.allowed_hosts.push("memory.internal".into());
        assert_eq!(
            refused(&all, Method::GET, &[("host", "memory.internal:7878")]),
            None
        );
        let v6 = config(Some("[::1]:7878"));
        assert_eq!(refused(&v6, Method::GET, &[("host", "[::1]:7878")]), None);
        assert_eq!(
            refused(&v6, Method::GET, &[("host", "localhost:7878")]),
            None
        );
    }
}
