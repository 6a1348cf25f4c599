//! An index of what a context leaves out, so that nothing shed is out of
//! reach.
//!
//! A strategy that drops whole steps and rounds leaves no trace of them in
//! the context: the model cannot know they existed, let alone ask for them.
//! [`add_index`] compares the context with the history it came from, cuts
//! the span from the first left-out message to the last into pieces that
//! one recall brings back whole (at most [`max_reachable_tokens`] each,
//! along step boundaries), keeps those that hold a left-out message, and
//! names each piece by its [handle](memory_core::recall::Handle) (those listed
//! first on a line of their own with who spoke, how many messages and
//! tokens, a few of their words; the rest together on one last line) in
//! one system message where the first left-out stretch stood. The message is a
//! projection: never stored, recognized by [`is_index`] (the audit
//! accepts it as made, like a summary, but it is not protected).
//!
//! The turns a summary stands for are left out too: those of the covered
//! set are listed like any other, and those earlier compactions folded
//! away ([`Folded`], which `WindowMemory` keeps) before everything else
//! ([`add_index_folded`]).
//!
//! The index takes only room the strategy left: at most
//! [`IndexSettings::max_share`] of the budget, and never more than the
//! context's distance to the limit, so it never makes a context over the
//! budget (but for one whose floor alone is over it: that context is over
//! the budget anyway, and the index keeps the room [`reserve`] keeps for
//! it, so that what it sheds stays named). Between two sheds an agent's context grows by appends; were
//! the index to take whatever room was left, it would lose a line at
//! every step, and each change would break the cached prefix from where
//! it stands. So the strategy is given the budget less half that share
//! ([`reserve`]) whenever the history does not fit, and the index takes
//! that room and no more (where it is free), changing little but when
//! what is shed changes. The index lists the newest pieces and the oldest
//! in turn (so that the start of a task stays within reach too), the first
//! described and as many others as fit named by their handle alone, on
//! one last line; its lines depend on nothing but the left-out stretches,
//! so it changes only when what is shed changes, and it stands where the
//! shedding already broke the cached prefix.
//!
//! What the index reads of the history (each shown message's source, the
//! running token totals, the cut of the left-out span into pieces, each
//! piece's line, handle, words and counts) a session keeps from one call
//! to the next and reads again only where the history changed, so that a
//! call's work follows what the history added, not its length
//! (`WindowMemory` keeps one per session; [`add_index_folded`] reads
//! afresh). Figure (chars counter, budget 8,000, a chat of 16,106
//! messages): thrift's mean call over the last 500 calls about 20 ms ->
//! 0.3 ms, over the first 500 1.1 ms -> 0.08 ms.
//!
//! A short user question is answered apart: the pieces whose words match
//! it best (each word weighed by its rarity among the pieces) that the
//! index does not name are listed in a second index message right before
//! the question, in the rest of the whole share where the strategy left
//! it free. The strategy's budget and the index stay what they are between
//! questions, so a question breaks the cached prefix only at its end, and
//! the next call, which no longer carries that list, only there. Figure
//! (chars counter, anthropic pricing, budget 8,000; against re-ranking the
//! index in place with the whole budget given to the strategy at a
//! question): thrift's cost per call on a chat of the LoCoMo
//! conversations in a row (2,013 calls) 4,317 -> 3,002, 3,027 without an
//! index; LoCoMo reachable evidence recall 0.821 -> 0.823 at 1,000 tokens
//! and 0.951 -> 0.969 at 2,000 (plain 0.752 -> 0.742 and 0.801 -> 0.796:
//! the strategy no longer gets the index's room at a question).
//!
//! ```
//! use memory_session::left_out::{add_index, is_index, IndexSettings};
//! use memory_core::{Budget, CharTokenCounter, History, Message, TrimResult, Selection};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let m = [
//!     Message::user("Plan the garden: tomatoes, basil and a lemon tree."),
//!     Message::assistant("Tomatoes need full sun; basil likes the same bed."),
//!     Message::user("And now the shed?"),
//! ];
//! let history = History::new(&m, &[12, 12, 5]).unwrap().forget_task();
//! let mut kept = Selection::new(&history);
//! kept.keep(2..3);
//! let result = kept.finish(false, true);
//! let budget = Budget::tokens(400);
//! let indexed = add_index(&history, result, &budget, &CharTokenCounter, &IndexSettings::default())
//!     .await
//!     .unwrap();
//! assert!(is_index(&indexed.messages[0]));
//! assert!(indexed.messages[0].text().contains(&memory_core::recall::Handle::of(&m[..2]).to_string()));
//! assert_eq!(indexed.messages[1], m[2]);
//! # });
//! ```

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;

use memory_core::covered::Expanded;
use memory_core::recall::{Handle, max_reachable_tokens};
use memory_core::{Budget, History, MemoryError, Message, TokenCounter, TrimResult, TrimStrategy};
use memory_text::for_each_lowercase_word;

mod cut;
mod folded;
mod in_cut;
mod memo;
use cut::Cutter;
pub use folded::Folded;
use folded::FoldedPiece;
use in_cut::PiecesInCut;
pub(crate) use memo::{IndexMemo, LentMemo};

pub use memory_core::index::{PREFIX, is_index};

/// The index's default share of the budget at most: a tenth, so that what
/// is listed never crowds out what is shown.
pub const DEFAULT_MAX_SHARE: f64 = 0.1;

/// The part of [`IndexSettings::max_share`] kept for the index when the
/// history does not fit ([`reserve`]): half. Figure: on the data set's
/// agent trajectories, keeping the whole tenth cost Thrift 0.069 of plain
/// support recall on SWE-smith at 4,000 tokens, half of it 0.025, with
/// reach within 0.015 of each other and cache breaks within 2 of the
/// contexts without an index; a twentieth in all (kept and at most) lost
/// 0.04 of reach on SWE-Gym at 2,000 tokens.
const RESERVED_PART: f64 = 0.5;

/// Words per line that say what a piece holds: enough to tell pieces
/// apart, few enough that a line stays about a dozen tokens.
const WORDS_PER_LINE: usize = 4;

/// An index line naming a piece by the widest handle it may have (parts
/// of a message of up to about 12 million characters). No index is made
/// where it does not fit: a context trimmed again leaves out fewer pieces
/// with shorter handles, and were the first index to be skipped for want
/// of room where the second fits, trimming again would add one.
const WIDEST_LINE: &str = "- r:0000000000#9999-9999";

/// Shortest word listed: shorter ones are mostly function words.
const MIN_WORD_CHARS: usize = 5;

/// Shortest question word matched: the rarity weight takes the function
/// words out ("what", "did" are in every piece and weigh nothing), so the
/// short words that name things ("cat", "race", "Jon") count.
const MIN_QUESTION_WORD_CHARS: usize = 3;

/// A newest user message this long at most, with a question mark, is a
/// question the index answers first. Why: a question is a sentence or
/// two, while an observation or a pasted file, whose words change every
/// call, would reorder the index (and break the cached prefix) each time;
/// the same bound as Thrift's reach-back. Figure: none (a bound).
const MAX_QUESTION_TOKENS: usize = 128;

/// How the index is made.
///
/// ```
/// let s = memory_session::left_out::IndexSettings::default();
/// assert_eq!(s.max_share, 0.1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IndexSettings {
    /// The most of the budget's token limit the index may take.
    pub max_share: f64,
}

impl Default for IndexSettings {
    fn default() -> Self {
        Self {
            max_share: DEFAULT_MAX_SHARE,
        }
    }
}

/// `strategy` with an index of what its result leaves out ([`add_index`]
/// over the same history): what `WindowMemory` shows, as a strategy of its
/// own. The index needs the history the strategy was given, so it wraps
/// the strategy (a pipeline too) rather than follow it as a stage.
///
/// ```
/// use memory_session::left_out::{is_index, IndexSettings, Indexed};
/// use memory_core::{Budget, CharTokenCounter, Message, Pipeline, TrimStrategy};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// // A strategy that keeps the newest message only.
/// struct Newest;
/// #[async_trait::async_trait]
/// impl TrimStrategy for Newest {
///     fn name(&self) -> &str { "newest" }
///     async fn trim_with_counts(
///         &self,
///         history: &memory_core::History<'_>,
///         _budget: &Budget,
///         _counter: &dyn memory_core::TokenCounter,
///     ) -> Result<memory_core::TrimResult, memory_core::MemoryError> {
///         let mut kept = memory_core::Selection::new(history);
///         kept.keep(history.len() - 1..history.len());
///         Ok(kept.finish(false, true))
///     }
/// }
/// let m = [
///     Message::user("Plan the garden."),
///     Message::assistant("Tomatoes by the shed."),
///     Message::user("And the roof?"),
/// ];
/// let indexed = Indexed::new(Newest, IndexSettings::default());
/// let r = indexed.trim(&m, &Budget::tokens(500), &CharTokenCounter).await.unwrap();
/// assert!(is_index(&r.messages[0]));
/// assert_eq!(r.messages[1], m[2]);
/// # });
/// ```
///
/// Like `WindowMemory`, it keeps from call to call what the next call on
/// the same conversation would read again (what each message left out says,
/// the stretches cut): a call on a history that grew, or on the same
/// history with another question at its end, reads only what changed. The
/// index is the one a fresh call makes.
#[derive(Debug)]
pub struct Indexed<S> {
    strategy: S,
    settings: IndexSettings,
    memo: LentMemo,
}

