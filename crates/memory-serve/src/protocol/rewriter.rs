//! [`Rewriter`]: a same-protocol stream passed to the client as it came,
//! whole event by whole event, with what the server adds to it: a
//! Messages stream's report of the context edits, a Responses stream's
//! compaction.

use super::{Protocol, messages, responses};

/// The edit a rewriter makes.
enum Edit {
    Report(messages::stream::Reporter),
    Insert(responses::stream::Inserter),
}

/// Holds a stream's bytes until its events are whole, and gives them on,
/// rewritten where its edit says.
pub(crate) struct Rewriter {
    pending: Vec<u8>,
    edit: Edit,
}

impl Rewriter {
    /// What `call` adds to a stream of `front`, passed from an upstream of
    /// the same protocol; `None` when nothing.
    pub(crate) fn of(front: Protocol, call: &crate::upstream::Call) -> Option<Self> {
        match front {
            Protocol::Messages => call.edits.clone().map(Self::reporting),
            Protocol::Responses => call.compaction.clone().map(Self::inserting),
            Protocol::Chat => None,
        }
    }

    /// A rewriter reporting `edits` on a Messages stream.
    pub(crate) fn reporting(edits: serde_json::Value) -> Self {
        Self::with(Edit::Report(messages::stream::Reporter::new(edits)))
    }

    /// A rewriter putting `item` first in a Responses stream's output.
    pub(crate) fn inserting(item: serde_json::Value) -> Self {
        Self::with(Edit::Insert(responses::stream::Inserter::new(item)))
    }

    fn with(edit: Edit) -> Self {
        Self {
            pending: Vec::new(),
            edit,
        }
    }

    /// The whole events the next bytes complete, rewritten; the rest is
    /// held.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(bytes);
        let Some(end) = self.pending.windows(2).rposition(|w| w == b"\n\n") else {
            return Vec::new();
        };
        let events: Vec<u8> = self.pending.drain(..end + 2).collect();
        let wanted = match &self.edit {
            Edit::Report(r) => r.wants(&events),
            Edit::Insert(_) => true,
        };
        if !wanted {
            return events;
        }
        let text = String::from_utf8_lossy(&events);
        let mut out = String::with_capacity(text.len() + 400);
        for event in text.split_inclusive("\n\n") {
            match &mut self.edit {
                Edit::Report(r) => r.rewrite(event, &mut out),
                Edit::Insert(i) => i.rewrite(event, &mut out),
            }
        }
        out.into_bytes()
    }

    /// What is held at the end of the stream.
    pub(crate) fn rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }
}

/// The JSON of a whole event's `data:` line, when it has one.
pub(crate) fn event_data(event: &str) -> Option<serde_json::Value> {
    let data = event.lines().find_map(|l| l.strip_prefix("data:"))?;
    serde_json::from_str(data.trim()).ok()
}
