//! When a compaction is due in the foreground: timed with the provider's
//! prefix cache.
//!
//! A summary rewrites the context's prefix, so the call that shows it pays
//! for its whole context afresh (a cache break), besides the summary
//! itself. It is therefore asked for on a call that breaks the cache
//! anyway, and made deep enough to last:
//!
//! - **A cut is due**: the history (with the remembered summary applied)
//!   is over the token budget, so the final fit would drop verbatim turns
//!   from view and change the prefix on this call whatever happens.
//!   Rather than shed them, they are summarized.
//! - **Deep enough**: the material to fold holds at least
//!   [`DEFAULT_DEPTH_RATIO`](crate::DEFAULT_DEPTH_RATIO) of the budget,
//!   so that the compacted history leaves room for several calls that
//!   append to it and reuse its prefix. Below that, the fit sheds this
//!   time, and the summary comes once there is enough to fold.
//!
//! A threshold set with
//! [`with_summarize_at_tokens`](crate::Compact::with_summarize_at_tokens)
//! keeps its meaning (a summary as soon as the new material passes it, over
//! the budget or not), and under pressure the summary comes earlier: at the
//! smaller of the threshold and the depth. Without a token budget, the
//! threshold (its default included) decides alone.

use memory_core::{Budget, History};

use crate::settings::{DEFAULT_DEPTH_RATIO, Settings};
use crate::turns::Plan;

/// The least new material worth a summary at a budget of `max` tokens.
pub(crate) fn depth(max: usize) -> usize {
    ((max as f64 * f64::from(DEFAULT_DEPTH_RATIO)) as usize).max(1)
}

/// Whether `plan` of `work` is to be summarized on this call at `budget`.
pub(crate) fn due(settings: &Settings, work: &History<'_>, plan: &Plan, budget: &Budget) -> bool {
    if !plan.has_new() {
        return false;
    }
    let Some(max) = budget.max_tokens else {
        return settings.is_due(plan);
    };
    let pressure = work.total() > max;
    let least = if settings.threshold_chosen() {
        if settings.is_due(plan) {
            return true;
        }
        settings.summarize_at_tokens().min(depth(max)).max(1)
    } else {
        depth(max)
    };
    pressure && plan.new_tokens >= least
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
        // Budget 500 (depth 375): six rounds are 610 tokens, 400 older.
        assert!(check(&s, 6, &Budget::tokens(500)));
        // Budget 580 (depth 435): six rounds are over it with 400 older.
        assert!(!check(&s, 6, &Budget::tokens(580)));
    }

    #[test]
    fn a_chosen_threshold_keeps_its_meaning_and_comes_earlier_under_pressure() {
        let mut s = settings();
        s.set_summarize_at_tokens(300);
        // Far within the budget, past the threshold: due, as always.
        assert!(check(&s, 6, &Budget::tokens(100_000)));
        assert!(!check(&s, 4, &Budget::tokens(100_000)));
        // A threshold above the depth: over the budget, the depth decides.
        // Budget 300 (depth 225): four rounds (410 tokens) hold 200 older,
        // five rounds 300 (not past the threshold of 300, but deep enough).
        assert!(!check(&s, 4, &Budget::tokens(300)));
        assert!(check(&s, 5, &Budget::tokens(300)));
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