impl<S> Indexed<S> {
    /// `strategy`, indexed as `settings` say.
    ///
    /// ```
    /// use memory_session::left_out::{IndexSettings, Indexed};
    /// let _ = Indexed::new(memory_core::Pipeline::new(), IndexSettings::default());
    /// ```
    pub fn new(strategy: S, settings: IndexSettings) -> Self {
        Self {
            strategy,
            settings,
            memo: LentMemo::default(),
        }
    }
}

/// A clone starts with nothing kept.
impl<S: Clone> Clone for Indexed<S> {
    fn clone(&self) -> Self {
        Self::new(self.strategy.clone(), self.settings)
    }
}

#[async_trait]
impl<S: TrimStrategy> TrimStrategy for Indexed<S> {
    fn name(&self) -> &str {
        "indexed"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        let settings = &self.settings;
        let (result, _) =
            trim_reserving(&self.strategy, history, budget, counter, Some(settings)).await?;
        self.memo
            .add_index(
                history,
                result,
                budget,
                counter,
                settings,
                &Folded::default(),
            )
            .await
    }
}

/// What [`Indexed`] does, for a strategy held by reference and with
/// nothing kept from an earlier call: `strategy`'s trim in the room
/// [`reserve`] leaves, then [`add_index`].
///
/// # Errors
///
/// The strategy's; counting errors.
///
/// ```
/// use memory_session::left_out::{is_index, trim_indexed, IndexSettings};
/// use memory_core::{Budget, CharTokenCounter, History, Message, Pipeline};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let m = [Message::user("fix it")];
/// let history = History::new(&m, &[2]).unwrap();
/// let settings = IndexSettings::default();
/// let r = trim_indexed(&Pipeline::new(), &history, &Budget::tokens(100), &CharTokenCounter, &settings)
///     .await
///     .unwrap();
/// assert!(!r.messages.iter().any(is_index)); // nothing is left out
/// # });
/// ```
pub async fn trim_indexed(
    strategy: &dyn TrimStrategy,
    history: &History<'_>,
    budget: &Budget,
    counter: &dyn TokenCounter,
    settings: &IndexSettings,
) -> Result<TrimResult, MemoryError> {
    let (result, _) = trim_reserving(strategy, history, budget, counter, Some(settings)).await?;
    add_index(history, result, budget, counter, settings).await
}

/// The budget a strategy is given so that the index keeps its room (see
/// the [module docs](self)): `budget` less half of `settings.max_share`
/// of its token limit when `history` does not fit (a question too: the
/// strategy's budget does not change with what is asked), or when it fits
/// in that smaller budget but not with the originals its summary stands
/// for (its [covered set](History::covered), which a stage such as thrift
/// shows again), and that room holds the least index, its first line and
/// a line of the widest handle by `counter`; `budget` as it is otherwise
/// (a room no index fits in would be taken from the strategy for
/// nothing; a compacted view between the two limits keeps the whole
/// budget, so that no stage folds sooner for the index).
///
/// # Errors
///
/// The counter's.
///
/// ```
/// use memory_session::left_out::{reserve, IndexSettings};
/// use memory_core::{Budget, CharTokenCounter, History, Message};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let m = [Message::user("fix it"), Message::tool_result("c", "x".repeat(4_000))];
/// let long = History::new(&m, &[2, 1_000]).unwrap();
/// let settings = IndexSettings { max_share: 0.1 };
/// let (b500, b300) = (Budget::tokens(500), Budget::tokens(300));
/// let reserved = reserve(&long, &b500, &CharTokenCounter, &settings).await.unwrap();
/// assert_eq!(reserved.max_tokens, Some(475));
/// // Half a tenth of 300 tokens holds no index: nothing is kept for one.
/// let reserved = reserve(&long, &b300, &CharTokenCounter, &settings).await.unwrap();
/// assert_eq!(reserved.max_tokens, Some(300));
/// let short = History::new(&m[..1], &[2]).unwrap();
/// let unreserved = reserve(&short, &b500, &CharTokenCounter, &settings).await.unwrap();
/// assert_eq!(unreserved.max_tokens, Some(500));
/// // A summary that fits, standing for originals that do not.
/// use memory_core::{covered::Covered, summary};
/// let s = [summary::message("so far"), Message::user("next")];
/// let c = Covered::new(vec![Message::user("x".repeat(2_000))], vec![500]).unwrap();
/// let compacted = History::new(&s, &[3, 1]).unwrap().with_covered(c);
/// let reserved = reserve(&compacted, &b500, &CharTokenCounter, &settings).await.unwrap();
/// assert_eq!(reserved.max_tokens, Some(475));
/// # });
/// ```
pub async fn reserve(
    history: &History<'_>,
    budget: &Budget,
    counter: &dyn TokenCounter,
    settings: &IndexSettings,
) -> Result<Budget, MemoryError> {
    let mut reserved = *budget;
    let Some(limit) = budget.max_tokens else {
        return Ok(reserved);
    };
    let room = reserved_room(limit, settings);
    let total = history.total();
    // A compacted view that fits with the room kept may not fit with the
    // originals its summary stands for, which a later stage shows again.
    // Measured (LoCoMo, compact,thrift, 2,000 tokens): without this, 1.2
    // handles a context and answer recall 0.562; with it, 16.9 and 0.575.
    let over =
        total > limit || (total <= limit - room && total + history.covered().total() > limit);
    if over && least_index(counter).await? <= room {
        reserved.max_tokens = Some(limit - room);
    }
    Ok(reserved)
}

/// The least budget a strategy is given beside the index: `budget` less
/// the room [`reserve`] may keep for the index.
///
/// ```
/// use memory_session::left_out::{least_budget, IndexSettings};
/// use memory_core::Budget;
/// let least = least_budget(&Budget::tokens(2_000), &IndexSettings::default());
/// assert_eq!(least.max_tokens, Some(1_900));
/// ```
pub fn least_budget(budget: &Budget, settings: &IndexSettings) -> Budget {
    let mut least = *budget;
    least.max_tokens = budget
        .max_tokens
        .map(|limit| limit - reserved_room(limit, settings));
    least
}

/// Tokens of the least index by `counter`: its first line and one line of
/// the widest handle ([`WIDEST_LINE`]). No index is made in less room.
async fn least_index(counter: &dyn TokenCounter) -> Result<usize, MemoryError> {
    let prefix = counter.count_message(&Message::system(PREFIX)).await?;
    Ok(prefix + counter.count(WIDEST_LINE).await? + 1)
}

/// `strategy`'s trim of `history` given the budget [`reserve`] leaves it
/// when `settings` are given (`budget` itself otherwise), with `fits`
/// said of `budget`: a result over the reserved budget but within the
/// whole one fits; and the budget the strategy was given.
///
/// # Errors
///
/// The strategy's.
///
/// ```
/// use memory_session::left_out::{trim_reserving, IndexSettings};
/// use memory_core::{Budget, CharTokenCounter, History, Message, Pipeline};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let m = [Message::user("fix it"), Message::tool_result("c", "x".repeat(1_960))];
/// let history = History::new(&m, &[2, 490]).unwrap();
/// let settings = IndexSettings::default();
/// let (r, _) = trim_reserving(&Pipeline::new(), &history, &Budget::tokens(480), &CharTokenCounter, Some(&settings))
///     .await
///     .unwrap();
/// assert!(!r.fits); // 492 tokens: over the whole budget too
/// let (r, given) = trim_reserving(&Pipeline::new(), &history, &Budget::tokens(495), &CharTokenCounter, Some(&settings))
///     .await
///     .unwrap();
/// assert!(r.fits); // within the whole 495
/// // The room the index would keep holds no index at this budget: the
/// // strategy is given the whole of it.
/// assert_eq!(given.max_tokens, Some(495));
/// # });
/// ```
pub async fn trim_reserving(
    strategy: &dyn TrimStrategy,
    history: &History<'_>,
    budget: &Budget,
    counter: &dyn TokenCounter,
    settings: Option<&IndexSettings>,
) -> Result<(TrimResult, Budget), MemoryError> {
    let Some(settings) = settings else {
        let result = strategy.trim_with_counts(history, budget, counter).await?;
        return Ok((result, *budget));
    };
    let reserved = reserve(history, budget, counter, settings).await?;
    let mut result = strategy
        .trim_with_counts(history, &reserved, counter)
        .await?;
    if !result.fits
        && !reserved.admits_tokens(result.tokens())
        && budget.admits_tokens(result.tokens())
    {
        result.fits = true;
    }
    Ok((result, reserved))
}

/// `result` with an index of what it leaves out of `history` (see the
/// [module docs](self)); as it is when nothing is left out, when there is
/// no room, or when it already holds an index.
///
/// # Errors
///
/// Counting errors.
pub async fn add_index(
    history: &History<'_>,
    result: TrimResult,
    budget: &Budget,
    counter: &dyn TokenCounter,
    settings: &IndexSettings,
) -> Result<TrimResult, MemoryError> {
    add_index_folded(
        history,
        result,
        budget,
        counter,
        settings,
        &Folded::default(),
    )
    .await
}

