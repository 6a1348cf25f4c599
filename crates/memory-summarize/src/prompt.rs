//! [`DEFAULT_SUMMARIZE_PROMPT`]: the instruction sent before the transcript.

/// The instruction a [`SummarizeStrategy`](crate::SummarizeStrategy) sends
/// as the system message of each summarizer call, unless
/// [`with_prompt`](crate::SummarizeStrategy::with_prompt) replaces it. The
/// transcript (see [`memory_core::transcript`]) follows as the user
/// message.
///
/// It differs from `memory-compact`'s prompt because the requests differ:
/// this strategy sends the bare transcript, the previous summary as its
/// first entry (and, for a long transcript, chunk after chunk folded into a
/// running summary), so the prompt says how to treat a leading summary;
/// Compact frames the previous summary, the current request and the
/// transcript in sections of its own and asks for fixed headings.
///
/// ```
/// assert!(memory_summarize::DEFAULT_SUMMARIZE_PROMPT.contains("previous summary"));
/// ```
pub const DEFAULT_SUMMARIZE_PROMPT: &str = "\
You condense the earlier part of a conversation between a user and an AI agent. \
The agent will continue the work with your summary in place of those messages, \
so write what it needs to carry on:
- what the user asked for, and the constraints and preferences they stated;
- what has been done and found, what was decided and why;
- exact details it cannot reconstruct: file paths, names of functions and \
variables, commands, URLs, numbers, versions, error messages;
- what is still open: unanswered questions, failing checks, next steps.
If the transcript starts with a previous summary, merge it with the newer \
messages into one summary: keep its facts that still hold and update those \
the newer messages change; do not summarize the summary itself.
Reply with the summary only, without a preface.";
