//! `memory serve`: a server that manages every session's context for any
//! client, in the client's own protocol, over any model.
//!
//! A client (any language, any agent) points its base URL at the server
//! and goes on sending its requests as it did: OpenAI Chat Completions,
//! Anthropic Messages as Claude Code sends them, or OpenAI Responses as
//! Codex sends them (with its compaction answered by the server). Each front is a codec
//! around one neutral conversation, and so is the upstream's protocol
//! (`--upstream-api`), so any front goes over any upstream. The server
//! finds each request's session by the history it sends (or by the
//! `X-Memory-Session` header), records what is new in a [`Store`], fits
//! the session to the budget with its pipeline, sends that upstream with
//! every other field of the request untouched, and records the reply,
//! streamed or not, once it is complete.
//!
//! | item | what it is |
//! |---|---|
//! | [`router`], [`serve`] | the routes, and running them on a listener |
//! | [`ServeConfig`], [`BudgetMode`], [`PipelineFactory`], [`SummarizerStats`] | what the server runs with |
//! | [`Principal`], [`Keys`] | whom a request is for (every session belongs to one), and the keys the server takes |
//! | [`Protocol`] | a protocol the server speaks, to its clients (a front) or its upstream |
//! | [`ChatCall`] | a chat-completions request, decoded |
//! | [`Chain`] | the hash chain that matches a history to its session |
//! | [`SessionState`] | a session's state as the store keeps it (formerly `Head`) |
//! | [`CallReport`], [`Admission`] | what one call sent upstream, and how it found its session |
//! | [`reply_of`], [`StreamedReply`] | the reply to record, from a body or a stream |
//! | [`RecallMode`], [`MAX_RECALL_ROUNDS`] | the `recall` tool offered to the model, answered by the server or the client |
//! | [`Metrics`] | what `GET /metrics` shows |
//! | [`Compaction`] | who answers a Responses client's request to compact: the upstream, or the server |
//! | [`ApiError`] | a refused or failed request, in OpenAI's error shape or Anthropic's |
//! | `test_util` (feature `test-util`) | `ScriptedUpstream`, a Chat Completions, Messages and Responses server on loopback whose model is a script |
//!
//! Routes: `POST /v1/chat/completions`, `POST /v1/messages` and
//! `/v1/messages/count_tokens`, `GET /v1/models` (passed through), `GET`
//! and `DELETE /v1/memory/sessions/{id}` (the stored view, the history
//! length and the last call's report; or a client's conversation's
//! sessions), `POST /v1/memory/sessions/{id}/recall`, `GET /healthz`,
//! `GET /metrics`.
//!
//! [`Store`]: memory_core::Store

mod auth;
mod carrying;
mod chain;
mod compaction;
mod config;
mod error;
mod guard;
mod kept;
mod ledger;
mod limits;
mod metrics;
mod principal;
mod protocol;
mod recall;
mod record;
mod registry;
mod reply;
mod report;
mod request;
mod server;
mod sessions;
mod state;
mod stored_responses;
mod stream;
mod summarizer_stats;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;
mod transcript;
mod upstream;

pub use auth::TOKEN_HEADER;
pub use chain::Chain;
pub use compaction::Compaction;
pub use config::{
    BudgetMode, DEFAULT_CONTEXT_WINDOW, DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_LOADED_SESSIONS, DEFAULT_MAX_BODY_BYTES, DEFAULT_REPLY_TOKENS, MIN_CALL_BUDGET,
    PipelineFactory, ServeConfig, check_upstream, shown_url,
};
pub use error::ApiError;
// The old name, re-exported where it was for one release.
#[allow(deprecated)]
pub use ledger::Head;
pub use ledger::{RESERVED_PREFIX, SessionState};
pub use limits::Limits;
pub use metrics::Metrics;
pub use principal::{Keys, Principal, TOKEN_PRINCIPAL};
pub use protocol::Protocol;
pub use recall::{MAX_RECALL_ROUNDS, RecallMode};
pub use reply::{StreamedReply, reply_of};
pub use report::{Admission, CallReport};
pub use request::ChatCall;
pub use server::{SESSION_HEADER, router, serve};
pub use summarizer_stats::{StatsSource, SummarizerStats};
