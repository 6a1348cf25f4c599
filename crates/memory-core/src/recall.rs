//! Recall: whatever a strategy sheds or shortens stays one call away.
//!
//! A [`Handle`] names a stretch of the history, or parts of one message's
//! text (its format: `r:KEY`, `r:KEY+12`, `r:KEY..KEY`, `r:KEY#2-9`); it
//! depends on nothing but the messages, so it is the same in every call
//! and every process, and resolves against any copy of the session's
//! history. [`reachable`] says which pieces one recall from a context
//! brings back whole.
//!
//! [`tool_definition`] is the `recall` tool a model is offered (OpenAI's
//! function format); [`RecallRequest`] its arguments; [`resolve`] the
//! answer: the originals, whole, or the lines most relevant to the query
//! within a token cap. [`Memory::recall`](crate::Memory::recall) answers
//! from a memory's history.
//!
//! ```
//! use memory_core::recall::{Handle, RecallRequest, resolve};
//! use memory_core::{CharTokenCounter, Message};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let history = vec![
//!     Message::user("Read the config."),
//!     Message::tool_result("c1", "port = 8080\nhost = example.org"),
//! ];
//! let handle = Handle::of(&history[1..]);
//! let request = RecallRequest::new(handle.to_string());
//! let recalled = resolve(&history, &request, &CharTokenCounter).await.unwrap();
//! assert_eq!(recalled.messages, history[1..]);
//! assert!(recalled.whole && recalled.text.contains("port = 8080"));
//! # });
//! ```

use serde::Deserialize;
use serde_json::{Value, json};

use crate::counter::TokenCounter;
use crate::error::MemoryError;
use crate::message::Message;
use crate::transcript;

pub use crate::handle::{Handle, PART_CHARS, arguments_start, part_text, reasoning_span};
pub use crate::reach::{
    FirstKeys, REACHABLE_BUDGET_DIVISOR, Reached, handles_in, max_reachable_tokens, reachable,
};

/// The name of the tool.
pub const RECALL_TOOL: &str = "recall";

/// The `recall` tool, as a model is offered it (OpenAI's `tools` entry).
///
/// ```
/// let tool = memory_core::recall::tool_definition();
/// assert_eq!(tool["function"]["name"], "recall");
/// assert_eq!(tool["function"]["parameters"]["required"][0], "handle");
/// ```
pub fn tool_definition() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": RECALL_TOOL,
            "description": "Bring back, verbatim, a part of this conversation that was shortened or left out of the context to save room. Pass the handle written where it stood (like r:1a2b3c4d5e, r:1a2b3c4d5e+12 for twelve messages, r:1a2b3c4d5e..5e4d3c2b1a for the messages from one through the other, as a summary names what it stands for, or r:1a2b3c4d5e#3 for part 3 of a long message: r:1a2b3c4d5e#2-9 written in the context means its parts 2 to 9, each one recall). With a query, only the parts most relevant to it come back; max_tokens caps the answer.",
            "parameters": {
                "type": "object",
                "properties": {
                    "handle": {"type": "string", "description": "The handle, e.g. r:1a2b3c4d5e, r:1a2b3c4d5e+12 or r:1a2b3c4d5e#3."},
                    "query": {"type": "string", "description": "What you need from it, to bring back only the relevant parts."},
                    "max_tokens": {"type": "integer", "minimum": 1, "description": "The most tokens to bring back."}
                },
                "required": ["handle"],
                "additionalProperties": false
            }
        }
    })
}

/// The arguments of a `recall` call.
///
/// ```
/// let r = memory_core::recall::RecallRequest::from_arguments(r#"{"handle": "r:000000002a", "max_tokens": 50}"#).unwrap();
/// assert_eq!(r.max_tokens, Some(50));
/// assert!(memory_core::recall::RecallRequest::from_arguments("{}").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RecallRequest {
    /// The handle.
    pub handle: String,
    /// What the caller needs from it.
    #[serde(default)]
    pub query: Option<String>,
    /// The most tokens to return.
    #[serde(default)]
    pub max_tokens: Option<usize>,
}

impl RecallRequest {
    /// A request for the whole of `handle`.
    ///
    /// ```
    /// assert!(memory_core::recall::RecallRequest::new("r:000000002a").query.is_none());
    /// ```
    pub fn new(handle: impl Into<String>) -> Self {
        Self {
            handle: handle.into(),
            query: None,
            max_tokens: None,
        }
    }

