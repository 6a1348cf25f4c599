//! A real client of the Responses front: the `openai` Python package
//! (from PyPI, in the virtual environment the client tests share) runs a tool loop
//! through `memory serve`, streamed and not, over a Chat Completions, a
//! Messages and a Responses upstream; then compacts with
//! `responses.compact` and with a `compaction_trigger`, goes on from the
//! compaction, and tries a forged handle and another conversation's. The
//! pipeline compacts with a summarizer that refuses every call.
//!
//! Without Python or PyPI the test says so and passes; under CI (the `CI`
//! variable set) it fails instead.

use crate::venv;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use memory_core::{CharTokenCounter, Pipeline, Store, TrimStrategy};
use memory_serve::test_util::{ScriptedUpstream, tool_calls_for};
use memory_serve::{BudgetMode, Compaction, Protocol, ServeConfig};
use serde_json::Value;

const BUDGET: usize = 2_000;
const STEPS: usize = 6;

/// Runs `responses_loop.py` against `base_url`; what it saw.
async fn run_loop(python: &Path, base_url: &str, out: &Path, stream: bool) -> Value {
    let mut args = vec![base_url.to_string(), STEPS.to_string()];
    if stream {
        args.push("--stream".into());
    }
    venv::run_script(python, "responses_loop.py", args, out).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_package_loops_and_compacts_over_every_upstream() {
    let Some(python) = venv::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The summarizer: a real endpoint that refuses every call.
    let summarizer = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
    for api in [Protocol::Chat, Protocol::Messages, Protocol::Responses] {
        let upstream = ScriptedUpstream::start(Duration::ZERO).await.unwrap();
        let url = summarizer.url().to_string();
        let pipeline = move || {
            let refusing = memory_openai::OpenAiProvider::new(url.clone(), "fail-429");
            Arc::new(
                Pipeline::new()
                    .then(memory_compact::Compact::new(refusing).with_summarize_at_tokens(500))
                    .then(memory_thrift::Thrift::new()),
            ) as Arc<dyn TrimStrategy>
        };
        let store: Arc<dyn Store> = Arc::new(memory_core::InMemoryStore::new());
        let mut config = ServeConfig::new(upstream.url(), Arc::new(pipeline), store)
            .with_budget(BudgetMode::Tokens(BUDGET))
            .with_counter(Arc::new(CharTokenCounter));
        config.upstream_api = api;
        config.compaction = Some(Compaction::Ours);
        let server = memory_serve::test_util::spawn_server(config).await + "/v1";
        for stream in [false, true] {
            let out = dir.path().join(format!("{api:?}-{stream}.json"));
            let before = upstream.received().len();
            let seen = run_loop(&python, &server, &out, stream).await;
            let case = format!("{api:?}, stream {stream}");
            assert_eq!(
                seen["calls"].as_u64(),
                Some(tool_calls_for(STEPS) as u64),
                "{case}: every step"
            );
            assert_eq!(seen["object"], "response.compaction", "{case}");
            for how in ["by_endpoint", "by_trigger"] {
                let items = seen[how].as_array().unwrap();
                assert_eq!(items.len(), 1, "{case}: {how}");
                assert_eq!(items[0]["type"], "compaction", "{case}: {how}");
            }
            assert_eq!(
                seen["calls_after"].as_u64(),
                Some(2),
                "{case}: went on from it"
            );
            let param = Some("input[0].encrypted_content");
            assert_eq!(seen["refusals"]["forged"].as_str(), param, "{case}");
            assert_eq!(
                seen["refusals"]["other_conversation"].as_str(),
                param,
                "{case}"
            );
            // The upstream got the loop and the task after the compaction,
            // never a compaction call or a handle.
            let received = &upstream.received()[before..];
            for r in received {
                assert!(
                    !r.body.to_string().contains("mcmp1."),
                    "{case}: a handle upstream"
                );
                assert!(!r.body.to_string().contains("compaction_trigger"), "{case}");
            }
            let last = received.last().unwrap().body.to_string();
            assert!(last.contains("Now do it in 2 steps."), "{case}");
            assert!(
                last.contains(&format!("in {STEPS} steps")),
                "{case}: the first task is in the compaction"
            );
        }
        assert!(
            !summarizer.received().is_empty(),
            "the summarizer was asked"
        );
    }
}
