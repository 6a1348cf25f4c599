//! The `memory` binary; see the `memory_cli` library for what it does.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = memory_cli::Cli::parse();
    if std::env::var_os("RUST_LOG").is_some() {
        // The library's tracing (compaction events, summarizer failures,
        // retries) on stderr, filtered as RUST_LOG says.
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("memory: cannot start the async runtime: {e}");
            return ExitCode::from(memory_cli::error::EXIT_FAILURE);
        }
    };
    match runtime.block_on(memory_cli::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memory: {}", e.one_line());
            ExitCode::from(e.exit_code())
        }
    }
}
