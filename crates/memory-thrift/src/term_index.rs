//! [`TermIndex`]: the [terms](crate::relevance) of every message seen, kept
//! from call to call, and the [`Lexical`](crate::Lexical) scores computed
//! from them.
//!
//! Scoring older units against a question by reading their texts costs a
//! pass over the whole history on every call. The index reads each
//! message once, when it is first seen: its distinct terms (interned as
//! numbers) and, for each term, the messages that hold it (its postings).
//! A call then only walks the postings of the question's terms, and gives
//! exactly the scores [`Lexical`](crate::Lexical) would give the units'
//! texts: the same terms found, the same document frequencies, the same
//! weights summed in the same order (see [`TermIndex::score`]). The
//! index keeps the postings of rounds too (for each term, the rounds
//! some message of which holds it), so that scoring whole rounds, as the
//! reach-back test does, walks each round once, not each message
//! (see [`TermIndex::score_rounds`]).
//!
//! A message shown changed (its reasoning replaced by its placeholder, its output cut, its
//! media replaced) is scored as shown: without its reasoning's terms, or
//! by the terms of its changed texts, kept by its position (a changed form
//! is a function of the message, which the index holds unchanged).

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::ops::Range;

use memory_core::Message;

use crate::relevance::{TermScorer, for_each_term, share};
use crate::texts::{texts_and_reasoning, texts_of};
use memory_core::identity::{WordHasher, message_key};

/// No unit: the message is not scored.
const NONE: u32 = u32::MAX;
/// Set beside the unit of a message shown changed.
const CHANGED: u32 = 1 << 31;

/// The terms of the messages seen, by position.
#[derive(Debug, Clone, Default)]
pub(crate) struct TermIndex {
    /// Term ids by term.
    ids: HashMap<Box<[u8]>, u32, BuildHasherDefault<WordHasher>>,
    /// Terms by id.
    names: Vec<Box<[u8]>>,
    /// Where each message's terms start in `arena`; one more entry than
    /// messages.
    starts: Vec<usize>,
    /// Where each message's terms outside its reasoning end (its
    /// reasoning's other terms follow, up to the next start).
    body_ends: Vec<usize>,
    /// Each message's distinct term ids.
    arena: Vec<u32>,
    /// For each term id, the messages that hold it, ascending.
    postings: Vec<Vec<u32>>,
    /// Where each round starts (its user message), ascending: a round's
    /// number is its place here.
    rounds: Vec<u32>,
    /// For each term id, the rounds (by number) some message of which
    /// holds it, ascending.
    round_postings: Vec<Vec<u32>>,
    /// Terms of messages shown changed (an output cut, media replaced), by
    /// position, with the length of the changed texts.
    changed: HashMap<usize, (usize, Vec<u32>)>,
    /// Each synced message's identity, as the message index's sync read
    /// it ([`note`](TermIndex::note)): at least one for each message
    /// indexed (one pushed past them is keyed here, by [`message_key`]).
    keys: Vec<u64>,
    /// The terms of the messages the last [`truncate`](TermIndex::truncate)
    /// forgot (body and reasoning, as `arena` holds them), by the message's
    /// identity: a compaction that lands changes the summary before the
    /// covered set, and every message after it is forgotten and indexed
    /// again, most of them the same messages at the same places. Dropped
    /// once the index has caught up.
    forgotten: HashMap<u64, (Vec<u32>, Vec<u32>), BuildHasherDefault<WordHasher>>,
    /// Scratch: a term's id being looked up.
    word: Vec<u8>,
    /// Messages whose texts were read (split into terms), for the tests.
    #[cfg(test)]
    read: usize,
}

/// The units a call scores: for each message of the history outside the
/// gap, the unit it counts towards, and the messages shown changed.
#[derive(Debug)]
pub(crate) struct Units<'m> {
    /// The unit of each message before the gap, then of each after it.
    of: Vec<u32>,
    changed: Vec<(usize, &'m Message)>,
    count: usize,
    /// Messages none of which counts towards a unit: their postings are
    /// not walked, nor do they take room here.
    gap: Range<usize>,
}

