//! The `memory` command's readers, seeded with LoCoMo.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| memory_tests::fuzz::input(bytes));
