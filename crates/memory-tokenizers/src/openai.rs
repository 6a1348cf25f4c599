//! OpenAI's `cl100k_base` and `o200k_base` encodings.
//!
//! The vocabularies are compiled into the binary by `bpe-openai`, decoded once
//! per process on first use and shared by every counter value. Text is cut
//! into the pieces of the encoding's pre-tokenizer (see [`Pieces`]); a piece
//! that is a whole vocabulary entry counts as one token (see
//! [`SingleTokens`]), any other is counted by `bpe-openai`'s byte-pair
//! encoder. Counts equal tiktoken's `encode_ordinary` on the same text:
//! special-token markers such as `<|endoftext|>` in a message are counted as
//! the plain text they are.

use std::sync::LazyLock;

use memory_core::{Framing, MemoryError, TokenCounter};

use crate::pretokenize::{Pattern, Pieces};
use crate::singles::SingleTokens;

/// One encoding: bpe-openai's tokenizer and the set of its whole tokens.
struct Encoding {
    tokenizer: &'static bpe_openai::Tokenizer,
    pattern: Pattern,
    singles: SingleTokens,
}

impl Encoding {
    fn new(tokenizer: &'static bpe_openai::Tokenizer, pattern: Pattern) -> Self {
        Self {
            tokenizer,
            pattern,
            singles: SingleTokens::new(&tokenizer.bpe),
        }
    }

    fn count(&self, text: &str) -> usize {
        // A no-op for these two encodings (they do not normalize), kept so
        // the pieces are always those of the tokenizer's own input.
        let text = self.tokenizer.normalize(text);
        Pieces::new(text.as_str(), self.pattern, self.tokenizer)
            .map(|piece| {
                let piece = piece.as_bytes();
                if self.singles.contains(piece) {
                    1
                } else {
                    self.tokenizer.bpe.count(piece)
                }
            })
            .sum()
    }
}

static CL100K: LazyLock<Encoding> =
    LazyLock::new(|| Encoding::new(bpe_openai::cl100k_base(), Pattern::Cl100k));
static O200K: LazyLock<Encoding> =
    LazyLock::new(|| Encoding::new(bpe_openai::o200k_base(), Pattern::O200k));

/// Exact counts in `cl100k_base`, the encoding of GPT-4, GPT-3.5 and
/// `text-embedding-3`.
///
/// A message's count includes the framing of OpenAI's chat format
/// ([`Framing::OPENAI_CHAT`]: 4 tokens a message, 1 a tool call, and a tool
/// name with 1 more), and a request adds 3 for the reply's start, which
/// [`Budget::for_messages`](memory_core::Budget::for_messages) sets aside:
/// a context that fits by this count fits by OpenAI's.
///
/// A zero-sized handle on a process-wide encoder: copy it freely.
///
/// ```
/// use memory_core::{Message, TokenCounter};
/// use memory_tokenizers::Cl100k;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(Cl100k.count("hello world").await.unwrap(), 2);
/// let n = Cl100k.count_message(&Message::user("hello world")).await.unwrap();
/// assert_eq!(n, 2 + 4);
/// # });
/// ```
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cl100k;

impl Cl100k {
    /// The count, synchronously.
    ///
    /// ```
    /// assert_eq!(memory_tokenizers::Cl100k.count_text("tiktoken is great!"), 6);
    /// ```
    pub fn count_text(&self, text: &str) -> usize {
        CL100K.count(text)
    }

    /// Builds the shared encoder now (tens of milliseconds) rather than on
    /// the first count, say before the first turn of a latency-sensitive agent.
    ///
    /// ```
    /// memory_tokenizers::Cl100k::preload();
    /// ```
    pub fn preload() {
        LazyLock::force(&CL100K);
    }
}

#[async_trait::async_trait]
impl TokenCounter for Cl100k {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        Ok(self.count_text(text))
    }

    /// [`Framing::OPENAI_CHAT`]: 4 tokens a message, 3 a request.
    fn framing(&self) -> Framing {
        Framing::OPENAI_CHAT
    }
}

