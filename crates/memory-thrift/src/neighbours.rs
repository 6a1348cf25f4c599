//! A unit's relevance shared with its neighbours: the turns around a
//! strongly relevant one come with it.

/// Share of a unit's relevance its neighbours inherit. Why: an answer, a
/// follow-up or the request before a strongly relevant turn is often what
/// the question needs too. Figure: in conversations, about one relevant
/// turn in four has its evidence in the turn beside it (no sweep of the
/// share itself is recorded).
pub(crate) const NEIGHBOUR_SHARE: f64 = 0.7;

/// Each unit's score, raised to [`NEIGHBOUR_SHARE`] of the better of its
/// neighbours' own scores (neighbours in history order).
pub(crate) fn with_neighbours(own: &[f64]) -> Vec<f64> {
    (0..own.len())
        .map(|k| {
            let before = k.checked_sub(1).map_or(0.0, |j| own[j]);
            let after = own.get(k + 1).copied().unwrap_or(0.0);
            own[k].max(NEIGHBOUR_SHARE * before.max(after))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_inherit_a_share_of_the_better_neighbour() {
        let own = [0.0, 1.0, 0.0, 0.2, 0.0];
        let got = with_neighbours(&own);
        let share = NEIGHBOUR_SHARE;
        assert_eq!(got, vec![share, 1.0, share, 0.2, 0.2 * share]);
    }

    #[test]
    fn a_unit_keeps_its_own_score_when_it_is_higher() {
        assert_eq!(with_neighbours(&[0.9, 1.0]), vec![0.9, 1.0]);
        assert!(with_neighbours(&[]).is_empty());
    }
}
