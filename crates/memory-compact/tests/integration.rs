//! `Compact`'s integration tests, one binary (a binary per file linked the
//! dependencies once each): each module one concern.

mod common;

mod acceptance;
mod background;
mod control;
mod file_ops;
mod rejections;
mod requests;
mod split_turn;
mod summary_cap;
mod task;
mod threshold;
mod timing;
