//! The last resort of every context: a floor that fits.
//!
//! Every strategy keeps its floor whole (the protected messages, the task,
//! the current question and the newest step), so a context is over the
//! budget whenever one of those messages is larger than the budget allows:
//! a text-only agent's observation sent back as a user message, the newest
//! tool output, a file pasted into the question, the newest step's own
//! call writing a whole file. [`cut_to_fit`] takes such a result and cuts
//! its largest messages that are not protected (never a protected message,
//! a summary or the task), head and tail kept, the middle replaced by a
//! marker line that carries the message's
//! [recall handle](memory_core::recall::Handle), until the context fits: user
//! messages and tool results first, then, only if they were not enough, the
//! assistant's that show no reasoning (its reply, or a call's arguments,
//! cut from inside one string value to inside the same or a later one, so
//! that they stay JSON). A context is
//! then over the budget only when its protected messages and the task
//! alone are.
//!
//! The cut is a projection: what a memory stores stays whole, and the
//! handle brings the original back in one recall.
//!
//! ```
//! use memory_session::floor_cut::cut_to_fit;
//! use memory_core::{Budget, CharTokenCounter, History, Message, TrimResult};
//! use memory_core::recall::Handle;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let observation = format!("EXECUTION RESULT\n{}", "line of output\n".repeat(400));
//! let m = [Message::user("fix the bug"), Message::user(observation.clone())];
//! let counts = [3, CharTokenCounter::estimate(&observation)];
//! let history = History::new(&m, &counts).unwrap();
//! let budget = Budget::tokens(200);
//! let result = TrimResult::unchanged(&history, &budget);
//! assert!(!result.fits);
//! let cut = cut_to_fit(result, &budget, &CharTokenCounter).await.unwrap();
//! assert!(cut.fits && cut.tokens() <= 200);
//! assert_eq!(cut.messages[0], m[0]);
//! // The marker names the original's parts that were cut, each one recall.
//! let named = Handle::all_in(&cut.messages[1].text());
//! assert_eq!(named.len(), 1);
//! assert_eq!(named[0].whole(), Handle::of(&m[1..]));
//! assert!(named[0].parts().is_some());
//! # });
//! ```

use std::ops::Range;

use async_trait::async_trait;

use memory_core::recall::{Handle, part_text};
use memory_core::{
    Budget, ContentBlock, History, MemoryError, Message, TokenCounter, TrimResult, TrimStrategy,
    summary,
};

pub(crate) mod arguments;

/// [`cut_to_fit`] as a stage: put last in a [`Pipeline`](memory_core::Pipeline),
/// it cuts what the stages before it could not fit. A projection: it never
/// changes what is stored.
///
/// ```
/// use memory_session::floor_cut::FloorCut;
/// use memory_core::{Budget, CharTokenCounter, Message, TrimStrategy};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let m = [Message::user("task"), Message::user("y".repeat(4_000))];
/// let r = FloorCut.trim(&m, &Budget::tokens(100), &CharTokenCounter).await.unwrap();
/// assert!(r.fits && !r.replace);
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct FloorCut;

#[async_trait]
impl TrimStrategy for FloorCut {
    fn name(&self) -> &str {
        "floor_cut"
    }

    async fn trim_with_counts(
        &self,
        history: &History<'_>,
        budget: &Budget,
        counter: &dyn TokenCounter,
    ) -> Result<TrimResult, MemoryError> {
        cut_to_fit(TrimResult::unchanged(history, budget), budget, counter).await
    }
}

/// Tokens a cut message keeps at least (its head and tail together), so
/// that what it was (a command's first lines, an error's last ones) still
/// shows: about two short lines at 4 characters a token.
pub const MIN_KEPT_TOKENS: usize = 32;

/// What every cut's marker line says, so that a message cut once is
/// never cut again (a second trim of a cut context changes nothing).
const MARKER_MIDDLE: &str = " characters cut to fit the context; recall r:";

/// Tries per message: a cut is sized from the characters' share of the
/// tokens, and text whose tokens are not spread evenly may need a second
/// or third, smaller cut.
const TRIES_PER_MESSAGE: usize = 3;

