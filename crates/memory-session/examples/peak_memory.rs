//! Peak memory of a long session: records N messages (default 1,000,000)
//! into a `WindowMemory`, takes the context, and prints the process's peak
//! resident memory as the kernel reports it.
//!
//! `cargo run --release -p memory-session --example peak_memory -- 1000000`

use memory_core::{Memory, Message};
use memory_session::WindowMemory;

fn text(i: usize) -> String {
    format!("message {i:>7}: the quick brown fox jumps over the lazy dog")
}

/// Peak resident set size in KiB (`VmHWM`), where the platform reports it.
fn peak_kib() -> Option<u64> {
    // VmHWM is in KiB.
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("unknown".into(), |k| {
        format!("{:.1} MiB", k as f64 / 1024.0)
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), memory_core::MemoryError> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let before = peak_kib();
    let mut memory = WindowMemory::new(8_000);
    memory
        .record_protected(Message::system("You are a helpful agent."))
        .await?;
    let mut bytes = 0usize;
    for i in 0..n {
        let t = text(i);
        bytes += t.len();
        let m = if i % 2 == 0 {
            Message::user(t)
        } else {
            Message::assistant(t)
        };
        memory.record(m).await?;
    }
    let context = memory.context().await?;
    println!(
        "{n} messages ({:.1} MiB of text) recorded; context {} messages; peak RSS {} (at start {})",
        bytes as f64 / (1024.0 * 1024.0),
        context.len(),
        mib(peak_kib()),
        mib(before),
    );
    Ok(())
}
