//! The tagged sections of a summarization prompt: the conversation to
//! summarize, an earlier summary to merge, and the current request, which
//! the context keeps verbatim (shown to the model, not summarized).
//! `memory-compact` writes its prompts with them; a summarizer that
//! needs no model (`memory_summarize::ExtractiveSummarizer`) reads a
//! prompt by them.
//!
//! ```
//! use memory_summary_engine::sections::CONVERSATION;
//! let prompt = format!("{}\nuser: hi\n{}", CONVERSATION.open, CONVERSATION.close);
//! assert_eq!(prompt, "<conversation>\nuser: hi\n</conversation>");
//! ```

/// A section's opening and closing tags, each on a line of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    /// The line that opens it.
    pub open: &'static str,
    /// The line that closes it.
    pub close: &'static str,
}

/// The conversation to summarize.
pub const CONVERSATION: Section = Section {
    open: "<conversation>",
    close: "</conversation>",
};

/// An earlier summary, to merge with the new material.
pub const PREVIOUS_SUMMARY: Section = Section {
    open: "<previous-summary>",
    close: "</previous-summary>",
};

/// The user's current request, which stays in the context verbatim.
pub const CURRENT_REQUEST: Section = Section {
    open: "<current-request>",
    close: "</current-request>",
};
