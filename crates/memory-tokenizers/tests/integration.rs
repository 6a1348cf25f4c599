//! The tokenizers' integration tests, one binary (a binary per file linked
//! the dependencies once each): each module one concern.

mod common;

mod framing;
mod real_data;
