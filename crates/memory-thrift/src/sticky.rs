//! Sticky cuts: shedding in steps of a fixed size, so that the turns after
//! a cut only append.
//!
//! Thrift is a projection, recomputed from the whole history on every turn.
//! If it shed exactly what each turn's excess demands, the cut would move a
//! little on every turn and rewrite the prompt's prefix every time, which
//! defeats the provider's prefix cache. Instead the excess over the budget
//! is rounded up to a multiple of the **granule**, the budget's share above
//! the low watermark. The target that results stays put while the history
//! grows by less than a granule: just after a cut the context is at about
//! the watermark, and the following turns append to it unchanged until the
//! budget is crossed again.

/// The granule for a budget of `max` tokens and a low watermark (a share of
/// the budget): `max * (1 - watermark)`, at least 1.
pub(crate) fn granule(max: usize, watermark: f32) -> usize {
    let share = f64::from(1.0 - watermark.clamp(0.0, 1.0));
    ((max as f64 * share).round() as usize).max(1)
}

/// The low watermark of a budget of `max` tokens: `max * watermark`,
/// rounded down.
pub(crate) fn watermark(max: usize, watermark: f32) -> usize {
    (max as f64 * f64::from(watermark.clamp(0.0, 1.0))).floor() as usize
}

/// The total to shed down to: `total` less its excess over `max` rounded up
/// to a multiple of `granule`; `total` itself when within `max`.
pub(crate) fn target(total: usize, max: usize, granule: usize) -> usize {
    if total <= max {
        return total;
    }
    let granule = granule.max(1);
    let steps = (total - max).div_ceil(granule);
    total.saturating_sub(steps.saturating_mul(granule))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_moves_once_per_granule_of_growth() {
        let g = granule(1000, 0.8);
        assert_eq!(g, 200);
        // Just over the budget: down to about the watermark.
        assert_eq!(target(1001, 1000, g), 801);
        // Growing by less than a granule keeps the same excess removed.
        assert_eq!(target(1150, 1000, g), 950);
        assert_eq!(target(1200, 1000, g), 1000);
        // One more token: a second granule.
        assert_eq!(target(1201, 1000, g), 801);
        assert_eq!(target(900, 1000, g), 900);
    }

    #[test]
    fn a_watermark_of_one_sheds_only_the_excess() {
        assert_eq!(granule(1000, 1.0), 1);
        assert_eq!(target(1234, 1000, 1), 1000);
        assert_eq!(granule(0, 0.8), 1);
        assert_eq!(target(5, 0, granule(0, 0.5)), 0);
    }
}
