//! A recording reverse proxy between a client (an agent's CLI) and the
//! server: it passes every request on as it came and every answer back as
//! it streams, and keeps both, so that a test sees what the client sent,
//! what the server answered it (the `x-memory-*` headers, the events) and
//! can compare the client's requests with what reached the upstream.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;

/// One request the CLI sent, and the server's answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The path and query.
    pub path: String,
    /// The body, as JSON (`Null` when it is not).
    pub request: Value,
    pub status: u16,
    pub headers: HeaderMap,
    /// The answer's body, as much of it as has come.
    pub response: Vec<u8>,
}

impl Exchange {
    /// A header of the answer, as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

type Log = Arc<Mutex<Vec<Arc<Mutex<Exchange>>>>>;

#[derive(Clone)]
struct Forward {
    server: String,
    http: reqwest::Client,
    log: Log,
}

/// The proxy, serving until dropped.
pub struct Proxy {
    url: String,
    log: Log,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Headers that belong to one connection, not passed on.
const HOP: [&str; 6] = [
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "accept-encoding",
    "keep-alive",
];

impl Proxy {
    /// Starts on a free loopback port, in front of the server at `server`
    /// (its root URL).
    pub async fn start(server: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let log: Log = Arc::default();
        let app = Router::new().fallback(forward).with_state(Forward {
            server: server.to_string(),
            http: reqwest::Client::new(),
            log: log.clone(),
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, log, task }
    }

    /// Its root URL, the CLI's base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every exchange so far, in the order the requests came.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.lock().unwrap().clone())
            .collect()
    }
}

async fn forward(State(f): State<Forward>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let body: Bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let exchange = Arc::new(Mutex::new(Exchange {
        path: path.clone(),
        request: serde_json::from_slice(&body).unwrap_or(Value::Null),
        status: 0,
        headers: HeaderMap::new(),
        response: Vec::new(),
    }));
    f.log.lock().unwrap().push(exchange.clone());
    let mut headers = parts.headers.clone();
    for name in HOP {
        headers.remove(name);
    }
    let sent = f
        .http
        .request(parts.method, format!("{}{path}", f.server))
        .headers(headers)
        .body(body)
        .send()
        .await;
    let answer = match sent {
        Ok(a) => a,
        Err(e) => return (StatusCode::BAD_GATEWAY, format!("proxy: {e}")).into_response(),
    };
    let status = answer.status();
    let mut headers = answer.headers().clone();
    for name in HOP {
        headers.remove(HeaderName::from_static(name));
    }
    {
        let mut e = exchange.lock().unwrap();
        e.status = status.as_u16();
        e.headers = headers.clone();
    }
    let tee = answer.bytes_stream().map(move |chunk| {
        if let Ok(bytes) = &chunk {
            exchange.lock().unwrap().response.extend_from_slice(bytes);
        }
        chunk
    });
    let mut response = Body::from_stream(tee).into_response();
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}
