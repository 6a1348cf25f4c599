//! When a compaction is due in the foreground: timed with the provider's
//! prefix cache.
//!
//! A summary rewrites the context's prefix, so the call that shows it pays
//! for its whole context afresh (a cache break), besides the summary
//! itself (its request read as fresh input, its text written as output).
//! It is therefore asked for only when it pays for itself:
//!
//! - **A cut is due**: the fallback fit of this call (`WindowDrop`'s
//!   projection) is not the previous call's fit with the new messages
//!   appended, so the prefix changes on this call whatever happens
//!   ([`cut_due`]). A history over the budget whose earlier cut left room
//!   for the new step is not yet such a call: summarized there, the
//!   summary would break a prefix the fit keeps.
//! - **Deep enough**: the material to fold holds at least
//!   [`DEFAULT_DEPTH_RATIO`](crate::DEFAULT_DEPTH_RATIO) of the budget.
//!   Below that, the fit sheds this time, and the summary comes once there
//!   is enough to fold.
//! - **It lasts** ([`lasts_with`]): the compacted history (what it keeps, and
//!   the new summary at its cap) leaves room for the turns it keeps
//!   verbatim once more. Those turns are the best guess of what the next
//!   calls add; a compacted history without that room is cut again within
//!   as many calls, so the summary would buy a break, not a prefix. When
//!   the newest turns are that large (observations of thousands of tokens
//!   under a budget of a few), the fit sheds instead, as window drop
//!   does, and the summary comes when the turns it keeps leave room.
//! - **It buys room**: the compacted history is smaller than this call's
//!   fallback fit. The fit keeps whole rounds, newest first, while they
//!   fit: behind a large round it keeps little (the large round goes, and
//!   everything older with it), and may keep less than the compacted
//!   history would, the summary and the turns kept verbatim. A summary
//!   there costs its request, its text and a larger context for room the
//!   cut gives anyway, and its one gain, what the folded turns said,
//!   waits: the fit sheds, the store keeps what it dropped, and the next
//!   cut's summary folds it.
//!
//! Measured (chars counter, `anthropic` pricing, extractive summarizer,
//! the summary cap then a tenth of the budget), cost per call against
//! window drop's before and after the first and the third rule: SWE-Gym
//! at 4,000 tokens 1.19x -> 0.88x (compact), SWE-smith at 4,000 1.31x ->
//! 1.01x, at 8,000 1.04x -> 0.94x; with each rule alone 1.00x and 1.13x
//! (SWE-Gym at 4,000), 1.22x and 1.10x (SWE-smith). The fourth rule,
//! later (summary cap a twelfth of the budget, at least 96 tokens): on
//! SWE-smith, whose observations are rounds of their own and often large,
//! compact 1,530 -> 1,497 a call at 4,000 tokens (support recall 0.721
//! -> 0.733; window drop 1,559 and 0.694) and 2,183 -> 2,084 at 8,000
//! (0.876 -> 0.871; window 2,542 and 0.858), compact,thrift 1,541 ->
//! 1,507 and 2,183 -> 2,084; in the background (`--turn-delay-ms 5`)
//! compact,thrift 1,562 -> 1,554 at 4,000 and 2,447 -> 2,361 at 8,000;
//! SWE-Gym, LoCoMo and every figure at 2,000 tokens the same.
//!
//! A threshold set with
//! [`with_summarize_at_tokens`](crate::Compact::with_summarize_at_tokens)
//! keeps its meaning (a summary as soon as the new material passes it, over
//! the budget or not), and under pressure the summary comes earlier: at the
//! smaller of the threshold and the depth. Without a token budget, the
//! threshold (its default included) decides alone.

use memory_core::{Budget, History, Message, TrimResult, structure};
use memory_window::WindowDrop;

use crate::settings::{DEFAULT_DEPTH_RATIO, Settings};
use crate::turns::Plan;

/// The least new material worth a summary at a budget of `max` tokens.
fn depth(max: usize) -> usize {
    ((max as f64 * f64::from(DEFAULT_DEPTH_RATIO)) as usize).max(1)
}

