//! [`WindowDrop`]: keep the newest rounds, or the newest steps, that fit.

use std::ops::Range;

use memory_core::covered;
use memory_core::structure::{self, Floor};
use memory_core::{
    Budget, History, MemoryError, Selection, TokenCounter, TrimResult, TrimStrategy,
};

/// Drops the oldest history, whole rounds or whole steps, as a projection.
///
/// 1. A history within the budget is returned unchanged.
/// 2. The floor is always kept: protected messages and summaries with their
///    steps (the [task](memory_core::structure::task) among them unless the
///    history forgot it), the current question and the newest step. If the floor alone
///    exceeds the budget, it is all that is returned, with `fits: false`.
/// 3. If the newest round fits, whole rounds are kept from the newest back
///    while they fit (and while the rounds limit allows); the head (what
///    precedes the first user message) is kept only after every round. The
///    first round that does not fit whole keeps its user message and its
///    newest steps that fit (when one does), so that what the budget has
///    left is used: after a follow-up request, the long agent round before
///    it keeps its newest steps.
/// 4. Otherwise (an agent task that is one long round), the round's user
///    message and as many of its newest steps as fit are kept.
///
/// Storage never changes (`replace: false`): raising the budget brings the
/// dropped history back. The work is proportional to what is kept, not to
/// the length of the history. A summary's covered set (see
/// [`memory_core::covered`]) is passed on; when the message it stood
/// before is dropped, it is moved before the oldest message kept after
/// it, so that a later stage can still show the turns the summary
/// replaced.
///
/// ```
/// use memory_core::{Budget, CharTokenCounter, Message, TrimStrategy};
/// use memory_window::WindowDrop;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let history = [
///     Message::user("u1"), Message::assistant("a1"),
///     Message::user("u2"), Message::assistant("a2"),
/// ];
/// let result = WindowDrop::new().trim(&history, &Budget::tokens(3), &CharTokenCounter).await.unwrap();
/// // The task (u1) and the newest round.
/// assert_eq!(result.messages, [&history[..1], &history[2..]].concat());
/// assert!(result.fits && !result.replace);
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowDrop;

impl WindowDrop {
    /// The strategy.
    ///
    /// ```
    /// assert_eq!(memory_window::WindowDrop::new(), memory_window::WindowDrop);
    /// ```
    pub fn new() -> Self {
        WindowDrop
    }

    /// The window of `history`, synchronously (the strategy never awaits).
    ///
    /// ```
    /// use memory_core::{Budget, History, Message};
    /// let m = [Message::user("question"), Message::assistant("answer")];
    /// let h = History::new(&m, &[2, 2]).unwrap();
    /// let r = memory_window::WindowDrop::new().window(&h, &Budget::tokens(1));
    /// assert!(!r.fits); // the question and the newest step are the floor
    /// ```
    pub fn window(&self, history: &History<'_>, budget: &Budget) -> TrimResult {
        let messages = history.messages();
        if messages.is_empty() || history.fits(budget) {
            return TrimResult::unchanged(history, budget);
        }
        let floor = structure::floor(history);
        let max = budget.max_tokens.unwrap_or(usize::MAX);
        if floor.tokens > max {
            return select(history, floor.ranges, false);
        }
        let mut fill = Fill {
            history,
            floor: &floor,
            left: max - floor.tokens,
            kept: floor.ranges.clone(),
        };
        let n = messages.len();
        let question = structure::current_question(messages);
        let newest = question.unwrap_or(0);
        if fill.take(newest..n) {
            let limit = budget.round_limit().unwrap_or(usize::MAX);
            let mut rounds = usize::from(question.is_some()) + floor.users_before(messages, newest);
            let mut end = newest;
            while end > 0 {
                let start = structure::round_start(messages, end);
                let is_round = messages[start].is_user();
                if is_round && rounds >= limit {
                    break;
                }
                if !fill.take(start..end) {
                    // Too large whole: its request and newest steps that
                    // fit use what the budget has left.
                    fill.part(start..end, is_round);
                    break;
                }
                rounds += usize::from(is_round);
                end = start;
            }
        } else {
            // The newest round alone is too large: keep its newest steps.
            let low = question.map_or(0, |q| q + 1);
            fill.steps(low, n);
        }
        select(history, fill.kept, true)
    }
}

#[async_trait::async_trait]
impl TrimStrategy for WindowDrop {
    fn name(&self) -> &str {
        "window"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        _counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        Ok(self.window(history, budget))
    }
}

/// Ranges kept so far and the tokens left for more.
struct Fill<'f, 'h> {
    history: &'f History<'h>,
    floor: &'f Floor,
    left: usize,
    kept: Vec<Range<usize>>,
}

impl Fill<'_, '_> {
    /// Keeps `range` if what it adds beyond the floor fits; stops counting
    /// as soon as it cannot.
    fn take(&mut self, range: Range<usize>) -> bool {
        let counts = self.history.counts();
        let in_floor = self.floor.tokens_within(range.clone(), counts);
        let limit = self.left.saturating_add(in_floor);
        let mut sum = 0usize;
        for &c in &counts[range.clone()] {
            sum += c;
            if sum > limit {
                return false;
            }
        }
        self.left -= sum - in_floor;
        self.kept.push(range);
        true
    }

    /// Keeps the whole steps between `low` and `end` that fit, newest
    /// first; returns where the oldest kept one starts (`end` if none).
    fn steps(&mut self, low: usize, mut end: usize) -> usize {
        let messages = self.history.messages();
        while end > low {
            let start = structure::step_start(messages, end).max(low);
            if !self.take(start..end) {
                break;
            }
            end = start;
        }
        end
    }

    /// Keeps part of a round (or of the head) too large to keep whole: its
    /// user message and its newest steps that fit, or nothing when not one
    /// step fits beside that message.
    fn part(&mut self, round: Range<usize>, is_round: bool) {
        let (left, kept) = (self.left, self.kept.len());
        let low = round.start + usize::from(is_round);
        if (is_round && !self.take(round.start..low)) || self.steps(low, round.end) == round.end {
            self.left = left;
            self.kept.truncate(kept);
        }
    }
}

fn select(history: &History<'_>, ranges: Vec<Range<usize>>, fits: bool) -> TrimResult {
    // Sorted and apart.
    let ranges = structure::merge(ranges);
    let mut selection = Selection::new(history);
    for r in &ranges {
        selection.keep(r.clone());
    }
    let mut result = selection.finish(false, fits);
    // A summary's covered turns stay within reach of the stages after
    // this one, before the oldest message kept after them.
    if !result.covered.is_empty() {
        result.covered = covered::after_dropping(history, &ranges);
    }
    result
}
