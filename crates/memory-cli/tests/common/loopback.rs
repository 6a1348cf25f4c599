//! A minimal OpenAI-compatible HTTP server on loopback: every request gets
//! the same fixed response; requests are counted and their bodies and
//! `Authorization` headers kept.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A running server.
pub struct Loopback {
    /// Its base URL, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    served: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<String>>>,
    authorizations: Arc<Mutex<Vec<Option<String>>>>,
}

impl Loopback {
    /// Starts a server answering every request with `status` (`200 OK`,
    /// `400 Bad Request`, ...) and the JSON `body`.
    pub fn start(status: &'static str, body: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let served = Arc::new(AtomicUsize::new(0));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let authorizations = Arc::new(Mutex::new(Vec::new()));
        let (count, kept, keys) = (served.clone(), bodies.clone(), authorizations.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let (request, authorization) = read_request(&mut stream);
                kept.lock().unwrap().push(request);
                keys.lock().unwrap().push(authorization);
                count.fetch_add(1, Ordering::SeqCst);
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Self {
            url,
            served,
            bodies,
            authorizations,
        }
    }

    /// The `Authorization` header of each request served so far (`None`
    /// where there was none), in order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.authorizations.lock().unwrap().clone()
    }

    /// Requests served so far.
    pub fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }

    /// The bodies of the requests served so far, in order.
    pub fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }
}

/// Reads one request and returns its body and `Authorization` header.
fn read_request(stream: &mut std::net::TcpStream) -> (String, Option<String>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let (mut length, mut line) = (0usize, String::new());
    let mut authorization = None;
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("authorization")
        {
            authorization = Some(value.trim().to_string());
        }
    }
    let mut body = vec![0u8; length];
    let _ = reader.read_exact(&mut body);
    (String::from_utf8_lossy(&body).into_owned(), authorization)
}
