//! [`ExtractiveSummarizer`]: a summarizer that needs no model.

use std::collections::HashSet;

use memory_core::summary::DEFAULT_SUMMARY_MAX_TOKENS;
use memory_core::transcript::PREVIOUS_SUMMARY;
use memory_core::{
    CharTokenCounter, ChatRequest, ChatResponse, Message, Provider, ProviderError, StopReason,
    Usage,
};
use memory_summary_engine::sections;

/// What the first line of every extractive summary starts with.
///
/// ```
/// assert!(memory_summarize::EXTRACTIVE_HEADER.contains("no model"));
/// ```
pub const EXTRACTIVE_HEADER: &str = "Extractive summary (no model):";

/// Longest line kept whole, in characters; longer ones are cut.
const MAX_LINE_CHARS: usize = 240;

/// Words that mark a decision or a plan.
const DECISION_WORDS: &[&str] = &[
    "decided",
    "decide",
    "decision",
    "agreed",
    "agree",
    "chose",
    "choose",
    "chosen",
    "will",
    "must",
    "should",
    "plan",
    "instead",
    "because",
    "fixed",
    "fix",
    "use",
    "using",
    "switch",
    "switched",
    "prefer",
    "require",
    "required",
    "constraint",
    "never",
    "always",
];

/// Words that mark something left open.
const OPEN_WORDS: &[&str] = &[
    "todo",
    "open",
    "pending",
    "next",
    "unresolved",
    "blocked",
    "remaining",
    "unknown",
    "unclear",
    "later",
    "failing",
    "fails",
    "failed",
    "error",
];

/// A summarizer that runs offline: it picks the most informative lines of
/// the transcript it is sent and returns them, in their original order, as
/// the summary.
///
/// It reads the user messages of a request (the transcript; the system
/// prompt is an instruction it cannot follow and is ignored) line by line
/// and scores each line: file paths and URLs, identifiers (`snake_case`,
/// `CamelCase`, `a::b`, calls), numbers, decisions ("decided", "must",
/// "instead"...), open questions and problems ("?", "TODO", "failing"...),
/// and what the user said count in its favour; lines of a previous summary
/// count most, so that merged summaries keep what they held. Repeated lines
/// are taken once; very long lines are cut.
///
/// The best lines are kept while the reply stays within the request's
/// `max_tokens` (estimated with [`CharTokenCounter`]; when unset,
/// [`DEFAULT_SUMMARY_MAX_TOKENS`], 1,024). The
/// reply's first line says that it is extractive. Same request, same reply:
/// it is deterministic. It reports [`Usage`] estimated the same way and
/// [`StopReason::Stop`]; a cap too small for the first line and one line of
/// the transcript gives an empty reply cut off at [`StopReason::Length`],
/// which a
/// [`SummarizeStrategy`](crate::SummarizeStrategy) rejects.
///
/// ```
/// use memory_core::{ChatRequest, Message, Provider};
/// use memory_summarize::ExtractiveSummarizer;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let transcript = "user: hello there\n\
///                   user: the build fails in src/parser.rs at line 212\n\
///                   assistant: ok";
/// let reply = ExtractiveSummarizer::new()
///     .chat(ChatRequest::new(vec![Message::system("Summarize."), Message::user(transcript)]))
///     .await
///     .unwrap();
/// let text = reply.message.text();
/// assert!(text.starts_with("Extractive summary (no model):"));
/// assert!(text.contains("src/parser.rs at line 212"));
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtractiveSummarizer;

impl ExtractiveSummarizer {
    /// The summarizer.
    ///
    /// ```
    /// let summarizer = memory_summarize::ExtractiveSummarizer::new();
    /// # let _ = summarizer;
    /// ```
    pub fn new() -> Self {
        ExtractiveSummarizer
    }

