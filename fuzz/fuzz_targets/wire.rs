//! The OpenAI wire decoding: reply bodies and message arrays.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| memory_tests::fuzz::wire(bytes));
