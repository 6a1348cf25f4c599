//! [`PendingCalls`]: a streamed reply's tool calls, gathered whole before
//! a stream encoder writes them. A Chat Completions stream may interleave
//! the arguments of parallel calls, which neither Anthropic's blocks (one
//! open at a time) nor Responses' items can.

/// One gathered call: its id, name and arguments so far.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct PendingCall {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// The calls of a reply not yet written, numbered as the upstream numbers
/// them (from 0 for the reply's first call, written or not).
#[derive(Debug, Default, Clone)]
pub(crate) struct PendingCalls {
    calls: Vec<PendingCall>,
    /// Calls already written: the upstream's number of the first pending.
    written: usize,
}

impl PendingCalls {
    /// The start of the upstream's `index`th call (its id and name taken
    /// once, however often they come); one already written is let be.
    pub(crate) fn start(&mut self, index: usize, id: &str, name: &str) {
        let Some(at) = index.checked_sub(self.written) else {
            return;
        };
        // One past the calls so far at most: no number makes room for
        // calls that never come.
        let at = at.min(self.calls.len());
        if at == self.calls.len() {
            self.calls.push(PendingCall::default());
        }
        let call = &mut self.calls[at];
        if call.id.is_empty() {
            call.id = id.to_string();
        }
        if call.name.is_empty() {
            call.name = name.to_string();
        }
    }

    /// More of the upstream's `index`th call's arguments.
    pub(crate) fn arguments(&mut self, index: usize, json: &str) {
        let at = index.checked_sub(self.written);
        if let Some(call) = at.and_then(|at| self.calls.get_mut(at)) {
            call.arguments.push_str(json);
        }
    }

    /// The gathered calls, to be written now.
    pub(crate) fn take(&mut self) -> Vec<PendingCall> {
        self.written += self.calls.len();
        std::mem::take(&mut self.calls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_after_some_were_written_keep_their_arguments() {
        let mut calls = PendingCalls::default();
        calls.start(0, "a", "ls");
        calls.arguments(0, "{}");
        assert_eq!(calls.take().len(), 1);
        // Text came between: the upstream's second call is numbered 1.
        calls.start(1, "b", "cat");
        calls.arguments(1, "{\"p\":");
        calls.arguments(0, "late");
        calls.arguments(1, "1}");
        let taken = calls.take();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].id, "b");
        assert_eq!(taken[0].arguments, "{\"p\":1}");
    }
}
