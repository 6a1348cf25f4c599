//! What tests of code built on these contracts share, behind the
//! `test-util` feature (enable it in `[dev-dependencies]`):
//!
//! | item | what it is |
//! |---|---|
//! | [`FakeProvider`], [`FakeReply`] | a scripted model that records every request |
//! | [`FakeEmbedder`] | a deterministic embedder (words hashed into buckets) that records every request |
//! | [`PricedImages`] | a counter that prices images and pass-through blocks |
//! | [`FoldOld`] | a compacting strategy without a model: everything but the newest two steps into one summary |
//! | [`Needs`], [`POSTGRES`], [`DATA`] | a service or data set found through an environment variable: skipped with a notice when missing, a failure under CI |
//!
//! ```toml
//! [dev-dependencies]
//! memory-core = { version = "0.1", features = ["test-util"] }
//! ```
//!
//! ```
//! use memory_core::test_util::{FakeProvider, FakeReply};
//! let model = FakeProvider::new([FakeReply::Text("a summary".into())]);
//! assert!(model.requests().is_empty());
//! ```

mod fake;
mod fake_embedder;
mod fold_old;
mod needs;
mod priced_images;

pub use fake::{FakeProvider, FakeReply};
pub use fake_embedder::FakeEmbedder;
pub use fold_old::FoldOld;
pub use needs::{DATA, Needs, POSTGRES};
pub use priced_images::PricedImages;
