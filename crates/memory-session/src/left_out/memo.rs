//! [`IndexMemo`]: what the index of what a context leaves out keeps from
//! one call to the next, so that a call reads what the history added
//! since the last one rather than the whole history.
//!
//! A session's history mostly grows by appends. The index needs, on every
//! call: where each message the context shows stands in the history (its
//! source), the running token totals, the pieces the left-out span is cut
//! into, and each piece's line, handle and words, with their counts. All
//! of them hold for as long as the messages they were read from are the
//! same, which [`SeenPrefix`] tells; what a call finds changed is read
//! again. What is kept never changes an index, only how much a call reads
//! (the tests compare every index with the one a fresh memo makes).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops::Range;
use std::sync::Arc;

use memory_core::covered::Expanded;
use memory_core::identity::{WordHasher, message_key};
use memory_core::seen::SeenPrefix;
use memory_core::{
    Budget, ContentBlock, CounterId, History, MemoryError, Message, TokenCounter, TrimResult,
    is_shrunk_from,
};

use super::Cutter;

/// A map by a key hashed with [`WordHasher`]: positions and hashes, many
/// lookups a call.
type Map<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;

/// What the index keeps of one session between calls; `WindowMemory`
/// holds one. Its counts are the counter's that made them: it forgets them
/// when a call brings another ([`counted_by`](Self::counted_by); and
/// `WindowMemory` makes a new one when its counter changes).
#[derive(Debug, Default)]
pub(crate) struct IndexMemo {
    seen: SeenPrefix,
    /// Each message's [`Lookup`].
    lookups: Vec<Lookup>,
    /// The last position of each lookup key; [`before`](Self::before)
    /// chains each to the one before (a dozen bytes a message, where a
    /// list a key took five times that at a million messages).
    last: Map<u64, u32>,
    /// At each position, the one before it with the same lookup key
    /// ([`NONE`] for none).
    before: Vec<u32>,
    /// Positions of the user messages with blocks other than text,
    /// ascending: a shown user message may be one of them with those
    /// blocks replaced by text.
    media: Vec<u32>,
    /// Positions of index messages, ascending.
    indexes: Vec<u32>,
    /// The cut of the left-out span into pieces, from the start it had,
    /// to resume where the span grows.
    cut: Option<(usize, Cutter)>,
    /// The least count of the handles of the cut's first pieces, at each
    /// piece (see [`least_named`](Self::least_named)).
    least_named: Vec<usize>,
    /// The largest piece one recall brings back, as the last call had it.
    max_tokens: usize,
    /// Each message's words ([`read_words`](Self::read_words)), of the
    /// first messages as far as a question has read them, with the
    /// message's identity ([`message_key`](memory_core::identity::message_key)).
    words: Vec<(u64, Vec<u64>)>,
    /// The words of the messages the last change of the history forgot,
    /// by the message's identity: a compaction that lands changes the
    /// summary before the covered set, and every message after it is
    /// forgotten and read again, most of them the same messages at the
    /// same places. Dropped once read again.
    forgotten_words: Map<u64, Vec<u64>>,
    /// Messages split into words, for the tests.
    #[cfg(test)]
    split: usize,
    /// Positions by word, ascending, of those messages.
    said: Map<u64, Vec<u32>>,
    /// For each word a question asked, the pieces of `held_pieces` that
    /// hold it (their places, ascending), and how many of the first
    /// pieces were looked at: a question asked again looks only at the
    /// pieces cut since. No larger than `said` (a piece holding a word
    /// holds a message that said it).
    held: Map<u64, (usize, Vec<u32>)>,
    /// The final pieces of the cut the lists of `held` are of: a cut
    /// made again from the same start cuts the same pieces as far as the
    /// messages are the same, and keeps them.
    held_pieces: Vec<Range<usize>>,
    /// The tally of the words of the last line made, with its piece's
    /// start and end: the next line of a piece grown from it adds the new
    /// messages' words.
    tally: Option<(usize, usize, super::Tally)>,
    /// The words of messages a line was made of, by the message's
    /// identity: a piece cut again after the history changed (a
    /// compaction landed) tallies them without reading them again.
    told: Map<u64, super::Told>,
    /// Each piece's line and handle, by its range.
    info: Map<(usize, usize), PieceInfo>,
    /// Counts of the lines and handles this call (`current`) and the last
    /// one (`previous`): what two calls in a row do not count is dropped.
    current: Map<(u64, usize), usize>,
    previous: Map<(u64, usize), usize>,
    /// The last call's history with its covered set placed.
    expanded: Option<Expanded>,
    /// The counter the counts were made by.
    counter: Option<CounterId>,
    /// Where the last call found the shown messages it looked up, by the
    /// message's key and the end looked before (see
    /// [`sources_kept`](Self::sources_kept)).
    found: Map<(u64, usize), Option<usize>>,
    /// The last index message made, with what it was made of: a call that
    /// lists the same pieces in the same room makes the same one.
    made: Option<(MadeKey, MadeIndex)>,
}

