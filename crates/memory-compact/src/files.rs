//! [`FileOps`]: the files that tool calls read and modified.
//!
//! A compaction removes the tool calls it summarizes, and with them the
//! plainest record of which files the agent looked at and changed. So the
//! paths are taken from the calls' JSON arguments before they go, carried
//! from one summary to the next, and written at the end of every summary in
//! two plain-text sections that [`FileOps::parse`] reads back:
//!
//! ```text
//! <read-files>
//! docs/design.md
//! </read-files>
//! <modified-files>
//! src/lib.rs
//! </modified-files>
//! ```
//!
//! A path argument is any of the keys [`PATH_KEYS`] (a string), or
//! `paths`/`files` (an array of strings). Whether the call read or modified
//! it is decided by [`classify`]: the arguments' `command` field first (as in
//! editor tools: `view`, `create`, `str_replace`, `insert`), then the tool's
//! name. A file both read and modified is listed as modified.

use std::collections::BTreeSet;

use memory_core::{Message, ToolCall};

/// Argument keys holding one path.
pub const PATH_KEYS: [&str; 9] = [
    "path",
    "file",
    "file_path",
    "filepath",
    "filename",
    "file_name",
    "target_file",
    "absolute_path",
    "relative_path",
];

/// Argument keys holding a list of paths.
const PATH_LIST_KEYS: [&str; 2] = ["paths", "files"];

/// Words of a tool name or command that mean the file is changed.
const MODIFYING: [&str; 20] = [
    "write",
    "create",
    "edit",
    "replace",
    "insert",
    "patch",
    "append",
    "delete",
    "remove",
    "rm",
    "move",
    "mv",
    "rename",
    "save",
    "update",
    "overwrite",
    "modify",
    "undo",
    "touch",
    "mkdir",
];

/// Words of a tool name or command that mean the file is only read.
const READING: [&str; 16] = [
    "read", "view", "cat", "open", "show", "get", "head", "tail", "ls", "list", "grep", "search",
    "find", "glob", "stat", "inspect",
];

const READ_OPEN: &str = "<read-files>";
const READ_CLOSE: &str = "</read-files>";
const MODIFIED_OPEN: &str = "<modified-files>";
const MODIFIED_CLOSE: &str = "</modified-files>";

/// What a tool call did to the files it names.
///
/// ```
/// use memory_compact::files::{classify, Access};
/// assert_eq!(classify("read_file", None), Access::Read);
/// assert_eq!(classify("str_replace_based_edit_tool", Some("view")), Access::Read);
/// assert_eq!(classify("str_replace_based_edit_tool", Some("insert")), Access::Modified);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// The file was looked at.
    Read,
    /// The file was created, changed, moved or deleted.
    Modified,
}

/// Classifies a call by its `command` argument when that names a file
/// operation, else by the tool's name. A name that says nothing either way
/// (`run_tests {"path": ...}`) counts as a read: the file was at least
/// referred to.
///
/// ```
/// use memory_compact::files::{classify, Access};
/// assert_eq!(classify("WriteFile", None), Access::Modified);
/// assert_eq!(classify("apply_patch", None), Access::Modified);
/// assert_eq!(classify("lint", None), Access::Read);
/// ```
pub fn classify(tool: &str, command: Option<&str>) -> Access {
    command
        .and_then(access_of_words)
        .or_else(|| access_of_words(tool))
        .unwrap_or(Access::Read)
}

/// The access the words of `name` say, modifying words first.
fn access_of_words(name: &str) -> Option<Access> {
    let words = words(name);
    if words.iter().any(|w| MODIFYING.contains(&w.as_str())) {
        Some(Access::Modified)
    } else if words.iter().any(|w| READING.contains(&w.as_str())) {
        Some(Access::Read)
    } else {
        None
    }
}

/// Lower-case words of an identifier: split at non-alphanumerics and at
/// lower-to-upper case changes (`readFile` is `read`, `file`).
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_numeric();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The files read and modified by tool calls, sorted.
///
/// ```
/// use memory_compact::FileOps;
/// use memory_core::{Message, ToolCall};
///
/// let mut ops = FileOps::new();
/// ops.record_messages(&[Message::assistant_with_tools("", vec![
///     ToolCall::new("1", "read_file", r#"{"path": "README.md"}"#),
///     ToolCall::new("2", "edit", r#"{"file_path": "src/main.rs", "old": "a", "new": "b"}"#),
/// ])]);
/// assert_eq!(ops.read_only().collect::<Vec<_>>(), ["README.md"]);
/// assert!(ops.modified.contains("src/main.rs"));
/// assert_eq!(FileOps::parse(&ops.render()), ops);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FileOps {
    /// Paths read (a path also modified is listed by [`render`](FileOps::render)
    /// as modified only).
    pub read: BTreeSet<String>,
    /// Paths created, changed, moved or deleted.
    pub modified: BTreeSet<String>,
}

