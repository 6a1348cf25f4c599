//! OpenAI Chat Completions: `POST /chat/completions`, its replies and its
//! stream of `chat.completion.chunk` events.

pub(crate) mod body;
pub(crate) mod options;
pub(crate) mod reply;
pub(crate) mod request;
pub(crate) mod stream;