    /// The summary of `transcript` within `max_tokens`, or `None` when not
    /// even the first line and one line of the transcript fit.
    ///
    /// ```
    /// use memory_summarize::ExtractiveSummarizer;
    /// let text = ExtractiveSummarizer::new().summarize("user: open question: use v2?", 50).unwrap();
    /// assert!(text.ends_with("- user: open question: use v2?"));
    /// assert_eq!(ExtractiveSummarizer::new().summarize("anything", 2), None);
    /// ```
    pub fn summarize(&self, transcript: &str, max_tokens: usize) -> Option<String> {
        let lines = candidate_lines(transcript);
        let total = lines.len();
        let head = header(total);
        let mut budget = max_tokens.checked_sub(CharTokenCounter::estimate(&head))?;

        let mut order: Vec<usize> = (0..total).collect();
        order.sort_by(|&a, &b| {
            lines[b]
                .score
                .cmp(&lines[a].score)
                .then(lines[b].position.cmp(&lines[a].position))
        });
        // Each line costs its own estimate plus its newline and bullet:
        // estimates add up to at least the estimate of the whole.
        let costs: Vec<usize> = lines
            .iter()
            .map(|l| CharTokenCounter::estimate(&format!("\n- {}", l.text)))
            .collect();
        let mut first = vec![false; total];
        for k in best_of_each_step(&lines) {
            first[k] = true;
        }
        // First the best line of every step, so that no step folded goes
        // unmentioned while the cap allows (under a tighter cap, the best
        // of those); then the best of the rest (a first line that did not
        // fit cannot fit later: the room only shrinks).
        let mut chosen = Vec::new();
        for firsts in [true, false] {
            for &k in order.iter().filter(|&&k| first[k] == firsts) {
                if costs[k] <= budget {
                    budget -= costs[k];
                    chosen.push(k);
                }
            }
        }
        if chosen.is_empty() && total > 0 {
            // Not one line fits: a reply of the header alone would say
            // nothing.
            return None;
        }
        chosen.sort_unstable();
        let mut out = head;
        for k in chosen {
            out.push_str("\n- ");
            out.push_str(&lines[k].text);
        }
        Some(out)
    }
}

#[async_trait::async_trait]
impl Provider for ExtractiveSummarizer {
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let input_tokens: usize = request
            .messages
            .iter()
            .map(|m| CharTokenCounter::estimate(&m.text()))
            .sum();
        let transcript = request
            .messages
            .iter()
            .filter(|m| m.is_user())
            .map(Message::text)
            .collect::<Vec<_>>()
            .join("\n");
        let max_tokens = request
            .options
            .max_tokens
            .unwrap_or(DEFAULT_SUMMARY_MAX_TOKENS) as usize;
        let (content, stop_reason) = match self.summarize(&transcript, max_tokens) {
            Some(text) => (text, StopReason::Stop),
            None => (String::new(), StopReason::Length),
        };
        Ok(ChatResponse {
            usage: Usage {
                input_tokens: input_tokens as u64,
                output_tokens: CharTokenCounter::estimate(&content) as u64,
            },
            message: Message::assistant(content),
            stop_reason,
        })
    }
}

/// The first line: how many lines the summary was chosen from, not how
/// many it kept, which a strategy that cuts a summary's last lines to fit
/// its cap would make false. As long as the header that counted the lines
/// kept was at its widest, so the room left for lines is the same.
fn header(total: usize) -> String {
    format!("{EXTRACTIVE_HEADER} lines chosen from {total}.")
}

/// A line of the transcript worth considering.
struct Line {
    text: String,
    score: u32,
    position: usize,
    /// The step of the transcript it belongs to (see [`opens_step`]).
    step: usize,
}

/// The best line of each step (the first among equals), in order.
fn best_of_each_step(lines: &[Line]) -> Vec<usize> {
    let mut best: Vec<usize> = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        match best.last_mut() {
            Some(b) if lines[*b].step == line.step => {
                if line.score > lines[*b].score {
                    *b = k;
                }
            }
            _ => best.push(k),
        }
    }
    best
}

/// Whether `line` (role-tagged) starts another step, `last` being the
/// role tag of the line before: a user message, an assistant's text, or
/// an assistant's call that follows no text of its own.
fn opens_step(line: &str, last: Option<&str>) -> bool {
    if line.starts_with("user:") || line.starts_with("assistant:") || line.starts_with("system:") {
        return true;
    }
    line.starts_with("assistant called ")
        && !matches!(last, Some("assistant:" | "assistant called "))
}

