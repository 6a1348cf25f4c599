//! Where things are in the history being trimmed: the current question, the
//! newest step and round, the floor, the recent tool results.

use std::ops::Range;

use memory_core::structure::{self, Floor};
use memory_core::{History, Message};

use crate::kind_positions::KindPositions;

/// Positions every stage consults.
#[derive(Debug)]
pub(crate) struct Layout<'k> {
    /// The current question (the newest user message), if any.
    pub question: Option<usize>,
    /// Start of the newest step (it ends at the end of the history).
    pub newest_step: usize,
    /// Results at or after this index, inside the newest round, are the
    /// recent ones that are never replaced by a placeholder: the newest
    /// `keep` to `2 * keep - 1` of them (see [`Layout::new`]).
    pub recent_results_from: usize,
    /// The tool results of the newest round, in order.
    round_results: std::borrow::Cow<'k, [usize]>,
    /// How many of them are replaced together: `keep_recent_results`, at
    /// least 1.
    batch: usize,
    /// The newest tool result of the newest round: never replaced (but cut
    /// like any long output, and by the last resort when the floor holds
    /// it).
    pub newest_result: Option<usize>,
    /// What may never be dropped.
    pub floor: Floor,
    /// For each message, whether it lies in the floor.
    in_floor: Vec<bool>,
    /// Where the messages of each kind are, when known.
    kinds: Option<&'k KindPositions>,
    /// Steps of the newest round left out of every stage (see
    /// [`horizon`](crate::horizon)): empty unless set.
    skipped: Range<usize>,
    /// Earlier rounds past reach (see [`past_reach`](crate::past_reach)),
    /// left out of every stage: empty unless set.
    past: Range<usize>,
}

/// The kinds of messages a cheap stage looks at.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// Tool results not replaced by a placeholder (as the history has
    /// them).
    Replaceable,
    /// Of those, the ones not cut (as the history has them).
    Cuttable,
    /// Assistant messages with reasoning.
    Reasoned,
    /// User messages with blocks other than text.
    Media,
    /// Observations of text-only agents not cut (as the history has them).
    Observations,
}

impl<'k> Layout<'k> {
    /// Reads `history`; linear in the newest round and the floor. `kinds`,
    /// when given, are the positions of the kinds of messages of
    /// `history` (see [`Layout::candidates`]).
    pub fn new(
        history: &History<'_>,
        keep_recent_results: usize,
        kinds: Option<&'k KindPositions>,
    ) -> Self {
        let messages = history.messages();
        let n = messages.len();
        let question = match kinds {
            Some(kinds) => kinds.question(n),
            None => structure::current_question(messages),
        };
        let newest_step = if n == 0 {
            0
        } else {
            structure::step_start(messages, n)
        };
        let newest_round = question.unwrap_or(0);
        // The recent results are the newest `keep` or more: the boundary
        // moves back in jumps of `keep` results, so that the turns of an
        // agent loop replace earlier results `keep` at a time, not one
        // every turn (each replacement rewrites the prompt's prefix).
        let keep = keep_recent_results.max(1);
        let results: std::borrow::Cow<'k, [usize]> = match kinds {
            // Listed: exactly the tool results.
            Some(kinds) => KindPositions::within(&kinds.results, newest_round..n).into(),
            None => (newest_round..n)
                .filter(|&i| messages[i].is_tool_result())
                .collect::<Vec<_>>()
                .into(),
        };
        let newest_result = results.last().copied();
        let recent = if results.len() <= keep {
            results.len()
        } else {
            keep + (results.len() - keep) % keep
        };
        let recent_results_from = match recent {
            0 => newest_round,
            r => results[results.len() - r],
        };
        let floor = structure::floor_at(history, question);
        let mut in_floor = vec![false; n];
        for range in &floor.ranges {
            in_floor[range.clone()].fill(true);
        }
        Self {
            question,
            newest_step,
            recent_results_from,
            round_results: results,
            batch: keep,
            newest_result,
            floor,
            in_floor,
            kinds,
            skipped: 0..0,
            past: 0..0,
        }
    }

    /// Leaves the messages `range` out of every stage: no stage looks at
    /// them, nor are they candidates of the drop stage.
    pub fn skip(&mut self, range: Range<usize>) {
        self.skipped = range;
    }

    /// The messages left out of every stage (empty unless
    /// [`skip`](Layout::skip) set them).
    pub fn skipped(&self) -> Range<usize> {
        self.skipped.clone()
    }

    /// Leaves the earlier rounds `range`, past reach, out of every stage
    /// (the messages of the floor among them stay as they are): no stage
    /// looks at them, nor are they candidates of the drop stage.
    pub fn leave_past(&mut self, range: Range<usize>) {
        self.past = range;
    }

    /// The earlier rounds past reach (empty unless
    /// [`leave_past`](Layout::leave_past) set them).
    pub fn past(&self) -> Range<usize> {
        self.past.clone()
    }

    /// The positions in `range` that may hold messages of `kind`: those
    /// known to, or all of them, but for the rounds past reach and the
    /// steps skipped. A stage still checks each message it gets.
    pub fn candidates(&self, kind: Kind, range: Range<usize>) -> impl Iterator<Item = usize> + 'k {
        // The rounds past reach lie before the current question, the
        // steps skipped after it.
        let [a, b, c] = without(range, [&self.past, &self.skipped]);
        candidates(self.kinds, kind, a)
            .chain(candidates(self.kinds, kind, b))
            .chain(candidates(self.kinds, kind, c))
    }

    /// Where the rounds of `messages`, the history's, start (its user
    /// messages), from the kinds when known.
    pub fn round_starts(&self, messages: &[Message]) -> std::borrow::Cow<'k, [usize]> {
        match self.kinds {
            Some(kinds) => KindPositions::within(&kinds.users, 0..messages.len()).into(),
            None => structure::round_starts(messages).into(),
        }
    }

    /// Whether the candidates are exactly the messages of their kind (as
    /// the history has them), rather than every position.
    pub fn lists_kinds(&self) -> bool {
        self.kinds.is_some()
    }

    /// The batch of each tool result of the newest round, for positions
    /// asked in ascending order: its results are numbered from the round's
    /// start and taken `batch` at a time, so a batch holds the same
    /// results on every turn of the round. `None` for a result of an
    /// earlier round. Constant time each, amortized.
    pub fn result_batches(&self) -> impl FnMut(usize) -> Option<usize> + '_ {
        let mut at = 0;
        move |i| {
            let results = &self.round_results;
            while results.get(at).is_some_and(|&r| r < i) {
                at += 1;
            }
            (results.get(at) == Some(&i)).then(|| at / self.batch)
        }
    }

    /// Whether message `i` lies in the floor (constant time).
    pub fn in_floor(&self, i: usize) -> bool {
        self.in_floor[i]
    }

    /// Whether each message of `range` lies in the floor.
    pub fn in_floor_of(&self, range: Range<usize>) -> &[bool] {
        &self.in_floor[range]
    }

    /// Whether a cheap stage may change message `i`: it is not protected,
    /// not the current question and not part of the newest step.
    pub fn shrinkable(&self, history: &History<'_>, i: usize) -> bool {
        i < self.newest_step && Some(i) != self.question && !history.is_protected(i)
    }

    /// User messages of the floor other than the current question: rounds
    /// that are kept whatever the rounds limit says.
    pub fn floor_users(&self, messages: &[Message]) -> usize {
        let question = self.question.unwrap_or(messages.len());
        self.floor.users_before(messages, question)
    }
}

