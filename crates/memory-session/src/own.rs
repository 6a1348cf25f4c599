//! [`OwnHistory`]: the history of a session a memory keeps in itself.

use memory_core::Message;

/// The history of a session kept in the memory rather than in a store,
/// without a second copy of the view: the history is what compactions
/// took out of the view, then the view's messages recorded since the last
/// compaction.
#[derive(Debug, Default)]
pub(crate) struct OwnHistory {
    /// Messages recorded before the last compaction, oldest first.
    earlier: Vec<Message>,
    /// Where the view's messages recorded since the last compaction start.
    recorded_from: usize,
}

impl OwnHistory {
    /// A compaction replaced `old` (the view) with a view of `new_len`
    /// messages: what was recorded into `old` moves to the history.
    pub(crate) fn compacted(&mut self, mut old: Vec<Message>, new_len: usize) {
        self.earlier
            .extend(old.drain(self.recorded_from.min(old.len())..));
        self.recorded_from = new_len;
    }

    /// Every message recorded, in order, given the current `view`.
    pub(crate) fn history(&self, view: &[Message]) -> Vec<Message> {
        let recorded = &view[self.recorded_from.min(view.len())..];
        [&self.earlier[..], recorded].concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_is_what_compactions_took_then_what_was_recorded_since() {
        let m = |t: &str| Message::user(t);
        let mut own = OwnHistory::default();
        let view = vec![m("1"), m("2"), m("3")];
        assert_eq!(own.history(&view), view);
        // A summary and "3" replace the view; "4" is recorded.
        own.compacted(view, 2);
        let view = vec![Message::system("summary"), m("3"), m("4")];
        assert_eq!(own.history(&view), vec![m("1"), m("2"), m("3"), m("4")]);
        own.compacted(view, 1);
        assert_eq!(
            own.history(&[Message::system("summary 2"), m("5")]),
            vec![m("1"), m("2"), m("3"), m("4"), m("5")]
        );
    }
}
