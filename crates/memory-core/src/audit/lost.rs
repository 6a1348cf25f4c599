//! Invariant 5 after a bad model reply: nothing written back, no summary
//! made.

use crate::audit::Breach;
use crate::audit::sources::Source;
use crate::strategy::TrimResult;

/// After a failed, empty, truncated or refused reply: the result writes
/// nothing back and holds no summary the history did not.
pub(crate) fn after_bad_reply(result: &TrimResult, sources: &[Source]) -> Vec<Breach> {
    let mut breaches = Vec::new();
    if let Some(stored) = result.to_store() {
        breaches.push(Breach::WroteBackAfterBadReply {
            messages: stored.messages.len(),
        });
    }
    if let Some(index) = sources.iter().position(|s| *s == Source::Made) {
        breaches.push(Breach::SummaryFromBadReply { index });
    }
    breaches
}
