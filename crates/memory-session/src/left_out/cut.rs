//! [`Cutter`]: how the index cuts a stretch of the history into pieces
//! one recall brings back whole, along step boundaries, resumable where
//! the stretch grows.

use std::ops::Range;

use memory_core::{Message, structure};

/// One stretch being cut along step boundaries into pieces of at most
/// `max_tokens` (a step larger than that is a piece per message), in
/// order; resumable where the stretch grows: the step the stretch's end
/// cuts short or reaches (its calls' results may come after) is cut again
/// whole from where it started (the checkpoint); every piece before it is
/// final.
#[derive(Debug, Clone)]
pub(super) struct Cutter {
    max_tokens: usize,
    out: Vec<Range<usize>>,
    piece: Range<usize>,
    at: usize,
    /// The state before the step the end cuts short or reaches: how many
    /// pieces are final, the open piece, where the step starts.
    checkpoint: (usize, Range<usize>, usize),
}

impl Cutter {
    /// A cut of a stretch from `start`.
    pub(super) fn new(start: usize, max_tokens: usize) -> Self {
        Self::resumed(start..start, start, max_tokens)
    }

    /// A cut resumed with the open piece `piece`, at the step that starts
    /// at `at` (the state [`resumes_at`](Self::resumes_at) gave).
    pub(super) fn resumed(piece: Range<usize>, at: usize, max_tokens: usize) -> Self {
        Self {
            max_tokens,
            out: Vec::new(),
            piece: piece.clone(),
            at,
            checkpoint: (0, piece, at),
        }
    }

    /// Where the cut resumes: the open piece then, and the start of the
    /// step it cuts next (the messages before it must be the ones it
    /// read).
    pub(super) fn resumes_at(&self) -> (Range<usize>, usize) {
        (self.checkpoint.1.clone(), self.checkpoint.2)
    }

    /// How many pieces are final: the next [`cut_to`](Self::cut_to)
    /// keeps them as they are.
    pub(super) fn final_pieces(&self) -> usize {
        self.checkpoint.0
    }

    /// Cuts from the checkpoint to `end` (at least the checkpoint), the
    /// messages' tokens by `tokens`.
    pub(super) fn cut_to(
        &mut self,
        messages: &[Message],
        tokens: impl Fn(Range<usize>) -> usize,
        end: usize,
    ) {
        let (final_pieces, piece, at) = self.checkpoint.clone();
        self.out.truncate(final_pieces);
        (self.piece, self.at) = (piece, at);
        let mut checkpoint = None;
        while self.at < end {
            let at = self.at;
            let whole = structure::step_end(messages, at);
            // A step that reaches the end may not be whole yet: the
            // results of its calls may come after.
            if whole >= end && checkpoint.is_none() {
                checkpoint = Some((self.out.len(), self.piece.clone(), at));
            }
            let step = whole.min(end);
            if step - at > 1 && tokens(at..step) > self.max_tokens {
                // A step too large for one recall: a piece per message
                // (a long one is then listed by its parts).
                if !self.piece.is_empty() {
                    self.out.push(self.piece.clone());
                }
                self.out.extend((at..step).map(|i| i..i + 1));
                self.piece = step..step;
                self.at = step;
                continue;
            }
            let grown = self.piece.start..step;
            if self.piece.is_empty() || tokens(grown.clone()) <= self.max_tokens {
                self.piece = grown;
            } else {
                self.out.push(std::mem::replace(&mut self.piece, at..step));
            }
            self.at = step;
        }
        self.checkpoint =
            checkpoint.unwrap_or_else(|| (self.out.len(), self.piece.clone(), self.at));
    }

    /// The final pieces (see [`final_pieces`](Self::final_pieces)).
    pub(super) fn final_slice(&self) -> &[Range<usize>] {
        &self.out[..self.checkpoint.0]
    }

    /// The pieces cut so far, in order.
    pub(super) fn pieces_iter(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.out
            .iter()
            .cloned()
            .chain((!self.piece.is_empty()).then(|| self.piece.clone()))
    }

    /// The pieces cut so far.
    pub(super) fn pieces(&self) -> Vec<Range<usize>> {
        let mut out = self.out.clone();
        if !self.piece.is_empty() {
            out.push(self.piece.clone());
        }
        out
    }
}
