//! The subtractive stages that keep every message: reasoning replaced by its placeholder, long
//! outputs cut, earlier results and media replaced by placeholders; and the
//! last resort, the floor's outputs cut.
//!
//! Each stage walks its items oldest first and stops as soon as the total is
//! down to `stop_at`; given no `stop_at` it only takes stock (for the trace).

use memory_core::recall::Handle;
use memory_core::{ContentBlock, MemoryError, Message, TokenCounter};

use crate::cut;
use crate::layout::{Kind, Layout};
use crate::observation;
use crate::output_cut::{cut_result, cut_tool_result, is_uncut_result};
use crate::placeholder;
use crate::shrink_cache::ShrinkCache;
use crate::trace::{Shed, Tally};
use crate::working_copy::WorkingCopy;

/// Stock of `items` (message indices) and the [`Shed`] that starts from it.
fn stock(work: &WorkingCopy<'_, '_>, items: &[usize], count: impl Fn(usize) -> usize) -> Shed {
    let tally = Tally {
        count: items.iter().map(|&i| count(i)).sum(),
        tokens: items.iter().map(|&i| work.count(i)).sum(),
    };
    Shed {
        before: tally,
        after: tally,
    }
}

/// Records in `shed` that `items` of the things it counts went, and the
/// tokens saved going from `before` to `after`.
fn record(shed: &mut Shed, items: usize, (before, after): (usize, usize)) {
    shed.after.count -= items;
    shed.after.tokens -= before - after;
}

/// What shrinking one item shed, when it did: how many of the stage's
/// things went (a reasoning, an output, a message's media blocks), and the
/// item's count before and after.
type Shrunk = (usize, (usize, usize));

/// What a stage does to each of its items, for [`shrink_each`].
trait Shrink {
    /// How many of the things the stage sheds message `i` holds.
    fn things(&self, _work: &WorkingCopy<'_, '_>, _i: usize) -> usize {
        1
    }

    /// Whether the stage stops before message `i`, `done` saying whether
    /// the total is down to its target.
    fn stops(&mut self, _i: usize, done: bool) -> bool {
        done
    }

    /// Shrinks message `i` where that saves tokens, and says what it shed.
    async fn shrink(
        &mut self,
        work: &mut WorkingCopy<'_, '_>,
        i: usize,
    ) -> Result<Option<Shrunk>, MemoryError>;
}

/// One stage over `items` (message indices, oldest first): its stock, and
/// given `stop_at`, each item in turn shrunk by `stage` until the stage
/// [stops](Shrink::stops).
async fn shrink_each(
    work: &mut WorkingCopy<'_, '_>,
    items: Vec<usize>,
    stop_at: Option<usize>,
    mut stage: impl Shrink,
) -> Result<Shed, MemoryError> {
    let mut shed = stock(work, &items, |i| stage.things(work, i));
    let Some(stop_at) = stop_at else {
        return Ok(shed);
    };
    for i in items {
        if stage.stops(i, work.total() <= stop_at) {
            break;
        }
        if let Some((gone, change)) = stage.shrink(work, i).await? {
            record(&mut shed, gone, change);
        }
    }
    Ok(shed)
}

/// Reasoning of earlier steps (the newest step's stays).
pub(crate) async fn reasoning(
    work: &mut WorkingCopy<'_, '_>,
    layout: &Layout<'_>,
    stop_at: Option<usize>,
    counter: &dyn TokenCounter,
    shrunk: &mut ShrinkCache,
) -> Result<Shed, MemoryError> {
    let history = work.history();
    let items: Vec<usize> = layout
        .candidates(Kind::Reasoned, 0..layout.newest_step)
        .filter(|&i| {
            placeholder::thought(work.message(i)).is_some()
                && !work.is_dropped(i)
                && layout.shrinkable(history, i)
        })
        .collect();
    shrink_each(work, items, stop_at, Bare { counter, shrunk }).await
}

/// [`reasoning`]'s shrinking: an assistant message's reasoning replaced by
/// its placeholder.
struct Bare<'s> {
    counter: &'s dyn TokenCounter,
    shrunk: &'s mut ShrinkCache,
}

