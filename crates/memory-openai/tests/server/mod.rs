//! A scripted HTTP/1 server on loopback, plain or over TLS: it answers
//! each request with the next scripted response and records what it
//! received. Shared by the test files, each of which uses part of it.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// One scripted response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub delay: Duration,
}

impl Reply {
    pub fn json(status: u16, body: serde_json::Value) -> Self {
        Self::text(status, body.to_string())
    }

    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// What the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: serde_json::Value,
}

pub struct Server {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl Server {
    pub async fn start(script: impl IntoIterator<Item = Reply>) -> Self {
        Self::start_with(script, None).await
    }

    /// A server that speaks TLS through `acceptor` (its certificate, its
    /// host names).
    pub async fn start_tls(script: impl IntoIterator<Item = Reply>, acceptor: TlsAcceptor) -> Self {
        Self::start_with(script, Some(acceptor)).await
    }

    async fn start_with(script: impl IntoIterator<Item = Reply>, tls: Option<TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let script = Arc::new(Mutex::new(script.into_iter().collect::<VecDeque<_>>()));
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let script = script.clone();
                let log = log.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        None => serve(stream, script, log).await,
                        // A failed handshake is the client's to report.
                        Some(tls) => {
                            if let Ok(stream) = tls.accept(stream).await {
                                serve(stream, script, log).await;
                            }
                        }
                    }
                });
            }
        });
        Self {
            addr,
            received,
            task,
        }
    }

    /// The base URL to give the provider.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// A base URL on loopback where nothing listens: a port bound to learn it
/// is free, then closed.
pub fn closed_base_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}/v1")
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Answers the requests of one connection.
async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    script: Arc<Mutex<VecDeque<Reply>>>,
    log: Arc<Mutex<Vec<Received>>>,
) {
    let service = service_fn(move |request: Request<Incoming>| {
        let script = script.clone();
        let log = log.clone();
        async move { Ok::<_, Infallible>(answer(request, &script, &log).await) }
    });
    // A client that gives up mid-response is not an error here.
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn answer(
    request: Request<Incoming>,
    script: &Mutex<VecDeque<Reply>>,
    log: &Mutex<Vec<Received>>,
) -> Response<Full<Bytes>> {
    let method = request.method().to_string();
    let path = request.uri().path().to_string();
    let headers = request
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let bytes = request.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    log.lock().unwrap().push(Received {
        method,
        path,
        headers,
        body,
    });
    let next = script.lock().unwrap().pop_front();
    let reply = next.unwrap_or_else(|| Reply::text(500, "the test script ran out"));
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    response
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(reply.body)))
        .unwrap()
}