/// [`add_index`], listing also the turns of `folded`: turns a compaction
/// folded away that the history (its view and covered set) no longer
/// holds, older than all of it.
///
/// ```
/// use memory_session::left_out::{add_index_folded, Folded, IndexSettings};
/// use memory_core::{Budget, CharTokenCounter, History, Message, TrimResult};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let gone = [Message::user("Paint the hall sage green."), Message::assistant("Noted.")];
/// let mut folded = Folded::default();
/// folded.extend(&[(gone[0].clone(), 8), (gone[1].clone(), 3)], &Budget::tokens(400));
/// let m = [memory_core::summary::message("Colours chosen."), Message::user("And the door?")];
/// let history = History::new(&m, &[5, 5]).unwrap().forget_task();
/// let result = TrimResult::unchanged(&history, &Budget::tokens(400));
/// let out = add_index_folded(&history, result, &Budget::tokens(400), &CharTokenCounter, &IndexSettings::default(), &folded)
///     .await
///     .unwrap();
/// assert!(out.messages[1].text().contains(&memory_core::recall::Handle::of(&gone).to_string()));
/// # });
/// ```
pub async fn add_index_folded(
    history: &History<'_>,
    result: TrimResult,
    budget: &Budget,
    counter: &dyn TokenCounter,
    settings: &IndexSettings,
    folded: &Folded,
) -> Result<TrimResult, MemoryError> {
    let mut memo = IndexMemo::default();
    add_index_kept(
        history, result, budget, counter, settings, folded, &mut memo,
    )
    .await
}

/// [`add_index_folded`], keeping in `memo` what the next call on the same
/// session would read again (see [`IndexMemo`]); the index is the one a
/// fresh memo makes.
pub(crate) async fn add_index_kept(
    history: &History<'_>,
    result: TrimResult,
    budget: &Budget,
    counter: &dyn TokenCounter,
    settings: &IndexSettings,
    folded: &Folded,
    memo: &mut IndexMemo,
) -> Result<TrimResult, MemoryError> {
    let Some(limit) = budget.max_tokens else {
        return Ok(result);
    };
    if result.messages.iter().any(is_index) {
        return Ok(result);
    }
    memo.counted_by(counter);
    // The messages a summary stands for are left out too: with the
    // covered set in place, they are listed like any other.
    let expanded = Expanded::of_reusing(history, memo.take_expanded());
    let out = {
        let history = &expanded
            .as_ref()
            .map_or_else(|| history.clone(), Expanded::history);
        memo.sync(history, max_reachable_tokens(budget));
        let call = Call {
            history,
            limit,
            settings,
            folded,
            counter,
        };
        index_placed(call, result, memo).await
    };
    memo.keep_expanded(expanded);
    memo.end_call();
    out
}

/// What one call of the index is given: the history with its covered set
/// placed (synced into the memo), the budget's token limit, the settings,
/// the folded turns and the counter.
#[derive(Clone, Copy)]
struct Call<'a, 'h> {
    history: &'a History<'h>,
    limit: usize,
    settings: &'a IndexSettings,
    folded: &'a Folded,
    counter: &'a dyn TokenCounter,
}

/// [`add_index_kept`] on the history with its covered set placed.
async fn index_placed(
    call: Call<'_, '_>,
    result: TrimResult,
    memo: &mut IndexMemo,
) -> Result<TrimResult, MemoryError> {
    let history = call.history;
    let asked = question_words(history);
    let room = room(call.limit, &result, call.settings, false);
    let whole_room = room_at_question(call.limit, &result, call.settings);
    if memo.has_index() {
        return Ok(reinsert(history, memo, result, room, whole_room));
    }
    let shown = memo.sources_kept(history.messages(), &result.messages);
    let stretches = left_out(&shown);
    let Some(at) = index_at(&result, &shown, &stretches, call.folded) else {
        return Ok(result);
    };
    let listed = listed(memo, history, &stretches, call.counter).await?;
    memo.keep_only(&listed);
    let made = memo::MadeKey::new(call.folded, &listed, room);
    let kept = memo.made_index(&made);
    let mut entries: Vec<Entry<'_>> = call.folded.pieces.iter().map(Entry::Folded).collect();
    entries.extend(listed.into_iter().map(Entry::Piece));
    let mut lines = Lines {
        history,
        entries,
        memo,
        counter: call.counter,
    };
    let index = match kept {
        Some(index) => index,
        None => {
            let order = lines.ranked(&[]);
            let index = index_message(&mut lines, &order, room, true).await?;
            lines.memo.keep_made_index(made, index.clone());
            index
        }
    };
    let (result, used, named) = match index {
        Some((message, tokens, named)) => (insert(result, at, message, tokens), tokens, named),
        None => (result, 0, Vec::new()),
    };
    if asked.is_empty() {
        return Ok(result);
    }
    let asked = Asked {
        words: &asked,
        named: &named,
        room: whole_room.saturating_sub(used),
    };
    add_question_list(&mut lines, result, asked).await
}

/// Where the index stands in `result`: where the first left-out stretch
/// stood, or, with folded turns only, right after the summary that stands
/// for them; `None` when nothing is left out.
fn index_at(
    result: &TrimResult,
    shown: &[Option<usize>],
    stretches: &[Range<usize>],
    folded: &Folded,
) -> Option<usize> {
    match stretches.first() {
        Some(first) => Some(insertion_point(&result.messages, shown, first.start)),
        None if !folded.is_empty() => Some(
            result
                .messages
                .iter()
                .position(memory_core::summary::is_summary)
                .map_or(0, |i| i + 1),
        ),
        None => None,
    }
}

/// What a question asks of the index: its words, the pieces the index
/// already names, and the room left for its list.
struct Asked<'a> {
    words: &'a [String],
    named: &'a [usize],
    room: usize,
}

/// `result` with, right before its question, an index of the pieces of
/// `lines` that match the question best that the index does not name: the
/// cached prefix before the question stays as it was.
async fn add_question_list(
    lines: &mut Lines<'_, '_, '_>,
    result: TrimResult,
    asked: Asked<'_>,
) -> Result<TrimResult, MemoryError> {
    // Looked up by piece: the pieces and the handles named both grow
    // with the session, and a scan of the handles for each piece made
    // this list's cost their product.
    let mut named = vec![false; lines.entries.len()];
    for &k in asked.named {
        if let Some(listed) = named.get_mut(k) {
            *listed = true;
        }
    }
    let order: Vec<usize> = lines
        .ranked(asked.words)
        .into_iter()
        .filter(|&k| !named[k])
        .collect();
    let list = index_message(lines, &order, asked.room, false);
    Ok(match list.await? {
        Some((message, tokens, _)) => {
            let before_question = result.messages.len().saturating_sub(1);
            insert(result, before_question, message, tokens)
        }
        None => result,
    })
}

/// A piece the index may list: a stretch of the history, or a folded
/// piece (older than the whole history).
enum Entry<'f> {
    Piece(Range<usize>),
    Folded(&'f FoldedPiece),
}

/// The pieces one call may list, with what their lines are read and
/// counted from: the history (synced into `memo`) and the counter.
struct Lines<'a, 'h, 'f> {
    history: &'a History<'h>,
    entries: Vec<Entry<'f>>,
    memo: &'a mut IndexMemo,
    counter: &'a dyn TokenCounter,
}

impl Lines<'_, '_, '_> {
    /// Piece `k`'s line with who spoke, its size and a few of its words,
    /// and the line's count.
    async fn described(&mut self, k: usize) -> Result<(Arc<str>, usize), MemoryError> {
        match &self.entries[k] {
            Entry::Piece(piece) => {
                let piece = piece.clone();
                self.memo
                    .described(self.history, &piece, self.counter)
                    .await
            }
            Entry::Folded(f) => {
                let cost = self.memo.count(&f.described, self.counter).await?;
                Ok((f.described.clone(), cost))
            }
        }
    }

    /// Piece `k`'s handle after a space, for the index's line of handles,
    /// and its count.
    async fn named(&mut self, k: usize) -> Result<(Arc<str>, usize), MemoryError> {
        match &self.entries[k] {
            Entry::Piece(piece) => {
                let piece = piece.clone();
                self.memo.named(self.history, &piece, self.counter).await
            }
            Entry::Folded(f) => {
                let cost = self.memo.count(&f.named, self.counter).await?;
                Ok((f.named.clone(), cost))
            }
        }
    }

    /// A count no piece's handle is under.
    async fn least_named(&mut self) -> Result<usize, MemoryError> {
        let mut least = self.memo.least_named();
        for entry in &self.entries {
            if let Entry::Folded(f) = entry {
                least = least.min(self.memo.count(&f.named, self.counter).await?);
            }
        }
        Ok(least)
    }

    /// The pieces' positions, the first to list first: those whose words
    /// match the question's best, each shared word weighing by its rarity
    /// among the pieces (a word every piece holds weighs nothing, a word
    /// one piece holds the most: BM25's inverse document frequency), the
    /// newest first among equals (newest first alone without a question).
    fn ranked(&mut self, asked: &[String]) -> Vec<usize> {
        let newest_first = (0..self.entries.len()).rev();
        if asked.is_empty() {
            return newest_first.collect();
        }
        self.memo.read_words(self.history.messages());
        let asked: Vec<u64> = asked.iter().map(|w| word_key(w)).collect();
        // The pieces that hold each asked word: a folded piece by its
        // words, a piece of the history by where the word was said (the
        // pieces are in order).
        let pieces = self
            .entries
            .iter()
            .position(|e| matches!(e, Entry::Piece(_)))
            .unwrap_or(self.entries.len());
        let mut scores = vec![0.0; self.entries.len()];
        let n = self.entries.len() as f64;
        let mut in_cut = PiecesInCut::of(self.memo, &self.entries[pieces..]);
        let mut held: Vec<usize> = Vec::with_capacity(self.entries.len());
        for word in &asked {
            held.clear();
            held.extend((0..pieces).filter(
                |&k| matches!(&self.entries[k], Entry::Folded(f) if f.words.contains(word)),
            ));
            match &mut in_cut {
                Some(in_cut) => {
                    in_cut.holding(self.memo, *word, &self.entries[pieces..], &mut held, pieces)
                }
                None => held.extend(
                    holding(&self.entries[pieces..], self.memo.said(*word))
                        .into_iter()
                        .map(|k| pieces + k),
                ),
            }
            let df = held.len() as f64;
            let weight = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &k in &held {
                scores[k] += weight;
            }
        }
        // Every word weighs more than nothing: the pieces that hold one,
        // best first, then the others, newest first.
        let (mut order, rest): (Vec<usize>, Vec<usize>) =
            newest_first.partition(|&k| scores[k] > 0.0);
        order.sort_unstable_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(b.cmp(&a)));
        order.extend(rest);
        order
    }
}

