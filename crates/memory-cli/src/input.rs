//! Loading a transcript file: format detection, conversion, validation.
//!
//! The format is detected from the content, never from the file name:
//!
//! | content | [`Format`] |
//! |---|---|
//! | a JSON array of messages (objects with `role`) | [`Format::ChatMessages`] |
//! | a JSON array of objects with `messages` (or one such object) | [`Format::ChatTrajectories`] |
//! | one message per line (JSONL) | [`Format::ChatMessages`], `lines: true` |
//! | one trajectory object per line (JSONL) | [`Format::ChatTrajectories`], `lines: true` |
//! | a JSON array of objects with `conversation` and `qa` | [`Format::Locomo`] |
//! | one object with `history` and/or `trajectory` (SWE-agent `.traj`) | [`Format::SweAgentTraj`] |
//!
//! JSON documents may be laid out over any number of lines (pretty-printed);
//! JSONL holds one value per line.
//!
//! A new format adds a variant, a rule in `detect` and a loader module.
//!
//! A LoCoMo file replays as one transcript per conversation ([`parse`]);
//! `memory eval locomo` loads its questions and evidence too
//! ([`parse_locomo`]).

mod check;
mod json;
mod locomo;
mod openai;
mod traj;

use std::path::Path;

use memory_core::Message;
use serde_json::Value;

use crate::CliError;

pub use check::{Repairs, Verdict, check};
pub use locomo::{Evidence, Locomo, Question, Sample, parse_dia_id};

/// A position in the input and what is wrong there, before the file name is
/// attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Where: `line 3, column 9`, `trajectory 2, message 14`, ...
    pub position: String,
    /// What is wrong.
    pub problem: String,
}

impl Located {
    /// A problem at a position.
    ///
    /// ```
    /// let l = memory_cli::input::Located::new("message 3", "field `role`: is missing");
    /// assert_eq!(l.position, "message 3");
    /// ```
    pub fn new(position: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            position: position.into(),
            problem: problem.into(),
        }
    }

    /// The [`CliError`] for this problem in `file`.
    ///
    /// ```
    /// let e = memory_cli::input::Located::new("line 1, column 2", "bad").in_file("a.json");
    /// assert_eq!(e.to_string(), "a.json: line 1, column 2: bad");
    /// ```
    pub fn in_file(self, file: impl Into<String>) -> CliError {
        CliError::Input {
            file: file.into(),
            position: self.position,
            problem: self.problem,
        }
    }
}

/// A detected input format.
///
/// ```
/// use memory_cli::input::Format;
/// assert_eq!(Format::ChatMessages { lines: true }.to_string(), "OpenAI chat messages, JSONL");
/// assert_eq!(Format::SweAgentTraj.to_string(), "SWE-agent trajectory");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI chat messages: one transcript.
    ChatMessages {
        /// One message per line (JSONL) rather than one JSON array.
        lines: bool,
    },
    /// Trajectories `{"messages": [...], ...}`: one transcript each.
    ChatTrajectories {
        /// One trajectory per line (JSONL) rather than one JSON array.
        lines: bool,
    },
    /// LoCoMo samples `{"conversation": {...}, "qa": [...], ...}`: one
    /// transcript per conversation, `speaker_a` as the user.
    Locomo,
    /// A SWE-agent `.traj` file `{"history": [...], "trajectory": [...],
    /// ...}`: one transcript, read from `history` (or, without it, from the
    /// steps of `trajectory`).
    SweAgentTraj,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, lines) = match self {
            Format::ChatMessages { lines } => ("messages", *lines),
            Format::ChatTrajectories { lines } => ("trajectories", *lines),
            Format::Locomo => return f.write_str("LoCoMo JSON"),
            Format::SweAgentTraj => return f.write_str("SWE-agent trajectory"),
        };
        let layout = if lines { "JSONL" } else { "JSON" };
        write!(f, "OpenAI chat {what}, {layout}")
    }
}