/// Cuts `result`'s largest unprotected messages until it is within
/// `budget`'s token limit, or nothing more can be cut (see the
/// [module docs](self)). A result within the limit, or a budget without
/// one, comes back as it is.
///
/// A result that materialized keeps what it stores uncut: the cut shows,
/// the store gets the whole messages ([`TrimResult::to_store`]).
///
/// # Errors
///
/// Counting errors.
pub async fn cut_to_fit(
    mut result: TrimResult,
    budget: &Budget,
    counter: &dyn TokenCounter,
) -> Result<TrimResult, MemoryError> {
    let Some(limit) = budget.max_tokens else {
        return Ok(result);
    };
    if result.tokens() <= limit {
        return Ok(result);
    }
    let mut order: Vec<usize> = (0..result.messages.len())
        .filter(|&i| cuttable(&result, i))
        .collect();
    // What came back to the agent before what it said; largest first;
    // ties by position, so the cut is the same every call.
    order.sort_by_key(|&i| {
        let said = result.messages[i].is_assistant();
        (said, std::cmp::Reverse(result.counts[i]), i)
    });
    let original = (result.replace && result.write_back.is_none()).then(|| result.clone());
    let mut any = false;
    for i in order {
        let over = result.tokens().saturating_sub(limit);
        if over == 0 {
            break;
        }
        let shorter = shorten(&result.messages[i], result.counts[i], over, counter).await?;
        if let Some((message, tokens)) = shorter {
            result.messages[i] = message;
            result.counts[i] = tokens;
            any = true;
        }
    }
    if any && let Some(original) = original {
        // What it materialized is stored whole; the cut only shows.
        result.write_back = Some(Box::new(original));
        result.replace = false;
    }
    result.fits = result.tokens() <= limit;
    Ok(result)
}

/// Whether the message at `i` may be cut: not protected, not a summary,
/// not cut before, and with text to cut; an assistant message only without
/// its reasoning (a stage may still replace a thought by a placeholder
/// naming the message, whose handle would then name the cut one, and
/// trimming the cut context again would change it).
fn cuttable(result: &TrimResult, i: usize) -> bool {
    let message = &result.messages[i];
    let thinking =
        matches!(message, Message::Assistant { reasoning: Some(r), .. } if !r.is_empty());
    result.protected.binary_search(&i).is_err()
        && !summary::is_summary(message)
        && !thinking
        && !part_text(message).contains(MARKER_MIDDLE)
        && site(message).is_some()
}

/// Where a cut of a message falls.
enum Site<'m> {
    /// A text of its own: a tool result's content, a user message's
    /// longest text block, an assistant's reply.
    Text(&'m str),
    /// The arguments `raw` of its call `call`, cut inside their string
    /// values.
    Argument { call: usize, raw: &'m str },
}

impl Site<'_> {
    /// The text the cut shortens.
    fn text(&self) -> &str {
        match self {
            Site::Text(text) | Site::Argument { raw: text, .. } => text,
        }
    }
}

/// Where `message` is cut: its longest text, of those a cut may shorten;
/// `None` when it has none.
fn site(message: &Message) -> Option<Site<'_>> {
    let text = match message {
        Message::ToolResult { content, .. } => Some(content.as_str()),
        Message::User(blocks) => blocks
            .iter()
            .filter_map(ContentBlock::as_text)
            .max_by_key(|t| t.len()),
        Message::Assistant { content, .. } => Some(content.as_str()),
        Message::System(_) => None,
    }
    .filter(|t| !t.is_empty());
    let mut best = text.map(|t| (t.len(), Site::Text(t)));
    if let Message::Assistant { tool_calls, .. } = message {
        for (call, c) in tool_calls.iter().enumerate() {
            let len = c.arguments.len();
            if arguments::has_values(&c.arguments) && best.as_ref().is_none_or(|(l, _)| len > *l) {
                let raw = c.arguments.as_str();
                best = Some((len, Site::Argument { call, raw }));
            }
        }
    }
    best.map(|(_, site)| site)
}

