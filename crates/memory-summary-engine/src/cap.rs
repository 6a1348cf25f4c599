//! The summary cap in tokens: what of it the model may write, whether a
//! summary message keeps within it, and whether a cap can hold a summary
//! at all.
//!
//! A cap holds the whole summary message: the summary's *framing* (the
//! fixed text every summary message of a strategy wraps around the
//! summary, [`memory_core::summary::PREFIX`] and whatever header the
//! strategy adds) and the text the model writes. So the model is asked for
//! the cap less the framing ([`reply_allowance`]), and a cap no larger
//! than the framing could never hold a summary: strategies refuse it when
//! they are built ([`check_cap`], [`CapTooSmall`]).
//!
//! ```
//! use memory_core::summary;
//! use memory_summary_engine::cap;
//!
//! let framing = cap::framing_estimate(&summary::message(""));
//! assert_eq!(framing, 7); // "Summary of prior context:\n"
//! assert_eq!(cap::reply_allowance(100, framing), Some(93));
//! let err = cap::check_cap(7, framing).unwrap_err();
//! assert_eq!((err.cap, err.framing), (7, 7));
//! ```

use memory_core::{CharTokenCounter, History, Message, summary};

use crate::Rejection;

/// A summary cap that cannot hold the summary's own framing: every summary
/// would be refused, so the strategy is not built.
///
/// ```
/// let err = memory_summary_engine::cap::check_cap(5, 24).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "a summary cap of 5 tokens cannot hold the summary message's own framing of 24 tokens; raise the cap above 24"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "a summary cap of {cap} tokens cannot hold the summary message's own framing of {framing} tokens; raise the cap above {framing}"
)]
pub struct CapTooSmall {
    /// The cap asked for.
    pub cap: u32,
    /// Tokens of the framing, by the character estimate.
    pub framing: usize,
}

/// Tokens of a summary message with an empty body (its framing), by the
/// character estimate ([`CharTokenCounter`]): the yardstick of the
/// build-time check, when the strategy's counter is not known yet.
///
/// ```
/// let framing = memory_summary_engine::cap::framing_estimate(&memory_core::summary::message(""));
/// assert_eq!(framing, 7);
/// ```
pub fn framing_estimate(empty: &Message) -> usize {
    CharTokenCounter::estimate(&empty.text())
}

/// `Ok` when `cap` holds the `framing` and at least one token more.
///
/// # Errors
///
/// [`CapTooSmall`], naming both numbers.
///
/// ```
/// assert!(memory_summary_engine::cap::check_cap(8, 7).is_ok());
/// ```
pub fn check_cap(cap: u32, framing: usize) -> Result<(), CapTooSmall> {
    if cap as usize > framing {
        Ok(())
    } else {
        Err(CapTooSmall { cap, framing })
    }
}

/// What the model may write of a summary whose whole message may hold
/// `whole` tokens, `framing` of them taken: `None` when nothing is left.
///
/// ```
/// assert_eq!(memory_summary_engine::cap::reply_allowance(10, 10), None);
/// ```
pub fn reply_allowance(whole: usize, framing: usize) -> Option<usize> {
    whole.checked_sub(framing).filter(|&a| a > 0)
}

/// `Ok` when a summary message of `tokens` keeps within `cap`.
///
/// # Errors
///
/// [`Rejection::OverCap`].
///
/// ```
/// use memory_summary_engine::{cap, Rejection};
/// assert_eq!(cap::within_cap(101, 100), Err(Rejection::OverCap { tokens: 101, cap: 100 }));
/// ```
pub fn within_cap(tokens: usize, cap: usize) -> Result<(), Rejection> {
    if tokens > cap {
        Err(Rejection::OverCap { tokens, cap })
    } else {
        Ok(())
    }
}

/// `Ok` when a summary message of `tokens` is shorter than the `covered`
/// tokens of what it replaces.
///
/// # Errors
///
/// [`Rejection::NotShorter`].
///
/// ```
/// use memory_summary_engine::{cap, Rejection};
/// assert!(cap::shorter(9, 10).is_ok());
/// assert_eq!(cap::shorter(10, 10), Err(Rejection::NotShorter { tokens: 10, covered: 10 }));
/// ```
pub fn shorter(tokens: usize, covered: usize) -> Result<(), Rejection> {
    if tokens >= covered {
        Err(Rejection::NotShorter { tokens, covered })
    } else {
        Ok(())
    }
}

/// The least cap [`in_room`] sets. Why: a summary's framing (prefix,
/// handle line and header) takes up to 35 tokens by the character
/// estimate, and a summary needs a few lines of state beside it to say
/// anything. Figure: none needed (a floor, not a tuning).
pub const MIN_CAP_IN_ROOM: usize = 64;

/// A summary `cap` under a budget of `max` tokens whose protected messages
/// hold `held` of them ([`held`]): at most half the room they leave (not
/// below [`MIN_CAP_IN_ROOM`]), so that beside the summary, which is never
/// shed, the newest step still fits however long it grows (the floor cut
/// shortens it, not the summary). When they alone fill the budget no
/// summary leaves room beside them, and `cap` stands.
///
/// ```
/// use memory_summary_engine::cap;
/// assert_eq!(cap::in_room(1024, 2_000, 1_500), 250);
/// assert_eq!(cap::in_room(1024, 2_000, 1_950), cap::MIN_CAP_IN_ROOM);
/// assert_eq!(cap::in_room(1024, 2_000, 2_500), 1024);
/// assert_eq!(cap::in_room(200, 8_000, 1_500), 200);
/// ```
pub fn in_room(cap: usize, max: usize, held: usize) -> usize {
    match max.checked_sub(held) {
        Some(room) if room > 0 => cap.min((room / 2).max(MIN_CAP_IN_ROOM)),
        _ => cap,
    }
}

/// Tokens of `history`'s protected messages (the task among them), its
/// summaries left out: the next summary folds those in.
///
/// ```
/// use memory_core::{summary, History, Message};
/// let m = [Message::system("rules"), summary::message("so far"), Message::user("go")];
/// // The prompt, protected here, counts; the summary does not.
/// let history = History::new(&m, &[5, 9, 2]).unwrap().protect(&[0]);
/// assert!(history.is_protected(1));
/// assert_eq!(memory_summary_engine::cap::held(&history), 5);
/// ```
pub fn held(history: &History<'_>) -> usize {
    protected_tokens(history, false)
}

/// Tokens of `history`'s summaries (the protected messages [`held`]
/// leaves out).
///
/// ```
/// use memory_core::{summary, History, Message};
/// let m = [Message::system("rules"), summary::message("so far"), Message::user("go")];
/// let history = History::new(&m, &[5, 9, 2]).unwrap();
/// assert_eq!(memory_summary_engine::cap::summaries(&history), 9);
/// ```
pub fn summaries(history: &History<'_>) -> usize {
    protected_tokens(history, true)
}

/// Tokens of `history`'s protected messages that are summaries, or that
/// are not.
fn protected_tokens(history: &History<'_>, summaries: bool) -> usize {
    history
        .protected()
        .iter()
        .filter(|&&i| summary::is_summary(&history.messages()[i]) == summaries)
        .map(|&i| history.tokens(i..i + 1))
        .sum()
}