    /// Reads a tool call's JSON arguments.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Recall`] when they are not the tool's arguments.
    pub fn from_arguments(arguments: &str) -> Result<Self, MemoryError> {
        serde_json::from_str(arguments).map_err(|e| {
            MemoryError::Recall(format!(
                "the recall arguments are not {{\"handle\", \"query\"?, \"max_tokens\"?}}: {e}"
            ))
        })
    }
}

/// What a recall brings back.
///
/// ```
/// let r = memory_core::recall::Recalled::default();
/// assert!(r.messages.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recalled {
    /// The originals the handle names, exactly as recorded (for a handle
    /// of parts, the one message they are parts of).
    pub messages: Vec<Message>,
    /// The answer for the model: the originals as text, or the parts of
    /// them most relevant to the query within the cap.
    pub text: String,
    /// Tokens of `text`.
    pub tokens: usize,
    /// Whether `text` holds what the handle names whole (the originals,
    /// or the parts).
    pub whole: bool,
}

/// Answers `request` from `history` (everything the session recorded).
///
/// # Errors
///
/// [`MemoryError::Recall`] for a malformed handle or one this history does
/// not hold (another session's, say); counting errors.
pub async fn resolve(
    history: &[Message],
    request: &RecallRequest,
    counter: &dyn TokenCounter,
) -> Result<Recalled, MemoryError> {
    let handle = Handle::parse(&request.handle)?;
    let range = handle.find(history).ok_or_else(|| {
        MemoryError::Recall(format!(
            "no message of this session has the handle {handle}: it names nothing recorded here"
        ))
    })?;
    let messages = history[range.clone()].to_vec();
    let whole = match handle.parts {
        None => transcript::to_text(&messages),
        Some(_) => parts_text(&history[range.start], handle)?,
    };
    let tokens = counter.count(&whole).await?;
    let cap = request.max_tokens.unwrap_or(usize::MAX);
    if tokens <= cap {
        return Ok(Recalled {
            messages,
            text: whole,
            tokens,
            whole: true,
        });
    }
    let text = best_lines(&whole, request.query.as_deref(), cap, counter).await?;
    let tokens = counter.count(&text).await?;
    Ok(Recalled {
        messages,
        text,
        tokens,
        whole: false,
    })
}

/// The characters of `message`'s [`part_text`] that the parts of `handle`
/// name.
fn parts_text(message: &Message, handle: Handle) -> Result<String, MemoryError> {
    let text = part_text(message);
    let total = text.chars().count();
    match handle.chars(total) {
        Some(part) if !part.is_empty() => {
            Ok(text.chars().skip(part.start).take(part.len()).collect())
        }
        _ => Err(MemoryError::Recall(format!(
            "the handle {handle} names parts past the message's end: its text has {} parts of {PART_CHARS} characters",
            total.div_ceil(PART_CHARS)
        ))),
    }
}

/// The fewest characters of a word that [`best_lines`] matches a query by.
/// Why: shorter words ("a", "of", "is") are mostly function words every
/// line holds. Figure: none recorded.
const MIN_QUERY_WORD_CHARS: usize = 3;

