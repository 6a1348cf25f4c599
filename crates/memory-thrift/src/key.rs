//! The keys Thrift recognizes words and messages by: memory-core's
//! [`identity`](memory_core::identity).

pub(crate) use memory_core::identity::{WordHasher, message_key, text_key};