/// Exact counts in `o200k_base`, the encoding of GPT-4o, GPT-4.1, GPT-5 and
/// the `o` series; a message's count includes the framing of OpenAI's chat
/// format, as [`Cl100k`]'s does.
///
/// A zero-sized handle on a process-wide encoder: copy it freely.
///
/// ```
/// use memory_core::TokenCounter;
/// use memory_tokenizers::O200k;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(O200k.count("hello world").await.unwrap(), 2);
/// # });
/// ```
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct O200k;

impl O200k {
    /// The count, synchronously.
    ///
    /// ```
    /// assert_eq!(memory_tokenizers::O200k.count_text("tiktoken is great!"), 6);
    /// ```
    pub fn count_text(&self, text: &str) -> usize {
        O200K.count(text)
    }

    /// Builds the shared encoder now rather than on the first count.
    ///
    /// ```
    /// memory_tokenizers::O200k::preload();
    /// ```
    pub fn preload() {
        LazyLock::force(&O200K);
    }
}

#[async_trait::async_trait]
impl TokenCounter for O200k {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        Ok(self.count_text(text))
    }

    /// [`Framing::OPENAI_CHAT`]: 4 tokens a message, 3 a request.
    fn framing(&self) -> Framing {
        Framing::OPENAI_CHAT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_counts() {
        assert_eq!(Cl100k.count_text(""), 0);
        assert_eq!(O200k.count_text(""), 0);
        assert_eq!(Cl100k.count_text("hello world"), 2);
        // Special-token markers are ordinary text.
        assert!(Cl100k.count_text("<|endoftext|>") > 1);
        assert!(O200k.count_text("<|endoftext|>") > 1);
    }

    #[tokio::test]
    async fn messages_carry_the_chat_framing_and_layers_keep_it() {
        use memory_core::{Framing, Message};
        // Every role is one token in both encodings: 3 + 1 a message.
        for role in ["system", "user", "assistant", "tool"] {
            assert_eq!((Cl100k.count_text(role), O200k.count_text(role)), (1, 1));
        }
        let hi = Message::user("hello world");
        assert_eq!(Cl100k.count_message(&hi).await.unwrap(), 2 + 4);
        assert_eq!(O200k.count_message(&hi).await.unwrap(), 2 + 4);
        let cached = crate::CachedCounter::new(Cl100k);
        let calibrated = crate::Calibrated::new(O200k);
        assert_eq!(cached.framing(), Framing::OPENAI_CHAT);
        assert_eq!(calibrated.framing(), Framing::OPENAI_CHAT);
        assert_eq!(cached.count_message(&hi).await.unwrap(), 6);
    }

    #[tokio::test]
    async fn images_cost_what_the_one_rule_says() {
        use memory_core::{CharTokenCounter, ContentBlock, ImageContent, Message, image};
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&4096_u32.to_be_bytes());
        png.extend_from_slice(&8192_u32.to_be_bytes());
        let blocks = vec![
            ContentBlock::Text("hello world".into()),
            ContentBlock::Image(ImageContent::new("image/png", png.clone())),
            ContentBlock::Image(ImageContent::new("image/png", png).with_detail("low")),
            ContentBlock::Image(ImageContent::new("image/webp", Vec::new())),
        ];
        let images = 1105 + 85 + image::UNKNOWN_SIZE_TOKENS;
        let message = Message::user_blocks(blocks);
        assert_eq!(
            Cl100k.count_message(&message).await.unwrap(),
            2 + 4 + images
        );
        assert_eq!(O200k.count_message(&message).await.unwrap(), 2 + 4 + images);
        assert_eq!(
            CharTokenCounter.count_message(&message).await.unwrap(),
            3 + images
        );
        let cached = crate::CachedCounter::new(O200k);
        assert_eq!(
            cached.count_message(&message).await.unwrap(),
            2 + 4 + images
        );
    }

    #[test]
    fn encodings_differ_where_they_should() {
        // o200k has whole-word tokens for much non-English text.
        let text = "नमस्ते दुनिया, यह एक परीक्षण है";
        assert!(O200k.count_text(text) < Cl100k.count_text(text));
    }
}
