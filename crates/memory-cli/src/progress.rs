//! [`Progress`]: a progress bar for long replays and evaluations, drawn on
//! stderr only when stderr is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar over a known number of steps.
///
/// It draws on stderr when stderr is a terminal and is hidden otherwise, so
/// pipes, files and tests see nothing. It clears itself when finished or
/// dropped, leaving the terminal as it was.
///
/// ```
/// let progress = memory_cli::Progress::hidden(3);
/// progress.set_message("window");
/// progress.inc(3);
/// assert_eq!(progress.position(), 3);
/// progress.finish();
/// ```
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `total` steps, drawn when stderr is a terminal. `what` names
    /// the steps (`calls`, `questions`).
    ///
    /// ```
    /// // Under `cargo test` stderr may or may not be a terminal; either works.
    /// let progress = memory_cli::Progress::new(10, "questions");
    /// progress.finish();
    /// ```
    pub fn new(total: u64, what: &str) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self::hidden(total);
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let template = format!(
            "{{spinner}} {{msg}} [{{wide_bar}}] {{human_pos}}/{{human_len}} {what} ({{eta}} left)"
        );
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Self { bar }
    }

    /// A bar that never draws.
    ///
    /// ```
    /// assert!(memory_cli::Progress::hidden(5).is_hidden());
    /// ```
    pub fn hidden(total: u64) -> Self {
        let bar = ProgressBar::hidden();
        bar.set_length(total);
        Self { bar }
    }

    /// Whether nothing is drawn.
    ///
    /// ```
    /// assert!(memory_cli::Progress::hidden(1).is_hidden());
    /// ```
    pub fn is_hidden(&self) -> bool {
        self.bar.is_hidden()
    }

    /// Shows `message` before the bar (the pipeline being run, say).
    ///
    /// ```
    /// memory_cli::Progress::hidden(1).set_message("window,window");
    /// ```
    pub fn set_message(&self, message: &str) {
        self.bar.set_message(message.to_string());
    }

    /// Advances by `steps`.
    ///
    /// ```
    /// let p = memory_cli::Progress::hidden(4);
    /// p.inc(2);
    /// assert_eq!(p.position(), 2);
    /// ```
    pub fn inc(&self, steps: u64) {
        self.bar.inc(steps);
    }

    /// Steps done so far.
    ///
    /// ```
    /// assert_eq!(memory_cli::Progress::hidden(4).position(), 0);
    /// ```
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// Removes the bar from the terminal.
    ///
    /// ```
    /// memory_cli::Progress::hidden(1).finish();
    /// ```
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_is_hidden_unless_stderr_is_a_terminal() {
        let progress = Progress::new(2, "calls");
        assert_eq!(progress.is_hidden(), !std::io::stderr().is_terminal());
        progress.inc(2);
        assert_eq!(progress.position(), 2);
        progress.finish();
    }
}