/// Where a trajectory came from in the file, to name positions in errors.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    /// The whole document is one transcript.
    Document,
    /// One JSONL line per message; the line of each message.
    Lines(Vec<usize>),
    /// Element `index` of an array of trajectories.
    Element(usize),
    /// A JSONL line holding trajectory `index`.
    Line {
        /// The line (1-based).
        line: usize,
        /// The trajectory's index.
        index: usize,
    },
    /// LoCoMo sample `index`, with the `dia_id` of each message.
    Sample {
        /// How the sample is named (`sample 2 (conv-41)`).
        name: String,
        /// The `dia_id` of each message.
        dia_ids: Vec<String>,
    },
    /// A SWE-agent trajectory: the `history` entry (or `trajectory` step)
    /// each message came from.
    Entries {
        /// How one is named: `history entry`, `trajectory step`.
        unit: &'static str,
        /// The entry of each message.
        entries: Vec<usize>,
    },
}

/// One transcript to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    /// Its name in the file (`instance_id`, `id`, ...), when it has one.
    pub label: Option<String>,
    /// The messages, in order.
    pub messages: Vec<Message>,
    origin: Origin,
    /// The task, when it is not the first user message (see
    /// [`task_after_demonstrations`](Trajectory::task_after_demonstrations)).
    task_after_demos: Option<usize>,
}

impl Trajectory {
    fn new(label: Option<String>, messages: Vec<Message>, origin: Origin) -> Self {
        Self {
            label,
            messages,
            origin,
            task_after_demos: None,
        }
    }

    /// The session's task when it is not its first user message: in a
    /// SWE-agent trajectory whose demonstrations come before the request,
    /// the first user message that is not a demonstration (a worked
    /// example is not what the agent was asked to do). `None` when the
    /// task is the first user message, as
    /// [`structure::task`](memory_core::structure::task) finds it.
    ///
    /// ```
    /// let input = memory_cli::input::parse(br#"{"history": [
    ///   {"role": "system", "content": "rules"},
    ///   {"role": "user", "content": "an example", "is_demo": true},
    ///   {"role": "user", "content": "fix the bug"}]}"#).unwrap();
    /// assert_eq!(input.trajectories[0].task_after_demonstrations(), Some(2));
    /// let input = memory_cli::input::parse(br#"[{"role": "user", "content": "hi"}]"#).unwrap();
    /// assert_eq!(input.trajectories[0].task_after_demonstrations(), None);
    /// ```
    pub fn task_after_demonstrations(&self) -> Option<usize> {
        self.task_after_demos
    }

    /// How errors name this trajectory: `trajectory 2`, `line 3 (trajectory
    /// 2)`, or `transcript` when the file holds just one.
    ///
    /// ```
    /// let input = memory_cli::input::parse(br#"[{"messages": []}, {"messages": []}]"#).unwrap();
    /// assert_eq!(input.trajectories[1].name(), "trajectory 1");
    /// ```
    pub fn name(&self) -> String {
        match &self.origin {
            Origin::Document | Origin::Lines(_) | Origin::Entries { .. } => {
                "transcript".to_string()
            }
            Origin::Element(index) => format!("trajectory {index}"),
            Origin::Line { line, index } => format!("line {line} (trajectory {index})"),
            Origin::Sample { name, .. } => name.clone(),
        }
    }

    /// How errors name message `index` of this trajectory.
    ///
    /// ```
    /// let input = memory_cli::input::parse(b"{\"role\": \"user\", \"content\": \"a\"}\n{\"role\": \"assistant\"}\n").unwrap();
    /// assert_eq!(input.trajectories[0].position(1), "line 2 (message 1)");
    /// ```
    pub fn position(&self, index: usize) -> String {
        match &self.origin {
            Origin::Document => format!("message {index}"),
            Origin::Lines(lines) => match lines.get(index) {
                Some(line) => format!("line {line} (message {index})"),
                None => format!("message {index}"),
            },
            Origin::Element(_) | Origin::Line { .. } => {
                format!("{}, message {index}", self.name())
            }
            Origin::Sample { name, dia_ids } => match dia_ids.get(index) {
                Some(id) if locomo::is_marker_id(id) => format!("{name}, {id} date"),
                Some(id) => format!("{name}, utterance {id}"),
                None => format!("{name}, message {index}"),
            },
            Origin::Entries { unit, entries } => match entries.get(index) {
                Some(entry) => format!("{unit} {entry}"),
                None => format!("message {index}"),
            },
        }
    }
}

