//! OpenAI's tile rule: what an image of a known size costs at high detail.

/// Tokens every high-detail image costs besides its tiles.
///
/// ```
/// assert_eq!(memory_core::image::BASE_TOKENS, 85);
/// ```
pub const BASE_TOKENS: usize = 85;

/// Tokens each tile of a high-detail image costs.
///
/// ```
/// assert_eq!(memory_core::image::TILE_TOKENS, 170);
/// ```
pub const TILE_TOKENS: usize = 170;

/// The side of a tile, in pixels: the model sees a high-detail image as
/// squares of this side.
///
/// ```
/// assert_eq!(memory_core::image::TILE_SIDE, 512);
/// ```
pub const TILE_SIDE: u32 = 512;

/// The square an image is first scaled down to fit in, keeping its aspect.
///
/// ```
/// assert_eq!(memory_core::image::MAX_SIDE, 2048);
/// ```
pub const MAX_SIDE: u32 = 2048;

/// The shorter side an image is then scaled down to, when it is longer.
///
/// ```
/// assert_eq!(memory_core::image::SHORT_SIDE, 768);
/// ```
pub const SHORT_SIDE: u32 = 768;

/// The size, in pixels, at which the model sees an image of
/// `width` x `height` at high detail: scaled down to fit within
/// [`MAX_SIDE`] x [`MAX_SIDE`], then so that its shorter side is at most
/// [`SHORT_SIDE`], keeping its aspect (rounded to whole pixels, never
/// below one); a smaller image is not scaled up.
///
/// ```
/// use memory_core::image::seen_size;
/// assert_eq!(seen_size(4096, 8192), (768, 1536));
/// assert_eq!(seen_size(100, 100), (100, 100));
/// ```
pub fn seen_size(width: u32, height: u32) -> (u32, u32) {
    let (w, h) = shrink(width, height, width.max(height), MAX_SIDE);
    shrink(w, h, w.min(h), SHORT_SIDE)
}

/// What an image of `width` x `height` pixels costs at high detail:
/// [`BASE_TOKENS`] plus [`TILE_TOKENS`] for each [`TILE_SIDE`] tile of
/// its [`seen_size`].
///
/// ```
/// use memory_core::image::tile_tokens;
/// assert_eq!(tile_tokens(1024, 1024), 85 + 170 * 4);
/// assert_eq!(tile_tokens(4096, 8192), 85 + 170 * 6);
/// assert_eq!(tile_tokens(100, 100), 85 + 170);
/// ```
pub fn tile_tokens(width: u32, height: u32) -> usize {
    let (w, h) = seen_size(width, height);
    let tiles = w.div_ceil(TILE_SIDE) as usize * h.div_ceil(TILE_SIDE) as usize;
    BASE_TOKENS + TILE_TOKENS * tiles
}

/// `width` x `height` scaled by `limit / side` when `side` is over `limit`.
fn shrink(width: u32, height: u32, side: u32, limit: u32) -> (u32, u32) {
    if side <= limit {
        return (width, height);
    }
    (scale(width, limit, side), scale(height, limit, side))
}

/// `x * limit / side`, rounded to the nearest pixel, at least one.
fn scale(x: u32, limit: u32, side: u32) -> u32 {
    let (x, limit, side) = (u64::from(x), u64::from(limit), u64::from(side));
    let scaled = (2 * x * limit + side) / (2 * side);
    u32::try_from(scaled).unwrap_or(u32::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_examples_of_the_rule() {
        // 2048 x 4096: 1024 x 2048, then 768 x 1536: 2 x 3 tiles.
        assert_eq!(seen_size(2048, 4096), (768, 1536));
        assert_eq!(tile_tokens(2048, 4096), 1105);
        // 1024 x 1024: 768 x 768: 2 x 2 tiles.
        assert_eq!(tile_tokens(1024, 1024), 765);
        assert_eq!(tile_tokens(2048, 2048), 765);
    }

    #[test]
    fn a_large_image_is_scaled_twice() {
        assert_eq!(seen_size(4096, 8192), (768, 1536));
        assert_eq!(tile_tokens(4096, 8192), 1105);
        assert_eq!(tile_tokens(8192, 4096), 1105);
    }

    #[test]
    fn a_small_image_is_one_tile_and_never_scaled_up() {
        assert_eq!(seen_size(100, 100), (100, 100));
        assert_eq!(tile_tokens(100, 100), 255);
        assert_eq!(tile_tokens(512, 512), 255);
        assert_eq!(tile_tokens(513, 512), 425);
    }

    #[test]
    fn a_long_strip_costs_the_most() {
        // 2048 x 768 is not scaled: 4 x 2 tiles, the dearest shape.
        assert_eq!(seen_size(2048, 768), (2048, 768));
        assert_eq!(tile_tokens(2048, 768), 85 + 170 * 8);
        // Far longer: fits 2048 wide, its short side stays under 768.
        assert_eq!(seen_size(100_000, 10), (2048, 1));
        assert_eq!(tile_tokens(u32::MAX, u32::MAX), 765);
    }

    #[test]
    fn a_screenshot() {
        // 1920 x 1080: short side to 768, 1365 x 768: 3 x 2 tiles.
        assert_eq!(seen_size(1920, 1080), (1365, 768));
        assert_eq!(tile_tokens(1920, 1080), 85 + 170 * 6);
    }
}
