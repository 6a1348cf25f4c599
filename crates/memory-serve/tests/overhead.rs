//! The `x-memory-overhead-us` header: the server's own time, each part of
//! it counted once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_core::{
    InMemoryStore, Message, Snapshot, Store, StoreError, StoredMessage, TrimStrategy, Version,
};
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, ServeConfig};
use serde_json::json;

/// An in-memory store whose appends take `delay`.
struct Slow {
    inner: Arc<dyn Store>,
    delay: Duration,
}

#[async_trait::async_trait]
impl Store for Slow {
    async fn load(&self, session: &str) -> Result<Snapshot, StoreError> {
        self.inner.load(session).await
    }

    async fn append(
        &self,
        session: &str,
        messages: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        tokio::time::sleep(self.delay).await;
        self.inner.append(session, messages).await
    }

    async fn replace_view(
        &self,
        session: &str,
        expected: Version,
        view: Vec<StoredMessage>,
    ) -> Result<Version, StoreError> {
        self.inner.replace_view(session, expected, view).await
    }

    async fn history(&self, session: &str) -> Result<Vec<Message>, StoreError> {
        self.inner.history(session).await
    }

    async fn replaced(&self, session: &str) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
        self.inner.replaced(session).await
    }

    async fn delete(&self, session: &str) -> Result<(), StoreError> {
        self.inner.delete(session).await
    }

    fn for_tenant(&self, tenant: &str) -> Arc<dyn Store> {
        let inner = self.inner.for_tenant(tenant);
        Arc::new(Slow {
            inner,
            delay: self.delay,
        })
    }
}

#[tokio::test]
async fn the_overhead_header_counts_the_reply_s_recording_once() {
    let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    let store: Arc<dyn Store> = Arc::new(Slow {
        inner: Arc::new(InMemoryStore::new()),
        delay: Duration::from_millis(40),
    });
    let config = ServeConfig::new(
        upstream.url(),
        Arc::new(|| Arc::new(memory_window::WindowDrop::new()) as Arc<dyn TrimStrategy>),
        store,
    )
    .with_budget(BudgetMode::Tokens(10_000));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(memory_serve::serve(
        listener,
        config,
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    for text in ["one", "two"] {
        let started = Instant::now();
        let response = client
            .post(format!("{server}/v1/chat/completions"))
            .header("X-Memory-Session", "overhead")
            .json(&json!({"model": "m", "messages": [{"role": "user", "content": text}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let own: u64 = response.headers()["x-memory-overhead-us"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let _ = response.bytes().await.unwrap();
        let total = started.elapsed().as_micros() as u64;
        // The upstream answers at once: nearly all of the call is the
        // server's own time (the slow appends), and none of it twice.
        assert!(
            own <= total,
            "own time {own} us is more than the whole call, {total} us"
        );
        assert!(own >= 80_000, "own time {own} us leaves out the appends");
    }
}