impl FileOps {
    /// No files.
    ///
    /// ```
    /// assert!(memory_compact::FileOps::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no file is recorded.
    ///
    /// ```
    /// let mut ops = memory_compact::FileOps::new();
    /// ops.modified.insert("a.txt".into());
    /// assert!(!ops.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.modified.is_empty()
    }

    /// Records the paths one tool call names. Arguments that are not a JSON
    /// object, and paths that are blank, span lines or contain `<`, are
    /// ignored.
    ///
    /// ```
    /// use memory_compact::FileOps;
    /// use memory_core::ToolCall;
    /// let mut ops = FileOps::new();
    /// ops.record_call(&ToolCall::new("1", "str_replace_based_edit_tool",
    ///     r#"{"command": "create", "path": "notes/todo.md", "file_text": "- ship"}"#));
    /// ops.record_call(&ToolCall::new("2", "view_files", r#"{"paths": ["a.rs", "b.rs"]}"#));
    /// ops.record_call(&ToolCall::new("3", "shell", "not json"));
    /// assert!(ops.modified.contains("notes/todo.md"));
    /// assert_eq!(ops.read.len(), 2);
    /// ```
    pub fn record_call(&mut self, call: &ToolCall) {
        let Ok(serde_json::Value::Object(arguments)) =
            serde_json::from_str::<serde_json::Value>(&call.arguments)
        else {
            return;
        };
        let command = arguments.get("command").and_then(|c| c.as_str());
        let mut paths: Vec<&str> = PATH_KEYS
            .iter()
            .filter_map(|key| arguments.get(*key).and_then(|v| v.as_str()))
            .collect();
        for key in PATH_LIST_KEYS {
            if let Some(list) = arguments.get(key).and_then(|v| v.as_array()) {
                paths.extend(list.iter().filter_map(|v| v.as_str()));
            }
        }
        if paths.is_empty() {
            return;
        }
        let set = match classify(&call.name, command) {
            Access::Read => &mut self.read,
            Access::Modified => &mut self.modified,
        };
        for path in paths {
            if let Some(path) = clean(path) {
                set.insert(path.to_string());
            }
        }
    }

    /// Records every tool call of `messages`.
    ///
    /// ```
    /// use memory_compact::FileOps;
    /// use memory_core::{Message, ToolCall};
    /// let mut ops = FileOps::new();
    /// ops.record_messages(&[
    ///     Message::user("look at lib.rs"),
    ///     Message::assistant_with_tools("", vec![ToolCall::new("1", "cat", r#"{"file": "lib.rs"}"#)]),
    /// ]);
    /// assert!(ops.read.contains("lib.rs"));
    /// ```
    pub fn record_messages<'m>(&mut self, messages: impl IntoIterator<Item = &'m Message>) {
        for message in messages {
            for call in message.tool_calls() {
                self.record_call(call);
            }
        }
    }

    /// Adds every path of `other`.
    ///
    /// ```
    /// use memory_compact::FileOps;
    /// let mut a = FileOps::new();
    /// a.read.insert("x".into());
    /// let mut b = FileOps::new();
    /// b.modified.insert("y".into());
    /// a.merge(&b);
    /// assert_eq!((a.read.len(), a.modified.len()), (1, 1));
    /// ```
    pub fn merge(&mut self, other: &FileOps) {
        self.read.extend(other.read.iter().cloned());
        self.modified.extend(other.modified.iter().cloned());
    }

    /// The paths read and never modified, sorted.
    ///
    /// ```
    /// use memory_compact::FileOps;
    /// let mut ops = FileOps::new();
    /// ops.read.extend(["a".to_string(), "b".to_string()]);
    /// ops.modified.insert("b".into());
    /// assert_eq!(ops.read_only().collect::<Vec<_>>(), ["a"]);
    /// ```
    pub fn read_only(&self) -> impl Iterator<Item = &str> {
        self.read
            .iter()
            .filter(|p| !self.modified.contains(*p))
            .map(String::as_str)
    }

    /// The two sections, as they end a summary; empty when there are no
    /// files, and a section is left out when it has no paths.
    ///
    /// ```
    /// use memory_compact::FileOps;
    /// let mut ops = FileOps::new();
    /// ops.modified.insert("src/lib.rs".into());
    /// assert_eq!(ops.render(), "<modified-files>\nsrc/lib.rs\n</modified-files>");
    /// assert_eq!(FileOps::new().render(), "");
    /// ```
    pub fn render(&self) -> String {
        let mut sections = Vec::new();
        let read: Vec<&str> = self.read_only().collect();
        if !read.is_empty() {
            sections.push(format!("{READ_OPEN}\n{}\n{READ_CLOSE}", read.join("\n")));
        }
        if !self.modified.is_empty() {
            let modified: Vec<&str> = self.modified.iter().map(String::as_str).collect();
            sections.push(format!(
                "{MODIFIED_OPEN}\n{}\n{MODIFIED_CLOSE}",
                modified.join("\n")
            ));
        }
        sections.join("\n")
    }

    /// The paths listed in the sections of `text` (a summary written by
    /// [`render`](FileOps::render), or by hand); every section found counts.
    ///
    /// ```
    /// use memory_compact::FileOps;
    /// let ops = FileOps::parse("Goals: ship it.\n<read-files>\n a.md \n\n</read-files>");
    /// assert!(ops.read.contains("a.md") && ops.modified.is_empty());
    /// ```
    pub fn parse(text: &str) -> FileOps {
        let mut ops = FileOps::new();
        for (open, close, modified) in [
            (READ_OPEN, READ_CLOSE, false),
            (MODIFIED_OPEN, MODIFIED_CLOSE, true),
        ] {
            for inner in sections(text, open, close) {
                let set = if modified {
                    &mut ops.modified
                } else {
                    &mut ops.read
                };
                set.extend(inner.lines().filter_map(clean).map(str::to_string));
            }
        }
        ops
    }

    /// `text` without its file sections, trimmed: what a model wrote.
    ///
    /// ```
    /// use memory_compact::FileOps;
    /// let text = "## State\nDone.\n\n<modified-files>\nx.rs\n</modified-files>";
    /// assert_eq!(FileOps::strip(text), "## State\nDone.");
    /// ```
    pub fn strip(text: &str) -> String {
        let mut out = text.to_string();
        for (open, close) in [(READ_OPEN, READ_CLOSE), (MODIFIED_OPEN, MODIFIED_CLOSE)] {
            while let Some(start) = out.find(open) {
                let end = out[start..]
                    .find(close)
                    .map_or(out.len(), |k| start + k + close.len());
                out.replace_range(start..end, "");
            }
        }
        out.trim().to_string()
    }
}

