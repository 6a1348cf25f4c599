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
//!
//! Paths are listed in the order they were last touched, oldest first
//! (paths put into the sets directly, whose order is unknown, first and
//! sorted). A list too long for the summary's cap keeps the most recently
//! touched paths ([`FileOps::render_newest`]) and ends each section that
//! lost some with a line saying how many (`... and 12 more files`), which
//! [`FileOps::parse`] skips.

use std::collections::{BTreeMap, BTreeSet, HashSet};

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
#[derive(Debug, Clone, Default)]
pub struct FileOps {
    /// Paths read (a path also modified is listed by [`render`](FileOps::render)
    /// as modified only).
    pub read: BTreeSet<String>,
    /// Paths created, changed, moved or deleted.
    pub modified: BTreeSet<String>,
    /// When each path was last touched, by a rising sequence number.
    touched: BTreeMap<String, u64>,
    /// The next sequence number.
    clock: u64,
}

/// Two lists are equal when they hold the same paths, whatever the order
/// they were touched in.
impl PartialEq for FileOps {
    fn eq(&self, other: &Self) -> bool {
        self.read == other.read && self.modified == other.modified
    }
}

impl Eq for FileOps {}

impl std::hash::Hash for FileOps {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.read.hash(state);
        self.modified.hash(state);
    }
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
        let access = classify(&call.name, command);
        for path in paths {
            if let Some(path) = clean(path) {
                self.insert(access, path);
            }
        }
    }

    /// Records `path` as `access`ed, now: the most recently touched.
    ///
    /// ```
    /// use memory_compact::{files::Access, FileOps};
    /// let mut ops = FileOps::new();
    /// ops.insert(Access::Modified, "b.rs");
    /// ops.insert(Access::Read, "a.rs");
    /// assert_eq!(ops.by_recency(), ["b.rs", "a.rs"]);
    /// ```
    pub fn insert(&mut self, access: Access, path: &str) {
        let set = match access {
            Access::Read => &mut self.read,
            Access::Modified => &mut self.modified,
        };
        set.insert(path.to_string());
        self.touched.insert(path.to_string(), self.clock);
        self.clock += 1;
    }

    /// How many paths are listed (a path both read and modified once).
    ///
    /// ```
    /// let mut ops = memory_compact::FileOps::new();
    /// ops.read.insert("a".into());
    /// ops.modified.insert("a".into());
    /// assert_eq!(ops.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.read_only().count() + self.modified.len()
    }

    /// Every path, the least recently touched first (paths never touched
    /// through [`insert`](FileOps::insert), [`merge`](FileOps::merge) or
    /// [`parse`](FileOps::parse) first of all, sorted).
    ///
    /// ```
    /// let mut ops = memory_compact::FileOps::new();
    /// ops.read.insert("z".into());
    /// ops.insert(memory_compact::files::Access::Read, "a");
    /// assert_eq!(ops.by_recency(), ["z", "a"]);
    /// ```
    pub fn by_recency(&self) -> Vec<&str> {
        let all: BTreeSet<&str> = self
            .read
            .iter()
            .chain(&self.modified)
            .map(String::as_str)
            .collect();
        let mut known: Vec<(&str, u64)> = self
            .touched
            .iter()
            .filter(|(p, _)| all.contains(p.as_str()))
            .map(|(p, &n)| (p.as_str(), n))
            .collect();
        known.sort_by_key(|&(_, n)| n);
        let seen: HashSet<&str> = known.iter().map(|&(p, _)| p).collect();
        all.iter()
            .copied()
            .filter(|p| !seen.contains(p))
            .chain(known.into_iter().map(|(p, _)| p))
            .collect()
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
        for path in other.by_recency() {
            if other.modified.contains(path) {
                self.insert(Access::Modified, path);
            }
            if other.read.contains(path) {
                self.insert(Access::Read, path);
            }
        }
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
        self.render_newest(usize::MAX)
    }

    /// The two sections with only the `keep` most recently touched paths;
    /// a section that lost some ends with a line saying how many.
    ///
    /// ```
    /// use memory_compact::{files::Access, FileOps};
    /// let mut ops = FileOps::new();
    /// for path in ["a.rs", "b.rs", "c.rs"] {
    ///     ops.insert(Access::Modified, path);
    /// }
    /// assert_eq!(ops.render_newest(2), "<modified-files>\nb.rs\nc.rs\n... and 1 more files\n</modified-files>");
    /// assert_eq!(FileOps::parse(&ops.render_newest(2)).len(), 2);
    /// ```
    pub fn render_newest(&self, keep: usize) -> String {
        let order = self.by_recency();
        let kept = &order[order.len().saturating_sub(keep)..];
        let mut sections = Vec::new();
        for (open, close, modified) in [
            (READ_OPEN, READ_CLOSE, false),
            (MODIFIED_OPEN, MODIFIED_CLOSE, true),
        ] {
            let in_section = |p: &&&str| self.modified.contains(**p) == modified;
            let total = order.iter().filter(in_section).count();
            if total == 0 {
                continue;
            }
            let mut lines: Vec<String> = kept
                .iter()
                .filter(in_section)
                .map(|p| p.to_string())
                .collect();
            if lines.len() < total {
                lines.push(more_line(total - lines.len()));
            }
            sections.push(format!("{open}\n{}\n{close}", lines.join("\n")));
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
            let access = if modified {
                Access::Modified
            } else {
                Access::Read
            };
            for inner in sections(text, open, close) {
                for path in inner.lines().filter_map(clean) {
                    if !is_more_line(path) {
                        ops.insert(access, path);
                    }
                }
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

/// The line that ends a section which lost `n` paths.
fn more_line(n: usize) -> String {
    format!("... and {n} more files")
}

/// Whether `line` is a [`more_line`].
fn is_more_line(line: &str) -> bool {
    line.strip_prefix("... and ")
        .and_then(|rest| rest.strip_suffix(" more files"))
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
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