/// The transcript's distinct, non-blank lines with their scores, in order;
/// the headers and markers of earlier summaries left out. Where the
/// transcript is a summarization prompt (its conversation between
/// its tags), only the conversation and the previous summary
/// are read ([`memory_summary_engine::sections`]): the prompt's own
/// words, its tags, and the current request (which the context keeps
/// verbatim) are no part of a summary.
fn candidate_lines(transcript: &str) -> Vec<Line> {
    let prompt = transcript
        .lines()
        .any(|l| l.trim() == sections::CONVERSATION.open);
    let mut seen = HashSet::new();
    let mut lines = Vec::new();
    let mut in_previous = false;
    let mut section = if prompt {
        Section::Outside
    } else {
        Section::Conversation
    };
    let (mut step, mut last) = (0, None);
    for raw in transcript.lines() {
        let mut raw = raw.trim();
        if prompt && let Some(next) = Section::after_tag(raw) {
            section = next;
            in_previous = section == Section::Previous;
            continue;
        }
        if section == Section::Outside {
            continue;
        }
        if let Some(rest) = raw.strip_prefix(PREVIOUS_SUMMARY) {
            in_previous = true;
            raw = rest.trim();
        } else if let Some(tag) = role_tag(raw) {
            // A message of the transcript ends the previous summary, whose
            // own lines are bullets or free text without a role tag.
            in_previous = section == Section::Previous;
            if opens_step(raw, last) {
                step += 1;
            }
            last = Some(tag);
        }
        let line = raw.strip_prefix("- ").unwrap_or(raw).trim();
        if line.is_empty() || line.starts_with(EXTRACTIVE_HEADER) {
            continue;
        }
        let text = cut(line);
        if !seen.insert(text.clone()) {
            continue;
        }
        let score = score(line) + if in_previous { 6 } else { 0 };
        lines.push(Line {
            text,
            score,
            position: lines.len(),
            step,
        });
    }
    lines
}

/// Where in a summarization prompt a line stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    /// The prompt's own words, or a section no summary repeats.
    Outside,
    /// The conversation to summarize.
    Conversation,
    /// The previous summary, to merge.
    Previous,
}

impl Section {
    /// The section a tag line of [`sections`] opens or closes into;
    /// `None` for any other line (a tag-like line of the conversation
    /// itself, `</function>` or `<div>`, is content). The current request
    /// is left out with its content.
    fn after_tag(line: &str) -> Option<Section> {
        use sections::{CONVERSATION, CURRENT_REQUEST, PREVIOUS_SUMMARY};
        if line == CONVERSATION.open {
            Some(Section::Conversation)
        } else if line == PREVIOUS_SUMMARY.open {
            Some(Section::Previous)
        } else {
            [CONVERSATION, PREVIOUS_SUMMARY, CURRENT_REQUEST]
                .iter()
                .any(|s| line == s.close || line == CURRENT_REQUEST.open)
                .then_some(Section::Outside)
        }
    }
}

/// The role tag `line` opens a message of the transcript with, if any.
fn role_tag(line: &str) -> Option<&'static str> {
    [
        "system:",
        "user:",
        "assistant:",
        "assistant called ",
        "tool result",
    ]
    .into_iter()
    .find(|tag| line.starts_with(tag))
}

/// `line`, cut to [`MAX_LINE_CHARS`] characters.
fn cut(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// How informative a line is.
fn score(line: &str) -> u32 {
    let mut score = 0;
    let lower = line.to_lowercase();
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '"' | '\'' | '`' | '(' | ')'))
        .filter(|w| !w.is_empty())
        .collect();
    if words.iter().any(|w| is_path(w)) {
        score += 3;
    }
    if lower.contains("http://") || lower.contains("https://") {
        score += 2;
    }
    if words.iter().any(|w| is_identifier(w)) {
        score += 2;
    }
    if line.chars().any(|c| c.is_ascii_digit()) {
        score += 2;
    }
    let lower_words: Vec<&str> = memory_text::words(&lower).collect();
    if lower_words.iter().any(|w| DECISION_WORDS.contains(w)) {
        score += 3;
    }
    if line.contains('?') || lower_words.iter().any(|w| OPEN_WORDS.contains(w)) {
        score += 3;
    }
    if line.starts_with("user:") {
        score += 1;
    }
    if words.len() < 3 && score == 0 {
        return 0;
    }
    score + 1
}