impl<'m> Units<'m> {
    /// `count` units over the first `len` messages, none holding a message
    /// yet.
    #[cfg(test)]
    pub fn new(len: usize, count: usize) -> Self {
        Self::skipping(len, count, 0..0)
    }

    /// `count` units over the first `len` messages but `gap` (the rounds
    /// past reach, say), none of which counts towards a unit, so that a
    /// score walks no posting there and the units cost nothing for it.
    pub fn skipping(len: usize, count: usize, gap: Range<usize>) -> Self {
        let gap = gap.start.min(len)..gap.end.clamp(gap.start.min(len), len);
        Self {
            of: vec![NONE; len - gap.len()],
            changed: Vec::new(),
            count,
            gap,
        }
    }

    /// Where message `i` (outside the gap) is kept in `of`.
    fn slot(&self, i: usize) -> usize {
        debug_assert!(!self.gap.contains(&i));
        if i < self.gap.start {
            i
        } else {
            i - self.gap.len()
        }
    }

    /// Message `i` counts towards `unit` as it is.
    pub fn add(&mut self, i: usize, unit: usize) {
        let slot = self.slot(i);
        self.of[slot] = u32::try_from(unit)
            .ok()
            .filter(|&u| u < CHANGED)
            .unwrap_or(NONE);
    }

    /// The messages `range` (outside the gap) count towards `unit` as
    /// they are.
    pub fn add_range(&mut self, range: Range<usize>, unit: usize) {
        if range.is_empty() {
            return;
        }
        let unit = u32::try_from(unit)
            .ok()
            .filter(|&u| u < CHANGED)
            .unwrap_or(NONE);
        let start = self.slot(range.start);
        self.of[start..start + range.len()].fill(unit);
    }

    /// Message `i` counts towards `unit`, shown as `shown`, which differs
    /// from it.
    pub fn add_changed(&mut self, i: usize, unit: usize, shown: &'m Message) {
        self.add(i, unit);
        let slot = self.slot(i);
        if self.of[slot] != NONE {
            self.of[slot] |= CHANGED;
            self.changed.push((i, shown));
        }
    }
}

impl TermIndex {
    /// Number of messages indexed.
    pub fn len(&self) -> usize {
        self.body_ends.len()
    }

    /// Messages whose texts were read, and each synced message's
    /// identity, for the tests.
    #[cfg(test)]
    pub fn reads_and_keys(&self) -> (usize, &[u64]) {
        (self.read, &self.keys)
    }

    /// The identity of the next message synced (its key in the seen
    /// prefix), read when it is indexed.
    pub fn note(&mut self, key: u64) {
        self.keys.push(key);
    }