/// The insides of every `open ... close` section of `text`; an unclosed
/// section runs to the end.
fn sections<'t>(text: &'t str, open: &str, close: &str) -> Vec<&'t str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        match after.find(close) {
            Some(end) => {
                out.push(&after[..end]);
                rest = &after[end + close.len()..];
            }
            None => {
                out.push(after);
                break;
            }
        }
    }
    out
}

/// A path as it may be listed: trimmed, one line, no `<`.
fn clean(path: &str) -> Option<&str> {
    let path = path.trim();
    (!path.is_empty() && !path.contains(['\n', '\r', '<'])).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall::new("c", name, arguments)
    }

    #[test]
    fn names_split_into_words_across_cases_and_separators() {
        assert_eq!(words("readFile"), ["read", "file"]);
        assert_eq!(
            words("str_replace_based_edit_tool")[..2],
            ["str", "replace"]
        );
        assert_eq!(words("HTTPGet"), ["httpget"]);
        assert_eq!(words("view-2files"), ["view", "2files"]);
    }

    #[test]
    fn the_command_decides_before_the_tool_name() {
        let mut ops = FileOps::new();
        ops.record_call(&call(
            "str_replace_based_edit_tool",
            r#"{"command":"view","path":"a.rs"}"#,
        ));
        ops.record_call(&call(
            "str_replace_based_edit_tool",
            r#"{"command":"str_replace","path":"b.rs"}"#,
        ));
        // A shell command line says nothing recognizable: the name decides.
        ops.record_call(&call("write_file", r#"{"command":"x y","path":"c.rs"}"#));
        assert_eq!(ops.read_only().collect::<Vec<_>>(), ["a.rs"]);
        assert_eq!(
            ops.modified.iter().map(String::as_str).collect::<Vec<_>>(),
            ["b.rs", "c.rs"]
        );
    }

    #[test]
    fn calls_without_paths_or_json_record_nothing() {
        let mut ops = FileOps::new();
        ops.record_call(&call("read_file", r#"{"q":"x"}"#));
        ops.record_call(&call("read_file", r#"["a.rs"]"#));
        ops.record_call(&call("read_file", r#"{"path":"  "}"#));
        ops.record_call(&call("read_file", r#"{"path":"a\nb"}"#));
        ops.record_call(&call("read_file", r#"{"path":7}"#));
        assert!(ops.is_empty());
    }

    #[test]
    fn render_and_parse_round_trip_and_modified_wins() {
        let mut ops = FileOps::new();
        ops.read.extend(["z.md".to_string(), "a.md".to_string()]);
        ops.modified
            .extend(["a.md".to_string(), "m.rs".to_string()]);
        let text = ops.render();
        assert_eq!(
            text,
            "<read-files>\nz.md\n</read-files>\n<modified-files>\na.md\nm.rs\n</modified-files>"
        );
        let back = FileOps::parse(&format!("Some summary.\n\n{text}"));
        assert_eq!(back.read_only().collect::<Vec<_>>(), ["z.md"]);
        assert_eq!(back.modified, ops.modified);
        assert_eq!(back.render(), text);
    }

    #[test]
    fn strip_removes_every_section_and_unclosed_ones() {
        let text = "A\n<read-files>\nx\n</read-files>\nB\n<modified-files>\ny";
        assert_eq!(FileOps::strip(text), "A\n\nB");
        assert_eq!(FileOps::parse(text).modified.len(), 1);
    }
}
