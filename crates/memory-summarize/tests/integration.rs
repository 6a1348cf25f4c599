//! The summarizer's integration tests, one binary (a binary per file linked
//! the dependencies once each): each module one concern.

mod acceptance;
mod endpoint;
mod summarize;
