//! `memory serve`'s request decoder: `ChatCall::decode`, then `upstream_body`.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| memory_tests::fuzz::serve_request(bytes));