impl Shrink for Bare<'_> {
    async fn shrink(
        &mut self,
        work: &mut WorkingCopy<'_, '_>,
        i: usize,
    ) -> Result<Option<Shrunk>, MemoryError> {
        // Only this stage changes an assistant message: it is the
        // history's.
        let made = self.shrunk.bare(i, work.message(i), self.counter).await?;
        Ok(made.and_then(|(without, count)| Some((1, work.set_if_smaller(i, without, count)?))))
    }
}

/// Tool results over `max_tokens`, cut to about that many tokens, head and
/// tail; oldest first, the newest step's last.
pub(crate) async fn long_outputs(
    work: &mut WorkingCopy<'_, '_>,
    layout: &Layout<'_>,
    max_tokens: usize,
    stop_at: Option<usize>,
    counter: &dyn TokenCounter,
    shrunk: &mut ShrinkCache,
) -> Result<Shed, MemoryError> {
    let items = long_items(work, layout, max_tokens);
    let cut = Cut {
        max_tokens,
        counter,
        shrunk,
    };
    shrink_each(work, items, stop_at, cut).await
}

/// [`long_outputs`]' shrinking: an output cut to about `max_tokens`, head
/// and tail.
struct Cut<'s> {
    max_tokens: usize,
    counter: &'s dyn TokenCounter,
    shrunk: &'s mut ShrinkCache,
}

impl Shrink for Cut<'_> {
    async fn shrink(
        &mut self,
        work: &mut WorkingCopy<'_, '_>,
        i: usize,
    ) -> Result<Option<Shrunk>, MemoryError> {
        let (message, tokens) = (work.message(i), work.count(i));
        let max_tokens = self.max_tokens;
        let made = self
            .shrunk
            .cut(i, self.counter, || cut_result(message, tokens, max_tokens))
            .await?;
        Ok(made.and_then(|(shorter, count)| Some((1, work.set_if_smaller(i, shorter, count)?))))
    }
}

/// The messages [`long_outputs`] may cut, in order: tool results over
/// `max_tokens` (the newest step's too: cut now to the length they will
/// have once the step is no longer the newest, so that its aging leaves
/// the prompt's prefix as it is), and a text-only agent's observations
/// over it, the newest among them for the same reason (but for what else
/// the floor holds).
///
/// Figure (chars counter, anthropic pricing; thrift's cost per call
/// against window drop's, and its support recall): cutting the newest
/// observation only as the floor's last resort, to whatever length fit,
/// rewrote it on the next call, and the context shed afresh around it;
/// on SWE-smith 0.942 and 0.742 at 4,000 tokens, 0.883 and 0.919 at 8,000,
/// and on the same trajectories with a third of the observations 1,000 to
/// 6,000 characters longer and one of 30,000, 1.058 and 0.659, 1.096 and
/// 0.885. Cut here: 0.828 and 0.809, 0.861 and 0.930; 0.872 and 0.728,
/// 0.918 and 0.903.
fn long_items(work: &WorkingCopy<'_, '_>, layout: &Layout<'_>, max_tokens: usize) -> Vec<usize> {
    let history = work.history();
    // Tool results are unchanged until this stage: the listed ones need
    // no second look at their text.
    let listed = layout.lists_kinds();
    let mut items: Vec<usize> = layout
        .candidates(Kind::Cuttable, 0..history.len())
        .filter(|&i| {
            work.count(i) > max_tokens
                && work.message(i).is_tool_result()
                && !work.is_dropped(i)
                && !history.is_protected(i)
                && (listed || is_uncut_result(work.message(i)))
        })
        .collect();
    let long_observation = |i: usize| {
        work.count(i) > max_tokens
            && !work.is_dropped(i)
            && !history.is_protected(i)
            && observation::is_observation(history.messages(), i)
            && (listed || !cut::is_cut(&work.message(i).text()))
    };
    let earlier = layout
        .candidates(Kind::Observations, 0..layout.newest_step)
        .filter(|&i| Some(i) != layout.question && !layout.in_floor(i) && long_observation(i));
    items.extend(earlier);
    // The newest observation (the current question of a text-only loop)
    // too, last: cut now to the length it will have once it is an earlier
    // observation, as the newest step's tool results are.
    items.extend(layout.question.filter(|&q| long_observation(q)));
    items.sort_unstable();
    items.dedup();
    items
}

/// A tool result not replaced by its placeholder.
fn is_unreplaced_result(message: &Message) -> bool {
    matches!(message, Message::ToolResult { content, .. } if !placeholder::is_placeholder(content))
}