/// A loaded input file.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The detected format.
    pub format: Format,
    /// The transcripts, in file order.
    pub trajectories: Vec<Trajectory>,
}

impl Input {
    /// Messages over all trajectories.
    ///
    /// ```
    /// let input = memory_cli::input::parse(br#"[{"role": "user", "content": "hi"}]"#).unwrap();
    /// assert_eq!(input.message_count(), 1);
    /// ```
    pub fn message_count(&self) -> usize {
        self.trajectories.iter().map(|t| t.messages.len()).sum()
    }
}

/// Reads and parses `path` (see [`parse`]).
///
/// # Errors
///
/// [`CliError::Read`] when the file cannot be read, [`CliError::Input`] when
/// its content is not a transcript.
pub fn load(path: &Path) -> Result<Input, CliError> {
    let file = path.display().to_string();
    let bytes = read_bounded(path, MAX_INPUT_BYTES)?;
    parse(&bytes).map_err(|l| l.in_file(file))
}

/// The largest transcript read, in bytes (512 MiB): a transcript is held in
/// memory whole, with its parsed form beside it, so a larger one is refused
/// with [`CliError::TooLarge`] rather than allowed to exhaust the machine.
pub const MAX_INPUT_BYTES: u64 = 512 * 1024 * 1024;

/// The bytes of `path`, refused once more than `limit` of them are read
/// (whatever the file's size claims: a pipe has none).
///
/// # Errors
///
/// [`CliError::Read`] when the file cannot be read, [`CliError::TooLarge`]
/// over the limit.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.json");
/// std::fs::write(&path, b"[1, 2, 3]").unwrap();
/// assert_eq!(memory_cli::input::read_bounded(&path, 9).unwrap(), b"[1, 2, 3]");
/// let error = memory_cli::input::read_bounded(&path, 8).unwrap_err();
/// assert!(error.to_string().contains("over the limit of 8 bytes"), "{error}");
/// assert_eq!(error.exit_code(), 2);
/// ```
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, CliError> {
    use std::io::Read as _;
    let file = path.display().to_string();
    let read_error = |source| CliError::Read {
        file: file.clone(),
        source,
    };
    let handle = std::fs::File::open(path).map_err(read_error)?;
    if let Ok(meta) = handle.metadata()
        && meta.is_file()
        && meta.len() > limit
    {
        return Err(CliError::TooLarge {
            file,
            bytes: meta.len(),
            limit,
        });
    }
    let mut bytes = Vec::new();
    handle
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(CliError::TooLarge {
            file,
            bytes: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Detects the format of `bytes` and converts every transcript.
///
/// # Errors
///
/// The position and nature of the first problem: invalid UTF-8 (byte
/// offset), invalid JSON (line and column), an unrecognized layout, a
/// malformed trajectory or message (trajectory and message index, or the
/// entry of a SWE-agent `history`).
///
/// ```
/// use memory_cli::input::{parse, Format};
/// let input = parse(br#"[{"instance_id": "a", "messages": [{"role": "user", "content": "hi"}]}]"#).unwrap();
/// assert_eq!(input.format, Format::ChatTrajectories { lines: false });
/// assert_eq!(input.trajectories[0].label.as_deref(), Some("a"));
/// let err = parse(br#"[{"role": "user", "content": "hi"}, 7]"#).unwrap_err();
/// assert_eq!(err.position, "message 1");
/// let traj = parse(br#"{"history": [{"role": "user", "content": "fix it", "message_type": "observation"},
///   {"role": "assistant", "content": "", "thought": "Look.", "action": "ls"}], "trajectory": []}"#).unwrap();
/// assert_eq!(traj.format, Format::SweAgentTraj);
/// assert_eq!(traj.trajectories[0].messages[1].text(), "Look.\nls");
/// let err = parse(br#"{"history": [{"role": "user", "content": "a"}, {"content": "b"}]}"#).unwrap_err();
/// assert_eq!((err.position.as_str(), err.problem.as_str()), ("history entry 1", "field `role`: is missing"));
/// ```
pub fn parse(bytes: &[u8]) -> Result<Input, Located> {
    let text = json::decode(bytes)?;
    let records = json::records(text)?;
    let format = detect(&records)?;
    let trajectories = match format {
        Format::Locomo => locomo::load(records)?
            .samples
            .into_iter()
            .enumerate()
            .map(|(index, sample)| {
                let origin = Origin::Sample {
                    name: sample.name(index),
                    dia_ids: sample.dia_ids,
                };
                Trajectory::new(sample.label, sample.messages, origin)
            })
            .collect(),
        Format::SweAgentTraj => records.iter().map(traj::load).collect::<Result<_, _>>()?,
        _ => openai::load(records, format)?,
    };
    Ok(Input {
        format,
        trajectories,
    })
}

/// Reads and parses a LoCoMo file (see [`parse_locomo`]).
///
/// # Errors
///
/// [`CliError::Read`] when the file cannot be read, [`CliError::Input`] when
/// its content is not LoCoMo.
pub fn load_locomo(path: &Path) -> Result<Locomo, CliError> {
    let file = path.display().to_string();
    let bytes = read_bounded(path, MAX_INPUT_BYTES)?;
    parse_locomo(&bytes).map_err(|l| l.in_file(file))
}

/// Parses a LoCoMo file with its questions and evidence.
///
/// # Errors
///
/// As [`parse`], and when the content is another format.
///
/// ```
/// let e = memory_cli::input::parse_locomo(br#"[{"role": "user", "content": "hi"}]"#).unwrap_err();
/// assert_eq!(e.position, "line 1");
/// assert!(e.problem.contains("found OpenAI chat messages"), "{}", e.problem);
/// ```
pub fn parse_locomo(bytes: &[u8]) -> Result<Locomo, Located> {
    let text = json::decode(bytes)?;
    let records = json::records(text)?;
    let line = records.first().map_or(1, |r| r.line);
    match detect(&records) {
        Ok(Format::Locomo) => locomo::load(records),
        Ok(other) => Err(Located::new(
            format!("line {line}"),
            format!(
                "expected LoCoMo JSON (an array of samples with `conversation` and `qa`), found {other}"
            ),
        )),
        Err(e) => {
            let what = e.problem.split("; expected").next().unwrap_or_default();
            Err(Located::new(
                e.position,
                format!(
                    "{what}; expected LoCoMo JSON (an array of samples with `conversation` and `qa`)"
                ),
            ))
        }
    }
}

/// What the records are. One record is a JSON document; several are JSONL.
fn detect(records: &[json::Record]) -> Result<Format, Located> {
    const EXPECTED: &str = "expected OpenAI chat JSON: an array of messages, an array of \
        {\"messages\": [...]} trajectories, or one message or trajectory object per line (JSONL); \
        or LoCoMo JSON: an array of samples with `conversation` and `qa`; or a SWE-agent \
        trajectory: one object with `history` or `trajectory`";
    match records {
        [] => Err(Located::new(
            "line 1",
            format!("the input is empty; {EXPECTED}"),
        )),
        [record] => match &record.value {
            Value::Array(items) => match items.first() {
                None => Err(Located::new(
                    format!("line {}", record.line),
                    format!("the array is empty; {EXPECTED}"),
                )),
                Some(first) if locomo::is_sample(first) => Ok(Format::Locomo),
                Some(first) if openai::is_trajectory(first) => {
                    Ok(Format::ChatTrajectories { lines: false })
                }
                Some(_) => Ok(Format::ChatMessages { lines: false }),
            },
            value if locomo::is_sample(value) => Ok(Format::Locomo),
            value if openai::is_trajectory(value) => Ok(Format::ChatTrajectories { lines: false }),
            value if traj::is_traj(value) => Ok(Format::SweAgentTraj),
            value if openai::is_message(value) => Ok(Format::ChatMessages { lines: true }),
            value => Err(Located::new(
                format!("line {}", record.line),
                format!("found {}; {EXPECTED}", openai::kind(value)),
            )),
        },
        [first, ..] => {
            if openai::is_trajectory(&first.value) {
                Ok(Format::ChatTrajectories { lines: true })
            } else {
                Ok(Format::ChatMessages { lines: true })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_openai_layout_is_detected() {
        let cases: [(&[u8], Format, usize); 5] = [
            (br#"[{"role":"user","content":"a"}]"#, Format::ChatMessages { lines: false }, 1),
            (b"{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\"}\n", Format::ChatMessages { lines: true }, 1),
            (br#"[{"messages":[]},{"messages":[]}]"#, Format::ChatTrajectories { lines: false }, 2),
            (br#"{"messages":[{"role":"user","content":"a"}]}"#, Format::ChatTrajectories { lines: false }, 1),
            (b"{\"messages\":[]}\n{\"messages\":[]}\n{\"messages\":[]}\n", Format::ChatTrajectories { lines: true }, 3),
        ];
        for (bytes, format, n) in cases {
            let input = parse(bytes).unwrap();
            assert_eq!(input.format, format);
            assert_eq!(input.trajectories.len(), n);
        }
    }

    #[test]
    fn positions_follow_the_layout() {
        let e = parse(br#"[{"messages":[]},{"messages":[{"role":"user"},{"content":"x"}]}]"#)
            .unwrap_err();
        assert_eq!(
            e,
            Located::new("trajectory 1, message 1", "field `role`: is missing")
        );
        let e = parse(b"{\"messages\":[]}\n{\"messages\":[\"hi\"]}\n").unwrap_err();
        assert_eq!(
            e,
            Located::new(
                "line 2 (trajectory 1), message 0",
                "expected an object, found a string"
            )
        );
        let e = parse(b"{\"role\":\"user\",\"content\":\"a\"}\n\n{\"role\":1}\n").unwrap_err();
        assert_eq!(e.position, "line 3 (message 1)");
        let e = parse(br#"[{"messages":[]},{"instance_id":"x"}]"#).unwrap_err();
        assert_eq!(e.position, "trajectory 1");
        assert!(e.problem.starts_with("field `messages`: is missing"));
    }

    #[test]
    fn locomo_is_detected_and_replays_one_transcript_per_sample() {
        let bytes = br#"[{"sample_id": "c1", "qa": [], "conversation": {"speaker_a": "A", "speaker_b": "B",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}, {"speaker": "B", "dia_id": "D1:2", "text": "yo"}],
            "session_2_date_time": "9 May, 2023", "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "back"}]}},
            {"qa": [], "conversation": {"speaker_a": "A", "speaker_b": "B"}}]"#;
        let input = parse(bytes).unwrap();
        assert_eq!(input.format, Format::Locomo);
        assert_eq!(input.format.to_string(), "LoCoMo JSON");
        assert_eq!(input.trajectories.len(), 2);
        let t = &input.trajectories[0];
        assert_eq!(t.label.as_deref(), Some("c1"));
        assert_eq!(
            t.messages,
            [
                Message::user("hi"),
                Message::assistant("yo"),
                Message::system("Session 2: 9 May, 2023"),
                Message::user("back")
            ]
        );
        assert_eq!(t.position(1), "sample 0 (c1), utterance D1:2");
        assert_eq!(t.position(2), "sample 0 (c1), session 2 date");
        assert_eq!(input.trajectories[1].name(), "sample 1");
        assert_eq!(parse_locomo(bytes).unwrap().samples.len(), 2);
        let e = parse_locomo(b"[]").unwrap_err();
        assert!(
            e.problem
                .starts_with("the array is empty; expected LoCoMo JSON"),
            "{}",
            e.problem
        );
    }

    #[test]
    fn unusable_documents_say_what_is_expected() {
        for bytes in [&b""[..], b"  \n", b"[]", b"42", b"{\"x\": 1}"] {
            let e = parse(bytes).unwrap_err();
            assert!(e.problem.contains("expected OpenAI chat JSON"), "{e:?}");
        }
    }
}