/// `range` without the ranges `out` (disjoint and in order): what is left
/// before the first, between them and after the second.
fn without(range: Range<usize>, out: [&Range<usize>; 2]) -> [Range<usize>; 3] {
    let mut left = [0..0, 0..0, 0..0];
    let mut from = range.start;
    for (piece, gap) in left.iter_mut().zip(out) {
        if gap.is_empty() {
            continue;
        }
        *piece = from..gap.start.clamp(from, range.end.max(from));
        from = from.max(gap.end);
    }
    left[2] = from..range.end.max(from);
    left
}

/// The positions in `range` that may hold messages of `kind`: those
/// `kinds` lists, or all of them when there is no list.
fn candidates<'k>(
    kinds: Option<&'k KindPositions>,
    kind: Kind,
    range: Range<usize>,
) -> impl Iterator<Item = usize> + 'k {
    let listed = kinds.map(|kinds| {
        let list = match kind {
            Kind::Replaceable => &kinds.replaceable,
            Kind::Cuttable => &kinds.cuttable,
            Kind::Reasoned => &kinds.reasoned,
            Kind::Media => &kinds.media,
            Kind::Observations => &kinds.observations,
        };
        KindPositions::within(list, range.clone()).iter().copied()
    });
    let all = listed.is_none().then_some(range).into_iter().flatten();
    listed.into_iter().flatten().chain(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ToolCall;

    #[test]
    fn a_range_without_the_past_and_the_skipped_is_what_lies_around_them() {
        assert_eq!(without(0..10, [&(2..4), &(6..8)]), [0..2, 4..6, 8..10]);
        assert_eq!(without(0..10, [&(0..0), &(6..8)]), [0..0, 0..6, 8..10]);
        assert_eq!(without(0..10, [&(2..4), &(0..0)]), [0..2, 0..0, 4..10]);
        assert_eq!(without(0..10, [&(0..0), &(0..0)]), [0..0, 0..0, 0..10]);
        // Ranges reaching past either end.
        assert_eq!(without(3..5, [&(0..4), &(4..9)]), [3..3, 4..4, 9..9]);
        assert_eq!(without(5..7, [&(1..2), &(8..9)]), [5..5, 5..7, 9..9]);
        let covered: Vec<usize> = without(0..10, [&(2..4), &(6..8)])
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(covered, [0, 1, 4, 5, 8, 9]);
    }

    #[test]
    fn the_newest_round_s_results_go_in_batches() {
        let mut m = vec![Message::user("old"), Message::assistant("a")];
        m.push(Message::user("now"));
        for k in 0..7 {
            let id = format!("c{k}");
            m.push(Message::assistant_with_tools(
                "",
                vec![ToolCall::new(&id, "ls", "{}")],
            ));
            m.push(Message::tool_result(&id, "out"));
        }
        let counts = vec![1; m.len()];
        let history = History::new(&m, &counts).unwrap();
        let layout = Layout::new(&history, 3, None);
        let mut batch_of = layout.result_batches();
        let got: Vec<Option<usize>> = (0..m.len()).map(&mut batch_of).collect();
        let mut want = vec![None; m.len()];
        for k in 0..7 {
            want[4 + 2 * k] = Some(k / 3);
        }
        assert_eq!(got, want);
    }
}