/// Tool results before the recent ones, replaced by a placeholder that
/// keeps their call id; oldest first, those of the newest round a batch at
/// a time.
pub(crate) async fn earlier_results(
    work: &mut WorkingCopy<'_, '_>,
    layout: &Layout<'_>,
    stop_at: Option<usize>,
    counter: &dyn TokenCounter,
    shrunk: &mut ShrinkCache,
) -> Result<Shed, MemoryError> {
    let history = work.history();
    // A listed result needs a look at its text only if a stage changed it.
    let listed = layout.lists_kinds();
    let items: Vec<usize> = layout
        .candidates(
            Kind::Replaceable,
            0..layout.recent_results_from.min(layout.newest_step),
        )
        .filter(|&i| {
            (if listed && !work.is_changed(i) {
                work.message(i).is_tool_result()
            } else {
                is_unreplaced_result(work.message(i))
            }) && !work.is_dropped(i)
                && layout.shrinkable(history, i)
                && Some(i) != layout.newest_result
        })
        .collect();
    let replace = Replace {
        counter,
        shrunk,
        batch: None,
        batch_of: layout.result_batches(),
    };
    shrink_each(work, items, stop_at, replace).await
}

/// [`earlier_results`]' shrinking: a tool result replaced by its
/// placeholder.
///
/// The newest round's results go a whole batch at a time, so that the
/// turns of an agent loop, whose results each exceed the sticky step, move
/// this frontier once per batch rather than once per turn.
struct Replace<'s, B> {
    counter: &'s dyn TokenCounter,
    shrunk: &'s mut ShrinkCache,
    /// The batch of the last result replaced.
    batch: Option<usize>,
    /// The batch of each result, asked in ascending order.
    batch_of: B,
}

impl<B: FnMut(usize) -> Option<usize>> Shrink for Replace<'_, B> {
    /// Past the target, the batch under way is finished.
    fn stops(&mut self, i: usize, done: bool) -> bool {
        let this = (self.batch_of)(i);
        if done && (this.is_none() || this != self.batch) {
            return true;
        }
        self.batch = this;
        false
    }

    async fn shrink(
        &mut self,
        work: &mut WorkingCopy<'_, '_>,
        i: usize,
    ) -> Result<Option<Shrunk>, MemoryError> {
        let (message, tokens) = (work.message(i), work.count(i));
        // Counted now, written at the end for the messages kept.
        let original = &work.history().messages()[i];
        let made = self
            .shrunk
            .placeholder_tokens(i, message, original, self.counter)
            .await?;
        if let Some(count) = made
            && count < tokens
        {
            work.replace_with_placeholder(i, count);
            return Ok(Some((1, (tokens, count))));
        }
        Ok(None)
    }
}

/// Image and pass-through blocks of earlier user messages, replaced by text
/// placeholders (only where the counter prices them above the placeholder).
pub(crate) async fn media(
    work: &mut WorkingCopy<'_, '_>,
    layout: &Layout<'_>,
    stop_at: Option<usize>,
    counter: &dyn TokenCounter,
) -> Result<Shed, MemoryError> {
    let history = work.history();
    let items: Vec<usize> = layout
        .candidates(Kind::Media, 0..layout.newest_step)
        .filter(|&i| {
            media_blocks(work.message(i)) > 0
                && !work.is_dropped(i)
                && layout.shrinkable(history, i)
        })
        .collect();
    shrink_each(work, items, stop_at, Media { counter }).await
}

/// The image and pass-through blocks of `message` (a user message's).
fn media_blocks(message: &Message) -> usize {
    match message {
        Message::User(blocks) => blocks
            .iter()
            .filter(|b| !matches!(b, ContentBlock::Text(_)))
            .count(),
        _ => 0,
    }
}

/// [`media`]'s shrinking: a user message's image and pass-through blocks
/// replaced by text placeholders.
struct Media<'s> {
    counter: &'s dyn TokenCounter,
}

