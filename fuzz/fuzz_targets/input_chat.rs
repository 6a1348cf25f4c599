//! The `memory` command's readers, seeded with OpenAI chat JSON and JSONL.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| memory_tests::fuzz::input(bytes));