/// `src/lib.rs`, `./run.sh`, `Cargo.toml`: a slash between name characters,
/// or a short extension after a dot.
fn is_path(word: &str) -> bool {
    let word = word.trim_end_matches(['.', ':', ',']);
    if word.contains("://") {
        return false;
    }
    if word.len() > 2 && word.contains('/') && word.chars().any(char::is_alphanumeric) {
        return true;
    }
    match word.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (2..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_lowercase())
                && stem
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
                && stem.chars().any(char::is_alphabetic)
        }
        None => false,
    }
}

/// `snake_case`, `CamelCase`, `mixedCase`, `a::b` and `call()` shapes.
fn is_identifier(word: &str) -> bool {
    if word.contains("::") || word.contains("()") {
        return true;
    }
    let body = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
    if body.len() < 3 || !body.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return false;
    }
    let inner_upper = body.chars().skip(1).any(char::is_uppercase);
    let has_lower = body.chars().any(char::is_lowercase);
    (body.contains('_') && body.chars().any(char::is_alphabetic)) || (inner_upper && has_lower)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ModelOptions;

    const TRANSCRIPT: &str = "\
user: hi
assistant: Hello! How can I help?
user: The test parse_header fails on input 0x1F in src/header.rs
assistant: ok
assistant called shell {\"cmd\":\"cargo test parse_header\"}
tool result (c1): test parse_header ... FAILED (line 88)
assistant: We decided to use the nom crate instead of regex.
assistant: sure
user: Should we also support gzip? Still open.
assistant: fine";

    fn request(max_tokens: Option<u32>) -> ChatRequest {
        ChatRequest {
            messages: vec![Message::system("Summarize."), Message::user(TRANSCRIPT)],
            tools: Vec::new(),
            options: ModelOptions {
                max_tokens,
                ..ModelOptions::default()
            },
        }
    }

    #[test]
    fn the_header_says_nothing_a_cut_of_the_last_lines_makes_false() {
        // Compaction cuts a summary's last lines when they pass its cap (a
        // counter that counts more than the estimate): the first line must
        // hold for any number of lines kept.
        let total = candidate_lines(TRANSCRIPT).len();
        let wide = ExtractiveSummarizer.summarize(TRANSCRIPT, 400).unwrap();
        let narrow = ExtractiveSummarizer.summarize(TRANSCRIPT, 40).unwrap();
        assert!(narrow.lines().count() < wide.lines().count(), "{narrow}");
        let want = format!("{EXTRACTIVE_HEADER} lines chosen from {total}.");
        for text in [&wide, &narrow] {
            assert_eq!(text.lines().next(), Some(want.as_str()), "{text}");
        }
    }

    #[tokio::test]
    async fn keeps_paths_numbers_identifiers_decisions_and_open_questions() {
        let reply = ExtractiveSummarizer.chat(request(Some(200))).await.unwrap();
        let text = reply.message.text();
        assert!(text.starts_with(EXTRACTIVE_HEADER), "{text}");
        for kept in [
            "src/header.rs",
            "line 88",
            "nom crate instead",
            "support gzip?",
        ] {
            assert!(text.contains(kept), "{kept} missing from\n{text}");
        }
        assert_eq!(reply.stop_reason, StopReason::Stop);
    }

    #[tokio::test]
    async fn a_tight_cap_keeps_the_best_lines_in_their_order() {
        let reply = ExtractiveSummarizer.chat(request(Some(40))).await.unwrap();
        let text = reply.message.text();
        assert!(CharTokenCounter::estimate(&text) <= 40, "{text}");
        assert!(!text.contains("assistant: fine"));
        assert!(!text.contains("user: hi\n") && !text.ends_with("user: hi"));
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert!(!lines.is_empty());
        let positions: Vec<usize> = lines
            .iter()
            .map(|l| TRANSCRIPT.find(l.trim_start_matches("- ")).unwrap())
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    }

    #[tokio::test]
    async fn every_cap_is_respected_and_the_output_is_deterministic() {
        for cap in 0..120 {
            let a = ExtractiveSummarizer.chat(request(Some(cap))).await.unwrap();
            let b = ExtractiveSummarizer.chat(request(Some(cap))).await.unwrap();
            assert_eq!(a, b);
            let text = a.message.text();
            assert!(
                CharTokenCounter::estimate(&text) <= cap as usize,
                "cap {cap}: {text}"
            );
            if text.is_empty() {
                assert_eq!(a.stop_reason, StopReason::Length);
            }
        }
    }

    #[tokio::test]
    async fn usage_is_estimated() {
        let reply = ExtractiveSummarizer.chat(request(None)).await.unwrap();
        let input =
            CharTokenCounter::estimate("Summarize.") + CharTokenCounter::estimate(TRANSCRIPT);
        assert_eq!(reply.usage.input_tokens, input as u64);
        assert_eq!(
            reply.usage.output_tokens,
            CharTokenCounter::estimate(&reply.message.text()) as u64
        );
    }

    #[test]
    fn a_previous_summary_survives_merging() {
        let first = ExtractiveSummarizer
            .summarize("user: the goal is a CSV parser in src/csv.rs", 100)
            .unwrap();
        let transcript = format!(
            "{}\nuser: and a writer for src/csv_out.rs with 3 modes",
            memory_core::transcript::message_to_text(&memory_core::summary::message(&first))
        );
        let second = ExtractiveSummarizer.summarize(&transcript, 100).unwrap();
        assert_eq!(second.matches(EXTRACTIVE_HEADER).count(), 1, "{second}");
        assert!(second.contains("CSV parser in src/csv.rs"), "{second}");
        assert!(second.contains("src/csv_out.rs"), "{second}");
        // Merged lines are not re-bulleted.
        assert!(!second.contains("- - "), "{second}");
    }

    #[test]
    fn a_prompt_gives_its_conversation_and_a_line_for_every_step() {
        let mut prompt = String::from(
            "Your previous summary, to merge with the new material:\n<previous-summary>\n\
             - the goal is a CSV parser\n</previous-summary>\n\n\
             The user's current request:\n<current-request>\nuser: fix the writer\n</current-request>\n\n\
             <conversation>\n",
        );
        for step in 1..=30 {
            prompt.push_str(&format!(
                "assistant: step {step}\nassistant called read {{\"path\": \"f{step}\"}}\ntool result (c{step}):\n<div>\nok\n</div>\n"
            ));
        }
        prompt.push_str("</conversation>\n\nMerge your previous summary and the steps above.");
        let text = ExtractiveSummarizer.summarize(&prompt, 1_024).unwrap();
        for absent in [
            "conversation>",
            "summary>",
            "request>",
            "Merge your",
            "fix the writer",
        ] {
            assert!(!text.contains(absent), "{absent} in\n{text}");
        }
        assert!(text.contains("CSV parser"), "{text}");
        // A tag-like line of the conversation is content, not a section.
        assert!(text.contains("</div>"), "{text}");
        for step in 1..=30 {
            assert!(
                text.contains(&format!("f{step}\"")),
                "step {step} missing from\n{text}"
            );
        }
    }

    #[test]
    fn shapes() {
        for p in ["src/lib.rs", "Cargo.toml", "./run.sh", "a/b", "README.md:"] {
            assert!(is_path(p), "{p}");
        }
        for p in ["e.g", "3.14", "https://x.y/z", "end."] {
            assert!(!is_path(p), "{p}");
        }
        for i in [
            "parse_header",
            "HashMap",
            "serde_json::Value",
            "run()",
            "fooBar",
        ] {
            assert!(is_identifier(i), "{i}");
        }
        for i in ["Hello", "the", "ok", "__"] {
            assert!(!is_identifier(i), "{i}");
        }
        let long = "é".repeat(300);
        assert_eq!(cut(&long).chars().count(), MAX_LINE_CHARS + 1);
    }
}
