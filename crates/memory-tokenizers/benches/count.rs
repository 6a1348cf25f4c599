//! Counting throughput of the cl100k and o200k counters against tiktoken-rs,
//! one call per message text, as an agent memory counts, on the real data
//! sets found through `MEMORY_DATA_DIR` (agent trajectories and LoCoMo chat),
//! or on a generated corpus when it is unset (under CI an unset variable
//! fails instead). Counts are checked equal on every text before timing.
//!
//! `MEMORY_DATA_DIR=path/to/data cargo bench -p memory-tokenizers --bench count`

#[path = "../tests/common/corpus.rs"]
mod corpus;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_main};
use futures::FutureExt;
use memory_core::TokenCounter;
use memory_tokenizers::{Cl100k, O200k};
use tiktoken_rs::{CoreBPE, cl100k_base_singleton, o200k_base_singleton};

use corpus::Corpus;

/// Counts through the `TokenCounter` trait, the way a memory calls it; the
/// futures are ready at once.
fn ours(counter: &dyn TokenCounter, texts: &[String]) -> usize {
    texts
        .iter()
        .map(|text| {
            counter
                .count(text)
                .now_or_never()
                .expect("a synchronous counter is ready at once")
                .expect("counting cannot fail")
        })
        .sum()
}

fn theirs(bpe: &CoreBPE, texts: &[String]) -> usize {
    texts.iter().map(|text| bpe.count_ordinary(text)).sum()
}

/// Prose, code, JSON tool arguments and tool output, in agent proportions.
fn generated() -> Corpus {
    let words = [
        "the",
        "agent",
        "reads",
        "file",
        "and",
        "runs",
        "tests",
        "because",
        "error",
        "returned",
        "value",
        "function",
        "module",
        "configuration",
        "Traceback",
        "assert",
        "None",
        "import",
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut texts = Vec::new();
    for i in 0..600 {
        let len = 8 + next(120);
        let sentence: Vec<&str> = (0..len).map(|_| words[next(words.len())]).collect();
        let text = match i % 4 {
            0 => format!("{}.", sentence.join(" ")),
            1 => format!(
                "{{\"command\":\"view\",\"path\":\"/workspace/src/{}.rs\",\"view_range\":[{},{}]}}",
                sentence[0],
                next(400),
                next(900)
            ),
            2 => sentence
                .chunks(6)
                .enumerate()
                .map(|(n, line)| format!("{:>5}\t    {}({});", n + 1, line.join("_"), n * 7))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => format!(
                "Q: {}?\nA: {} {}",
                sentence.join(" "),
                next(10_000),
                sentence[1]
            ),
        };
        texts.push(text);
    }
    Corpus {
        name: "generated",
        texts,
    }
}

fn bench(c: &mut Criterion) {
    let (mut corpora, notices) = corpus::load();
    for notice in &notices {
        println!("notice: {notice}");
    }
    if corpora.is_empty() {
        println!("notice: no real data; counting a generated corpus instead");
        corpora.push(generated());
    }
    Cl100k::preload();
    O200k::preload();
    let cl100k = cl100k_base_singleton();
    let o200k = o200k_base_singleton();

    for corpus in &corpora {
        for (text_index, text) in corpus.texts.iter().enumerate() {
            assert_eq!(
                Cl100k.count_text(text),
                cl100k.count_ordinary(text),
                "cl100k, {} text {text_index}",
                corpus.name
            );
            assert_eq!(
                O200k.count_text(text),
                o200k.count_ordinary(text),
                "o200k, {} text {text_index}",
                corpus.name
            );
        }
        println!(
            "{}: {} texts, {} bytes, {} cl100k / {} o200k tokens; counts identical to tiktoken-rs",
            corpus.name,
            corpus.texts.len(),
            corpus.bytes(),
            theirs(cl100k, &corpus.texts),
            theirs(o200k, &corpus.texts),
        );

        let mut group = c.benchmark_group(format!("count/{}", corpus.name));
        group.throughput(Throughput::Bytes(corpus.bytes() as u64));
        group.sample_size(20);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(6));
        let texts = &corpus.texts;
        group.bench_function("memory-tokenizers cl100k", |b| {
            b.iter(|| ours(&Cl100k, black_box(texts)))
        });
        group.bench_function("tiktoken-rs cl100k", |b| {
            b.iter(|| theirs(cl100k, black_box(texts)))
        });
        group.bench_function("memory-tokenizers o200k", |b| {
            b.iter(|| ours(&O200k, black_box(texts)))
        });
        group.bench_function("tiktoken-rs o200k", |b| {
            b.iter(|| theirs(o200k, black_box(texts)))
        });
        group.finish();
    }
}

mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
