//! Support recall: could the model still have taken the step it actually
//! took?
//!
//! A replay knows the assistant message that follows each measured context:
//! the next recorded message. The identifiers in it (in its text, reasoning
//! and tool-call arguments) that the agent could only have learned from
//! earlier history, and not from the newest message, are what the context
//! must still hold for that step to be possible. `support_recall` is the
//! share of them present in the context.
//!
//! Identifiers ([`identifiers`]) are paths (`src/lib.rs`, `/testbed/a.py`),
//! dotted names (`os.path.join`, `setup.cfg`), snake_case names, CamelCase
//! and camelCase names, and numbers of 3 or more digits. An identifier
//! *occurs* in a text when it appears there delimited: the characters
//! around it are not letters, digits or `_`. Tool-call arguments are read
//! as JSON and their string values searched, so escapes do not hide a name.
//!
//! Limits: a lexical proxy, not a judgement of what the model needed. It
//! misses knowledge that is not spelled as an identifier (a plan, a value
//! in words), counts identifiers the model could have guessed, and gives
//! full marks to a context that keeps a name but not what the name
//! referred to (a summary listing a path without its content).

use std::collections::BTreeSet;

use memory_core::Message;

/// The identifiers in `text`, each once, in order of first appearance.
///
/// ```
/// let ids = memory_cli::support::identifiers(
///     "Edit src/arrow/formatter.py: DateTimeFormatter.format_token fails on line 1234 (see issue 42).",
/// );
/// assert_eq!(ids, ["src/arrow/formatter.py", "DateTimeFormatter.format_token", "1234"]);
/// ```
pub fn identifiers(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for token in text.split(|c: char| !is_token_char(c)) {
        let token = trim_token(token);
        if is_identifier(token) && seen.insert(token) {
            out.push(token.to_string());
        }
    }
    out
}

/// The text an identifier is looked for in: content, reasoning, tool-call
/// names and the string values of tool-call arguments (read as JSON when
/// they parse), one per line.
///
/// ```
/// use memory_core::{Message, ToolCall};
/// let m = Message::assistant_with_tools("Reading it.", vec![
///     ToolCall::new("c1", "read_file", r#"{"path": "src/main.rs\n"}"#),
/// ]);
/// let text = memory_cli::support::searchable_text(&m);
/// assert!(text.contains("read_file") && text.contains("src/main.rs\n"));
/// ```
pub fn searchable_text(message: &Message) -> String {
    text_of(message, true)
}

/// The text of `message`; with `schema`, tool-call names and argument keys
/// too. What a step *says* leaves them out: the model knows its tools and
/// their parameters from the tool definitions, not from the history.
fn text_of(message: &Message, schema: bool) -> String {
    let mut text = message.text();
    if let Message::Assistant {
        reasoning,
        tool_calls,
        ..
    } = message
    {
        if let Some(reasoning) = reasoning {
            text.push('\n');
            text.push_str(reasoning);
        }
        for call in tool_calls {
            text.push('\n');
            if schema {
                text.push_str(&call.name);
                text.push('\n');
            }
            match serde_json::from_str::<serde_json::Value>(&call.arguments) {
                Ok(value) => push_strings(&value, schema, &mut text),
                Err(_) => text.push_str(&call.arguments),
            }
        }
    }
    text
}

