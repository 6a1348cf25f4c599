//! Image tokens: what an image in a user message costs, priced as OpenAI
//! prices image input, so that every counter (the default
//! [`count_message`](crate::TokenCounter::count_message), hence
//! [`CharTokenCounter`](crate::CharTokenCounter) and the exact counters
//! of `memory-tokenizers`) prices images the same way.
//!
//! The rule is OpenAI's for its GPT-4o-class models: an image at `detail`
//! `low` costs [`LOW_DETAIL_TOKENS`] whatever its size; at `high`, `auto`,
//! any other detail or none, it is scaled to fit within
//! [`MAX_SIDE`] x [`MAX_SIDE`], then so that its shorter side is at most
//! [`SHORT_SIDE`], and costs [`BASE_TOKENS`] plus [`TILE_TOKENS`] per
//! [`TILE_SIDE`]-pixel tile ([`tile_tokens`]). The size is read from the
//! image's header bytes ([`dimensions`]); when it cannot be (no bytes, a
//! format other than PNG, JPEG, GIF or WebP, an image given by URL) the
//! image costs [`UNKNOWN_SIZE_TOKENS`]. Providers that price images
//! otherwise are served by a counter that overrides `count_message`.
//!
//! | item | what it is |
//! |---|---|
//! | [`tokens`] | what one image costs |
//! | [`block_tokens`] | what a user message's image or pass-through block costs |
//! | [`tile_tokens`], [`seen_size`] | the tile rule for an image of a known size |
//! | [`dimensions`] | an image's size from its header bytes |
//! | [`LOW_DETAIL_TOKENS`], [`UNKNOWN_SIZE_TOKENS`], [`BASE_TOKENS`], [`TILE_TOKENS`], [`TILE_SIDE`], [`MAX_SIDE`], [`SHORT_SIDE`] | the rule's figures |
//!
//! ```
//! use memory_core::{image, ImageContent};
//! let unknown = ImageContent::new("image/png", Vec::new());
//! assert_eq!(image::tokens(&unknown), image::UNKNOWN_SIZE_TOKENS);
//! assert_eq!(image::tokens(&unknown.with_detail("low")), 85);
//! ```

mod header;
mod tiles;

pub use header::dimensions;
pub use tiles::{
    BASE_TOKENS, MAX_SIDE, SHORT_SIDE, TILE_SIDE, TILE_TOKENS, seen_size, tile_tokens,
};

use crate::message::{ContentBlock, ImageContent};

/// What an image at `detail` `low` costs, whatever its size: the model
/// sees it as one 512 x 512 picture.
///
/// ```
/// assert_eq!(memory_core::image::LOW_DETAIL_TOKENS, 85);
/// ```
pub const LOW_DETAIL_TOKENS: usize = 85;

/// What an image whose size is unknown costs at any detail but `low`: the
/// price of a 2048 x 2048 picture (seen at 768 x 768, four tiles:
/// 85 + 4 x 170 = 765), which is what every square image of 768 pixels or
/// more costs, and near what photos and screenshots do (a 1920 x 1080
/// screenshot costs 1,105). It is not the most an image can cost: a long
/// strip (2048 x 768) costs 1,445. An image given by URL, whose bytes
/// this library never fetches, is priced so.
///
/// ```
/// use memory_core::image::{tile_tokens, UNKNOWN_SIZE_TOKENS};
/// assert_eq!(UNKNOWN_SIZE_TOKENS, tile_tokens(2048, 2048));
/// ```
pub const UNKNOWN_SIZE_TOKENS: usize = BASE_TOKENS + 4 * TILE_TOKENS;

/// What `image` costs in tokens: [`LOW_DETAIL_TOKENS`] at `detail`
/// `low`; otherwise the tile rule for the size its header gives
/// ([`tile_tokens`] of [`dimensions`]), or [`UNKNOWN_SIZE_TOKENS`] when it
/// gives none.
///
/// ```
/// use memory_core::{image, ImageContent};
/// let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
/// png.extend_from_slice(&100_u32.to_be_bytes());
/// png.extend_from_slice(&100_u32.to_be_bytes());
/// let small = ImageContent::new("image/png", png);
/// assert_eq!(image::tokens(&small), 85 + 170);
/// assert_eq!(image::tokens(&small.clone().with_detail("high")), 85 + 170);
/// assert_eq!(image::tokens(&small.with_detail("low")), 85);
/// ```
pub fn tokens(image: &ImageContent) -> usize {
    priced(image.detail.as_deref(), || dimensions(&image.data))
}