    /// Forgets the messages from `len` on.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            self.keys.truncate(len);
            return;
        }
        self.truncate_rounds(len);
        self.forgotten.clear();
        for i in (len..self.len()).rev() {
            for &t in &self.arena[self.starts[i]..self.starts[i + 1]] {
                let popped = self.postings[t as usize].pop();
                debug_assert_eq!(popped, u32::try_from(i).ok());
            }
            let (start, body_end, end) = (self.starts[i], self.body_ends[i], self.starts[i + 1]);
            let terms = (
                self.arena[start..body_end].to_vec(),
                self.arena[body_end..end].to_vec(),
            );
            self.forgotten.insert(self.keys[i], terms);
        }
        self.keys.truncate(len);
        self.arena.truncate(self.starts[len]);
        self.starts.truncate(len + 1);
        self.body_ends.truncate(len);
        self.changed.retain(|&i, _| i < len);
    }

    /// Forgets the rounds' postings of the messages from `len` on (less
    /// than the number indexed): the rounds that start there, and the
    /// round that goes on at `len` where only a message forgotten held
    /// the term.
    fn truncate_rounds(&mut self, len: usize) {
        let kept = self.rounds.partition_point(|&s| (s as usize) < len);
        let go_on = kept.checked_sub(1).map(|r| {
            let from = self.starts[self.rounds[r] as usize];
            let held: HashSet<u32> = self.arena[from..self.starts[len]].iter().copied().collect();
            (r as u32, held)
        });
        for &t in &self.arena[self.starts[len]..] {
            let list = &mut self.round_postings[t as usize];
            while list.last().is_some_and(|&r| r as usize >= kept) {
                list.pop();
            }
            if let Some((r, held)) = &go_on
                && list.last() == Some(r)
                && !held.contains(&t)
            {
                list.pop();
            }
        }
        self.rounds.truncate(kept);
    }

    /// Indexes the messages of `messages` after those indexed (the ones
    /// indexed being its first ones): the index is read lazily, when a
    /// call first scores.
    pub fn catch_up(&mut self, messages: &[Message]) {
        for message in messages.iter().skip(self.len()) {
            self.push(message);
        }
        if !self.forgotten.is_empty() {
            self.forgotten = HashMap::default();
        }
    }

    /// Indexes `message` as the next message.
    pub fn push(&mut self, message: &Message) {
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let i = u32::try_from(self.len()).unwrap_or(NONE);
        if message.is_user() {
            self.rounds.push(i);
        }
        let start = self.arena.len();
        let key = match self.keys.get(self.len()) {
            Some(&key) => key,
            None => {
                let key = message_key(message);
                self.keys.push(key);
                key
            }
        };
        // Cloned, not taken: the same message may stand twice.
        let (body, thought) = match self.forgotten.get(&key) {
            Some(terms) => terms.clone(),
            None => self.terms_of_message(message),
        };
        self.arena.extend(&body);
        self.body_ends.push(start + body.len());
        self.arena.extend(&thought);
        self.starts.push(self.arena.len());
        let round = u32::try_from(self.rounds.len())
            .unwrap_or(NONE)
            .checked_sub(1);
        for &t in body.iter().chain(&thought) {
            self.postings[t as usize].push(i);
            if let Some(round) = round {
                let list = &mut self.round_postings[t as usize];
                if list.last() != Some(&round) {
                    list.push(round);
                }
            }
        }
    }

    /// The distinct terms of `message`: those of its texts, ascending, and
    /// those only its reasoning holds, ascending.
    fn terms_of_message(&mut self, message: &Message) -> (Vec<u32>, Vec<u32>) {
        #[cfg(test)]
        {
            self.read += 1;
        }
        let mut texts = Vec::new();
        let reasoning = texts_and_reasoning(message, &mut texts);
        let mut body = Vec::new();
        for text in texts {
            self.intern_terms(text, &mut body);
        }
        body.sort_unstable();
        body.dedup();
        let mut thought = Vec::new();
        if let Some(reasoning) = reasoning {
            self.intern_terms(reasoning, &mut thought);
            thought.sort_unstable();
            thought.dedup();
            thought.retain(|t| body.binary_search(t).is_err());
        }
        (body, thought)
    }

    /// Appends the id of each term of `text` to `out` (new terms get one).
    fn intern_terms(&mut self, text: &str, out: &mut Vec<u32>) {
        for_each_term(text, |term| {
            let id = match self.ids.get(term.as_bytes()) {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(self.names.len()).unwrap_or(NONE);
                    self.ids.insert(term.as_bytes().into(), id);
                    self.names.push(term.as_bytes().into());
                    self.postings.push(Vec::new());
                    self.round_postings.push(Vec::new());
                    id
                }
            };
            out.push(id);
        });
    }

    /// The distinct terms of the messages `range` as they are, as
    /// strings.
    pub fn terms_of(&self, range: Range<usize>) -> Vec<&str> {
        let mut ids: Vec<u32> = range
            .flat_map(|i| {
                self.arena[self.starts[i]..self.starts[i + 1]]
                    .iter()
                    .copied()
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.iter()
            .map(|&t| std::str::from_utf8(&self.names[t as usize]).unwrap_or_default())
            .collect()
    }

    /// The terms of message `i` shown as `shown` (which differs from it),
    /// distinct and ascending.
    fn changed_terms(&mut self, i: usize, shown: &Message) -> Vec<u32> {
        if let Message::Assistant { reasoning, .. } = shown {
            // Only the reasoning stage changes an assistant message: what
            // is left is the message without its reasoning (its
            // placeholder says nothing of what it held).
            debug_assert!(
                reasoning
                    .as_deref()
                    .is_none_or(crate::placeholder::is_placeholder)
            );
            return self.arena[self.starts[i]..self.body_ends[i]].to_vec();
        }
        let mut texts = Vec::new();
        texts_of(shown, &mut texts);
        let length: usize = texts.iter().map(|t| t.len()).sum();
        if let Some((known, terms)) = self.changed.get(&i)
            && *known == length
        {
            return terms.clone();
        }
        let mut terms = Vec::new();
        for text in texts {
            self.intern_terms(text, &mut terms);
        }
        terms.sort_unstable();
        terms.dedup();
        self.changed.insert(i, (length, terms.clone()));
        terms
    }

    /// The [`Lexical`](crate::Lexical) score of each of `units` against
    /// `question`: what `Lexical` gives the texts the units show, computed
    /// from the postings of the question's terms. The same terms are
    /// found, the document frequencies are the same, and each unit's
    /// weights are summed in the same order (by ascending position in the
    /// question), so the scores are equal to the last bit.
    pub fn score(&mut self, question: &str, units: &Units<'_>) -> Vec<f64> {
        let mut scorer = TermScorer::new(question);
        if scorer.is_empty() {
            return vec![0.0; units.count];
        }
        // The changed messages' terms first: they may add terms.
        let changed: Vec<(u32, Vec<u32>)> = units
            .changed
            .iter()
            .map(|&(i, shown)| {
                (
                    units.of[units.slot(i)] & !CHANGED,
                    self.changed_terms(i, shown),
                )
            })
            .collect();
        let asked = self.ids_of(&scorer);
        let extra = held_by(&asked, &changed);
        let found = Found {
            postings: &self.postings,
            asked: &asked,
            extra: &extra,
            of: &units.of,
            gap: &units.gap,
        };
        // The postings are walked once: the units holding each term, by
        // term; the weights, which need every term's document frequency,
        // are then summed over that list, each unit's in ascending term
        // order as before.
        let hits = found.hits(units.count);
        let of_term = (0..asked.len()).map(|k| hits.of_term(k));
        scores_of(&mut scorer, of_term, 0, units.count)
    }

    /// The [`Lexical`](crate::Lexical) score of each of the rounds
    /// numbered `rounds` (each from its user message to where the next
    /// round starts, all indexed, the messages as they are) against
    /// `question`: what [`score`](TermIndex::score) gives those rounds as
    /// units, read from the rounds' postings, each of which names a round
    /// once.
    pub fn score_rounds(&mut self, question: &str, rounds: Range<usize>) -> Vec<f64> {
        let mut scorer = TermScorer::new(question);
        if scorer.is_empty() {
            return vec![0.0; rounds.len()];
        }
        debug_assert!(rounds.end < self.rounds.len());
        let asked = self.ids_of(&scorer);
        let (from, to) = (rounds.start as u32, rounds.end as u32);
        let of_term = asked.iter().map(|id| match id {
            Some(id) => {
                let list = &self.round_postings[*id as usize];
                &list[list.partition_point(|&r| r < from)..list.partition_point(|&r| r < to)]
            }
            None => &[][..],
        });
        scores_of(&mut scorer, of_term, from, rounds.len())
    }

    /// The id of each of the question's terms (by position) the index
    /// knows.
    fn ids_of(&mut self, scorer: &TermScorer) -> Vec<Option<u32>> {
        scorer
            .question_terms()
            .iter()
            .map(|term| {
                self.word.clear();
                self.word.extend_from_slice(term);
                self.ids.get(self.word.as_slice()).copied()
            })
            .collect()
    }
}

/// The scores of `count` units numbered from `first`, given for each of
/// the question's terms (by position) the units holding it, each once:
/// the document frequencies are their numbers, and each unit's weights
/// are summed by ascending term position, as `Lexical` sums them.
fn scores_of<'u>(
    scorer: &mut TermScorer,
    of_term: impl Iterator<Item = &'u [u32]> + Clone,
    first: u32,
    count: usize,
) -> Vec<f64> {
    let df = of_term.clone().map(<[u32]>::len).collect();
    scorer.set_counts(df, count);
    let (weights, total) = scorer.weights();
    let mut got = vec![0.0f64; count];
    let mut held = vec![false; count];
    for (units, &weight) in of_term.zip(&weights) {
        for &unit in units {
            let unit = (unit - first) as usize;
            got[unit] += weight;
            held[unit] = true;
        }
    }
    got.iter()
        .zip(&held)
        .map(|(&got, &held)| share(got, total, !held))
        .collect()
}