/// The lines of `text` that share most words with `query` (the first and
/// last lines first without one), in their order, within `cap` tokens,
/// with a marker for each gap.
async fn best_lines(
    text: &str,
    query: Option<&str>,
    cap: usize,
    counter: &dyn TokenCounter,
) -> Result<String, MemoryError> {
    let lines: Vec<&str> = text.lines().collect();
    let words = |s: &str| -> Vec<String> {
        memory_text::lowercase_words(s, MIN_QUERY_WORD_CHARS).collect()
    };
    let wanted = query.map(words).unwrap_or_default();
    let n = lines.len();
    let mut order: Vec<usize> = (0..n).collect();
    // By shared words, then nearest an end: the head and the tail of an
    // output say most about it when nothing else does.
    order.sort_by_key(|&i| {
        let line = words(lines[i]);
        let shared = wanted.iter().filter(|w| line.contains(w)).count();
        (std::cmp::Reverse(shared), i.min(n - 1 - i))
    });
    let mut chosen = vec![false; n];
    // Room for the markers of the gaps.
    let marker = counter.count("[... lines omitted ...]").await?;
    let mut used = marker;
    for i in order {
        let cost = counter.count(lines[i]).await? + marker;
        if used + cost > cap {
            continue;
        }
        used += cost;
        chosen[i] = true;
    }
    let mut out = Vec::new();
    let mut gap = 0;
    for (i, line) in lines.iter().enumerate() {
        if chosen[i] {
            if gap > 0 {
                out.push(format!("[... {gap} lines omitted ...]"));
                gap = 0;
            }
            out.push((*line).to_string());
        } else {
            gap += 1;
        }
    }
    if gap > 0 {
        out.push(format!("[... {gap} lines omitted ...]"));
    }
    Ok(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counter::CharTokenCounter;
    use crate::handle::{Key, key};

    #[tokio::test]
    async fn a_cap_is_never_exceeded_and_the_query_picks_the_lines() {
        let output: String = (0..200)
            .map(|i| format!("line {i}: value_{i} ok\n"))
            .collect::<String>()
            + "line 200: ERROR disk full on /var\n";
        let history = vec![Message::user("run"), Message::tool_result("c", output)];
        let handle = Handle::of(&history[1..]).to_string();
        for cap in [40, 80, 200] {
            let request = RecallRequest {
                handle: handle.clone(),
                query: Some("disk error".into()),
                max_tokens: Some(cap),
            };
            let got = resolve(&history, &request, &CharTokenCounter)
                .await
                .unwrap();
            assert!(got.tokens <= cap, "{} > {cap}", got.tokens);
            assert!(!got.whole);
            assert!(got.text.contains("ERROR disk full"), "{}", got.text);
            assert_eq!(got.messages, history[1..]);
        }
    }

    #[tokio::test]
    async fn another_sessions_handle_is_refused() {
        let ours = vec![Message::user("ours")];
        let theirs = Handle::of(&[Message::user("theirs")]).to_string();
        let e = resolve(&ours, &RecallRequest::new(theirs), &CharTokenCounter)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("names nothing recorded here"), "{e}");
        assert!(
            resolve(&ours, &RecallRequest::new("r:1"), &CharTokenCounter)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn each_part_comes_back_whole_and_counts_within_reach_alone() {
        let args = format!(
            "{{\"path\": \"big.py\", \"text\": \"{}\"}}",
            "x = 1\n".repeat(600)
        );
        let history = vec![
            Message::user("write it"),
            Message::assistant_with_tools(
                "Writing.",
                vec![crate::ToolCall::new("c1", "write", args)],
            ),
            Message::tool_result("c1", "ok"),
        ];
        let text: Vec<char> = part_text(&history[1]).chars().collect();
        let handle = Handle::for_span(&history[1], 0..text.len(), text.len());
        let (first, last) = handle.parts().unwrap();
        assert_eq!((first, last), (1, text.len().div_ceil(PART_CHARS)));
        let mut back = String::new();
        for part in handle.each_part() {
            let got = resolve(
                &history,
                &RecallRequest::new(part.to_string()),
                &CharTokenCounter,
            )
            .await
            .unwrap();
            assert!(got.whole && got.messages == history[1..2]);
            back.push_str(&got.text);
        }
        // The parts, one after another, are the call's text and arguments.
        assert_eq!(back, text.iter().collect::<String>());
        // Past the end: refused, naming how many parts there are.
        let past = format!("r:{}#{}", Key(key(&history[1])), last + 1);
        let e = resolve(&history, &RecallRequest::new(past), &CharTokenCounter)
            .await
            .unwrap_err();
        assert!(e.to_string().contains(&format!("{last} parts")), "{e}");
        // The whole message is over a small reach; each part is within it.
        let counts = crate::counter::count_messages(&CharTokenCounter, &history)
            .await
            .unwrap();
        let max = counts[1] / 2;
        let context = [Message::user(format!("[left out; recall {handle}]"))];
        let whole = [Message::user(format!(
            "[left out; recall {}]",
            handle.whole()
        ))];
        assert!(reachable(&history, &counts, &whole, max).is_empty());
        let reached = reachable(&history, &counts, &context, max);
        assert_eq!(reached.len(), last);
        let joined: String = reached.iter().map(|r| r.text(&history)).collect();
        assert_eq!(joined, back);
    }
}
