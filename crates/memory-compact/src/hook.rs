//! The `before_compaction` hook: see what a compaction is about to
//! summarize, and let it go ahead, decline it, or supply the summary.

use memory_core::Message;

use crate::FileOps;

/// What a compaction is about to summarize, as handed to a [`CompactHook`].
///
/// ```
/// use memory_compact::{HookDecision, Preparation};
/// fn only_when_large(p: &Preparation) -> HookDecision {
///     if p.tokens < 10_000 { HookDecision::Decline } else { HookDecision::Proceed }
/// }
/// # let _ = only_when_large;
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Preparation {
    /// The messages to summarize: the older history (before the current
    /// request when the turn is split), oldest first, earlier summaries
    /// excluded.
    pub messages: Vec<Message>,
    /// When the newest round is split: its older steps, summarized by
    /// themselves; empty otherwise.
    pub turn_prefix: Vec<Message>,
    /// The text of Compact's previous summary, to be folded in.
    pub previous_summary: Option<String>,
    /// The files read and modified so far, those of `messages` and
    /// `turn_prefix` included.
    pub files: FileOps,
    /// Custom instructions for this compaction (standing and per call).
    pub instructions: Option<String>,
    /// Tokens of the new material to summarize.
    pub tokens: usize,
    /// Tokens of the whole history.
    pub tokens_before: usize,
    /// Whether it runs in the background.
    pub background: bool,
    /// Whether it was asked for with [`Compact::compact_now`](crate::Compact::compact_now).
    pub manual: bool,
}

/// What a [`CompactHook`] decides.
///
/// ```
/// use memory_compact::HookDecision;
/// let own = HookDecision::Summary("## Goals\nShip the parser.".into());
/// assert_ne!(own, HookDecision::Proceed);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    /// Summarize with the model as planned.
    Proceed,
    /// Do not compact now: nothing is called and nothing replaced.
    Decline,
    /// Use this text as the summary, without calling the model. The file
    /// sections are appended to it as to a model's summary; a blank text is
    /// rejected like an empty reply.
    Summary(String),
}

/// Runs before every compaction (automatic, background, or
/// [`compact_now`](crate::Compact::compact_now)). A closure
/// `Fn(&Preparation) -> HookDecision` is a hook; implement the trait for a
/// hook that needs to await (to write the summary with another model, say).
///
/// ```
/// use memory_compact::{Compact, HookDecision, Preparation};
/// let compact = Compact::new(memory_core::FakeProvider::default())
///     .with_before_compaction(|p: &Preparation| {
///         if p.manual { HookDecision::Proceed } else { HookDecision::Decline }
///     });
/// # let _ = compact;
/// ```
#[async_trait::async_trait]
pub trait CompactHook: Send + Sync {
    /// Decides about one compaction.
    async fn before_compaction(&self, preparation: &Preparation) -> HookDecision;
}

#[async_trait::async_trait]
impl<F> CompactHook for F
where
    F: Fn(&Preparation) -> HookDecision + Send + Sync,
{
    async fn before_compaction(&self, preparation: &Preparation) -> HookDecision {
        self(preparation)
    }
}
