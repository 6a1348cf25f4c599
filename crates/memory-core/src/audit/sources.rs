//! Where each result message comes from in the history.

use crate::audit::Breach;
use crate::index;
use crate::message::Message;
use crate::shrunk::is_shrunk_from;
use crate::summary;

/// Where one result message comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The history message at this position, as it was or
    /// [shrunk](is_shrunk_from).
    From(usize),
    /// A message the strategy made (or an earlier compaction's summary the
    /// history does not hold): a summary.
    Made,
    /// An [index](crate::index) of what the result leaves out: made,
    /// but neither a summary nor protected.
    Index,
    /// Neither: out of order or invented.
    Stray,
}

/// The sources of `output`'s messages in `input`, and a breach for the
/// first stray one.
///
/// Each message is matched to the earliest input message after the
/// previous match that it equals or is shrunk from. A message that matches
/// nothing may be invented only when it is a summary (add explicit
/// truncation markers here when core recognizes them).
pub(crate) fn trace(input: &[Message], output: &[Message]) -> (Vec<Source>, Option<Breach>) {
    let mut next = 0;
    let mut sources = Vec::with_capacity(output.len());
    let mut first_stray = None;
    for (index, message) in output.iter().enumerate() {
        match input[next..]
            .iter()
            .position(|x| is_shrunk_from(x, message))
        {
            Some(offset) => {
                sources.push(Source::From(next + offset));
                next += offset + 1;
            }
            None if summary::is_summary(message) => sources.push(Source::Made),
            None if index::is_index(message) => sources.push(Source::Index),
            None => {
                sources.push(Source::Stray);
                let role = message.role();
                first_stray.get_or_insert_with(|| {
                    if input.iter().any(|x| is_shrunk_from(x, message)) {
                        Breach::OutOfOrder {
                            index,
                            role,
                            after: next,
                        }
                    } else {
                        Breach::Invented { index, role }
                    }
                });
            }
        }
    }
    (sources, first_stray)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_may_be_made_anything_else_is_stray() {
        let input = [
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ];
        let output = [summary::message("a, b"), Message::user("c")];
        assert_eq!(
            trace(&input, &output),
            (vec![Source::Made, Source::From(2)], None)
        );
        let (sources, breach) = trace(&input, &[Message::user("c"), Message::user("a")]);
        assert_eq!(sources, vec![Source::From(2), Source::Stray]);
        assert!(matches!(breach, Some(Breach::OutOfOrder { index: 1, .. })));
        let (_, breach) = trace(&input, &[Message::assistant("made up")]);
        assert!(matches!(breach, Some(Breach::Invented { index: 0, .. })));
    }
}
