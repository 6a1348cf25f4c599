//! Shrunk messages made once per trim: a tool output cut or replaced by a
//! placeholder, with its count.
//!
//! Replaying a round (see [`settle`](crate::settle)) sheds several
//! prefixes of the same history afresh, and each pass would otherwise cut
//! and recount the same long outputs and make the same placeholders again.
//! Both depend only on the message (a placeholder names the original
//! length, which a cut keeps in its marker), so they are kept here by the
//! message's index and reused by every pass over that history.

use std::collections::HashMap;

use memory_core::{MemoryError, Message, TokenCounter};

/// A shrunk message and its count; `None` when shrinking changes nothing.
type Made = Option<(Message, usize)>;

/// The cuts and placeholders made so far, by message index.
#[derive(Default)]
pub(crate) struct Shrunk {
    /// Whether to keep what is made (a single pass gains nothing by it).
    keep: bool,
    cuts: HashMap<usize, Made>,
    placeholders: HashMap<usize, Made>,
}

/// Which kind of shrinking.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// Cut head and tail (the cutting stage's one length).
    Cut,
    /// Replaced by a placeholder.
    Placeholder,
}

impl Shrunk {
    /// A store for the passes of one replay.
    pub fn kept() -> Self {
        Self {
            keep: true,
            ..Self::default()
        }
    }

    /// For a single pass: makes each shrunk message without keeping it.
    pub fn once() -> Self {
        Self::default()
    }

    /// Message `index` shrunk as `kind`, made by `make` (and counted) the
    /// first time only.
    pub async fn get(
        &mut self,
        index: usize,
        kind: Kind,
        counter: &dyn TokenCounter,
        make: impl FnOnce() -> Option<Message>,
    ) -> Result<Made, MemoryError> {
        let map = match kind {
            Kind::Cut => &mut self.cuts,
            Kind::Placeholder => &mut self.placeholders,
        };
        if let Some(made) = map.get(&index) {
            return Ok(made.clone());
        }
        let made = match make() {
            Some(message) => {
                let tokens = counter.count_message(&message).await?;
                Some((message, tokens))
            }
            None => None,
        };
        if self.keep {
            map.insert(index, made.clone());
        }
        Ok(made)
    }
}
