//! [`CliError`]: what ends the command early, and the exit code it ends with.

use memory_core::MemoryError;

/// Exit code for bad usage and bad input (clap uses it for usage errors too).
pub const EXIT_BAD_INPUT: u8 = 2;

/// Exit code for a failure while running on good input (a strategy error, a
/// report that cannot be written).
pub const EXIT_FAILURE: u8 = 1;

/// Why the command stopped. Each message is one line, printed after
/// `memory: `, naming the file, the position and what is wrong.
///
/// ```
/// use memory_cli::CliError;
///
/// let error = CliError::Input {
///     file: "session.json".into(),
///     position: "line 3, column 9".into(),
///     problem: "EOF while parsing a string".into(),
/// };
/// assert_eq!(error.to_string(), "session.json: line 3, column 9: EOF while parsing a string");
/// assert_eq!(error.exit_code(), 2);
/// ```
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The input cannot be read at all (missing, unreadable).
    #[error("{file}: cannot read the file: {source}")]
    Read {
        /// The path as given.
        file: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The input is larger than a transcript is read whole.
    #[error(
        "{file}: {bytes} bytes or more, over the limit of {limit} bytes a transcript is read \
         whole with; split it (one trajectory or conversation per file, or per JSONL line in \
         several files)"
    )]
    TooLarge {
        /// The path as given.
        file: String,
        /// Its size, or how much was read before the limit was passed.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The input was read but is not a usable transcript.
    #[error("{file}: {position}: {problem}")]
    Input {
        /// The path as given.
        file: String,
        /// Where: a line and column, a byte offset, or a trajectory and message.
        position: String,
        /// What is wrong, and what to do about it where that is not obvious.
        problem: String,
    },
    /// `--pipeline` names a stage the registry does not know.
    #[error("unknown stage `{name}` in --pipeline; known stages: {known}")]
    UnknownStage {
        /// The name as given.
        name: String,
        /// The known stage names, comma-separated.
        known: String,
    },
    /// `--pipeline` is malformed, or a stage cannot be built from the options
    /// given.
    #[error("--pipeline {spec:?}: {problem}")]
    Pipeline {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        problem: String,
    },
    /// `--counter` names a counter the registry does not know.
    #[error("unknown counter `{name}` in --counter; known counters: {known}")]
    UnknownCounter {
        /// The name as given.
        name: String,
        /// The known counter names, comma-separated.
        known: String,
    },
    /// `--counter` names a known counter that cannot be built as given (a
    /// missing argument, a tokenizer file that cannot be read).
    #[error("--counter {spec}: {problem}")]
    Counter {
        /// The counter as given.
        spec: String,
        /// What is wrong, and what to do about it.
        problem: String,
    },
    /// Options that do not go together, or one that is missing.
    #[error("{0}")]
    Usage(String),
    /// Recording or trimming failed while replaying good input.
    #[error("{file}: {position}: {source}")]
    Replay {
        /// The input path.
        file: String,
        /// The trajectory and turn being replayed.
        position: String,
        /// The memory's error.
        source: MemoryError,
    },
    /// The `--plot` picture could not be drawn or written.
    #[error("{file}: cannot write the plot: {problem}")]
    Plot {
        /// The plot path as given.
        file: String,
        /// What went wrong.
        problem: String,
    },
    /// The JSON report could not be written.
    #[error("{file}: cannot write the report: {source}")]
    Report {
        /// The report path as given.
        file: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// `memory serve` could not listen, or stopped on an error.
    #[error("serve: {0}")]
    Serve(String),
}

impl CliError {
    /// The process exit code: [`EXIT_BAD_INPUT`] for bad input and usage,
    /// [`EXIT_FAILURE`] for failures on good input.
    ///
    /// ```
    /// let e = memory_cli::CliError::UnknownCounter { name: "x".into(), known: "chars".into() };
    /// assert_eq!(e.exit_code(), memory_cli::error::EXIT_BAD_INPUT);
    /// ```
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Read { .. }
            | CliError::TooLarge { .. }
            | CliError::Input { .. }
            | CliError::UnknownStage { .. }
            | CliError::Pipeline { .. }
            | CliError::UnknownCounter { .. }
            | CliError::Counter { .. }
            | CliError::Usage(_) => EXIT_BAD_INPUT,
            CliError::Replay { .. }
            | CliError::Report { .. }
            | CliError::Plot { .. }
            | CliError::Serve(_) => EXIT_FAILURE,
        }
    }

    /// The message as exactly one line (line breaks inside quoted input
    /// become spaces).
    ///
    /// ```
    /// let e = memory_cli::CliError::Pipeline { spec: "a".into(), problem: "two\nlines".into() };
    /// assert!(!e.one_line().contains('\n'));
    /// ```
    pub fn one_line(&self) -> String {
        one_line(&self.to_string())
    }
}

/// `text` with every line break replaced by a space.
pub(crate) fn one_line(text: &str) -> String {
    text.replace("\r\n", " ").replace(['\n', '\r'], " ")
}