/// An index message made, its count and the entries it names (see
/// `index_message`).
pub(crate) type MadeIndex = Option<(Message, usize, Vec<usize>)>;

/// What an index message (without a question's list) is made of: the
/// folded pieces (by their lines and handles), the pieces of the history
/// listed and the room. Its lines are read from the history synced, which
/// the memo forgets them with when it changes under them.
#[derive(Debug, PartialEq)]
pub(crate) struct MadeKey {
    folded: Vec<(Arc<str>, Arc<str>)>,
    listed: Vec<Range<usize>>,
    room: usize,
}

impl MadeKey {
    /// The key of an index of `folded` and `listed` in `room` tokens.
    pub fn new(folded: &super::Folded, listed: &[Range<usize>], room: usize) -> Self {
        Self {
            folded: folded
                .pieces
                .iter()
                .map(|p| (p.described.clone(), p.named.clone()))
                .collect(),
            listed: listed.to_vec(),
            room,
        }
    }
}

/// An [`IndexMemo`] for an owner that calls share (`WindowMemory`,
/// [`Indexed`](super::Indexed)): lent to one call at a time, with no lock
/// held across the call; a call that finds it lent reads the history
/// afresh.
#[derive(Debug, Default)]
pub(crate) struct LentMemo(std::sync::Mutex<IndexMemo>);