/// `message` cut to shed at least `over` of its `tokens`, keeping at least
/// [`MIN_KEPT_TOKENS`] of the text it cuts; `None` when no cut makes it
/// smaller.
async fn shorten(
    message: &Message,
    tokens: usize,
    over: usize,
    counter: &dyn TokenCounter,
) -> Result<Option<(Message, usize)>, MemoryError> {
    let Some(site) = site(message) else {
        return Ok(None);
    };
    let chars = site.text().chars().count();
    // The parts a marker names count the characters of the message's
    // whole text; the handle and that count are the same for every try.
    let handle = Handle::of(std::slice::from_ref(message));
    let total = part_text(message).chars().count();
    // The site's share of the message's tokens, by its share of the
    // message's characters (all of them for a tool result or a one-block
    // message; a call's arguments may be a part of a step's). What its
    // images cost stays whatever is cut: the share is of the rest.
    let text_tokens = tokens.saturating_sub(image_tokens(message)).max(1);
    let site_tokens = (text_tokens.saturating_mul(chars) / total.max(chars).max(1)).max(1);
    let mut target = site_tokens.saturating_sub(over).max(MIN_KEPT_TOKENS);
    let mut best: Option<(Message, usize)> = None;
    for _ in 0..TRIES_PER_MESSAGE {
        // The characters to keep, in proportion to the tokens to keep.
        let keep = chars.saturating_mul(target) / site_tokens;
        let Some(shown) = cut_at(message, &site, keep, handle, total) else {
            // The marker costs more than the cut saves: a short message.
            break;
        };
        let count = counter.count_message(&shown).await?;
        if count < best.as_ref().map_or(tokens, |b| b.1) {
            best = Some((shown, count));
        }
        let now = best.as_ref().map_or(tokens, |b| b.1);
        if now + over <= tokens || target <= MIN_KEPT_TOKENS {
            break;
        }
        // Short of the mark: aim lower by what was missed.
        target = target
            .saturating_sub(now + over - tokens)
            .max(MIN_KEPT_TOKENS);
    }
    Ok(best)
}

/// What a user message's images cost, by the rule every counter prices
/// them with unless it says otherwise ([`memory_core::image`]).
fn image_tokens(message: &Message) -> usize {
    match message {
        Message::User(blocks) => blocks.iter().map(memory_core::image::block_tokens).sum(),
        _ => 0,
    }
}

/// `message` with about `keep` characters of its `site` kept, the marker
/// naming by `handle` the parts cut of the message's whole text
/// ([`part_text`], `total` characters); `None` when the cut would not be
/// shorter.
fn cut_at(
    message: &Message,
    site: &Site<'_>,
    keep: usize,
    handle: Handle,
    total: usize,
) -> Option<Message> {
    match site {
        Site::Text(text) => {
            let offset = text_offset(message, text);
            let name = |span: Range<usize>, _| {
                handle.covering(span.start + offset..span.end + offset, total)
            };
            let new_text = cut_naming(text, keep, name);
            (new_text.len() < text.len()).then(|| with_text(message, text, &new_text))
        }
        Site::Argument { call, raw } => {
            let offset = memory_core::recall::arguments_start(message, *call, total);
            let named = |span: Range<usize>| {
                let handle = handle.covering(span.start + offset..span.end + offset, total);
                marker(span.len(), handle)
            };
            let cut = arguments::cut(raw, keep, named)?;
            let mut shown = message.clone();
            if let Message::Assistant { tool_calls, .. } = &mut shown {
                tool_calls[*call].arguments = cut;
            }
            Some(shown)
        }
    }
}

/// The inside of a cut's marker line: how many characters were cut and
/// the handle that brings them back.
fn marker(removed: usize, handle: Handle) -> String {
    format!(
        "{removed}{}{handle} for the whole",
        MARKER_MIDDLE.trim_end_matches("r:")
    )
}

/// `text` with its middle replaced by a marker line naming `handle`:
/// about `keep` characters kept, two thirds from the head, a third from
/// the tail (a command's output says what ran at its start and how it
/// ended at its end; the head is usually the longer story).
///
/// ```
/// # use memory_session::floor_cut::cut_text;
/// # use memory_core::{recall::Handle, Message};
/// let text = "a\n".repeat(100);
/// let h = Handle::of(&[Message::user(text.clone())]);
/// let cut = cut_text(&text, 20, h);
/// assert!(cut.len() < text.len() && cut.contains(&h.to_string()));
/// assert!(text.starts_with(cut.lines().next().unwrap()));
/// ```
pub fn cut_text(text: &str, keep: usize, handle: Handle) -> String {
    cut_naming(text, keep, |span, chars| handle.covering(span, chars))
}