/// Appends every string and number of `value` (and, with `keys`, every
/// object key), one per line.
fn push_strings(value: &serde_json::Value, keys: bool, text: &mut String) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            text.push_str(s);
            text.push('\n');
        }
        Value::Number(n) => {
            text.push_str(&n.to_string());
            text.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| push_strings(v, keys, text)),
        Value::Object(map) => {
            for (key, v) in map {
                if keys {
                    text.push_str(key);
                    text.push('\n');
                }
                push_strings(v, keys, text);
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// Whether `identifier` appears in `text` with no letter, digit or `_`
/// right before or after it.
///
/// ```
/// use memory_cli::support::occurs;
/// assert!(occurs("src/lib.rs", "open /repo/src/lib.rs now"));
/// assert!(!occurs("1234", "12345"));
/// assert!(!occurs("fix_it", "prefix_it"));
/// ```
pub fn occurs(identifier: &str, text: &str) -> bool {
    if identifier.is_empty() {
        return false;
    }
    let bounded = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
    let mut from = 0;
    while let Some(at) = text[from..].find(identifier) {
        let start = from + at;
        let end = start + identifier.len();
        if bounded(text[..start].chars().next_back()) && bounded(text[end..].chars().next()) {
            return true;
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The identifiers of `next` that a context must hold for the step: those
/// that occur in `history` (the searchable text of everything recorded
/// before the call) and not in `newest` (that of the newest recorded
/// message), each once.
///
/// ```
/// use memory_core::Message;
/// let next = Message::assistant("I will edit src/util.py and parse_date next.");
/// let history = "read src/util.py\ndef parse_date(): ...\nran tests";
/// let wanted = memory_cli::support::wanted(&next, history, "ran tests");
/// assert_eq!(wanted, ["src/util.py", "parse_date"]);
/// ```
pub fn wanted(next: &Message, history: &str, newest: &str) -> Vec<String> {
    identifiers(&text_of(next, false))
        .into_iter()
        .filter(|id| !occurs(id, newest) && occurs(id, history))
        .collect()
}

/// What one call must recall, and how much of it the context holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Support {
    /// Identifiers of the next step learned from earlier history.
    pub wanted: usize,
    /// Of those, the ones present in the context.
    pub found: usize,
}

impl Support {
    /// Measures one call: `next` is the assistant message that follows,
    /// `history` the searchable text of everything recorded before the
    /// call, `newest` that of the newest recorded message, and `context`
    /// that of the context sent.
    ///
    /// ```
    /// use memory_cli::support::Support;
    /// use memory_core::Message;
    /// let next = Message::assistant("I will edit src/util.py and parse_date next.");
    /// let history = "read src/util.py\ndef parse_date(): ...\nran tests";
    /// let s = Support::measure(&next, history, "ran tests", "def parse_date(): ...");
    /// assert_eq!((s.wanted, s.found), (2, 1));
    /// assert_eq!(s.recall(), Some(0.5));
    /// ```
    pub fn measure(next: &Message, history: &str, newest: &str, context: &str) -> Self {
        Self::in_context(&wanted(next, history, newest), context)
    }

    /// How many of `wanted` (see [`wanted`]) `context` holds.
    ///
    /// ```
    /// use memory_cli::support::Support;
    /// let wanted = ["src/util.py".to_string(), "parse_date".to_string()];
    /// let s = Support::in_context(&wanted, "def parse_date(): ...");
    /// assert_eq!((s.wanted, s.found), (2, 1));
    /// ```
    pub fn in_context(wanted: &[String], context: &str) -> Self {
        Support {
            wanted: wanted.len(),
            found: wanted.iter().filter(|id| occurs(id, context)).count(),
        }
    }

    /// `found / wanted`, or `None` when there is nothing to recall.
    ///
    /// ```
    /// assert_eq!(memory_cli::support::Support::default().recall(), None);
    /// ```
    pub fn recall(&self) -> Option<f64> {
        (self.wanted > 0).then(|| self.found as f64 / self.wanted as f64)
    }
}

/// Characters a token may hold before it is classified.
fn is_token_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')
}

/// Strips what a sentence puts around a name: leading and trailing dots,
/// dashes, and a trailing slash on anything but a path root.
fn trim_token(token: &str) -> &str {
    token
        .trim_start_matches(['.', '-'])
        .trim_end_matches(['.', '-', '/'])
}

/// Whether a trimmed token is an identifier (see the module docs).
fn is_identifier(token: &str) -> bool {
    if token.is_empty() || !token.chars().any(char::is_alphanumeric) {
        return false;
    }
    let digits = token.chars().filter(char::is_ascii_digit).count();
    let letters = token.chars().filter(|c| c.is_alphabetic()).count();
    if letters == 0 {
        // Numbers: 3 or more digits in a row, not a dotted version or date.
        return !token.contains(['.', '/', '-']) && digits >= 3;
    }
    // Two named parts, one of them longer than a letter (so `e.g` is not).
    let has_inner = |sep: char| {
        let parts: Vec<&str> = token
            .split(sep)
            .filter(|part| part.chars().any(char::is_alphanumeric))
            .collect();
        parts.len() >= 2 && parts.iter().any(|part| part.chars().count() >= 2)
    };
    has_inner('/') || has_inner('.') || is_snake(token) || is_camel(token)
}

/// `snake_case`, `_private`, `__dunder__`: an underscore and a letter.
fn is_snake(token: &str) -> bool {
    token.contains('_') && token.chars().any(char::is_alphabetic)
}

/// `CamelCase` or `camelCase`: a lower-case letter followed by an
/// upper-case one somewhere in a name that is not all capitals.
fn is_camel(token: &str) -> bool {
    let chars: Vec<char> = token.chars().collect();
    chars
        .windows(2)
        .any(|w| w[0].is_lowercase() && w[1].is_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::ToolCall;

    #[test]
    fn each_kind_of_identifier_is_found() {
        let text = "Look at /testbed/arrow/arrow.py and setup.cfg; call os.path.join, \
                    fix_issue, __format__, ArrowFactory and getValue; PR 4021, v1.2.3, \
                    2023-05-01, 12 items, The End.";
        assert_eq!(
            identifiers(text),
            [
                "/testbed/arrow/arrow.py",
                "setup.cfg",
                "os.path.join",
                "fix_issue",
                "__format__",
                "ArrowFactory",
                "getValue",
                "4021",
                "v1.2.3",
            ]
        );
    }

    #[test]
    fn plain_words_and_short_numbers_are_not_identifiers() {
        assert!(identifiers("The quick brown fox, e.g. a test. Done. 42 and 7.").is_empty());
        assert!(identifiers("Hello World HTTP API").is_empty());
    }

    #[test]
    fn tool_call_arguments_are_searched_as_their_string_values() {
        let next = Message::assistant_with_tools(
            "",
            vec![ToolCall::new(
                "c9",
                "str_replace_editor",
                r#"{"command": "str_replace", "path": "/testbed/src/parser.py", "old_str": "\nparse_iso(value)"}"#,
            )],
        );
        let ids = identifiers(&searchable_text(&next));
        assert!(
            ids.contains(&"/testbed/src/parser.py".to_string()),
            "{ids:?}"
        );
        assert!(ids.contains(&"parse_iso".to_string()), "{ids:?}");
        assert!(ids.contains(&"str_replace_editor".to_string()), "{ids:?}");
    }

    #[test]
    fn a_context_that_keeps_everything_scores_one_and_one_that_drops_the_file_read_scores_less() {
        let read = Message::tool_result(
            "r1",
            "def parse_iso(value):\n    return Parser.parse(value)",
        );
        let newest = Message::tool_result("t1", "3 passed, 1 failed");
        let next = Message::assistant_with_tools(
            "",
            vec![ToolCall::new(
                "e1",
                "edit",
                r#"{"path": "src/parser.py", "old": "Parser.parse(value)", "new": "Parser.parse_iso(value)"}"#,
            )],
        );
        let opened = Message::assistant_with_tools(
            "",
            vec![ToolCall::new("r1", "read", r#"{"path": "src/parser.py"}"#)],
        );
        let history: String = [&opened, &read, &newest]
            .iter()
            .map(|m| searchable_text(m))
            .collect::<Vec<_>>()
            .join("\n");
        let newest_text = searchable_text(&newest);
        let full = Support::measure(&next, &history, &newest_text, &history);
        assert_eq!(full.recall(), Some(1.0));
        assert!(full.wanted >= 2, "{full:?}");
        let dropped = [&opened, &newest]
            .iter()
            .map(|m| searchable_text(m))
            .collect::<Vec<_>>()
            .join("\n");
        let partial = Support::measure(&next, &history, &newest_text, &dropped);
        assert!(partial.recall().unwrap() < 1.0, "{partial:?}");
    }

    #[test]
    fn names_seen_only_in_the_newest_message_or_nowhere_are_not_asked_for() {
        let next = Message::assistant("Now run tests/test_new.py and check brand_new_name.");
        let s = Support::measure(
            &next,
            "tests/test_new.py was created",
            "tests/test_new.py",
            "",
        );
        assert_eq!(s, Support::default());
        assert_eq!(s.recall(), None);
    }

    #[test]
    fn occurrences_respect_boundaries_and_multibyte_text() {
        assert!(occurs("a_b", "é a_b é"));
        assert!(!occurs("a_b", "éa_bé"));
        assert!(occurs("1234", "x 1234 y 12345"));
        assert!(!occurs("", "anything"));
    }
}
