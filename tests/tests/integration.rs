//! Cross-crate tests, one binary (a binary per file linked every crate once
//! each): each module one suite. `invariants` is its own binary: CI runs it
//! again with more cases by name.

mod checks_bite;
mod compact_thrift;
mod fuzz_regressions;
mod generators;
mod images;
mod pipeline;
mod rig_adapter;
mod same_context;
mod store_contract;