/// [`cut_text`], its marker naming `name(cut characters, text's
/// characters)`.
fn cut_naming(text: &str, keep: usize, name: impl Fn(Range<usize>, usize) -> Handle) -> String {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let head = keep * 2 / 3;
    let tail = keep - head;
    if head + tail >= chars.len() {
        return text.to_string();
    }
    let head_end = chars[head].0;
    // Nothing of the tail kept: the cut runs to the end.
    let tail_start = chars.get(chars.len() - tail).map_or(text.len(), |c| c.0);
    let removed = chars.len() - head - tail;
    format!(
        "{}\n[{}]\n{}",
        &text[..head_end],
        marker(removed, name(head..head + removed, chars.len())),
        &text[tail_start..]
    )
}

/// Where `text`, one of `message`'s texts, starts in the message's
/// [`part_text`] (a user message's blocks a line apart), in characters.
fn text_offset(message: &Message, text: &str) -> usize {
    let Message::User(blocks) = message else {
        return 0;
    };
    let texts: Vec<&str> = blocks.iter().filter_map(ContentBlock::as_text).collect();
    texts
        .iter()
        .position(|t| std::ptr::eq(*t, text))
        .map_or(0, |k| {
            texts[..k].iter().map(|t| t.chars().count() + 1).sum()
        })
}