/// What a block of a user message costs besides its text: an image, its
/// [`tokens`]; a pass-through block that is an OpenAI `image_url` part (an
/// image given by URL, which this library keeps as it came), the price of
/// an image of unknown size at its `detail`; text and any other block,
/// nothing (a counter counts text itself).
///
/// ```
/// use memory_core::{image, ContentBlock, ImageContent};
/// use serde_json::json;
/// let by_url = json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}});
/// assert_eq!(image::block_tokens(&ContentBlock::Wire(by_url)), image::UNKNOWN_SIZE_TOKENS);
/// let low = json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}});
/// assert_eq!(image::block_tokens(&ContentBlock::Wire(low)), 85);
/// assert_eq!(image::block_tokens(&ContentBlock::Text("hi".into())), 0);
/// assert_eq!(image::block_tokens(&ContentBlock::Wire(json!({"type": "input_audio"}))), 0);
/// ```
pub fn block_tokens(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text(_) => 0,
        ContentBlock::Image(image) => tokens(image),
        ContentBlock::Wire(value) => {
            if value.get("type").and_then(|t| t.as_str()) != Some("image_url") {
                return 0;
            }
            let detail = value
                .get("image_url")
                .and_then(|u| u.get("detail"))
                .and_then(|d| d.as_str());
            priced(detail, || None)
        }
    }
}

/// The price at `detail` of an image whose size `size` reads, read only
/// when the detail needs it.
fn priced(detail: Option<&str>, size: impl FnOnce() -> Option<(u32, u32)>) -> usize {
    if detail == Some("low") {
        return LOW_DETAIL_TOKENS;
    }
    match size() {
        Some((width, height)) => tile_tokens(width, height),
        None => UNKNOWN_SIZE_TOKENS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut data = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        data.extend_from_slice(&width.to_be_bytes());
        data.extend_from_slice(&height.to_be_bytes());
        data.extend_from_slice(&[0x5A; 64]);
        data
    }

    #[test]
    fn low_detail_is_one_price_whatever_the_size() {
        for data in [png(100, 100), png(4096, 8192), Vec::new(), vec![1, 2, 3]] {
            let image = ImageContent::new("image/png", data).with_detail("low");
            assert_eq!(tokens(&image), 85);
        }
    }

    #[test]
    fn high_auto_and_no_detail_follow_the_tile_rule() {
        for detail in [Some("high"), Some("auto"), Some("something else"), None] {
            let priced = |data: Vec<u8>| {
                let mut image = ImageContent::new("image/png", data);
                image.detail = detail.map(str::to_string);
                tokens(&image)
            };
            assert_eq!(priced(png(4096, 8192)), 85 + 170 * 6, "{detail:?}");
            assert_eq!(priced(png(100, 100)), 85 + 170, "{detail:?}");
            assert_eq!(priced(Vec::new()), UNKNOWN_SIZE_TOKENS, "{detail:?}");
        }
    }

    #[test]
    fn an_unknown_size_costs_a_2048_square() {
        assert_eq!(UNKNOWN_SIZE_TOKENS, 765);
        assert_eq!(UNKNOWN_SIZE_TOKENS, tile_tokens(2048, 2048));
        let unknown = ImageContent::new("image/bmp", b"BM....".to_vec());
        assert_eq!(tokens(&unknown), 765);
    }

    #[test]
    fn an_image_url_part_is_priced_at_its_detail() {
        let url = |detail: serde_json::Value| {
            ContentBlock::Wire(serde_json::json!({
                "type": "image_url",
                "image_url": {"url": "https://example.com/cat.jpg", "detail": detail}
            }))
        };
        assert_eq!(block_tokens(&url("low".into())), 85);
        assert_eq!(block_tokens(&url("high".into())), 765);
        assert_eq!(block_tokens(&url(serde_json::Value::Null)), 765);
        let bare =
            serde_json::json!({"type": "image_url", "image_url": "https://example.com/cat.jpg"});
        assert_eq!(block_tokens(&ContentBlock::Wire(bare)), 765);
    }
}
