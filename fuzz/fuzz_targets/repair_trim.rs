//! `repair`, then every stage of the `memory` command at a small budget.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| memory_tests::fuzz::repair_trim(bytes));
