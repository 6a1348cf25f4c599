//! The `memory` command's integration tests, one binary (a binary per file
//! linked the command's dependencies once each): each module one concern.
//! `pinned_figures` is its own binary: its long chat's time ratio is
//! measured with no other test beside it.

mod common;

mod api_key;
mod bad_input;
mod compact;
mod counters;
mod eval_locomo;
mod measures;
mod plot;
mod real_data;
mod real_locomo;
mod recall;
mod replay_example;
mod serve;
mod store;
mod summarize;
mod thrift;
mod traj;
