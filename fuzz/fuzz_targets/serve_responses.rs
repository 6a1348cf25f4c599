//! `memory serve`'s Responses front: its request decoder.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| memory_tests::fuzz::serve_responses(bytes));
