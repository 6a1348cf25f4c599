//! The server's own time per call as one session grows: 5,000 calls of one
//! session (`X-Memory-Session`, each call sending only its new user
//! message; the reply recorded by the server), fitted by thrift (the
//! default pipeline) with the index, budget 8,000 tokens, an upstream on
//! loopback that answers at once and keeps nothing of what it receives
//! (one that kept every request grew this process by hundreds of
//! megabytes, which slowed the server it times: 405-635 us around the
//! 5,000th call, against 279-374 us). Prints the mean of the
//! `x-memory-overhead-us` header (and its median) over the 100 calls
//! around the 100th, the 1,000th and the 5,000th call, the context sent
//! (`x-memory-tokens`) at each, and the ratios of the 5,000th to the two
//! others.
//!
//! The session reaches the budget at the 191st call: before it,
//! nothing is trimmed and each call sends a smaller context (4,162 tokens
//! at the 100th call, 6,855 at the 1,000th), so the 100th call's time is
//! that of a context half the size of the later ones. From the 1,000th
//! call on, every context is at the budget and only the session's length
//! grows: the ratio to the 1,000th is the one that says whether a call
//! costs more as the session grows.
//!
//! `cargo bench -p memory-serve --bench session_growth --features test-util`

use std::sync::Arc;
use std::time::Duration;

use memory_core::{InMemoryStore, TrimStrategy};
use memory_serve::test_util::ScriptedUpstream;
use memory_serve::{BudgetMode, ServeConfig};
use serde_json::json;

const CALLS: usize = 5_000;
/// Calls averaged on either side of each point measured.
const AROUND: usize = 50;
/// The calls measured around: early, once the context is at the budget,
/// and last.
const POINTS: [usize; 3] = [100, 1_000, CALLS - AROUND];

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
        let mut sent = Vec::with_capacity(CALLS);
        for i in 0..CALLS {
            let response = client
                .post(format!("{root}/v1/chat/completions"))
                .header("X-Memory-Session", "growing")
                .json(&json!({"model": "m", "messages": [{"role": "user", "content": say(i)}]}))
                .send()
                .await
                .expect("the server answers");
            assert_eq!(response.status(), 200, "call {i}");
            let header = |name: &str| -> f64 {
                response.headers()[name]
                    .to_str()
                    .expect("a number")
                    .parse()
                    .expect("a number")
            };
            own.push(header("x-memory-overhead-us"));
            sent.push(header("x-memory-tokens"));
            let _ = response.bytes().await;
        }
        let window = |of: &[f64], at: usize| of[at - AROUND..at + AROUND].to_vec();
        let mean = |of: &[f64], at: usize| {
            let w = window(of, at);
            w.iter().sum::<f64>() / w.len() as f64
        };
        let median = |at: usize| {
            let mut w = window(&own, at);
            w.sort_by(f64::total_cmp);
            (w[w.len() / 2 - 1] + w[w.len() / 2]) / 2.0
        };
        let [early, full, late] = POINTS.map(|at| mean(&own, at));
        let [m_early, m_full, m_late] = POINTS.map(median);
        let [t_early, t_full, t_late] = POINTS.map(|at| mean(&sent, at));
        println!(
            "own time per call, mean (median): {early:.0} ({m_early:.0}) us around the 100th call ({t_early:.0} tokens sent), {full:.0} ({m_full:.0}) us around the 1,000th ({t_full:.0}), {late:.0} ({m_late:.0}) us around the {CALLS}th ({t_late:.0})"
        );
        println!(
            "the {CALLS}th over the 100th: {:.2}x ({:.2}x); over the 1,000th: {:.2}x ({:.2}x)",
            late / early,
            m_late / m_early,
            late / full,
            m_late / m_full
        );
    });
}
