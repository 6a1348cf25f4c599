//! Invariant 4: protected messages, summaries and the rest of the floor are
//! never shed, and the result marks exactly them protected.

use crate::audit::Breach;
use crate::audit::sources::Source;
use crate::history::History;
use crate::message::Message;
use crate::shrunk::is_shrunk_from;
use crate::strategy::TrimResult;
use crate::structure::{self, Floor};
use crate::summary;

/// Each protected history message is in the result unchanged, or (for an
/// earlier summary) merged into a summary the strategy made; the result
/// marks exactly its protected messages and the summaries it made.
pub(crate) fn protected(
    history: &History<'_>,
    result: &TrimResult,
    sources: &[Source],
) -> Vec<Breach> {
    let messages = history.messages();
    let mut breaches = Vec::new();
    let mut kept = vec![false; messages.len()];
    for (k, source) in sources.iter().enumerate() {
        if let Source::From(i) = *source {
            kept[i] = true;
            if history.is_protected(i) && result.messages[k] != messages[i] {
                breaches.push(Breach::ProtectedChanged {
                    index: i,
                    role: messages[i].role(),
                });
            }
        }
    }
    let made = sources.contains(&Source::Made);
    for &p in history.protected() {
        let merged = made && summary::is_summary(&messages[p]);
        if !merged && !kept[p] {
            breaches.push(Breach::ProtectedShed {
                index: p,
                role: messages[p].role(),
            });
        }
    }
    let expected: Vec<usize> = sources
        .iter()
        .enumerate()
        .filter(|(_, source)| match source {
            Source::From(i) => history.is_protected(*i),
            Source::Made => true,
            Source::Index | Source::Stray => false,
        })
        .map(|(k, _)| k)
        .collect();
    if result.protected != expected {
        breaches.push(Breach::ProtectedMislabeled {
            reported: result.protected.clone(),
            expected,
        });
    }
    breaches
}

/// How the history's floor shows in the result.
pub(crate) struct FloorShown {
    /// A breach for each floor step not in the result whole.
    pub breaches: Vec<Breach>,
    /// Whether some floor step is shown [shrunk](is_shrunk_from).
    pub shrunk: bool,
}

/// Each step of `floor` is in `shown` whole, in one piece, each message as
/// it was or shrunk (a subtractive stage may cut a floor step's oversized
/// tool output, never drop it). An earlier summary may instead be merged
/// into a summary the strategy made (`made`).
pub(crate) fn floor_shown(
    history: &History<'_>,
    floor: &Floor,
    shown: &[Message],
    made: bool,
) -> FloorShown {
    let messages = history.messages();
    let steps = floor.ranges.iter().flat_map(|range| {
        structure::steps(&messages[range.clone()])
            .map(move |step| range.start + step.start..range.start + step.end)
    });
    let mut result = FloorShown {
        breaches: Vec::new(),
        shrunk: false,
    };
    for step in steps {
        let want = &messages[step.clone()];
        if made && want.len() == 1 && summary::is_summary(&want[0]) {
            continue;
        }
        let found = shown.windows(want.len()).find(|window| {
            window
                .iter()
                .zip(want)
                .all(|(got, was)| is_shrunk_from(was, got))
        });
        match found {
            Some(window) => result.shrunk |= window != want,
            None => result.breaches.push(Breach::FloorMissing {
                start: step.start,
                end: step.end,
            }),
        }
    }
    result
}

/// Whether the result replaces a summary of the history with one the
/// strategy made (a summarizer that folds the previous summary into the
/// next one does).
pub(crate) fn merges_a_summary(history: &History<'_>, sources: &[Source]) -> bool {
    sources.contains(&Source::Made)
        && history
            .messages()
            .iter()
            .enumerate()
            .any(|(i, m)| summary::is_summary(m) && !sources.contains(&Source::From(i)))
}
