//! Thrift's integration tests, one binary (a binary per file linked the
//! dependencies once each): each module one concern.

mod relevance;
mod thrift;