impl LentMemo {
    /// [`add_index_kept`](super::add_index_kept), the memo lent to it.
    pub async fn add_index(
        &self,
        history: &History<'_>,
        result: TrimResult,
        budget: &Budget,
        counter: &dyn TokenCounter,
        settings: &super::IndexSettings,
        folded: &super::Folded,
    ) -> Result<TrimResult, MemoryError> {
        let mut memo = std::mem::take(&mut *self.lock());
        let indexed = super::add_index_kept(
            history, result, budget, counter, settings, folded, &mut memo,
        )
        .await;
        *self.lock() = memo;
        indexed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, IndexMemo> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What one piece shows in the index, read (and counted) when first
/// needed.
#[derive(Debug, Default)]
struct PieceInfo {
    described: Option<(Arc<str>, usize)>,
    named: Option<(Arc<str>, usize)>,
}

/// Where a history message is found by the messages shown from it: a key
/// that a message shrunk from it has too, or among the user messages with
/// blocks other than text.
#[derive(Debug, Clone, Copy)]
enum Lookup {
    Key(u64),
    Media,
}

/// Where to look for the history message a shown message stands for.
enum Candidates {
    /// Among the positions of a key, and the user messages with media
    /// when `media`.
    Keyed { key: Option<u64>, media: bool },
    /// Anywhere: a shown text with a line that opens with `[` may be a
    /// text cut around a marker.
    All,
}

impl IndexMemo {
    /// Forgets everything unless `counter` made the counts kept (see
    /// [`CounterId`]).
    pub fn counted_by(&mut self, counter: &dyn TokenCounter) {
        let id = CounterId::of(counter);
        if self.counter != Some(id) {
            *self = Self {
                counter: Some(id),
                ..Self::default()
            };
        }
    }

    /// Takes `history` in, with pieces of at most `max_tokens`: forgets
    /// what was read of the messages that changed and reads the new ones.
    pub fn sync(&mut self, history: &History<'_>, max_tokens: usize) {
        let before = self.seen.len();
        let same = self.seen.sync(history);
        if max_tokens != self.max_tokens {
            self.max_tokens = max_tokens;
            self.made = None;
            self.info.clear();
            self.cut = None;
            self.least_named.clear();
            self.forget_held_from(0);
            self.tally = None;
        }
        if same < before {
            self.truncate(same);
        }
        let messages = history.messages();
        for (i, message) in messages.iter().enumerate().skip(same) {
            let lookup = lookup(message);
            let at = u32::try_from(i).unwrap_or(NONE);
            let before = match lookup {
                Lookup::Key(key) => self.last.insert(key, at).unwrap_or(NONE),
                Lookup::Media => {
                    self.media.push(at);
                    NONE
                }
            };
            self.before.push(before);
            if super::is_index(message) {
                self.indexes.push(at);
            }
            self.lookups.push(lookup);
        }
    }

    /// Forgets the messages from `len` on.
    fn truncate(&mut self, len: usize) {
        self.made = None;
        self.found.clear();
        // From the newest back: each is then the last of its key.
        for (lookup, before) in self
            .lookups
            .drain(len..)
            .zip(self.before.drain(len..))
            .rev()
        {
            if let Lookup::Key(key) = lookup {
                match before {
                    NONE => self.last.remove(&key),
                    at => self.last.insert(key, at),
                };
            }
        }
        self.forgotten_words.clear();
        for (key, words) in self.words.drain(len.min(self.words.len())..) {
            for word in &words {
                if let Some(at) = self.said.get_mut(word) {
                    at.truncate(at.partition_point(|&i| (i as usize) < len));
                    if at.is_empty() {
                        self.said.remove(word);
                    }
                }
            }
            self.forgotten_words.insert(key, words);
        }
        let kept =
            |list: &mut Vec<u32>| list.truncate(list.partition_point(|&i| (i as usize) < len));
        kept(&mut self.media);
        kept(&mut self.indexes);
        self.info.retain(|&(_, end), _| end <= len);
        let held = self.held_pieces.partition_point(|p| p.end <= len);
        self.forget_held_from(held);
        if self.tally.as_ref().is_some_and(|(_, upto, _)| *upto > len) {
            self.tally = None;
        }
        if self
            .cut
            .as_ref()
            .is_some_and(|(_, cut)| cut.resumes_at().1 >= len)
        {
            self.cut = None;
            self.least_named.clear();
        }
    }

    /// Tokens of the messages in `range` of the history last synced.
    pub fn tokens(&self, range: Range<usize>) -> usize {
        self.seen.total(range.end) - self.seen.total(range.start)
    }

    /// Whether the history last synced holds an index message.
    pub fn has_index(&self) -> bool {
        !self.indexes.is_empty()
    }

    /// The last call's history with its covered set placed (taken).
    pub fn take_expanded(&mut self) -> Option<Expanded> {
        self.expanded.take()
    }

    /// Keeps `expanded` for the next call.
    pub fn keep_expanded(&mut self, expanded: Option<Expanded>) {
        self.expanded = expanded;
    }

    /// For each of `shown`, the position in `messages` (the history last
    /// synced) of the message it shows: the
    /// nearest before the one the next shown message stands for that it
    /// is shrunk from, looked for among the few positions that may be it.
    pub fn sources(&self, messages: &[Message], shown: &[Message]) -> Vec<Option<usize>> {
        walk_back(messages.len(), shown, |message, end| {
            right_before(messages, message, end).or_else(|| self.nearest(messages, message, end))
        })
    }

    /// [`sources`](Self::sources), looking up only what the last call
    /// did not: a shown message that does not stand right before the one
    /// after it (the first after a stretch left out, mostly) and was
    /// looked up (by its [`message_key`]) before the same end in the same
    /// messages at the last call stands where it stood then, when it is
    /// still shrunk from the message there. The same sources as far as
    /// [`SeenPrefix`] tells the history unchanged (as everything the memo
    /// keeps), with the lookups (the costly part: they walk back through
    /// the history) following what changed rather than what is shown.
    pub fn sources_kept(&mut self, messages: &[Message], shown: &[Message]) -> Vec<Option<usize>> {
        let mut last = std::mem::take(&mut self.found);
        let mut found = Map::with_capacity_and_hasher(last.len(), Default::default());
        let out = walk_back(messages.len(), shown, |message, end| {
            if let Some(at) = right_before(messages, message, end) {
                return Some(at);
            }
            let key = (message_key(message), end);
            // Checked against the message found: a rewrite the history's
            // sync does not notice (same count, between its anchors) is
            // looked up afresh.
            let at = match last.remove(&key) {
                Some(at) if at.is_none_or(|at| is_shrunk_from(&messages[at], message)) => at,
                _ => self.nearest(messages, message, end),
            };
            found.insert(key, at);
            at
        });
        self.found = found;
        out
    }

    /// The last position before `end` of a message `shown` is shrunk
    /// from, looked for among the few positions that may be it (after
    /// [`right_before`], which finds most).
    fn nearest(&self, messages: &[Message], shown: &Message, end: usize) -> Option<usize> {
        match candidates(shown) {
            Candidates::All => messages[..end]
                .iter()
                .rposition(|x| is_shrunk_from(x, shown)),
            Candidates::Keyed { key, media } => {
                let keyed = key.and_then(|key| {
                    let mut at = self.last.get(&key).copied().unwrap_or(NONE);
                    while at != NONE
                        && ((at as usize) >= end || !is_shrunk_from(&messages[at as usize], shown))
                    {
                        at = self.before[at as usize];
                    }
                    (at != NONE).then_some(at as usize)
                });
                let with_media = media
                    .then(|| {
                        let before = self.media.partition_point(|&i| (i as usize) < end);
                        self.media[..before]
                            .iter()
                            .rev()
                            .map(|&i| i as usize)
                            .find(|&i| is_shrunk_from(&messages[i], shown))
                    })
                    .flatten();
                keyed.max(with_media)
            }
        }
    }

    /// The pieces the span `span` of `history` (the history last synced)
    /// is cut into by a [`Cutter`], resuming the last call's cut where it
    /// holds, each piece's handle read and counted by `counter`.
    pub async fn pieces(
        &mut self,
        history: &History<'_>,
        span: Range<usize>,
        counter: &dyn TokenCounter,
    ) -> Result<Vec<Range<usize>>, MemoryError> {
        let max_tokens = self.max_tokens;
        let mut cutter = match self.cut.take() {
            Some((start, cut)) if start == span.start && cut.resumes_at().1 <= span.end => cut,
            _ => {
                self.least_named.clear();
                Cutter::new(span.start, max_tokens)
            }
        };
        let kept = cutter.final_pieces();
        cutter.cut_to(history.messages(), |r| self.tokens(r), span.end);
        self.hold_pieces(cutter.final_slice(), kept);
        let out = cutter.pieces();
        self.cut = Some((span.start, cutter));
        self.least_named.truncate(kept);
        for piece in &out[self.least_named.len()..] {
            let (_, cost) = self.named(history, piece, counter).await?;
            let least = self.least_named.last().map_or(cost, |&l| l.min(cost));
            self.least_named.push(least);
        }
        Ok(out)
    }

    /// The least count of a handle of the pieces the last
    /// [`pieces`](Self::pieces) cut: no piece it lists costs less.
    pub fn least_named(&self) -> usize {
        self.least_named.last().copied().unwrap_or(usize::MAX)
    }

    /// Reads the words of the messages of `messages` (the history last
    /// synced) not read yet: the index reads them when first asked. A
    /// message the last change of the history forgot is not split again.
    pub fn read_words(&mut self, messages: &[Message]) {
        for (i, message) in messages.iter().enumerate().skip(self.words.len()) {
            // The key the sync read (the history last synced is the one
            // read here); made afresh for a message past it.
            let key = match self.seen.keys().get(i) {
                Some(&key) => key,
                None => memory_core::identity::message_key(message),
            };
            // Cloned, not taken: the same message may stand twice.
            let words = match self.forgotten_words.get(&key) {
                Some(words) => words.clone(),
                None => {
                    #[cfg(test)]
                    {
                        self.split += 1;
                    }
                    super::message_words(message)
                }
            };
            let at = u32::try_from(i).unwrap_or(u32::MAX);
            for &word in &words {
                self.said.entry(word).or_default().push(at);
            }
            self.words.push((key, words));
        }
        if self.words.len() == messages.len() && !self.forgotten_words.is_empty() {
            self.forgotten_words = Map::default();
        }
    }

    /// Where `word` (its key) was said among the messages read
    /// ([`read_words`](Self::read_words)), ascending.
    pub fn said(&self, word: u64) -> &[u32] {
        self.said.get(&word).map_or(&[], Vec::as_slice)
    }

    /// The pieces of the last [`pieces`](Self::pieces) cut among its
    /// final ones (see [`Cutter::final_pieces`]) that hold a message where
    /// `word` was said (their places in the cut, ascending). The messages
    /// must have been read ([`read_words`](Self::read_words)).
    pub fn held_by_final(&mut self, word: u64) -> &[u32] {
        let finals = self.final_pieces();
        let pieces = &self.held_pieces;
        let said = self.said.get(&word).map_or(&[][..], Vec::as_slice);
        let (looked, held) = self.held.entry(word).or_default();
        // The pieces taken in since the word was last asked.
        if let Some(new) = pieces.get(*looked..).filter(|p| !p.is_empty()) {
            let (start, end) = (new[0].start, new[new.len() - 1].end);
            let from = said.partition_point(|&i| (i as usize) < start);
            let to = from + said[from..].partition_point(|&i| (i as usize) < end);
            let found = super::holding_in(new.len(), |k| new[k].clone(), &said[from..to]);
            held.extend(
                found
                    .into_iter()
                    .map(|k| u32::try_from(*looked + k).unwrap_or(u32::MAX)),
            );
            *looked = pieces.len();
        }
        let finals = u32::try_from(finals).unwrap_or(u32::MAX);
        &held[..held.partition_point(|&k| k < finals)]
    }

    /// Takes the cut's final `pieces` in for those the lists of `held`
    /// are of. A cut made again from the same start cuts the same pieces
    /// as far as the messages are the same (a piece's end depends only on
    /// the messages from its start), and fewer of them are final when the
    /// span ends earlier: the lists keep the pieces both have alike. The
    /// first `kept` pieces are those the last call's cut made final, which
    /// a resumed cut keeps (0 for a cut made afresh): only the others are
    /// compared.
    fn hold_pieces(&mut self, pieces: &[Range<usize>], kept: usize) {
        let from = kept.min(self.held_pieces.len()).min(pieces.len());
        let alike = from
            + self.held_pieces[from..]
                .iter()
                .zip(&pieces[from..])
                .take_while(|(a, b)| a == b)
                .count();
        if alike < pieces.len().min(self.held_pieces.len()) {
            self.forget_held_from(alike);
        }
        if pieces.len() > self.held_pieces.len() {
            let from = self.held_pieces.len();
            self.held_pieces.extend_from_slice(&pieces[from..]);
        }
    }

    /// Forgets the held pieces from the `k`th on.
    fn forget_held_from(&mut self, k: usize) {
        if k >= self.held_pieces.len() {
            return;
        }
        self.held_pieces.truncate(k);
        if k == 0 {
            self.held.clear();
            return;
        }
        let place = u32::try_from(k).unwrap_or(u32::MAX);
        for (looked, held) in self.held.values_mut() {
            *looked = (*looked).min(k);
            held.truncate(held.partition_point(|&p| p < place));
        }
    }

    /// How many pieces of the last [`pieces`](Self::pieces) cut are
    /// final.
    pub fn final_pieces(&self) -> usize {
        self.cut.as_ref().map_or(0, |(_, cut)| cut.final_pieces())
    }

    /// The places in the last [`pieces`](Self::pieces) cut of `listed`
    /// (pieces of that cut, in order); `None` when one is not among them.
    pub fn places(&self, listed: &[Range<usize>]) -> Option<Vec<usize>> {
        let (_, cut) = self.cut.as_ref()?;
        let mut pieces = cut.pieces_iter().enumerate();
        listed
            .iter()
            .map(|r| pieces.find(|(_, p)| p == r).map(|(k, _)| k))
            .collect()
    }

    /// The line describing the piece `range` of `history`, and its count
    /// by `counter`.
    pub async fn described(
        &mut self,
        history: &History<'_>,
        range: &Range<usize>,
        counter: &dyn TokenCounter,
    ) -> Result<(Arc<str>, usize), MemoryError> {
        let tokens = self.tokens(range.clone());
        let info = self.info.entry((range.start, range.end)).or_default();
        if let Some(described) = &info.described {
            return Ok(described.clone());
        }
        let line = self.tallied_line(history, range, tokens);
        let count = counter.count(&line).await?;
        let counted: (Arc<str>, usize) = (line.into(), count);
        let info = self.info.entry((range.start, range.end)).or_default();
        info.described = Some(counted.clone());
        Ok(counted)
    }

    /// The line of the piece `range` of `history` (of `tokens` tokens),
    /// its words tallied from the last line's where the piece grew from
    /// it (the newest piece, listed first, grows at each step).
    fn tallied_line(
        &mut self,
        history: &History<'_>,
        range: &Range<usize>,
        tokens: usize,
    ) -> String {
        let messages = &history.messages()[..range.end];
        let mut tally = match self.tally.take() {
            Some((from, upto, tally)) if from == range.start && upto <= range.end => (upto, tally),
            other => {
                self.tally = other;
                (range.start, super::Tally::default())
            }
        };
        for (i, message) in messages.iter().enumerate().skip(tally.0) {
            let told = self
                .told
                .entry(self.seen.keys()[i])
                .or_insert_with(|| super::Told::of(message));
            tally.1.add_told(told);
        }
        let line = super::line_with(&messages[range.clone()], tokens, self.max_tokens, &tally.1);
        // Kept for the newest piece a call describes: the one that grows.
        if self
            .tally
            .as_ref()
            .is_none_or(|(from, _, _)| *from <= range.start)
        {
            self.tally = Some((range.start, range.end, tally.1));
        }
        line
    }

    /// The handle naming the piece `range` of `history`, after a space,
    /// and its count by `counter`.
    pub async fn named(
        &mut self,
        history: &History<'_>,
        range: &Range<usize>,
        counter: &dyn TokenCounter,
    ) -> Result<(Arc<str>, usize), MemoryError> {
        let tokens = self.tokens(range.clone());
        let max_tokens = self.max_tokens;
        let info = self.info.entry((range.start, range.end)).or_default();
        if info.named.is_none() {
            let handle =
                super::named_handle(&history.messages()[range.clone()], tokens, max_tokens);
            let count = counter.count(&handle).await?;
            info.named = Some((handle.into(), count));
        }
        Ok(info.named.clone().expect("read above"))
    }

    /// The index message the last call made of what `key` says, when it
    /// was made of that (the history it read unchanged since).
    pub fn made_index(&self, key: &MadeKey) -> Option<MadeIndex> {
        match &self.made {
            Some((made, index)) if made == key => Some(index.clone()),
            _ => None,
        }
    }

    /// Keeps the index message made of what `key` says for the next call.
    pub fn keep_made_index(&mut self, key: MadeKey, index: MadeIndex) {
        self.made = Some((key, index));
    }

    /// Forgets the pieces not among `listed` when they are many more.
    pub fn keep_only(&mut self, listed: &[Range<usize>]) {
        if self.info.len() > 2 * listed.len() + MIN_KEPT_PIECES {
            let keep: std::collections::HashSet<(usize, usize)> =
                listed.iter().map(|r| (r.start, r.end)).collect();
            self.info.retain(|key, _| keep.contains(key));
        }
    }

    /// `counter`'s count of `text`, counted once for calls in a row.
    pub async fn count(
        &mut self,
        text: &str,
        counter: &dyn TokenCounter,
    ) -> Result<usize, MemoryError> {
        let mut h = WordHasher::default();
        text.hash(&mut h);
        let key = (h.finish(), text.len());
        if let Some(&n) = self.current.get(&key) {
            return Ok(n);
        }
        let n = match self.previous.remove(&key) {
            Some(n) => n,
            None => counter.count(text).await?,
        };
        self.current.insert(key, n);
        Ok(n)
    }

    /// Ends a call: what it did not count is dropped at the next.
    pub fn end_call(&mut self) {
        self.previous = std::mem::take(&mut self.current);
        if self.told.len() > TOLD_PER_MESSAGE * self.seen.len() + MIN_KEPT_PIECES {
            // Those of the messages the history still holds stay.
            let held: std::collections::HashSet<u64> = self.seen.keys().iter().copied().collect();
            self.told.retain(|key, _| held.contains(key));
        }
    }
}

/// For each of `shown`, from the last back, where `find` finds it before
/// the end of the span `len` messages long, or before where the next
/// shown message that was found stands.
fn walk_back(
    len: usize,
    shown: &[Message],
    mut find: impl FnMut(&Message, usize) -> Option<usize>,
) -> Vec<Option<usize>> {
    let mut end = len;
    let mut out = vec![None; shown.len()];
    for (j, message) in shown.iter().enumerate().rev() {
        out[j] = find(message, end);
        end = out[j].unwrap_or(end);
    }
    out
}

/// `end - 1` when `shown` is shrunk from the message there: shown messages
/// mostly stand in runs, and the one right before is the nearest there
/// can be.
fn right_before(messages: &[Message], shown: &Message, end: usize) -> Option<usize> {
    let at = end.checked_sub(1)?;
    is_shrunk_from(&messages[at], shown).then_some(at)
}

/// No position (the end of a chain of positions).
const NONE: u32 = u32::MAX;

/// Messages' word tallies kept per message of the history, at most,
/// before those of messages it no longer holds (rewritten, or folded away
/// by a compaction) are dropped. Why: twice the history is room for one
/// rewrite of each. Figure: none (a bound).
const TOLD_PER_MESSAGE: usize = 2;

/// Pieces whose lines are kept beyond those listed, whatever their
/// number. Why: a span that shifts by a step leaves a few pieces behind,
/// which the next calls may list again. Figure: none (a bound).
const MIN_KEPT_PIECES: usize = 64;

/// Where `message` is found by the messages shown from it.
fn lookup(message: &Message) -> Lookup {
    let mut h = WordHasher::default();
    match message {
        Message::System(text) => {
            h.write_u8(0);
            text.hash(&mut h);
        }
        Message::User(blocks) => {
            h.write_u8(1);
            h.write_usize(blocks.len());
            for block in blocks {
                match block {
                    ContentBlock::Text(text) => text.hash(&mut h),
                    _ => return Lookup::Media,
                }
            }
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => match tool_calls.first() {
            Some(call) => {
                h.write_u8(2);
                call.id.hash(&mut h);
                call.name.hash(&mut h);
            }
            None => {
                h.write_u8(3);
                content.hash(&mut h);
            }
        },
        Message::ToolResult {
            tool_call_id, name, ..
        } => {
            h.write_u8(4);
            tool_call_id.hash(&mut h);
            name.hash(&mut h);
        }
    }
    Lookup::Key(h.finish())
}

/// Where the history message `shown` stands for may be: a message it is
/// shrunk from has its lookup key (a tool result its call's id and name, a
/// model call its first call's, a reply without calls its text, a system
/// or user message all of it), but where a text of it may be cut (a
/// line that opens with `[`: anywhere), or where a user message's blocks
/// other than text were replaced by text (among those with media).
fn candidates(shown: &Message) -> Candidates {
    let may_be_cut = |text: &str| text.contains("\n[");
    match shown {
        Message::System(_) | Message::ToolResult { .. } => Candidates::Keyed {
            key: key_of(shown),
            media: false,
        },
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            if tool_calls.is_empty() && may_be_cut(content) {
                Candidates::All
            } else {
                Candidates::Keyed {
                    key: key_of(shown),
                    media: false,
                }
            }
        }
        Message::User(blocks) => {
            let texts = blocks.iter().filter_map(|b| match b {
                ContentBlock::Text(text) => Some(text),
                _ => None,
            });
            if texts.clone().any(|t| may_be_cut(t)) {
                Candidates::All
            } else {
                Candidates::Keyed {
                    key: key_of(shown),
                    media: true,
                }
            }
        }
    }
}

/// The lookup key of `message`, unless it has media.
fn key_of(message: &Message) -> Option<u64> {
    match lookup(message) {
        Lookup::Key(key) => Some(key),
        Lookup::Media => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat() -> Vec<Message> {
        vec![
            Message::system("rules"),
            Message::user("Where did Melanie paint the sunrise?"),
            Message::assistant("By the lake, last summer."),
            Message::user("And the sunset?"),
            Message::assistant("From the lake house."),
        ]
    }

    fn synced(memo: &mut IndexMemo, m: &[Message]) {
        let counts: Vec<usize> = m.iter().map(|m| m.text().len() + 1).collect();
        memo.sync(&History::new(m, &counts).unwrap(), 100);
        memo.read_words(m);
    }

    #[test]
    fn words_read_again_after_a_change_are_the_words_of_a_fresh_read() {
        // A compaction's shape: an early message replaced, the rest the
        // same, one new message after them.
        let m = chat();
        let mut changed = m.clone();
        changed[1] = Message::user("A summary: Melanie paints at the lake.");
        changed.push(Message::user("Which lake, and which summer?"));
        let mut memo = IndexMemo::default();
        synced(&mut memo, &m);
        let split = memo.split;
        synced(&mut memo, &changed);
        // Only the replaced message and the new one are split.
        assert_eq!(memo.split - split, 2);
        assert!(memo.forgotten_words.is_empty());
        let mut fresh = IndexMemo::default();
        synced(&mut fresh, &changed);
        assert_eq!(memo.words, fresh.words);
        let words = |m: &[Message]| -> Vec<u64> {
            m.iter().flat_map(super::super::message_words).collect()
        };
        for word in words(&m).into_iter().chain(words(&changed)) {
            assert_eq!(memo.said(word), fresh.said(word));
        }
        // The replaced message's own words are said nowhere now.
        let gone: Vec<u64> = super::super::message_words(&m[1])
            .into_iter()
            .filter(|w| !words(&changed).contains(w))
            .collect();
        assert!(!gone.is_empty());
        assert!(gone.iter().all(|&w| memo.said(w).is_empty()));
    }
}