/// The least new material a summary folds under a budget of `max`
/// tokens, in the foreground and in the background alike: the depth, or
/// the smaller of it and a threshold the caller set.
pub(crate) fn least(settings: &Settings, max: usize) -> usize {
    if settings.threshold_chosen() {
        settings.summarize_at_tokens().min(depth(max)).max(1)
    } else {
        depth(max)
    }
}

/// Whether `plan` of `work` is to be summarized on this call at `budget`:
/// by a threshold the caller set, or over the budget with enough to fold,
/// lasting, a cut due and room bought (see the module's rules).
pub(crate) fn due(settings: &Settings, work: &History<'_>, plan: &Plan, budget: &Budget) -> bool {
    if !plan.has_new() {
        return false;
    }
    let Some(max) = budget.max_tokens else {
        return settings.is_due(plan);
    };
    if by_threshold(settings, plan) {
        return true;
    }
    if work.total() <= max || plan.new_tokens < least(settings, max) {
        return false;
    }
    let compacted = compacted(settings, work, plan, budget);
    if !leaves_room(work, plan, max, compacted, 0) {
        return false;
    }
    let fit = WindowDrop::new().window(work, budget);
    cuts_into_previous(&fit, work, budget) && compacted < fit.tokens()
}

/// Whether `plan` is due by a threshold the caller set
/// ([`with_summarize_at_tokens`](crate::Compact::with_summarize_at_tokens)),
/// whatever the budget.
pub(crate) fn by_threshold(settings: &Settings, plan: &Plan) -> bool {
    settings.threshold_chosen() && settings.is_due(plan)
}

/// Whether `plan` of `work`, summarized in the background, still lasts
/// when it lands (the module's third rule): it is spliced at a later call
/// than the foreground's summary would be, so its compacted history must
/// leave room for one more step the size of the newest one too.
pub(crate) fn lasts_until_it_lands(
    settings: &Settings,
    work: &History<'_>,
    plan: &Plan,
    budget: &Budget,
) -> bool {
    let messages = work.messages();
    let newest = work.tokens(structure::step_start(messages, messages.len())..messages.len());
    lasts_with(settings, work, plan, budget, newest)
}

/// Whether the history `plan` compacts (the new summary at its cap)
/// leaves room within `budget` for the turns it keeps verbatim and `more`
/// tokens: with none, whether it lasts (the module's third rule).
fn lasts_with(
    settings: &Settings,
    work: &History<'_>,
    plan: &Plan,
    budget: &Budget,
    more: usize,
) -> bool {
    let Some(max) = budget.max_tokens else {
        return true;
    };
    leaves_room(
        work,
        plan,
        max,
        compacted(settings, work, plan, budget),
        more,
    )
}

/// Whether a compacted history of `compacted` tokens leaves room within
/// `max` for the turns `plan` keeps of `work` and `more` tokens.
fn leaves_room(work: &History<'_>, plan: &Plan, max: usize, compacted: usize, more: usize) -> bool {
    let kept_turns = work.tokens(plan.tail.min(work.len())..work.len());
    max.saturating_sub(compacted) >= kept_turns + more
}

/// Tokens of the history `plan` compacts `work` into, the new summary at
/// its cap for `budget`.
fn compacted(settings: &Settings, work: &History<'_>, plan: &Plan, budget: &Budget) -> usize {
    let counts = work.counts();
    let previous: usize = plan.previous.iter().map(|&i| counts[i]).sum();
    let cap = settings.for_budget(budget, work).summary_max_tokens() as usize;
    (work.total() + cap).saturating_sub(plan.new_tokens + previous)
}

/// Whether this call's fallback fit of `work` cuts into what the previous
/// call's fit showed: that fit (of the history before the newest assistant
/// message, the previous call's) is not where this one starts. Without an
/// assistant message there was no previous call, and a cut over the
/// budget is due.
pub(crate) fn cut_due(work: &History<'_>, budget: &Budget) -> bool {
    cuts_into_previous(&WindowDrop::new().window(work, budget), work, budget)
}

