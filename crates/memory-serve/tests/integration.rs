//! The server's integration tests, one binary (a binary per file linked the
//! server's dependencies once each): each module one route or client.
//! `stall` and `overhead` are their own binaries: they time calls, with no
//! other test beside them.

#[path = "support/agent_cli.rs"]
mod agent_cli;
#[path = "support/npm.rs"]
mod npm;
#[path = "support/proxy.rs"]
mod proxy;
#[path = "support/venv.rs"]
mod venv;

mod anthropic_client;
mod claude_code;
mod codex;
mod decode;
mod messages;
mod openai_client;
mod recall;
mod responses;
mod responses_client;
mod serve;
mod team;