/// `message` with `old` (one of its texts) replaced by `new`.
fn with_text(message: &Message, old: &str, new: &str) -> Message {
    match message {
        Message::ToolResult {
            tool_call_id, name, ..
        } => Message::ToolResult {
            tool_call_id: tool_call_id.clone(),
            content: new.to_string(),
            name: name.clone(),
        },
        Message::User(blocks) => {
            let mut done = false;
            Message::User(
                blocks
                    .iter()
                    .map(|b| match b {
                        ContentBlock::Text(t) if !done && t == old => {
                            done = true;
                            ContentBlock::Text(new.to_string())
                        }
                        other => other.clone(),
                    })
                    .collect(),
            )
        }
        Message::Assistant {
            reasoning,
            tool_calls,
            ..
        } => Message::Assistant {
            content: new.to_string(),
            reasoning: reasoning.clone(),
            tool_calls: tool_calls.clone(),
        },
        Message::System(_) => message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::audit::{Audit, Given};
    use memory_core::recall::{RecallRequest, resolve};
    use memory_core::{CharTokenCounter, Selection, ToolCall};

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn counts(m: &[Message]) -> Vec<usize> {
        block_on(memory_core::count_messages(&CharTokenCounter, m)).unwrap()
    }

    fn cut(history: &History<'_>, budget: usize) -> TrimResult {
        let budget = Budget::tokens(budget);
        block_on(cut_to_fit(
            TrimResult::unchanged(history, &budget),
            &budget,
            &CharTokenCounter,
        ))
        .unwrap()
    }

    /// An agent whose newest tool output and observation are huge.
    fn agent() -> Vec<Message> {
        vec![
            Message::system("You are a coding agent."),
            Message::user("Fix the failing test in src/lib.rs."),
            Message::assistant_with_tools(
                "Running them.",
                vec![ToolCall::new("c1", "bash", r#"{"cmd": "cargo test"}"#)],
            ),
            Message::tool_result(
                "c1",
                "running 400 tests\n".repeat(300) + "FAILED: parse_date",
            ),
            Message::user("OBSERVATION:\n".to_string() + &"ünïcödé output line\n".repeat(300)),
        ]
    }

    #[test]
    fn a_cut_may_keep_nothing() {
        let text = "abcdef".repeat(10);
        let h = Handle::of(&[Message::user(text.clone())]);
        for keep in [0, 1] {
            let cut = cut_text(&text, keep, h);
            assert!(
                cut.contains(&h.to_string()) && cut.len() < text.len() + 80,
                "{cut}"
            );
        }
    }

    #[test]
    fn a_question_whose_images_are_over_the_budget_keeps_its_text() {
        let image = memory_core::ImageContent::new("image/png", vec![0; 64]);
        let question = Message::user_blocks(vec![
            ContentBlock::Text("Which of these shows the error? ".repeat(40)),
            ContentBlock::Image(image.clone()),
            ContentBlock::Image(image),
        ]);
        let m = [Message::user("Look at my screenshots."), question];
        let c = counts(&m);
        assert!(c[1] > 2 * memory_core::image::UNKNOWN_SIZE_TOKENS);
        let history = History::new(&m, &c).unwrap();
        // Over by the images: no cut of the text brings it in.
        let result = cut(&history, 1_000);
        assert!(!result.fits);
        // Over by some of the text: the text is cut, by about that much.
        let budget = c[0] + c[1] - 100;
        let result = cut(&history, budget);
        assert!(result.fits, "{} of {budget}", result.tokens());
        assert!(
            result.tokens() + 50 > budget,
            "{} of {budget}",
            result.tokens()
        );
    }

    #[test]
    fn an_oversized_floor_is_cut_to_fit_and_passes_the_audit() {
        let m = agent();
        let c = counts(&m);
        let history = History::new(&m, &c).unwrap().protect(&[0]);
        for budget in [300, 600, 1_500] {
            let result = cut(&history, budget);
            assert!(result.fits && result.tokens() <= budget, "{budget}");
            let report = Audit::new(&history, Budget::tokens(budget))
                .given(Given::View)
                .check(&result, &result.counts)
                .unwrap();
            assert!(report.is_clean(), "{budget}: {:?}", report.breaches);
            assert_eq!(result.messages[..3], m[..3], "protected, task, call kept");
            assert!(result.messages[3].text().ends_with("FAILED: parse_date"));
            assert!(result.messages[4].text().starts_with("OBSERVATION:"));
        }
    }

    #[test]
    fn each_cut_names_its_original_and_one_recall_brings_it_back() {
        let m = agent();
        let c = counts(&m);
        let history = History::new(&m, &c).unwrap();
        let result = cut(&history, 400);
        let recall = |h: Handle| {
            block_on(resolve(
                &m,
                &RecallRequest::new(h.to_string()),
                &CharTokenCounter,
            ))
            .unwrap()
        };
        for (i, shown) in result.messages.iter().enumerate().skip(3) {
            let [handle] = Handle::all_in(&shown.text())[..] else {
                panic!("one handle in {shown:?}");
            };
            assert_eq!(handle.whole(), Handle::of(&m[i..=i]));
            assert_eq!(recall(handle.whole()).messages, m[i..=i]);
            // A long original is named by the parts that hold its cut
            // middle, each one recall of its characters.
            let original: Vec<char> = m[i].text().chars().collect();
            let shown = shown.text();
            let head = shown[..shown.find("\n[").unwrap()].chars().count();
            let tail = shown[shown.rfind("]\n").unwrap() + 2..].chars().count();
            let first = handle.chars(original.len()).unwrap();
            assert!(
                first.start <= head && first.end >= original.len() - tail,
                "{handle}"
            );
            for part in handle.each_part() {
                let back = recall(part);
                let chars = part.chars(original.len()).unwrap();
                assert!(back.whole && chars.len() <= memory_core::recall::PART_CHARS);
                assert_eq!(back.text, original[chars].iter().collect::<String>());
                assert_eq!(back.messages, m[i..=i]);
            }
        }
    }

    #[test]
    fn the_newest_call_writing_a_whole_file_is_cut_inside_its_arguments_last() {
        let file: String = (0..200)
            .map(|i| format!("def f_{i}(x):\n    return \"é\" * x\n"))
            .collect();
        let arguments = serde_json::json!({"command": "create", "path": "a.py", "file_text": file});
        let m = vec![
            Message::system("You are a coding agent."),
            Message::user("Add the helpers to a.py."),
            Message::assistant_with_tools(
                "Writing them.",
                vec![ToolCall::new("c1", "editor", arguments.to_string())],
            ),
            Message::tool_result("c1", "File created successfully at: a.py\n".repeat(20)),
        ];
        let c = counts(&m);
        let history = History::new(&m, &c).unwrap().protect(&[0]);
        let budget = 400;
        let result = cut(&history, budget);
        assert!(
            result.fits && result.tokens() <= budget,
            "{}",
            result.tokens()
        );
        let report = Audit::new(&history, Budget::tokens(budget))
            .given(Given::View)
            .check(&result, &result.counts)
            .unwrap();
        assert!(report.is_clean(), "{:?}", report.breaches);
        // The result went first; the call still is one, its arguments JSON.
        assert!(result.messages[3].text().contains(MARKER_MIDDLE));
        let Message::Assistant {
            content,
            tool_calls,
            ..
        } = &result.messages[2]
        else {
            panic!("{:?}", result.messages[2]);
        };
        assert_eq!(content, "Writing them.");
        assert_eq!(
            (tool_calls[0].id.as_str(), tool_calls[0].name.as_str()),
            ("c1", "editor")
        );
        let shown: serde_json::Value = serde_json::from_str(&tool_calls[0].arguments).unwrap();
        assert_eq!(shown["path"], "a.py");
        let text = shown["file_text"].as_str().unwrap();
        assert!(text.starts_with("def f_0(x):") && text.ends_with("return \"é\" * x\n"));
        // Its handle's parts bring back, one after another, the arguments'
        // characters that were cut, as they were written.
        let [handle] = Handle::all_in(text)[..] else {
            panic!("one handle in {text}");
        };
        assert_eq!(handle.whole(), Handle::of(&m[2..3]));
        assert!(memory_core::recall::handles_in(&result.messages).contains(&handle));
        let mut back = String::new();
        for part in handle.each_part() {
            let got = block_on(resolve(
                &m,
                &RecallRequest::new(part.to_string()),
                &CharTokenCounter,
            ))
            .unwrap();
            assert!(got.whole);
            back.push_str(&got.text);
        }
        let raw = &tool_calls[0].arguments;
        let head = &raw[..raw.find("\\n[").unwrap()];
        let tail = &raw[raw.rfind("]\\n").unwrap() + 3..];
        let original = arguments.to_string();
        let removed = &original[head.len()..original.len() - tail.len()];
        assert!(
            back.contains(removed),
            "the recalled parts hold what was cut"
        );
        // Cut once, never again.
        let again = cut(&result.as_history().unwrap(), budget);
        assert_eq!(again.messages, result.messages);
    }

    #[test]
    fn an_assistant_message_showing_its_reasoning_is_not_cut() {
        let file = "x = 1\n".repeat(2_000);
        let arguments = serde_json::json!({"path": "a.py", "file_text": file}).to_string();
        let m = vec![
            Message::user("Write a.py."),
            Message::Assistant {
                content: String::new(),
                reasoning: Some("It needs a thousand lines.".into()),
                tool_calls: vec![ToolCall::new("c1", "write", arguments)],
            },
            Message::tool_result("c1", "ok"),
        ];
        let c = counts(&m);
        let history = History::new(&m, &c).unwrap();
        let result = cut(&history, 400);
        assert!(!result.fits);
        assert_eq!(result.messages, m);
    }

    #[test]
    fn protected_messages_and_the_task_are_never_cut() {
        let big = "x".repeat(4_000);
        let m = vec![
            Message::system(big.clone()),
            Message::user(big.clone()),
            Message::assistant("ok"),
            Message::user(big),
        ];
        let c = counts(&m);
        let history = History::new(&m, &c).unwrap().protect(&[0]);
        let result = cut(&history, 500);
        assert!(!result.fits);
        assert_eq!(result.messages[..3], m[..3]);
        assert!(result.counts[3] < c[3]);
    }

    #[test]
    fn a_cut_context_is_not_cut_again_and_a_materialized_one_stores_whole() {
        let m = agent();
        let c = counts(&m);
        let history = History::new(&m, &c).unwrap();
        // Too small for anything but the floor's protected part.
        let once = cut(&history, 40);
        assert!(!once.fits);
        let again = cut(&once.as_history().unwrap(), 40);
        assert_eq!(again.messages, once.messages);
        // A result that replaces the history keeps storing the originals.
        let mut whole = Selection::new(&history);
        whole.keep(0..m.len());
        let materialized = whole.finish(true, false);
        let budget = Budget::tokens(400);
        let shown = block_on(cut_to_fit(materialized, &budget, &CharTokenCounter)).unwrap();
        assert!(shown.fits && !shown.replace);
        assert_eq!(shown.to_store().unwrap().messages, m);
    }
}
