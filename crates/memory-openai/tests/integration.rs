//! The OpenAI client's integration tests, one binary (a binary per file
//! linked the dependencies once each): each module one concern. `layers` is
//! its own binary: it times calls, with no other test beside it.

mod server;

mod embeddings;
mod http;
mod keys;
