//! The server's own time per call as one session grows: 5,000 calls of one
//! session (`X-Memory-Session`, each call sending only its new user
//! message; the reply recorded by the server), fitted by thrift (the
//! default pipeline) with the index, budget 8,000 tokens, an upstream on
//! loopback that answers at once and keeps nothing of what it receives
//! (one that kept every request grew this process by hundreds of
//! megabytes, which slowed the server it times: 405-635 us around the
//! 5,000th call, against 279-374 us). Prints the mean of the
//! `x-memory-overhead-us` header over the 20 calls around the 100th and
//! around the 5,000th, and their ratio.
//!
//! `cargo bench -p memory-serve --bench session_growth`

use std::sync::Arc;
use std::time::Duration;

use memory_core::{InMemoryStore, TrimStrategy};
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, ServeConfig};
use serde_json::json;

const CALLS: usize = 5_000;
/// Calls averaged around each point measured.
const AROUND: usize = 10;

fn say(i: usize) -> String {
    const TOPICS: [&str; 6] = ["garden", "boiler", "roof", "garage", "cellar", "attic"];
    let topic = TOPICS[i % TOPICS.len()];
    format!("Note {i}: the {topic} needs a look this week, and then the {topic} again in spring?")
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let upstream = ScriptedUpstream::start_forgetting(Duration::ZERO)
            .await
            .expect("loopback");
        let config = ServeConfig::new(
            upstream.url(),
            Arc::new(|| {
                Arc::new(memory_thrift::Thrift::new()) as Arc<dyn TrimStrategy>
            }),
            Arc::new(InMemoryStore::new()),
        )
        .with_budget(BudgetMode::Tokens(8_000));
        let root = memory_serve::test_util::spawn_server(config).await;
        let client = reqwest::Client::new();
        let mut own = Vec::with_capacity(CALLS);
        for i in 0..CALLS {
            let response = client
                .post(format!("{root}/v1/chat/completions"))
                .header("X-Memory-Session", "growing")
                .json(&json!({"model": "m", "messages": [{"role": "user", "content": say(i)}]}))
                .send()
                .await
                .expect("the server answers");
            assert_eq!(response.status(), 200, "call {i}");
            let us: f64 = response.headers()["x-memory-overhead-us"]
                .to_str()
                .expect("a number")
                .parse()
                .expect("a number");
            let _ = response.bytes().await;
            own.push(us);
        }
        let mean = |at: usize| {
            let window = &own[at - AROUND..at + AROUND];
            window.iter().sum::<f64>() / window.len() as f64
        };
        let (early, late) = (mean(100), mean(CALLS - AROUND));
        println!(
            "own time per call: {early:.0} us around the 100th call, {late:.0} us around the {}th ({:.2}x)",
            CALLS,
            late / early
        );
    });
}
