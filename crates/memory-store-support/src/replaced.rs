//! [`assemble`]: the views compactions replaced, rebuilt from what an
//! append-only schema keeps.

use std::collections::BTreeMap;

use memory_core::{StoreError, StoredMessage};

use crate::{Row, decode_all};

/// The views compactions replaced, oldest first. The view compaction `g`
/// (1-based) replaced is the view of generation `g - 1`, then the history
/// between compactions `g - 1` and `g`; `bases` are the history lengths at
/// each compaction, `views` the rows of each generation's view, `log` the
/// history rows in order.
///
/// # Errors
///
/// [`StoreError::Backend`] when the bases are out of order or a row does
/// not decode.
///
/// ```
/// use std::collections::BTreeMap;
/// use memory_core::{summary, Message, StoredMessage};
/// use memory_store_support::{assemble, Row};
///
/// let row = |m: Message| Row::encode(&StoredMessage::new(m, 1, false)).unwrap();
/// let log = vec![row(Message::user("a")), row(Message::user("b")), row(Message::user("c"))];
/// // Compaction 1 at history length 2 committed a summary as the view of generation 1.
/// let views = BTreeMap::from([(1, vec![row(summary::message("a, b"))])]);
/// let replaced = assemble(vec![2], views, log).unwrap();
/// assert_eq!(replaced.len(), 1);
/// assert_eq!(replaced[0].len(), 2); // a and b
/// ```
pub fn assemble(
    bases: Vec<i64>,
    mut views: BTreeMap<i64, Vec<Row>>,
    log: Vec<Row>,
) -> Result<Vec<Vec<StoredMessage>>, StoreError> {
    let mut log = log.into_iter();
    let mut previous = 0;
    let mut replaced = Vec::with_capacity(bases.len());
    for (generation, base) in (1_i64..).zip(bases) {
        let mut rows = views.remove(&(generation - 1)).unwrap_or_default();
        let between = usize::try_from(base - previous).map_err(|_| {
            StoreError::Backend(
                "compactions are out of order: the database was altered outside this library"
                    .into(),
            )
        })?;
        rows.extend(log.by_ref().take(between));
        replaced.push(decode_all(rows)?);
        previous = base;
    }
    Ok(replaced)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::Message;

    fn row(text: &str) -> Row {
        Row::encode(&StoredMessage::new(Message::user(text), 1, false)).unwrap()
    }

    #[test]
    fn each_replaced_view_is_the_previous_view_and_what_came_after() {
        let log = vec![row("a"), row("b"), row("c"), row("d")];
        let views = BTreeMap::from([(1, vec![row("s1")]), (2, vec![row("s2")])]);
        let replaced = assemble(vec![2, 3], views, log).unwrap();
        let texts: Vec<Vec<String>> = replaced
            .iter()
            .map(|v| v.iter().map(|s| s.message.text()).collect())
            .collect();
        assert_eq!(texts, vec![vec!["a", "b"], vec!["s1", "c"]]);
    }

    #[test]
    fn bases_out_of_order_are_reported() {
        let err = assemble(vec![3, 1], BTreeMap::new(), vec![row("a")]).unwrap_err();
        assert!(err.to_string().contains("out of order"), "{err}");
    }
}