/// Whether `now`, the fallback fit of `work` at `budget`, cuts into what
/// the previous call's fit showed (see [`cut_due`]).
fn cuts_into_previous(now: &TrimResult, work: &History<'_>, budget: &Budget) -> bool {
    let messages = work.messages();
    let Some(previous_call) = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
    else {
        return true;
    };
    let then = WindowDrop::new().window(&work.before(previous_call), budget);
    !now.messages.starts_with(&then.messages)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use memory_core::{FakeProvider, Message};

    use super::*;

    /// A system prompt and `rounds` rounds of a 10-token question and a
    /// 90-token reply.
    fn history(rounds: usize) -> (Vec<Message>, Vec<usize>) {
        let mut messages = vec![Message::system("rules")];
        let mut counts = vec![10];
        for r in 0..rounds {
            messages.push(Message::user(format!("u{r}")));
            messages.push(Message::assistant(format!("a{r}")));
            counts.extend([10, 90]);
        }
        (messages, counts)
    }

    fn check(settings: &Settings, rounds: usize, budget: &Budget) -> bool {
        let (messages, counts) = history(rounds);
        let work = History::new(&messages, &counts).unwrap();
        let plan = settings.plan(&work);
        due(settings, &work, &plan, budget)
    }

    fn settings() -> Settings {
        Settings::new(Arc::new(FakeProvider::default()))
    }

    #[test]
    fn by_default_a_summary_waits_for_a_cut_and_enough_to_fold() {
        let s = settings();
        // Budget 1,000: depth 750. Ten rounds are 1,010 tokens, over the
        // budget, with 800 older than the two kept rounds: due.
        let budget = Budget::tokens(1_000);
        assert!(check(&s, 10, &budget));
        // Nine rounds fit (910): no cut is due, nothing is asked.
        assert!(!check(&s, 9, &budget));
        // Budget 1,100 (depth 825): eleven rounds (1,110) are over it, with
        // 900 older: due. At budget 1,300 twelve rounds (1,210) fit.
        assert!(check(&s, 11, &Budget::tokens(1_100)));
        assert!(!check(&s, 12, &Budget::tokens(1_300)));
        // Over the budget with too little to fold: the fit sheds instead.
        // Budget 580 (depth 435): six rounds are over it with 390 older.
        assert!(!check(&s, 6, &Budget::tokens(580)));
    }

    #[test]
    fn a_summary_that_would_not_last_waits() {
        let s = settings();
        // Budget 500 (depth 375): six rounds are 610 tokens, 390 of them
        // to fold, deep enough. The compacted history (the prompt, the
        // task, the summary at its cap of 96 and the two kept rounds)
        // would hold 316 and leave 184, less than the 200 the kept rounds
        // took: the next calls would cut it again. The fit sheds.
        assert!(!check(&s, 6, &Budget::tokens(500)));
        // Budget 600: seven rounds (710, 490 to fold) leave 284 beside
        // the compacted history: due.
        assert!(check(&s, 7, &Budget::tokens(600)));
    }

    #[test]
    fn a_summary_waits_where_the_cut_leaves_as_much_room() {
        let s = settings();
        // The prompt, the task's round, a large round (an 850-token
        // observation) and the two rounds kept verbatim: 1,170 tokens over
        // a budget of 1,000, 950 of them to fold (deep enough); compacted
        // (the prompt, the task, the summary at its cap of 96, the kept
        // rounds) they would hold 316 and last. The previous call's fit
        // held the large round; this one's cannot, and drops it with all
        // before it but the task: 210 tokens, more room than the summary
        // would leave.
        let mut messages = vec![Message::system("rules")];
        let mut counts = vec![10];
        for (question, reply) in [(10, 90), (10, 850), (10, 90), (10, 90)] {
            messages.push(Message::user(format!("q{}", messages.len())));
            messages.push(Message::assistant(format!("a{}", messages.len())));
            counts.extend([question, reply]);
        }
        let work = History::new(&messages, &counts).unwrap();
        let plan = s.plan(&work);
        let budget = Budget::tokens(1_000);
        assert!(plan.new_tokens >= least(&s, 1_000));
        assert!(lasts_with(&s, &work, &plan, &budget, 0) && cut_due(&work, &budget));
        let fit = WindowDrop::new().window(&work, &budget).tokens();
        assert_eq!((compacted(&s, &work, &plan, &budget), fit), (316, 210));
        assert!(!due(&s, &work, &plan, &budget));
        // With uniform rounds the fit keeps nearly the budget, and the
        // summary buys room (the first test): due.
    }

    #[test]
    fn a_background_summary_must_last_a_step_more() {
        let s = settings();
        let lasts_now_and_then = |rounds: usize, budget: &Budget| {
            let (messages, counts) = history(rounds);
            let work = History::new(&messages, &counts).unwrap();
            let plan = s.plan(&work);
            (
                lasts_with(&s, &work, &plan, budget, 0),
                lasts_until_it_lands(&s, &work, &plan, budget),
            )
        };
        // Budget 600, seven rounds: 252 left beside the compacted history,
        // room for the two kept rounds (200) but not for them and a step
        // like the newest (the 90-token reply) more.
        assert_eq!(lasts_now_and_then(7, &Budget::tokens(600)), (true, false));
        // Budget 1,000, ten rounds: room for both.
        assert_eq!(lasts_now_and_then(10, &Budget::tokens(1_000)), (true, true));
        // Without a token limit, nothing is cut: it lasts.
        assert_eq!(lasts_now_and_then(10, &Budget::default()), (true, true));
    }

    #[test]
    fn no_cut_is_due_while_the_previous_fit_takes_the_new_step() {
        // A long early reply: the previous call's fit (before `a2`)
        // already left it out, and the new step is appended to that fit.
        let messages = [
            Message::system("rules"),
            Message::user("u0"),
            Message::assistant("a0"),
            Message::user("u1"),
            Message::assistant("a1"),
            Message::user("u2"),
            Message::assistant("a2"),
            Message::user("u3"),
        ];
        let counts = [10, 10, 300, 10, 10, 10, 10, 10];
        let work = History::new(&messages, &counts).unwrap().protect(&[0]);
        let budget = Budget::tokens(200);
        assert!(work.total() > 200);
        assert!(!cut_due(&work, &budget));
        let s = settings();
        let plan = s.plan(&work);
        assert!(!due(&s, &work, &plan, &budget));
        // The same history with a step too long for that fit's room: the
        // fit moves, a cut is due.
        let counts = [10, 10, 300, 10, 10, 10, 10, 150];
        let work = History::new(&messages, &counts).unwrap().protect(&[0]);
        assert!(cut_due(&work, &budget));
        // Without an earlier call, a history over the budget is cut.
        let first = History::new(&messages[..2], &[150, 100]).unwrap();
        assert!(cut_due(&first, &budget));
    }

    #[test]
    fn a_chosen_threshold_keeps_its_meaning_and_comes_earlier_under_pressure() {
        let mut s = settings();
        s.set_summarize_at_tokens(300);
        // Far within the budget, past the threshold: due, as always.
        assert!(check(&s, 6, &Budget::tokens(100_000)));
        assert!(!check(&s, 4, &Budget::tokens(100_000)));
        // A threshold above the depth: over the budget, the depth decides.
        // Budget 600 (depth 450), threshold 500: six rounds (610 tokens)
        // hold 390 older, seven rounds 490 (not past the threshold, but
        // deep enough).
        s.set_summarize_at_tokens(500);
        assert!(!check(&s, 6, &Budget::tokens(600)));
        assert!(check(&s, 7, &Budget::tokens(600)));
        s.set_summarize_at_tokens(300);
        // Without a budget only the threshold counts.
        assert!(check(&s, 6, &Budget::default()));
        assert!(!check(&s, 5, &Budget::default()));
    }

    #[test]
    fn without_a_budget_the_default_threshold_decides() {
        let s = settings();
        // 2,500 tokens of older material: 26 rounds hold 2,400, 27 2,500
        // (not past), 28 2,600.
        assert!(!check(&s, 27, &Budget::default()));
        assert!(check(&s, 28, &Budget::default()));
        // A budget without a token limit is no budget for the timing.
        assert!(check(&s, 28, &Budget::rounds(100)));
    }
}
