//! [`Folded`]: the turns a compaction folded away, kept as the index
//! lines of their pieces so that the index can name them.

use std::ops::Range;
use std::sync::Arc;

use memory_core::recall::max_reachable_tokens;
use memory_core::{Budget, History, Message};

use super::{Cutter, Words, line, named_handle, piece_words};

/// Turns a compaction folded away that the history a strategy is given
/// (its view and covered set) no longer holds: kept as the index lines of
/// their pieces (a few dozen bytes each, and the messages from the start
/// of the last piece that later turns may change), so that the index can
/// name them ([`add_index_folded`](super::add_index_folded)).
/// `WindowMemory` keeps one per session.
///
/// ```
/// use memory_core::{Budget, Message};
/// use memory_session::left_out::Folded;
/// let mut folded = Folded::default();
/// folded.extend(&[(Message::user("a"), 1), (Message::assistant("b"), 1)], &Budget::tokens(100));
/// assert_eq!(folded.len(), 1);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Folded {
    pub(super) pieces: Vec<FoldedPiece>,
    /// How many of the last pieces are not final: the turns
    /// [`extend`](Folded::extend) folds next may change them, as they
    /// would had they been folded together.
    provisional: usize,
    /// The messages from where the cut resumes (the start of its open
    /// piece), with their counts.
    open: Vec<(Message, usize)>,
    /// Where the cut resumes in `open`: the length of its open piece and
    /// the start of the step it cuts next.
    resume: (usize, usize),
}

/// One folded piece: its index line, its handle (after a space, as the
/// line of handles has it) and its words.
#[derive(Debug, Clone)]
pub(super) struct FoldedPiece {
    pub(super) described: Arc<str>,
    pub(super) named: Arc<str>,
    pub(super) words: Words,
}

impl Folded {
    /// Adds `cut`, pieces of `history`.
    fn fold_pieces(&mut self, history: &History<'_>, cut: &[Range<usize>], max_tokens: usize) {
        for piece in cut.iter().cloned() {
            let tokens = history.tokens(piece.clone());
            let slice = &history.messages()[piece];
            self.pieces.push(FoldedPiece {
                described: line(slice, tokens, max_tokens).into(),
                named: named_handle(slice, tokens, max_tokens).into(),
                words: piece_words(slice),
            });
        }
    }

    /// Adds `turns` (messages with their counts, oldest first), folded
    /// away right after those added before, as pieces one recall brings
    /// back whole under `budget`. The pieces are the ones folding all of
    /// them at once gives: the cut resumes with the turns added next from
    /// the start of the last step (whose results may come next) in the
    /// last piece, so a session that folds its turns a few at a time lists
    /// the pieces a session opened again lists.
    ///
    /// ```
    /// use memory_core::{Budget, Message};
    /// use memory_session::left_out::Folded;
    /// let budget = Budget::tokens(1_000);
    /// let mut bit_by_bit = Folded::default();
    /// bit_by_bit.extend(&[(Message::user("a"), 1)], &budget);
    /// bit_by_bit.extend(&[(Message::assistant("b"), 1)], &budget);
    /// let mut at_once = Folded::default();
    /// at_once.extend(&[(Message::user("a"), 1), (Message::assistant("b"), 1)], &budget);
    /// assert_eq!(bit_by_bit.len(), 1);
    /// assert_eq!(format!("{bit_by_bit:?}"), format!("{at_once:?}"));
    /// ```
    pub fn extend(&mut self, turns: &[(Message, usize)], budget: &Budget) {
        if turns.is_empty() {
            return;
        }
        let mut joined = std::mem::take(&mut self.open);
        joined.extend(turns.iter().cloned());
        let (messages, counts): (Vec<Message>, Vec<usize>) = joined.into_iter().unzip();
        let Ok(history) = History::new(&messages, &counts) else {
            return;
        };
        self.pieces
            .truncate(self.pieces.len() - std::mem::take(&mut self.provisional));
        let history = history.forget_task();
        let max_tokens = max_reachable_tokens(budget);
        let (piece, at) = std::mem::take(&mut self.resume);
        let mut cutter = Cutter::resumed(0..piece, at, max_tokens);
        cutter.cut_to(history.messages(), |r| history.tokens(r), history.len());
        let cut = cutter.pieces();
        self.fold_pieces(&history, &cut, max_tokens);
        self.provisional = cut.len() - cutter.final_pieces();
        let (piece, at) = cutter.resumes_at();
        self.resume = (piece.len(), at - piece.start);
        self.open = (piece.start..history.len())
            .map(|i| (messages[i].clone(), counts[i]))
            .collect();
    }

    /// How many pieces it holds.
    ///
    /// ```
    /// assert_eq!(memory_session::left_out::Folded::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Whether it holds none.
    ///
    /// ```
    /// assert!(memory_session::left_out::Folded::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use memory_core::{Budget, Message, ToolCall};

    use super::Folded;

    /// Steps of every shape the cut treats apart: small replies that share
    /// a piece, a step of parallel calls, and a step too large for one
    /// recall (a piece per message).
    fn turns() -> Vec<(Message, usize)> {
        let calls = |k: usize, n: usize| {
            let calls = (0..n)
                .map(|i| ToolCall::new(format!("c{k}_{i}"), "read", "{}"))
                .collect();
            Message::assistant_with_tools(format!("step {k}"), calls)
        };
        let result = |k: usize, i: usize| Message::tool_result(format!("c{k}_{i}"), "out");
        vec![
            (Message::user("fix the tests"), 20),
            (calls(0, 2), 30),
            (result(0, 0), 40),
            (result(0, 1), 40),
            (Message::assistant("done reading"), 10),
            (calls(1, 3), 300),
            (result(1, 0), 200),
            (result(1, 1), 20),
            (result(1, 2), 20),
            (Message::assistant("large step read"), 10),
            (Message::user("go on"), 5),
            (calls(2, 1), 30),
            (result(2, 0), 30),
            (Message::assistant("all done"), 10),
        ]
    }

    /// Folding a conversation in two or three parts, at any places, gives
    /// the pieces folding it at once gives, wherever a part ends (inside
    /// a step of parallel calls, inside a step too large for one recall).
    #[test]
    fn folding_in_parts_gives_the_pieces_folding_at_once_gives() {
        let budget = Budget::tokens(2_000);
        let turns = turns();
        let mut at_once = Folded::default();
        at_once.extend(&turns, &budget);
        let expected = format!("{:?}", at_once.pieces);
        assert!(at_once.len() > 3, "{expected}");
        for a in 1..turns.len() {
            for b in a..turns.len() {
                let mut parts = Folded::default();
                for part in [&turns[..a], &turns[a..b], &turns[b..]] {
                    parts.extend(part, &budget);
                }
                assert_eq!(
                    format!("{:?}", parts.pieces),
                    expected,
                    "parts end at {a}, {b}"
                );
            }
        }
    }
}