/// The positions among `pieces` (pieces of the history, in order) of
/// those that hold a message of `said` (positions, ascending).
fn holding(pieces: &[Entry<'_>], said: &[u32]) -> Vec<usize> {
    holding_in(
        pieces.len(),
        |k| match &pieces[k] {
            Entry::Piece(piece) => piece.clone(),
            Entry::Folded(_) => 0..0,
        },
        said,
    )
}

/// The positions among `count` pieces of the history, in order (`range`
/// gives each), of those that hold a message of `said` (positions,
/// ascending): each message placed among the pieces where it is said less
/// often than there are pieces, each piece looked up among the messages
/// otherwise.
fn holding_in(count: usize, range: impl Fn(usize) -> Range<usize>, said: &[u32]) -> Vec<usize> {
    let mut out = Vec::new();
    if said.len() < count {
        for &i in said {
            let i = i as usize;
            // The first piece that ends after message `i`.
            let (mut k, mut hi) = (0, count);
            while k < hi {
                let mid = (k + hi) / 2;
                if range(mid).end <= i {
                    k = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if k < count && range(k).contains(&i) && out.last() != Some(&k) {
                out.push(k);
            }
        }
    } else {
        let mut at = 0;
        for k in 0..count {
            let piece = range(k);
            at = first_from(said, at, piece.start);
            if said.get(at).is_some_and(|&i| (i as usize) < piece.end) {
                out.push(k);
            }
        }
    }
    out
}

/// The first position from `at` on of `said` (ascending) whose message is
/// at `start` or after: found by steps that double, then halving, so
/// that walking a long list piece by piece costs what it skips, not its
/// length each time.
fn first_from(said: &[u32], at: usize, start: usize) -> usize {
    let before = |j: usize| (said[j] as usize) < start;
    if at >= said.len() || !before(at) {
        return at;
    }
    // said[low] is before `start`; find `high` that is not (or the end).
    let (mut low, mut step) = (at, 1);
    let mut high = loop {
        let next = low + step;
        if next >= said.len() || !before(next) {
            break next.min(said.len());
        }
        low = next;
        step *= 2;
    };
    while high - low > 1 {
        let mid = (low + high) / 2;
        if before(mid) {
            low = mid;
        } else {
            high = mid;
        }
    }
    high
}

/// The index's room in `result` under a budget of `limit` tokens: the
/// part of the share [`reserve`] keeps for it, and no more than is free
/// (`asked` false); with its question's list (`asked`), at most
/// `settings.max_share` of the budget, and no more than the result leaves
/// free. The index's room does not follow what the shown turns leave
/// free: it changed from call to call as they grew, and the index with it
/// (a handle more or fewer), each change a break of the cached prefix
/// where the index stands. Figure (chars counter, anthropic pricing; the
/// whole free room up to the share before): on a chat of 8,052 calls (the
/// LoCoMo conversations four times over, 8,000 tokens) thrift's cost per
/// call 5,177 -> 4,621 and its cache breaks 4,145 -> 3,692; on the agent
/// trajectories reach unchanged and cost per call lower or the same
/// (SWE-Gym at 2,000 tokens 735 -> 714, SWE-smith at 4,000 1,334 -> 1,302).
///
/// Where the result's floor alone is over the budget (`fits` false: its
/// protected messages and task, with everything else shed), the reserved
/// part too. Such a context is over the budget whatever is added, and
/// without an index it names nothing of what it sheds, although it sheds
/// the most. Figure (chars counter, SWE-Gym at 2,000 tokens, whose second
/// trajectory's system prompt and task alone are 2,143 tokens): reachable
/// support recall 0.976 -> 1.000 for thrift and window drop, 0.976 ->
/// 0.981 for compact,thrift; thrift's cost per call 737 -> 744 (window
/// drop's 862 -> 869).
fn room(limit: usize, result: &TrimResult, settings: &IndexSettings, asked: bool) -> usize {
    let share = (limit as f64 * settings.max_share) as usize;
    let reserved = reserved_room(limit, settings);
    match (result.fits, asked) {
        (false, _) => reserved,
        (true, true) => share.min(limit.saturating_sub(result.tokens())),
        (true, false) => reserved.min(limit.saturating_sub(result.tokens())),
    }
}

/// The room the index and its question addendum take together at a
/// question: the whole share, within what the strategy left.
fn room_at_question(limit: usize, result: &TrimResult, settings: &IndexSettings) -> usize {
    room(limit, result, settings, true)
}

/// The part of the index's share of a budget of `limit` tokens that
/// [`reserve`] keeps from the strategies, in tokens: what the index takes
/// between questions.
fn reserved_room(limit: usize, settings: &IndexSettings) -> usize {
    (limit as f64 * settings.max_share * RESERVED_PART) as usize
}

/// `result` with the index that stood at `old` in `history` (a context
/// indexed before and trimmed again) where it stood, when it has that
/// `room`: it lists what that context left out.
fn reinsert(
    history: &History<'_>,
    memo: &IndexMemo,
    mut result: TrimResult,
    room: usize,
    whole_room: usize,
) -> TrimResult {
    let olds: Vec<usize> = (0..history.len())
        .filter(|&i| is_index(&history.messages()[i]))
        .collect();
    let mut used = 0;
    for (n, old) in olds.into_iter().enumerate() {
        let tokens = history.counts()[old];
        let limit = if n == 0 { room } else { whole_room };
        if used + tokens > limit {
            break;
        }
        used += tokens;
        let shown = memo.sources(history.messages(), &result.messages);
        let at = insertion_point(&result.messages, &shown, old);
        let message = history.messages()[old].clone();
        result = insert(result, at, message, tokens);
    }
    result
}

/// `result` with the index `message` of `tokens` tokens at `at`; what it
/// materialized is stored without it.
fn insert(mut result: TrimResult, at: usize, message: Message, tokens: usize) -> TrimResult {
    if result.replace && result.write_back.is_none() {
        result.write_back = Some(Box::new(result.clone()));
        result.replace = false;
    }
    result.messages.insert(at, message);
    result.counts.insert(at, tokens);
    for p in &mut result.protected {
        if *p >= at {
            *p += 1;
        }
    }
    result
}

/// The stretches of a history that no result message shows (`shown`:
/// each result message's source, ascending where it has one), in order.
/// What lies before the first shown message counts only when something
/// after it is shown (a result of summaries alone leaves out nothing it
/// does not stand for).
fn left_out(shown: &[Option<usize>]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut next = 0;
    for &i in shown.iter().flatten() {
        if i > next {
            out.push(next..i);
        }
        next = next.max(i + 1);
    }
    out
}

/// The pieces the index may list: the span from the first left-out
/// message through the last, the shown messages between included, cut
/// into pieces by a [`Cutter`], those that hold a left-out message. Where a strategy
/// keeps scattered turns (those a question makes relevant), the stretches
/// between them are short; cut from the span, a piece is as large as one
/// recall allows instead, so each handle reaches more, and its words
/// include the shown turns beside what it brings back. Figure (LoCoMo,
/// chars counter, Thrift's reachable evidence recall): 0.805 -> 0.814 at
/// 1,000 tokens and 0.897 -> 0.912 at 2,000; the agent trajectories,
/// whose left-out steps are mostly one stretch, replay alike. Matching
/// the question against the left-out messages' words alone: 0.809 and
/// 0.901. Cutting from the history's start instead (the same pieces from
/// call to call whatever is shown): 0.813 and 0.912, but pieces that hold
/// the protected head broke the cached prefix more often on SWE-smith
/// (compact,thrift at 8,000 tokens: 30 -> 35 breaks).
async fn listed(
    memo: &mut IndexMemo,
    history: &History<'_>,
    stretches: &[Range<usize>],
    counter: &dyn TokenCounter,
) -> Result<Vec<Range<usize>>, MemoryError> {
    let (Some(first), Some(last)) = (stretches.first(), stretches.last()) else {
        return Ok(Vec::new());
    };
    let pieces = memo.pieces(history, first.start..last.end, counter).await?;
    // Both in order: a piece holds a left-out message when the first
    // stretch that ends after its start starts before its end.
    let mut stretch = stretches.iter().peekable();
    Ok(pieces
        .into_iter()
        .filter(|piece| {
            while stretch.next_if(|s| s.end <= piece.start).is_some() {}
            stretch.peek().is_some_and(|s| s.start < piece.end)
        })
        .collect())
}

/// The stems of the words of the newest message when it is a short user
/// question (not a text-only agent's observation, whatever it prints:
/// ranked by its words, the index would change, and break the cached
/// prefix, at each short output with a question mark); none otherwise. Stemmed as Thrift's relevance stems, so that
/// "painting" asked finds "painted" said. Figure (LoCoMo, chars counter,
/// Thrift's reachable evidence recall): 0.801 -> 0.805 at 1,000 tokens,
/// 0.895 -> 0.897 at 2,000.
fn question_words(history: &History<'_>) -> Vec<String> {
    let messages = history.messages();
    let Some(last) = messages.len().checked_sub(1) else {
        return Vec::new();
    };
    let text = messages[last].text();
    if !messages[last].is_user()
        || !text.contains('?')
        || history.tokens(last..last + 1) > MAX_QUESTION_TOKENS
        || memory_core::structure::is_observation(messages, last)
    {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    memory_text::for_each_stem(&text, MIN_QUESTION_WORD_CHARS, |word| {
        if !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    });
    out
}

/// The index message listing the pieces of `lines` that fit in `room`
/// tokens, taken in `order`, in history order, and its count; `None` when
/// not one fits. When not every piece fits with its description, the
/// first in `order` alone is described and as many of the rest as fit are
/// named by their handle alone on one last line (taken from [`both_ends`]
/// of `order` when `both_ends`: without a question).
async fn index_message(
    lines: &mut Lines<'_, '_, '_>,
    order: &[usize],
    room: usize,
    both_ends: bool,
) -> Result<Option<(Message, usize, Vec<usize>)>, MemoryError> {
    let counter = lines.counter;
    // Only where the widest line fits: whether there is an index then
    // depends on the room alone (a context trimmed again is indexed
    // exactly when the first trim was, see `WIDEST_LINE`).
    if least_index(counter).await? > room {
        return Ok(None);
    }
    let prefix = counter.count_message(&Message::system(PREFIX)).await?;
    // Described lines, in order, while they fit in the room.
    let mut described: Vec<(usize, Arc<str>)> = Vec::new();
    let mut handles = Vec::new();
    let mut used = prefix;
    let mut first_cost = 0;
    for &k in order {
        let (line, count) = lines.described(k).await?;
        let cost = count + 1;
        if used + cost > room {
            break;
        }
        if described.is_empty() {
            first_cost = cost;
        }
        used += cost;
        described.push((k, line));
    }
    if described.len() < order.len() {
        // Not all fit: the first alone keeps its description, and the
        // room of the others' names as many pieces as fit by their handle
        // alone (a sixth of a described line each). Figure (chars counter,
        // reachable recall): against the described lines a quarter of the
        // room held, thrift on LoCoMo at 2,000 tokens 0.915 -> 0.927 (23.8
        // handles a question instead of 21.6), the agent trajectories
        // alike at lower cost per call.
        described.truncate(1);
        used = prefix + first_cost;
        let rest = &order[described.len()..];
        let named = match both_ends {
            true => self::both_ends(rest),
            false => rest.to_vec(),
        };
        // The line of handles: its dash and line break, then a space and
        // a handle each.
        let left = room.saturating_sub(used + counter.count("-").await? + 1);
        handles = name_in(lines, &named, left).await?;
    }
    finish(described, handles, room, counter).await
}

/// The index message of the described `lines` (in history order) and one
/// line of the `named` handles (each after a space, in history order), and
/// its count; `None` when it lists nothing. Counted piece by piece, the
/// handles may come to fewer tokens than the line (a tokenizer that merges
/// across a space): those named last go until it fits in `room`.
async fn finish(
    mut lines: Vec<(usize, Arc<str>)>,
    mut named: Vec<(usize, Arc<str>)>,
    room: usize,
    counter: &dyn TokenCounter,
) -> Result<Option<(Message, usize, Vec<usize>)>, MemoryError> {
    lines.sort_by_key(|(k, _)| *k);
    loop {
        if lines.is_empty() && named.is_empty() {
            return Ok(None);
        }
        let mut body: Vec<&str> = lines.iter().map(|(_, l)| &**l).collect();
        let mut in_order: Vec<&(usize, Arc<str>)> = named.iter().collect();
        in_order.sort_by_key(|(k, _)| *k);
        let handles: String = in_order.iter().map(|(_, h)| &**h).collect();
        let line = format!("-{handles}");
        if !handles.is_empty() {
            body.push(&line);
        }
        let message = Message::system(format!("{PREFIX}{}", body.join("\n")));
        let tokens = counter.count_message(&message).await?;
        if tokens <= room || named.pop().is_none() {
            let listed = lines.iter().chain(&named).map(|(k, _)| *k).collect();
            return Ok(Some((message, tokens, listed)));
        }
    }
}

/// The handles (each after a space) naming the pieces of `lines` taken
/// in `order`, each that fits in `room` tokens with the space before it
/// (not only the first ones: the index of a context with fewer left-out
/// pieces, the context itself trimmed again, then holds no more than this
/// one). Written on one line, a handle costs no dash and no line break of
/// its own. Figure (chars counter, reachable recall, one line per handle
/// before): Thrift on SWE-smith at 2,000 tokens 0.976 -> 0.981,
/// compact,thrift 0.964 -> 0.970; LoCoMo evidence 0.814 -> 0.818 at 1,000
/// tokens and 0.912 -> 0.915 at 2,000 (handles per question 6.5 -> 7.5
/// and 18.8 -> 21.6).
async fn name_in(
    lines: &mut Lines<'_, '_, '_>,
    order: &[usize],
    mut room: usize,
) -> Result<Vec<(usize, Arc<str>)>, MemoryError> {
    let mut handles = Vec::new();
    let least = lines.least_named().await?;
    for &k in order {
        if room < least {
            // No piece left costs so little.
            break;
        }
        let (handle, cost) = lines.named(k).await?;
        if cost <= room {
            room -= cost;
            handles.push((k, handle));
        }
    }
    Ok(handles)
}

/// `newest_first` taken from both ends in turn: the newest, the oldest,
/// the next newest, the next oldest... Where no question ranks the pieces,
/// the lines named by handle alone go so, so that the start of a task
/// (the files an agent read first, which its later steps edit) stays
/// within reach beside the steps just shed. Figure (chars counter,
/// reachable support recall at 2,000 tokens): newest first, thrift 0.957
/// on SWE-Gym and 0.940 on SWE-smith; oldest first 0.976 and 0.908; from
/// both ends 0.976 and 0.940.
fn both_ends(newest_first: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(newest_first.len());
    let (mut front, mut back) = (0, newest_first.len());
    while front < back {
        out.push(newest_first[front]);
        front += 1;
        if front < back {
            back -= 1;
            out.push(newest_first[back]);
        }
    }
    out
}

/// The keys ([`word_key`]) of the distinct stems of a piece's words of
/// [`MIN_QUESTION_WORD_CHARS`] characters and more: what a question is
/// matched against, a lookup each.
type Words = std::collections::HashSet<
    u64,
    std::hash::BuildHasherDefault<memory_core::identity::WordHasher>,
>;

/// The [`Words`] of `piece`.
fn piece_words(piece: &[Message]) -> Words {
    piece.iter().flat_map(message_words).collect()
}

/// The keys of the distinct stems of `message`'s words of
/// [`MIN_QUESTION_WORD_CHARS`] characters and more, sorted.
fn message_words(message: &Message) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    memory_text::for_each_stem(&message.text(), MIN_QUESTION_WORD_CHARS, |s| {
        out.push(word_key(s));
    });
    out.sort_unstable();
    out.dedup();
    out
}

/// A word's key: pieces' words are matched against a question's by key,
/// a number compared at once where a word is compared letter by letter.
fn word_key(word: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = memory_core::identity::WordHasher::default();
    word.hash(&mut h);
    h.finish()
}

/// The handle naming `piece` (of `tokens` tokens) on the index's line of
/// handles, after the space before it.
fn named_handle(piece: &[Message], tokens: usize, max_tokens: usize) -> String {
    format!(" {}", handle(piece, tokens, max_tokens))
}

/// One index line: the piece's handle, who spoke, its size and a few of
/// its words.
fn line(piece: &[Message], tokens: usize, max_tokens: usize) -> String {
    let mut tally = Tally::default();
    piece.iter().for_each(|m| tally.add(m));
    line_with(piece, tokens, max_tokens, &tally)
}

/// [`line`], its words from `tally`, the tally of the piece's words.
fn line_with(piece: &[Message], tokens: usize, max_tokens: usize, tally: &Tally) -> String {
    let mut roles: Vec<&str> = Vec::new();
    for m in piece {
        if !roles.contains(&m.role()) {
            roles.push(m.role());
        }
    }
    format!(
        "- {} ({}; {tokens} tokens) {}",
        handle(piece, tokens, max_tokens),
        roles.join(", "),
        tally.salient().join(" ")
    )
}

/// The handle a line names: the piece's, or, for one message too long for
/// one recall, its parts.
fn handle(piece: &[Message], tokens: usize, max_tokens: usize) -> Handle {
    match piece {
        [message] if tokens > max_tokens => {
            let chars = memory_core::recall::part_text(message).chars().count();
            Handle::for_span(message, 0..chars, chars)
        }
        _ => Handle::of(piece),
    }
}

/// The words of one message of at least [`MIN_WORD_CHARS`] characters:
/// each with how often it is said and when first (counting every word
/// said), and how many are said in all.
#[derive(Debug, Clone, Default)]
struct Told {
    words: Vec<(Arc<str>, usize, usize)>,
    said: usize,
}

impl Told {
    /// The words of `message`.
    fn of(message: &Message) -> Self {
        let mut at: WordMap<usize> = WordMap::default();
        let mut told = Told::default();
        for_each_lowercase_word(&message.text(), MIN_WORD_CHARS, |word| {
            match at.get(word) {
                Some(&k) => told.words[k].1 += 1,
                None => {
                    let word: Arc<str> = word.into();
                    at.insert(word.clone(), told.words.len());
                    told.words.push((word, 1, told.said));
                }
            }
            told.said += 1;
        });
        told
    }
}

/// A map by word: words are short, hashed a word at a time.
type WordMap<V> =
    HashMap<Arc<str>, V, std::hash::BuildHasherDefault<memory_core::identity::WordHasher>>;

/// The words of a piece's messages of at least [`MIN_WORD_CHARS`]
/// characters, each with how often it was said and when first; a piece
/// that grows by a message adds that message's words.
#[derive(Debug, Clone, Default)]
struct Tally {
    counts: WordMap<(usize, usize)>,
    said: usize,
}

impl Tally {
    /// Adds the words of `message`, said after those added before.
    fn add(&mut self, message: &Message) {
        self.add_told(&Told::of(message));
    }

    /// Adds the words `told` of one message, said after those added
    /// before: as [`add`](Self::add) would.
    fn add_told(&mut self, told: &Told) {
        for (word, n, first) in &told.words {
            let entry = self
                .counts
                .entry(word.clone())
                .or_insert((0, self.said + first));
            entry.0 += n;
        }
        self.said += told.said;
    }

    /// The most frequent words, ties to the first said, at most
    /// [`WORDS_PER_LINE`].
    fn salient(&self) -> Vec<&str> {
        let rank = |&(n, first): &(usize, usize)| (std::cmp::Reverse(n), first);
        let mut best: Vec<(&str, (usize, usize))> = Vec::with_capacity(WORDS_PER_LINE + 1);
        for (word, said) in &self.counts {
            if best.len() == WORDS_PER_LINE && rank(said) >= rank(&best[WORDS_PER_LINE - 1].1) {
                continue;
            }
            let at = best.partition_point(|(_, s)| rank(s) < rank(said));
            best.insert(at, (&**word, *said));
            best.truncate(WORDS_PER_LINE);
        }
        best.into_iter().map(|(w, _)| w).collect()
    }
}

/// Where the index goes in the result: before the first message shown
/// after the first left-out stretch (where the stretch stood), never inside
/// a step.
fn insertion_point(shown: &[Message], sources: &[Option<usize>], first_left_out: usize) -> usize {
    let mut at = sources
        .iter()
        .position(|s| s.is_some_and(|i| i > first_left_out))
        .unwrap_or(shown.len());
    while at < shown.len() && shown[at].is_tool_result() {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{CharTokenCounter, Selection, is_shrunk_from};

    /// The reference [`IndexMemo::sources`] must match: for each result
    /// message, the history message it shows (as it was or
    /// shrunk), matched in order from the newest back; `None` for messages
    /// the strategy made. From the newest, because an agent's history repeats
    /// itself (the same command run twice prints the same output) and a
    /// strategy keeps its newest steps: matched from the oldest, the newest
    /// observation would stand for an earlier copy of itself, and everything
    /// after that copy would seem shown.
    fn shown_sources(history: &[Message], shown: &[Message]) -> Vec<Option<usize>> {
        let mut end = history.len();
        let mut out: Vec<Option<usize>> = shown
            .iter()
            .rev()
            .map(|message| {
                let at = history[..end]
                    .iter()
                    .rposition(|x| is_shrunk_from(x, message))?;
                end = at;
                Some(at)
            })
            .collect();
        out.reverse();
        out
    }

    /// Counts each character as `.0` tokens: another counter than the
    /// chars counter, whose counts of the same lines differ (and one with
    /// data, so an address of its own; see `CounterId`).
    struct EachChar(usize);

    #[async_trait]
    impl TokenCounter for EachChar {
        async fn count(&self, text: &str) -> Result<usize, MemoryError> {
            Ok(text.chars().count() * self.0)
        }
    }

    /// `Indexed` keeps its memo between calls, and calls bring their own
    /// counter: given another, it forgets the counts it kept, and the index
    /// is the one a fresh call with that counter makes.
    #[tokio::test]
    async fn an_indexed_strategy_given_another_counter_indexes_as_a_fresh_one() {
        let mut m = vec![Message::system("Plan the house.")];
        for topic in [
            "garden", "boiler", "roof", "garage", "cellar", "attic", "porch",
        ] {
            m.push(Message::user(format!("What about the {topic}?")));
            m.push(Message::assistant(
                format!("The {topic} needs work. ").repeat(8),
            ));
        }
        struct Newest;
        #[async_trait]
        impl TrimStrategy for Newest {
            fn name(&self) -> &str {
                "newest"
            }
            async fn trim_with_counts(
                &self,
                history: &History<'_>,
                _: &Budget,
                _: &dyn TokenCounter,
            ) -> Result<TrimResult, MemoryError> {
                let mut kept = Selection::new(history);
                kept.keep(history.len() - 2..history.len());
                Ok(kept.finish(false, true))
            }
        }
        let settings = IndexSettings::default();
        let indexed = Indexed::new(Newest, settings);
        let budget = Budget::tokens(2_000);
        let each = EachChar(1);
        let counters: [&dyn TokenCounter; 3] = [&CharTokenCounter, &each, &CharTokenCounter];
        // The same history each call (its counts given as they were).
        let counts = memory_core::count_messages(&CharTokenCounter, &m)
            .await
            .unwrap();
        let history = History::new(&m, &counts).unwrap();
        let mut lists = Vec::new();
        for counter in counters {
            let kept = indexed
                .trim_with_counts(&history, &budget, counter)
                .await
                .unwrap();
            let fresh = trim_indexed(&Newest, &history, &budget, counter, &settings)
                .await
                .unwrap();
            assert_eq!(kept.messages, fresh.messages);
            assert_eq!(kept.counts, fresh.counts);
            lists.push(kept.counts);
        }
        // The two counters count the index differently.
        assert_ne!(lists[0], lists[1]);
    }

    #[test]
    fn first_from_finds_what_a_search_from_there_finds() {
        let said: Vec<u32> = (0..500u32).map(|i| i * 3 + i % 7).collect();
        for at in [0, 1, 17, 250, 499, 500] {
            for start in [0, 5, 100, 700, 1_400, 2_000] {
                let want =
                    at + said[at.min(said.len())..].partition_point(|&i| (i as usize) < start);
                assert_eq!(first_from(&said, at, start), want, "from {at} to {start}");
            }
        }
    }

    #[test]
    fn a_messages_words_are_the_keys_of_its_distinct_stems() {
        let text = "Painted the ROOMS; painting rooms, Straße";
        let mut want: Vec<u64> = ["paint", "the", "room", "straße"]
            .iter()
            .map(|w| word_key(w))
            .collect();
        want.sort_unstable();
        assert_eq!(message_words(&Message::user(text)), want);
    }

    #[test]
    fn both_ends_alternate_newest_and_oldest() {
        assert_eq!(both_ends(&[9, 8, 7, 6, 5]), vec![9, 5, 8, 6, 7]);
        assert_eq!(both_ends(&[2, 1]), vec![2, 1]);
        assert!(both_ends(&[]).is_empty());
    }

    /// Six rounds of 100 tokens each (a long reply naming its topic), and a
    /// newest user message `last`; the context shows only `last`, with room
    /// for one index line (of 400 tokens, a tenth at a question, half of
    /// a fifth otherwise).
    async fn indexed(last: &str) -> (String, Vec<Message>) {
        let topics = ["garden", "boiler", "roof", "garage", "cellar", "attic"];
        let mut m = Vec::new();
        for topic in topics {
            m.push(Message::user(format!("And the {topic}?")));
            m.push(Message::assistant(format!("{topic} notes. ").repeat(25)));
        }
        m.push(Message::user(last));
        let counts = memory_core::count_messages(&CharTokenCounter, &m)
            .await
            .unwrap();
        let history = History::new(&m, &counts).unwrap().forget_task();
        let mut kept = Selection::new(&history);
        kept.keep(m.len() - 1..m.len());
        let result = kept.finish(false, true);
        // 40 tokens: the prefix and one line.
        let budget = Budget::tokens(400);
        let max_share = match question_words(&history).is_empty() {
            true => 0.2,
            false => 0.1,
        };
        let settings = IndexSettings { max_share };
        let out = add_index(&history, result, &budget, &CharTokenCounter, &settings)
            .await
            .unwrap();
        assert!(out.messages.iter().any(is_index));
        assert!(out.tokens() <= 400);
        let texts: Vec<String> = out
            .messages
            .iter()
            .filter(|m| is_index(m))
            .map(Message::text)
            .collect();
        (texts.join("\n"), m)
    }

    #[tokio::test]
    async fn the_pieces_a_question_asks_about_are_listed_first() {
        let (index, m) = indexed("What did we say about the garage?").await;
        let garage = 7;
        assert!(
            Handle::all_in(&index)
                .iter()
                .any(|h| h.find(&m).is_some_and(|r| r.contains(&garage))),
            "{index}"
        );
        assert!(!index.contains("attic"), "{index}");
    }

    #[tokio::test]
    async fn when_not_all_fit_described_the_rest_are_named_by_handle() {
        let mut m = Vec::new();
        for k in 0..300 {
            m.push(Message::user(format!(
                "Step {k}: check the valve number {k}."
            )));
            m.push(Message::assistant(
                format!("Valve {k} reads normal pressure today. ").repeat(4),
            ));
        }
        m.push(Message::user("Carry on."));
        let (out, _) = index_of(&m, m.len() - 3).await;
        let index = out.messages[0].text();
        assert!(out.counts[0] <= 200, "{}", out.counts[0]);
        let described = index.lines().filter(|l| l.contains(" tokens) ")).count();
        // The others on one last line, handles alone.
        let last = index.lines().last().unwrap();
        assert_eq!(index.lines().count(), 1 + described + 1, "{index}");
        let named = Handle::all_in(last).len();
        assert_eq!(last.split(' ').count(), 1 + named, "{last}");
        // The first alone described.
        assert!(described == 1 && named > described, "{index}");
        // Every handle is one recall of left-out messages, within reach.
        let counts = memory_core::count_messages(&CharTokenCounter, &m)
            .await
            .unwrap();
        let reach = memory_core::recall::reachable(&m, &counts, &out.messages, 500);
        assert_eq!(reach.len(), described + named);
        assert!(reach.iter().all(|r| r.messages.end <= m.len() - 3));
        // Without a question, named from both ends: the oldest too.
        assert!(reach.iter().any(|r| r.messages.start == 0), "{index}");
    }

    #[tokio::test]
    async fn the_turns_a_summary_stands_for_are_listed() {
        let covered: Vec<Message> = (0..6)
            .flat_map(|k| {
                [
                    Message::user(format!("Which colour for room {k}?")),
                    Message::assistant(format!("Room {k}: sage green walls. ").repeat(5)),
                ]
            })
            .collect();
        let covered_counts = memory_core::count_messages(&CharTokenCounter, &covered)
            .await
            .unwrap();
        let view = [
            memory_core::summary::message("We chose colours for six rooms."),
            Message::user("And the hall?"),
        ];
        let view_counts = memory_core::count_messages(&CharTokenCounter, &view)
            .await
            .unwrap();
        let set = memory_core::covered::Covered::new(covered.clone(), covered_counts)
            .unwrap()
            .before(Some(view[1].clone()));
        let history = History::new(&view, &view_counts)
            .unwrap()
            .forget_task()
            .with_covered(set);
        let result = TrimResult::unchanged(&history, &Budget::tokens(2_000));
        let out = add_index(
            &history,
            result,
            &Budget::tokens(2_000),
            &CharTokenCounter,
            &IndexSettings::default(),
        )
        .await
        .unwrap();
        let at = out.messages.iter().position(is_index).expect("an index");
        assert_eq!(out.messages[at - 1], view[0], "after the summary");
        let handles = Handle::all_in(&out.messages[at].text());
        assert!(!handles.is_empty());
        for h in handles {
            assert!(h.find(&covered).is_some(), "{h} names covered turns");
        }
    }

    /// Eight garden beds, one reply each (`reply(k)`), and `question`
    /// newest: the messages the first described line of the index names.
    async fn first_described(reply: impl Fn(usize) -> String, question: &str) -> Range<usize> {
        let mut m = Vec::new();
        for k in 0..8 {
            m.push(Message::user(format!("What grows in garden bed {k}?")));
            m.push(Message::assistant(reply(k).repeat(12)));
        }
        m.push(Message::user(question));
        let counts = memory_core::count_messages(&CharTokenCounter, &m)
            .await
            .unwrap();
        let history = History::new(&m, &counts).unwrap().forget_task();
        let mut kept = Selection::new(&history);
        kept.keep(m.len() - 1..m.len());
        let budget = Budget::tokens(1_000);
        let settings = IndexSettings::default();
        let result = kept.finish(false, true);
        let out = add_index(&history, result, &budget, &CharTokenCounter, &settings)
            .await
            .unwrap();
        // The question's addendum, right before it.
        let index = out.messages[out.messages.len() - 2].text();
        let described = index.lines().find(|l| l.contains(" tokens) ")).unwrap();
        Handle::all_in(described)[0].find(&m).unwrap()
    }

    #[tokio::test]
    async fn a_rare_short_word_outranks_a_word_every_piece_shares() {
        let reply = |k: usize| {
            let pet = if k == 2 { " The cat slept there." } else { "" };
            format!("Garden bed {k} grows beans and garden herbs.{pet} ")
        };
        let range = first_described(reply, "Which garden bed did the cat sleep in?").await;
        assert!(
            range.contains(&5),
            "the piece with the cat first: {range:?}"
        );
    }

    #[tokio::test]
    async fn a_word_asked_in_another_form_still_ranks_its_piece_first() {
        let reply = |k: usize| {
            let done = if k == 2 { " We painted it." } else { "" };
            format!("Garden bed {k} grows the beans and herbs.{done} ")
        };
        let range = first_described(reply, "Where was the painting done?").await;
        assert!(
            range.contains(&5),
            "\"painting\" finds \"painted\": {range:?}"
        );
    }

    #[tokio::test]
    async fn a_piece_takes_in_the_turns_kept_between_left_out_ones() {
        // Twelve short rounds; the strategy keeps rounds 3 and 7 (what a
        // question made relevant) and the newest message.
        let mut m = Vec::new();
        for k in 0..12 {
            m.push(Message::user(format!("Round {k}: which tile?")));
            m.push(Message::assistant(format!("Round {k}: slate grey tiles.")));
        }
        m.push(Message::user("Carry on."));
        let counts = memory_core::count_messages(&CharTokenCounter, &m)
            .await
            .unwrap();
        let history = History::new(&m, &counts).unwrap().forget_task();
        let mut kept = Selection::new(&history);
        kept.keep(6..8);
        kept.keep(14..16);
        kept.keep(m.len() - 1..m.len());
        let budget = Budget::tokens(2_000);
        let settings = IndexSettings::default();
        let out = add_index(
            &history,
            kept.finish(false, true),
            &budget,
            &CharTokenCounter,
            &settings,
        )
        .await
        .unwrap();
        let at = out.messages.iter().position(is_index).expect("an index");
        let reach = memory_core::recall::reachable(&m, &counts, &out.messages, 500);
        let shown = |i: usize| (6..8).contains(&i) || (14..16).contains(&i);
        // One recall brings back the left-out turns on both sides of a
        // kept round, the kept round with them.
        assert!(
            reach
                .iter()
                .any(|r| r.messages.start < 6 && r.messages.end > 8),
            "{}",
            out.messages[at].text()
        );
        // Every left-out turn is reached; no piece holds kept turns alone.
        for i in (0..m.len() - 1).filter(|&i| !shown(i)) {
            assert!(reach.iter().any(|r| r.messages.contains(&i)), "turn {i}");
        }
        assert!(reach.iter().all(|r| r.messages.clone().any(|i| !shown(i))));
    }

    #[tokio::test]
    async fn a_newest_observation_that_repeats_an_earlier_one_still_leaves_out_what_came_between() {
        // A text agent runs the same script twice and gets the same output
        // back; between the two runs it edits the file. The context keeps
        // the task and the newest run.
        let m = [
            Message::user("Fix the date parser in src/dates.py."),
            Message::assistant("python repro.py"),
            Message::user("OBSERVATION: ValueError: month must be in 1..12"),
            Message::assistant("edit src/dates.py: swap day and month in parse_date"),
            Message::user("OBSERVATION: The file src/dates.py has been edited."),
            Message::assistant("python repro.py"),
            Message::user("OBSERVATION: ValueError: month must be in 1..12"),
        ];
        let counts = memory_core::count_messages(&CharTokenCounter, &m)
            .await
            .unwrap();
        let history = History::new(&m, &counts).unwrap();
        let mut kept = Selection::new(&history);
        kept.keep(0..1);
        kept.keep(5..7);
        let budget = Budget::tokens(1_000);
        let out = add_index(
            &history,
            kept.finish(false, true),
            &budget,
            &CharTokenCounter,
            &IndexSettings::default(),
        )
        .await
        .unwrap();
        let at = out.messages.iter().position(is_index).expect("an index");
        assert_eq!(at, 1, "where the first left-out step stood");
        let reach = memory_core::recall::reachable(&m, &counts, &out.messages, 250);
        for i in 1..5 {
            assert!(
                reach.iter().any(|r| r.messages.contains(&i)),
                "turn {i}: {}",
                out.messages[at].text()
            );
        }
    }

    #[tokio::test]
    async fn a_context_whose_floor_alone_is_over_the_budget_still_names_what_it_sheds() {
        let m = [
            Message::system("Follow the house style. ".repeat(200)),
            Message::user("Paint the hall."),
            Message::assistant("Sage green, two coats, the ceiling white."),
            Message::user("And the door?"),
        ];
        let counts = memory_core::count_messages(&CharTokenCounter, &m)
            .await
            .unwrap();
        let history = History::new(&m, &counts).unwrap().forget_task();
        let mut kept = Selection::new(&history);
        kept.keep(0..1);
        kept.keep(3..4);
        let budget = Budget::tokens(1_000);
        let mut result = kept.finish(false, true);
        result.fits = budget.admits_tokens(result.tokens());
        assert!(!result.fits, "the system prompt alone is over the budget");
        let before = result.tokens();
        let settings = IndexSettings::default();
        let out = add_index(&history, result, &budget, &CharTokenCounter, &settings)
            .await
            .unwrap();
        let at = out.messages.iter().position(is_index).expect("an index");
        assert!(
            out.messages[at]
                .text()
                .contains(&Handle::of(&m[1..3]).to_string())
        );
        // Within the part of its share kept for it: 5% of 1,000.
        assert!(out.tokens() - before <= 50, "{}", out.tokens() - before);
        // Trimmed again, the context keeps its index as it is.
        let indexed_counts = memory_core::count_messages(&CharTokenCounter, &out.messages)
            .await
            .unwrap();
        let again = History::new(&out.messages, &indexed_counts)
            .unwrap()
            .forget_task();
        let mut all = Selection::new(&again);
        all.keep(0..again.len());
        let mut same = all.finish(false, true);
        same.fits = false;
        let twice = add_index(&again, same, &budget, &CharTokenCounter, &settings)
            .await
            .unwrap();
        assert_eq!(twice.messages, out.messages);
    }

    /// `m` shown from `from` on under a budget of 2,000 tokens, with the
    /// index of what it leaves out (default settings), and the tokens of
    /// what it shows.
    async fn index_of(m: &[Message], from: usize) -> (TrimResult, usize) {
        let counts = memory_core::count_messages(&CharTokenCounter, m)
            .await
            .unwrap();
        let history = History::new(m, &counts).unwrap().forget_task();
        let mut kept = Selection::new(&history);
        kept.keep(from..m.len());
        let result = kept.finish(false, true);
        let shown = result.tokens();
        let budget = Budget::tokens(2_000);
        let settings = IndexSettings::default();
        let out = add_index(&history, result, &budget, &CharTokenCounter, &settings)
            .await
            .unwrap();
        (out, shown)
    }

    #[tokio::test]
    async fn between_questions_the_index_takes_only_its_reserved_room() {
        // Two hundred rounds of about 100 tokens; the context shows the
        // last message, and more than the index's share is free.
        let mut m = Vec::new();
        for k in 0..200 {
            m.push(Message::user(format!("Step {k}: check valve {k}.")));
            m.push(Message::assistant(
                format!("Valve {k} checked. ").repeat(20),
            ));
        }
        m.push(Message::user("Carry on."));
        let (out, shown) = index_of(&m, m.len() - 1).await;
        // Half of a tenth (what `reserve` keeps), though a tenth is free
        // and more pieces are left out than that names.
        let tokens = out.tokens() - shown;
        assert!(tokens <= 100 && 2_000 - shown > 200, "{tokens} of {shown}");
        let named = memory_core::recall::handles_in(&out.messages).len();
        assert!(named < 40, "{named}");
        let index = out.messages[0].clone();
        // At a question, the index stays as it was, and the pieces that
        // match the question best that it does not name stand right
        // before the question, in the rest of the tenth.
        *m.last_mut().unwrap() = Message::user("Which valve leaked, 100?");
        let (asked, shown) = index_of(&m, m.len() - 1).await;
        let tokens = asked.tokens() - shown;
        assert!(tokens > 100 && tokens <= 200, "{tokens}");
        assert_eq!(asked.messages[0], index);
        let addendum = &asked.messages[asked.messages.len() - 2];
        assert!(is_index(addendum), "{addendum:?}");
        let asked_about = 2 * 100;
        assert!(
            Handle::all_in(&addendum.text())
                .iter()
                .any(|h| h.find(&m).is_some_and(|r| r.contains(&asked_about))),
            "{addendum:?}"
        );
    }

    #[test]
    fn a_text_only_agents_observation_is_no_question_however_it_ends() {
        let asked = |step: &str| {
            let m = [
                Message::user("Fix the parser."),
                Message::assistant(step),
                Message::user("Overwrite config.yaml? [y/N]"),
            ];
            question_words(&History::new(&m, &[4, 12, 7]).unwrap())
        };
        let command = "<function=bash>\n<parameter=command>./setup.sh</parameter>\n</function>";
        assert!(asked(command).is_empty());
        assert!(!asked("I will ask you first.").is_empty());
    }

    #[tokio::test]
    async fn without_a_question_the_newest_pieces_are_listed() {
        let (index, _) = indexed("Carry on with the plan.").await;
        assert!(index.contains("attic"), "{index}");
        assert!(!index.contains("garage"), "{index}");
    }

    /// A message rewritten in place to as many tokens, between the
    /// anchors the history's sync checks, is taken for the same message
    /// there; the kept lookup of a shown message that stood on it is
    /// checked against it, and looked up afresh.
    #[tokio::test]
    async fn a_kept_lookup_is_checked_against_the_message_it_found() {
        let mut m: Vec<Message> = (0..100)
            .map(|i| Message::user(format!("note {i:03}")))
            .collect();
        m[30] = Message::user("hello world");
        m[50] = Message::user("hello world");
        let shown = [Message::user("hello world"), m[99].clone()];
        let mut memo = IndexMemo::default();
        let sync = |memo: &mut IndexMemo, m: &[Message]| {
            let counts = vec![3; m.len()];
            let history = History::new(m, &counts).unwrap();
            memo.sync(&history, 1_000);
        };
        sync(&mut memo, &m);
        assert_eq!(memo.sources_kept(&m, &shown), [Some(50), Some(99)]);
        m[50] = Message::user("xxxxx xxxxx");
        sync(&mut memo, &m);
        assert_eq!(memo.sources(&m, &shown), [Some(30), Some(99)]);
        assert_eq!(memo.sources_kept(&m, &shown), [Some(30), Some(99)]);
    }

    /// A session that grows by appends, with rewrites now and then (a
    /// message changed in place, the newest ones taken back), shown by a
    /// context that keeps scattered messages, some of them shrunk: at
    /// every call the index a kept memo makes is the one a fresh memo
    /// makes.
    #[tokio::test]
    async fn a_kept_memo_makes_the_index_a_fresh_one_makes() {
        use memory_core::ToolCall;
        let mut seed: u64 = 7;
        let mut next = move |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        let topics = [
            "garden", "boiler", "roof", "garage", "cellar", "attic", "fence",
        ];
        let mut m = vec![Message::system("You keep the house.")];
        let mut memo = IndexMemo::default();
        let budget = Budget::tokens(600);
        let settings = IndexSettings::default();
        let (mut indexed, mut asked) = (0, 0);
        for call in 0..160 {
            let topic = topics[next(7) as usize];
            match next(6) {
                0 => {
                    let id = format!("c{call}");
                    m.push(Message::assistant_with_tools(
                        "",
                        vec![ToolCall::new(
                            &id,
                            "look",
                            format!("{{\"at\":\"{topic}\"}}"),
                        )],
                    ));
                    m.push(Message::tool_result(
                        &id,
                        format!("{topic} log\n").repeat(1 + next(30) as usize),
                    ));
                }
                1 => m.push(Message::user(format!("What about the {topic}?"))),
                2 => m.push(Message::user(format!(
                    "{topic} first\n{}\n{topic} last",
                    "x".repeat(300)
                ))),
                3 if m.len() > 10 => {
                    let at = 1 + next(m.len() as u64 - 1) as usize;
                    if !m[at].is_tool_result() && m[at].tool_calls().is_empty() {
                        m[at] = Message::user(format!("{topic} again"));
                    }
                }
                4 if m.len() > 10 => {
                    let back = next(3) as usize;
                    m.truncate(m.len() - back);
                    while m.last().is_some_and(|x| !x.tool_calls().is_empty()) {
                        m.pop();
                    }
                }
                _ => m.push(Message::assistant(
                    format!("The {topic} is done. ").repeat(1 + next(5) as usize),
                )),
            }
            let counts = memory_core::count_messages(&CharTokenCounter, &m)
                .await
                .unwrap();
            let history = History::new(&m, &counts).unwrap().forget_task();
            // Keep the system prompt, a few scattered steps (a tool result
            // shrunk, a long user text cut around a marker) and the newest:
            // chosen afresh every third call, and by their place otherwise
            // (so that the calls in between show what the one before
            // showed, and more).
            let steady = call % 3 != 0;
            let mut draw = |n: u64, at: usize| match steady {
                true => ((at as u64).wrapping_mul(2_654_435_761) >> 7) % n,
                false => next(n),
            };
            let mut kept = Selection::new(&history);
            kept.keep(0..1);
            let mut at = 1;
            while at < m.len() {
                let end = memory_core::structure::step_end(&m, at);
                if end + 6 >= m.len() || draw(5, at) == 0 {
                    kept.keep(at..end);
                }
                at = end;
            }
            let mut result = kept.finish(false, true);
            for (k, shown) in result.messages.iter_mut().enumerate() {
                let text = shown.text();
                if let Message::ToolResult { content, .. } = shown
                    && draw(2, k) == 0
                    && content.len() > 40
                {
                    *content = "[earlier tool result omitted]".into();
                } else if shown.is_user() && text.len() > 300 && draw(2, k) == 0 {
                    let first = text.lines().next().unwrap_or_default();
                    let last = text.lines().last().unwrap_or_default();
                    *shown = Message::user(format!("{first}\n[... cut ...]\n{last}"));
                }
            }
            let fresh = add_index(
                &history,
                result.clone(),
                &budget,
                &CharTokenCounter,
                &settings,
            )
            .await
            .unwrap();
            let folded = Folded::default();
            // The sources the memo finds are those a scan of the whole
            // history finds (the memo is synced to this history below, and
            // was to the one before at the last call).
            let reference = shown_sources(&m, &result.messages);
            let kept = add_index_kept(
                &history,
                result.clone(),
                &budget,
                &CharTokenCounter,
                &settings,
                &folded,
                &mut memo,
            )
            .await
            .unwrap();
            assert_eq!(memo.sources(&m, &result.messages), reference, "call {call}");
            assert_eq!(
                memo.sources_kept(&m, &result.messages),
                reference,
                "call {call}"
            );
            assert_eq!(kept.messages, fresh.messages, "call {call}");
            assert_eq!(kept.counts, fresh.counts, "call {call}");
            indexed += usize::from(fresh.messages.iter().any(is_index));
            asked += usize::from(fresh.messages.iter().filter(|m| is_index(m)).count() == 2);
        }
        assert!(
            indexed > 120 && asked > 10,
            "{indexed} indexed, {asked} asked"
        );
    }
}
