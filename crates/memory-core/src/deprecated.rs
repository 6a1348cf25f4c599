//! Paths that moved, kept for one release.

/// Moved to the `memory-text` crate.
pub mod stem {
    /// Moved to [`memory_text::MAX_STEM_CUT`].
    ///
    /// ```
    /// #![allow(deprecated)]
    /// assert_eq!(memory_core::stem::MAX_STEM_CUT, memory_text::MAX_STEM_CUT);
    /// ```
    #[deprecated(note = "moved to memory_text::MAX_STEM_CUT")]
    pub const MAX_STEM_CUT: usize = memory_text::MAX_STEM_CUT;

    /// Moved to [`memory_text::stem()`].
    ///
    /// ```
    /// #![allow(deprecated)]
    /// assert_eq!(memory_core::stem::stem("runs"), "run");
    /// ```
    #[deprecated(note = "moved to memory_text::stem")]
    pub fn stem(word: &str) -> String {
        memory_text::stem(word)
    }

    /// Moved to [`memory_text::stem_ascii`].
    ///
    /// ```
    /// #![allow(deprecated)]
    /// let mut w = b"flies".to_vec();
    /// memory_core::stem::stem_ascii(&mut w);
    /// assert_eq!(w, b"fly");
    /// ```
    #[deprecated(note = "moved to memory_text::stem_ascii")]
    pub fn stem_ascii(word: &mut Vec<u8>) {
        memory_text::stem_ascii(word);
    }
}

/// Moved to [`structure`](crate::structure).
pub mod observation {
    use crate::message::Message;

    /// Moved to [`structure::issues_a_command`](crate::structure::issues_a_command).
    ///
    /// ```
    /// #![allow(deprecated)]
    /// assert!(memory_core::observation::issues_a_command(&memory_core::Message::assistant("<function=ls>")));
    /// ```
    #[deprecated(note = "moved to memory_core::structure::issues_a_command")]
    pub fn issues_a_command(step: &Message) -> bool {
        crate::structure::issues_a_command(step)
    }

    /// Moved to [`structure::is_observation`](crate::structure::is_observation).
    ///
    /// ```
    /// #![allow(deprecated)]
    /// use memory_core::Message;
    /// let m = [Message::assistant("<function=ls>"), Message::user("a.txt")];
    /// assert!(memory_core::observation::is_observation(&m, 1));
    /// ```
    #[deprecated(note = "moved to memory_core::structure::is_observation")]
    pub fn is_observation(messages: &[Message], i: usize) -> bool {
        crate::structure::is_observation(messages, i)
    }
}
