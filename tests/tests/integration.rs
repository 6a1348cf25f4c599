//! Cross-crate tests, one binary (a binary per file linked every crate once
//! each): each module one suite. CI runs the invariant suite again with
//! more cases (`cargo test --workspace --test integration invariants::`,
//! on the workspace's build).

mod checks_bite;
mod compact_thrift;
mod fuzz_regressions;
mod generators;
mod images;
mod invariants;
mod pipeline;
mod rig_adapter;
mod same_context;
mod store_contract;
