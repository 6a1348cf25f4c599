//! Probes a real OpenAI-compatible `/embeddings` server through
//! `OpenAiEmbedder`: the vectors' dimensions, whether each question finds
//! its passage by cosine similarity, whether the server tells queries from
//! passages (`input_type`), and, given a LoCoMo file, how many passages a
//! second it embeds in batches and that a second pass is served from the
//! cache.
//!
//! ```text
//! cargo run --release -p memory-openai --example embeddings_probe -- \
//!     http://127.0.0.1:8000/v1 [MODEL] [LOCOMO_JSON] [PASSAGES]
//! ```
//!
//! Exits 1 when the server fails or a question does not find its passage.

use std::error::Error;
use std::time::Instant;

use memory_core::{Embedder, cosine};
use memory_layer::CachedEmbedder;
use memory_openai::OpenAiEmbedder;

const PASSAGES: [&str; 4] = [
    "Melanie ran a charity race for mental health last Saturday.",
    "Caroline went to an LGBTQ support group and found it powerful.",
    "The build failed because src/lib.rs does not compile on stable Rust.",
    "We painted a sunrise over the lake with the kids last week.",
];
/// Each question and the passage that answers it.
const QUESTIONS: [(&str, usize); 4] = [
    ("When did Melanie run a race?", 0),
    ("What support group did Caroline attend?", 1),
    ("Why did the build fail?", 2),
    ("What did they paint?", 3),
];

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(base_url) = args.first() else {
        return Err("usage: embeddings_probe BASE_URL [MODEL] [LOCOMO_JSON] [PASSAGES]".into());
    };
    let model = args
        .get(1)
        .map_or("multilingual-e5-small-q4", String::as_str);
    let endpoint = OpenAiEmbedder::new(base_url, model);
    let passages = endpoint.clone().with_input_type("passage");
    let queries = endpoint.with_input_type("query");

    let texts: Vec<String> = PASSAGES.map(String::from).into();
    let questions: Vec<String> = QUESTIONS.map(|(q, _)| q.to_string()).into();
    let p = passages.embed(&texts).await?;
    let q = queries.embed(&questions).await?;
    println!("dimensions: {}", p[0].len());
    let mut missed = 0;
    for ((question, answer), qv) in QUESTIONS.iter().zip(&q) {
        let scores: Vec<f32> = p
            .iter()
            .map(|pv| cosine(qv, pv).unwrap_or(f32::NAN))
            .collect();
        let best = (0..scores.len())
            .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
            .unwrap_or(0);
        let shown: Vec<String> = scores.iter().map(|s| format!("{s:.3}")).collect();
        let verdict = if best == *answer { "found" } else { "MISSED" };
        missed += usize::from(best != *answer);
        println!(
            "{verdict}: {question:?} cosine to passages [{}]",
            shown.join(", ")
        );
    }
    let as_query = queries.embed(&texts[..1]).await?;
    println!(
        "the same text as query and as passage: cosine {:.4} (below 1: input_type is honoured)",
        cosine(&as_query[0], &p[0]).unwrap_or(f32::NAN)
    );

    if let Some(file) = args.get(2) {
        let limit = match args.get(3) {
            Some(n) => n.parse().map_err(|e| format!("PASSAGES `{n}`: {e}"))?,
            None => 300,
        };
        throughput(passages, file, limit).await?;
    }
    if missed > 0 {
        return Err(format!(
            "{missed} of {} questions missed their passage",
            QUESTIONS.len()
        )
        .into());
    }
    Ok(())
}

/// Embeds the first `limit` turns of the LoCoMo conversations in `file`,
/// twice, in batches, and prints passages per second.
async fn throughput(
    passages: OpenAiEmbedder,
    file: &str,
    limit: usize,
) -> Result<(), Box<dyn Error>> {
    let data: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(file).map_err(|e| format!("reading {file}: {e}"))?,
    )
    .map_err(|e| format!("{file} is not JSON: {e}"))?;
    let mut turns = Vec::new();
    for sample in data.as_array().into_iter().flatten() {
        let Some(conversation) = sample.get("conversation").and_then(|c| c.as_object()) else {
            continue;
        };
        for n in 1.. {
            let Some(session) = conversation.get(&format!("session_{n}")) else {
                break;
            };
            for turn in session.as_array().into_iter().flatten() {
                let speaker = turn["speaker"].as_str().unwrap_or("?");
                let text = turn["text"].as_str().unwrap_or("");
                turns.push(format!("{speaker}: {text}"));
            }
        }
    }
    turns.truncate(limit);
    if turns.is_empty() {
        return Err(format!("no LoCoMo turns in {file}").into());
    }
    let chars: usize = turns.iter().map(|t| t.chars().count()).sum();
    let cached = CachedEmbedder::new(passages).with_batch_size(32);
    let started = Instant::now();
    cached.embed(&turns).await?;
    let first = started.elapsed().as_secs_f64();
    let started = Instant::now();
    cached.embed(&turns).await?;
    let second = started.elapsed().as_secs_f64();
    println!(
        "{} passages ({:.0} chars each on average) in batches of 32: {first:.2} s, {:.1} passages/s; again from the cache: {:.1} ms",
        turns.len(),
        chars as f64 / turns.len() as f64,
        turns.len() as f64 / first,
        second * 1e3
    );
    Ok(())
}