/// For each of the question's terms (by position), the units of changed
/// messages that hold it.
fn held_by(asked: &[Option<u32>], changed: &[(u32, Vec<u32>)]) -> Vec<Vec<u32>> {
    let mut extra = vec![Vec::new(); asked.len()];
    if changed.is_empty() {
        return extra;
    }
    let position: HashMap<u32, usize> = asked
        .iter()
        .enumerate()
        .filter_map(|(k, id)| id.map(|id| (id, k)))
        .collect();
    for (unit, terms) in changed {
        for t in terms {
            if let Some(&k) = position.get(t) {
                extra[k].push(*unit);
            }
        }
    }
    extra
}

/// Where the question's terms are found: the postings of each (messages
/// shown as they are), the units of changed messages that hold it, and
/// each message's unit.
struct Found<'f> {
    postings: &'f [Vec<u32>],
    asked: &'f [Option<u32>],
    extra: &'f [Vec<u32>],
    of: &'f [u32],
    gap: &'f Range<usize>,
}

/// The units holding each of the question's terms: each term's units
/// (each once, in the order found), one term after another.
struct Hits {
    units: Vec<u32>,
    /// Where each term's units end in `units`.
    ends: Vec<usize>,
}

impl Hits {
    /// The units holding the question's term `k`.
    fn of_term(&self, k: usize) -> &[u32] {
        let start = k.checked_sub(1).map_or(0, |j| self.ends[j]);
        &self.units[start..self.ends[k]]
    }
}

