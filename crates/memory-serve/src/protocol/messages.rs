//! Anthropic Messages: `POST /messages` as Claude Code and Anthropic's
//! SDKs send it, its replies and its stream of named events.

pub(crate) mod blocks;
pub(crate) mod edits;
pub(crate) mod options;
pub(crate) mod reply;
pub(crate) mod request;
pub(crate) mod stream;
