//! [`PricedImages`]: a counter that gives images and pass-through blocks a
//! price.

use async_trait::async_trait;

use crate::counter::{CharTokenCounter, TokenCounter};
use crate::error::MemoryError;
use crate::message::{ContentBlock, Message};

/// Counts text as [`CharTokenCounter`] does, and each image or
/// pass-through block of a user message at the number of tokens it holds
/// (the default counters price images by [`crate::image`] and other
/// pass-through blocks at zero), so that a test sets what a strategy gains
/// by replacing them.
///
/// ```
/// use memory_core::test_util::PricedImages;
/// use memory_core::{ContentBlock, ImageContent, Message, TokenCounter};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let m = Message::user_blocks(vec![
///     ContentBlock::Text("Look.".into()),
///     ContentBlock::Image(ImageContent::new("image/png", vec![0; 64])),
/// ]);
/// let text = memory_core::CharTokenCounter.count_message(&Message::user("Look.")).await.unwrap();
/// assert_eq!(PricedImages(300).count_message(&m).await.unwrap(), text + 300);
/// # });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PricedImages(pub usize);

#[async_trait]
impl TokenCounter for PricedImages {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        Ok(CharTokenCounter::estimate(text))
    }

    async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
        let Message::User(blocks) = message else {
            return CharTokenCounter.count_message(message).await;
        };
        Ok(blocks
            .iter()
            .map(|block| match block {
                ContentBlock::Text(text) => CharTokenCounter::estimate(text),
                _ => self.0,
            })
            .sum())
    }
}
