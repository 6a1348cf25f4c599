//! OpenAI Responses: `POST /responses` as Codex and OpenAI's SDKs send
//! it (input items, `instructions`, flat function tools), its replies and
//! its stream of numbered events.

pub(crate) mod items;
pub(crate) mod options;
pub(crate) mod reply;
pub(crate) mod request;
pub(crate) mod stream;