impl Shrink for Media<'_> {
    /// Its media blocks.
    fn things(&self, work: &WorkingCopy<'_, '_>, i: usize) -> usize {
        media_blocks(work.message(i))
    }

    async fn shrink(
        &mut self,
        work: &mut WorkingCopy<'_, '_>,
        i: usize,
    ) -> Result<Option<Shrunk>, MemoryError> {
        let Message::User(original) = work.message(i) else {
            return Ok(None);
        };
        let n = media_blocks(work.message(i));
        let handle = Handle::of(&work.history().messages()[i..=i]);
        let replaced = Message::User(
            original
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(_) => b.clone(),
                    ContentBlock::Image(image) => {
                        ContentBlock::Text(placeholder::image(image, handle))
                    }
                    ContentBlock::Wire(value) => {
                        ContentBlock::Text(placeholder::wire(value, handle))
                    }
                })
                .collect(),
        );
        let change = work.shrink(i, replaced, self.counter).await?;
        Ok(change.map(|change| (n, change)))
    }
}

/// The last resort: the tool results of the floor that are not protected
/// (the newest step's, and those of a protected message's step), all cut
/// to the longest head and tail that brings the total within `budget`; to
/// the marker alone when nothing does.
///
/// The floor's older results count too: a call that appends to a context
/// whose newest step this stage cut must not be followed, once that step
/// is no longer the newest, by a context that shows its outputs longer and
/// no longer fits.
pub(crate) async fn floor_outputs(
    work: &mut WorkingCopy<'_, '_>,
    layout: &Layout<'_>,
    budget: Option<usize>,
    counter: &dyn TokenCounter,
) -> Result<Shed, MemoryError> {
    let history = work.history();
    // The floor holds the newest step.
    let items: Vec<usize> = layout
        .floor
        .ranges
        .iter()
        .flat_map(Clone::clone)
        .filter(|&i| {
            !work.is_dropped(i)
                && !work.is_replaced(i)
                && !history.is_protected(i)
                && is_unreplaced_result(work.message(i))
        })
        .collect();
    let mut shed = stock(work, &items, |_| 1);
    let Some(budget) = budget else {
        return Ok(shed);
    };
    if work.total() <= budget || items.is_empty() {
        return Ok(shed);
    }
    let best = longest_cut_that_fits(work, &items, budget, counter).await?;
    for (&i, (message, tokens)) in items.iter().zip(best) {
        if let Some(message) = message {
            let before = work.count(i);
            work.set(i, message, tokens);
            record(&mut shed, 1, (before, tokens));
        }
    }
    Ok(shed)
}

/// `items` all cut to the longest head and tail that brings the total
/// within `budget` (to the marker alone when nothing does), found by a
/// binary search over the characters kept: per item, the new message where
/// it changed, and its count.
async fn longest_cut_that_fits(
    work: &WorkingCopy<'_, '_>,
    items: &[usize],
    budget: usize,
    counter: &dyn TokenCounter,
) -> Result<Vec<(Option<Message>, usize)>, MemoryError> {
    let current: usize = items.iter().map(|&i| work.count(i)).sum();
    let rest = work.total() - current;
    let longest = items
        .iter()
        .map(|&i| work.message(i).text().chars().count())
        .max()
        .unwrap_or(0);
    // Each original's handle, hashed once for every try of the search.
    let originals = work.history().messages();
    let handles: Vec<Handle> = items
        .iter()
        .map(|&i| Handle::of(&originals[i..=i]))
        .collect();
    // `low` fits (or is 0), `high` does not.
    let (mut low, mut high) = (0usize, longest);
    let mut best = cut_all(work, items, &handles, 0, counter).await?;
    if rest + best.iter().map(|(_, t)| t).sum::<usize>() <= budget {
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            let candidate = cut_all(work, items, &handles, mid, counter).await?;
            if rest + candidate.iter().map(|(_, t)| t).sum::<usize>() <= budget {
                low = mid;
                best = candidate;
            } else {
                high = mid;
            }
        }
    }
    Ok(best)
}

/// Each of `items` (whose originals have `handles`) cut to `keep`
/// characters: the new message where it changed, and its count.
async fn cut_all(
    work: &WorkingCopy<'_, '_>,
    items: &[usize],
    handles: &[Handle],
    keep: usize,
    counter: &dyn TokenCounter,
) -> Result<Vec<(Option<Message>, usize)>, MemoryError> {
    let mut out = Vec::with_capacity(items.len());
    for (&i, &handle) in items.iter().zip(handles) {
        let before = work.count(i);
        let Some(shorter) = cut_tool_result(work.message(i), keep, handle) else {
            out.push((None, before));
            continue;
        };
        let tokens = counter.count_message(&shorter).await?;
        if tokens < before {
            out.push((Some(shorter), tokens));
        } else {
            out.push((None, before));
        }
    }
    Ok(out)
}