impl Found<'_> {
    /// The units (of `count`) holding each of the question's terms.
    fn hits(&self, count: usize) -> Hits {
        let mut last = vec![NONE; count];
        let mut units = Vec::new();
        let mut ends = Vec::with_capacity(self.asked.len());
        for (k, id) in self.asked.iter().enumerate() {
            let stamp = u32::try_from(k).unwrap_or(NONE);
            let mut mark = |unit: u32| {
                if last[unit as usize] != stamp {
                    last[unit as usize] = stamp;
                    units.push(unit);
                }
            };
            if let Some(id) = id {
                let postings = &self.postings[*id as usize];
                let before = postings.partition_point(|&i| (i as usize) < self.gap.start);
                let after = postings.partition_point(|&i| (i as usize) < self.gap.end);
                // The messages after the gap are kept right after those
                // before it.
                let skip = self.gap.len();
                let slots = postings[..before].iter().map(|&i| i as usize).chain(
                    postings[after.max(before)..]
                        .iter()
                        .map(|&i| i as usize - skip),
                );
                for slot in slots {
                    let Some(&unit) = self.of.get(slot) else {
                        break;
                    };
                    // Unscored and changed messages (their terms are
                    // `extra`) are passed over.
                    if unit & CHANGED == 0 {
                        mark(unit);
                    }
                }
            }
            for &unit in &self.extra[k] {
                mark(unit);
            }
            ends.push(units.len());
        }
        Hits { units, ends }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Lexical;
    use memory_core::ToolCall;

    fn messages() -> Vec<Message> {
        vec![
            Message::system("You deploy clusters."),
            Message::user("Which cluster did we deploy the parser to?"),
            Message::Assistant {
                content: "Checking the deployments.".into(),
                reasoning: Some("The parser cluster is staging, I think.".into()),
                tool_calls: vec![ToolCall::new("c1", "kubectl", r#"{"get":"deployments"}"#)],
            },
            Message::tool_result("c1", "parser  staging  3/3 running"),
            Message::assistant("The parser runs on staging."),
            Message::user("And the billing service?"),
            Message::assistant("Billing runs on production clusters."),
        ]
    }

    fn index(messages: &[Message]) -> TermIndex {
        let mut index = TermIndex::default();
        for m in messages {
            index.push(m);
        }
        index
    }

    /// The texts of `units` (ranges of `shown`) as `Lexical` reads them.
    fn texts<'m>(shown: &'m [Message], units: &[Range<usize>]) -> Vec<Vec<&'m str>> {
        units
            .iter()
            .map(|r| {
                let mut t = Vec::new();
                for m in &shown[r.clone()] {
                    texts_of(m, &mut t);
                }
                t
            })
            .collect()
    }

    /// Questions over `messages()`: terms in one unit or several, none,
    /// a term repeated.
    const QUESTIONS: [&str; 4] = [
        "Where does the parser run?",
        "which clusters deploy billing",
        "ok",
        "staging staging thinking",
    ];

    #[test]
    fn scores_are_lexical_s_scores_of_the_texts() {
        let m = messages();
        let mut index = index(&m);
        let ranges = [0..1, 1..5, 5..7];
        for question in QUESTIONS {
            let mut units = Units::new(m.len(), ranges.len());
            for (u, r) in ranges.iter().enumerate() {
                for i in r.clone() {
                    units.add(i, u);
                }
            }
            let want = Lexical::score_now(question, &texts(&m, &ranges));
            assert_eq!(index.score(question, &units), want, "{question}");
        }
    }

    #[test]
    fn a_gap_skipped_scores_as_its_messages_unscored() {
        let m = messages();
        let mut index = index(&m);
        // Messages 1..5 hold no unit: skipped or not, the same scores.
        let ranges = [0..1, 5..7];
        for question in ["Where does the parser run?", "billing clusters", "staging"] {
            let units = |gap: bool| {
                let gap = if gap { 1..5 } else { 0..0 };
                let mut units = Units::skipping(m.len(), ranges.len(), gap);
                for (u, r) in ranges.iter().enumerate() {
                    units.add_range(r.clone(), u);
                }
                units
            };
            let want = Lexical::score_now(question, &texts(&m, &ranges));
            assert_eq!(index.score(question, &units(false)), want, "{question}");
            assert_eq!(index.score(question, &units(true)), want, "{question}");
        }
    }

    #[test]
    fn changed_messages_are_scored_as_shown() {
        let m = messages();
        let mut index = index(&m);
        let mut shown = m.clone();
        // The reasoning removed, the output replaced by other words.
        shown[2] = Message::Assistant {
            content: "Checking the deployments.".into(),
            reasoning: None,
            tool_calls: vec![ToolCall::new("c1", "kubectl", r#"{"get":"deployments"}"#)],
        };
        shown[3] = Message::tool_result("c1", "[... cut ...] thinking about staging");
        let ranges = [1..5, 5..7];
        let mut units = Units::new(m.len(), ranges.len());
        for (u, r) in ranges.iter().enumerate() {
            for i in r.clone() {
                if i == 2 || i == 3 {
                    units.add_changed(i, u, &shown[i]);
                } else {
                    units.add(i, u);
                }
            }
        }
        for question in ["is the parser thinking about staging?", "what cluster"] {
            let want = Lexical::score_now(question, &texts(&shown, &ranges));
            assert_eq!(index.score(question, &units), want, "{question}");
        }
    }

    #[test]
    fn truncating_forgets_the_messages_and_their_postings() {
        let m = messages();
        let mut index = index(&m);
        index.truncate(3);
        assert_eq!(index.len(), 3);
        let mut again = index.clone();
        for message in &m[3..] {
            again.push(message);
        }
        let fresh = self::index(&m);
        assert_eq!(again.terms_of(0..m.len()), fresh.terms_of(0..m.len()));
        assert_eq!(index.terms_of(0..3), fresh.terms_of(0..3));
    }

    /// `messages()` with a third round, asked by its question.
    fn three_rounds() -> Vec<Message> {
        let mut m = messages();
        m.push(Message::user("Where is billing deployed, and the parser?"));
        m.push(Message::assistant("Production and staging."));
        m.push(Message::user("Thanks! What about the cluster?"));
        m
    }

    #[test]
    fn rounds_score_as_units_of_their_messages() {
        let m = three_rounds();
        let mut index = index(&m);
        // The rounds start at 1, 5 and 7; the fourth, at 9, is asked.
        let rounds = [1..5, 5..7, 7..9];
        for question in QUESTIONS {
            for numbers in [0..3, 1..3, 0..1, 2..3, 1..1] {
                let want = Lexical::score_now(question, &texts(&m, &rounds[numbers.clone()]));
                let got = index.score_rounds(question, numbers.clone());
                assert_eq!(got, want, "{question} {numbers:?}");
            }
        }
    }

    #[test]
    fn a_history_changed_before_its_end_is_indexed_as_if_fresh() {
        // A compaction's shape: an early message replaced (the summary),
        // the messages after it the same, one new at the end. What the
        // truncation forgot is taken back by identity, not read again.
        let m = messages();
        let mut changed = m.clone();
        changed[1] = Message::user("Where is the billing parser deployed?");
        changed.push(Message::user("Is staging thinking of production?"));
        let mut index = index(&m);
        index.truncate(1);
        let read = index.read;
        index.catch_up(&changed);
        // Only the replaced message and the new one are read.
        assert_eq!(index.read - read, 2);
        assert!(index.forgotten.is_empty());
        let mut fresh = self::index(&changed);
        // The same terms (their ids, given in the order first seen, differ).
        let terms = |index: &TermIndex, range: Range<usize>| {
            let mut terms = index.terms_of(range);
            terms.sort_unstable();
            terms.into_iter().map(str::to_owned).collect::<Vec<_>>()
        };
        for i in 0..changed.len() {
            assert_eq!(terms(&index, i..i + 1), terms(&fresh, i..i + 1), "{i}");
        }
        let ranges = [0..1, 1..5, 5..7, 7..8];
        for question in QUESTIONS {
            let mut units = Units::new(changed.len(), ranges.len());
            for (u, r) in ranges.iter().enumerate() {
                units.add_range(r.clone(), u);
            }
            assert_eq!(
                index.score(question, &units),
                fresh.score(question, &units),
                "{question}"
            );
            assert_eq!(
                index.score_rounds(question, 0..2),
                fresh.score_rounds(question, 0..2)
            );
        }
    }

    #[test]
    fn truncating_forgets_the_rounds_postings() {
        let m = three_rounds();
        let fresh = index(&m);
        for len in 0..m.len() {
            let mut again = fresh.clone();
            again.truncate(len);
            // The terms first seen later keep their ids, with no rounds.
            let prefix = index(&m[..len]);
            assert_eq!(again.rounds, prefix.rounds, "{len}");
            let known = prefix.round_postings.len();
            assert_eq!(
                again.round_postings[..known],
                prefix.round_postings,
                "{len}"
            );
            assert!(again.round_postings[known..].iter().all(Vec::is_empty));
            again.catch_up(&m);
            assert_eq!(again.rounds, fresh.rounds, "{len}");
            assert_eq!(again.round_postings, fresh.round_postings, "{len}");
        }
    }
}
