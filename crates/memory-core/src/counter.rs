//! Token counting: the [`TokenCounter`] trait and [`CharTokenCounter`].

use crate::error::MemoryError;
use crate::framing::Framing;
use crate::image;
use crate::message::{ContentBlock, Message};

/// Counts tokens of text, and of whole messages.
///
/// Async and fallible, so a remote counting API is a valid implementation.
/// [`count_message`](TokenCounter::count_message) has a default that sums the
/// counts of every text a message sends to the model: the text blocks, the
/// reply, the reasoning, and each tool call's name and arguments; plus the
/// per-message [`Framing`] of the model family the counter stands for
/// ([`framing`](TokenCounter::framing), none unless the counter says), and
/// then a tool result's tool name with its framing. An image costs its
/// [image tokens](crate::image::tokens) (OpenAI's tile rule, by its
/// `detail` and size), and so does an image given by URL
/// ([`image::block_tokens`](crate::image::block_tokens)); other
/// pass-through blocks count as zero tokens under the default. A counter
/// that knows other prices overrides `count_message`.
///
/// ```
/// use memory_core::{MemoryError, Message, TokenCounter};
///
/// /// One token per whitespace-separated word.
/// struct Words;
///
/// #[async_trait::async_trait]
/// impl TokenCounter for Words {
///     async fn count(&self, text: &str) -> Result<usize, MemoryError> {
///         Ok(text.split_whitespace().count())
///     }
/// }
///
/// # tokio_test(async {
/// let n = Words.count_message(&Message::user("three small words")).await.unwrap();
/// assert_eq!(n, 3);
/// # });
/// # fn tokio_test(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[async_trait::async_trait]
pub trait TokenCounter: Send + Sync {
    /// Counts the tokens of `text`.
    ///
    /// # Errors
    ///
    /// [`MemoryError::TokenCount`] when the count cannot be had (a remote
    /// counting service is down, say).
    async fn count(&self, text: &str) -> Result<usize, MemoryError>;

    /// The tokens the chat format of the model family this counter stands
    /// for adds around the messages; [`Framing::NONE`] unless the counter
    /// says. [`count_message`](TokenCounter::count_message) includes the
    /// per-message part; [`Budget::for_messages`](crate::Budget::for_messages)
    /// takes out the per-request part.
    ///
    /// ```
    /// use memory_core::{CharTokenCounter, Framing, TokenCounter};
    /// assert_eq!(CharTokenCounter.framing(), Framing::NONE);
    /// ```
    fn framing(&self) -> Framing {
        Framing::NONE
    }

    /// Counts the tokens one message occupies in the context, its
    /// [`framing`](TokenCounter::framing) included.
    ///
    /// # Errors
    ///
    /// Whatever [`count`](TokenCounter::count) returns.
    async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
        let framing = self.framing();
        let text = match message {
            Message::System(text) => self.count(text).await,
            Message::User(blocks) => {
                let mut total = 0;
                for block in blocks {
                    total += match block {
                        ContentBlock::Text(text) => self.count(text).await?,
                        other => image::block_tokens(other),
                    };
                }
                Ok(total)
            }
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                let mut total = self.count(content).await?;
                if let Some(reasoning) = reasoning {
                    total += self.count(reasoning).await?;
                }
                for call in tool_calls {
                    total += self.count(&call.name).await?;
                    total += self.count(&call.arguments).await?;
                }
                Ok(total)
            }
            Message::ToolResult { content, name, .. } => {
                let mut total = self.count(content).await?;
                // The name goes to the provider with the result; only a
                // counter that knows its format counts it.
                if let Some(name) = name.as_deref().filter(|_| framing != Framing::NONE) {
                    total += self.count(name).await? + framing.per_name;
                }
                Ok(total)
            }
        }?;
        Ok(text + framing.of_message(message))
    }
}

#[async_trait::async_trait]
impl<T: TokenCounter + ?Sized> TokenCounter for std::sync::Arc<T> {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        (**self).count(text).await
    }
    fn framing(&self) -> Framing {
        (**self).framing()
    }
    async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
        (**self).count_message(message).await
    }
}

#[async_trait::async_trait]
impl<T: TokenCounter + ?Sized> TokenCounter for Box<T> {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        (**self).count(text).await
    }
    fn framing(&self) -> Framing {
        (**self).framing()
    }
    async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
        (**self).count_message(message).await
    }
}

/// Counts each message of `messages` once, in order.
///
/// # Errors
///
/// The first counting error.
///
/// ```
/// use memory_core::{count_messages, CharTokenCounter, Message};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let counts = count_messages(&CharTokenCounter, &[Message::user("abcd"), Message::user("abcde")])
///     .await
///     .unwrap();
/// assert_eq!(counts, vec![1, 2]);
/// # });
/// ```
pub async fn count_messages(
    counter: &dyn TokenCounter,
    messages: &[Message],
) -> Result<Vec<usize>, MemoryError> {
    let mut counts = Vec::with_capacity(messages.len());
    for message in messages {
        counts.push(counter.count_message(message).await?);
    }
    Ok(counts)
}

/// The default estimate: a CJK ideograph is one token, every other character a
/// quarter token, rounded up per text.
///
/// chars/4 is off by 10-20% per message against real tokenizers; use an exact
/// counter where the budget is a hard limit.
///
/// ```
/// use memory_core::{CharTokenCounter, TokenCounter};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(CharTokenCounter.count("abcd").await.unwrap(), 1);
/// assert_eq!(CharTokenCounter.count("hello").await.unwrap(), 2);
/// assert_eq!(CharTokenCounter.count("你好ab").await.unwrap(), 3);
/// # });
/// ```
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CharTokenCounter;

impl CharTokenCounter {
    /// The count, synchronously.
    ///
    /// ```
    /// assert_eq!(memory_core::CharTokenCounter::estimate("morning"), 2);
    /// ```
    pub fn estimate(text: &str) -> usize {
        // Most text is ASCII: one character a byte, and no ideograph.
        if text.is_ascii() {
            return text.len().div_ceil(4);
        }
        let mut ideographs = 0usize;
        let mut others = 0usize;
        for c in text.chars() {
            if is_cjk_ideograph(c) {
                ideographs += 1;
            } else {
                others += 1;
            }
        }
        ideographs + others.div_ceil(4)
    }
}

#[async_trait::async_trait]
impl TokenCounter for CharTokenCounter {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        Ok(Self::estimate(text))
    }
}

/// Which counter counted something, as a memo that keeps counts from
/// call to call can tell: the counter object's address and its framing. A
/// strategy is given its counter on every call; a memo forgets its counts
/// when the counter is another. Two counters at one address read as the
/// same: one dropped and another made where it was (an owner that swaps
/// its counter forgets its memo itself), and counters of no size of their
/// own referred to directly (`&CharTokenCounter`), which all stand at one
/// address: give such a counter its own allocation (an `Arc`, as
/// `WindowMemory` holds its counter) where calls may bring different ones.
///
/// ```
/// use memory_core::{CharTokenCounter, CounterId};
/// let counter = CharTokenCounter;
/// assert_eq!(CounterId::of(&counter), CounterId::of(&counter));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterId {
    address: usize,
    framing: Framing,
}

impl CounterId {
    /// The identity of `counter`.
    ///
    /// ```
    /// let id = memory_core::CounterId::of(&memory_core::CharTokenCounter);
    /// # let _ = id;
    /// ```
    pub fn of(counter: &dyn TokenCounter) -> Self {
        Self {
            address: std::ptr::from_ref(counter).cast::<()>().addr(),
            framing: counter.framing(),
        }
    }
}

/// CJK unified ideographs, extensions A-F and compatibility ideographs; kana
/// and Hangul are not included.
fn is_cjk_ideograph(c: char) -> bool {
    matches!(
        c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    #[test]
    fn quarter_tokens_round_up_per_text() {
        assert_eq!(CharTokenCounter::estimate(""), 0);
        assert_eq!(CharTokenCounter::estimate("a"), 1);
        assert_eq!(CharTokenCounter::estimate("abcd"), 1);
        assert_eq!(CharTokenCounter::estimate("abcde"), 2);
        // Seed numbers: "Question from round 1" + "Answer from round 1" = 6 + 5.
        assert_eq!(CharTokenCounter::estimate("Question from round 1"), 6);
        assert_eq!(CharTokenCounter::estimate("Answer from round 1"), 5);
    }

    #[test]
    fn ideographs_are_one_token_each_kana_is_not() {
        assert_eq!(CharTokenCounter::estimate("記憶体"), 3);
        assert_eq!(CharTokenCounter::estimate("かな"), 1);
        assert_eq!(CharTokenCounter::estimate("𠀀"), 1);
    }

    /// A quarter-token estimate that says it frames messages as OpenAI's
    /// chat format does.
    struct Framed;

    #[async_trait::async_trait]
    impl TokenCounter for Framed {
        async fn count(&self, text: &str) -> Result<usize, MemoryError> {
            CharTokenCounter.count(text).await
        }
        fn framing(&self) -> Framing {
            Framing::OPENAI_CHAT
        }
    }

    #[tokio::test]
    async fn a_counters_framing_is_in_its_message_counts() {
        let calls = Message::assistant_with_tools(
            "abcd",
            vec![
                ToolCall::new("c1", "ls", "{}"),
                ToolCall::new("c2", "cat", "abcd"),
            ],
        );
        // Texts 1 + (1 + 1) + (1 + 1) = 5; framing 4 + 2 x 1.
        assert_eq!(CharTokenCounter.count_message(&calls).await.unwrap(), 5);
        assert_eq!(Framed.count_message(&calls).await.unwrap(), 5 + 6);
        let named = Message::ToolResult {
            tool_call_id: "c1".into(),
            content: "abcd".into(),
            name: Some("ls".into()),
        };
        // The tool name (1) and its 1 are counted with a framing only.
        assert_eq!(CharTokenCounter.count_message(&named).await.unwrap(), 1);
        assert_eq!(Framed.count_message(&named).await.unwrap(), 1 + 4 + 1 + 1);
        let shared = std::sync::Arc::new(Framed);
        assert_eq!(shared.framing(), Framing::OPENAI_CHAT);
        assert_eq!(Box::new(Framed).framing(), Framing::OPENAI_CHAT);
    }

    #[tokio::test]
    async fn message_count_includes_reasoning_names_and_arguments() {
        let message = Message::Assistant {
            content: "abcd".into(),
            reasoning: Some("abcdabcd".into()),
            tool_calls: vec![ToolCall::new("id-ignored", "calc", "1+1")],
        };
        // 1 (content) + 2 (reasoning) + 1 (name) + 1 (arguments)
        assert_eq!(CharTokenCounter.count_message(&message).await.unwrap(), 5);
        let user = Message::user_blocks(vec![
            ContentBlock::Text("aaaa".into()),
            ContentBlock::Image(crate::ImageContent::new("image/png", vec![1, 2, 3])),
            ContentBlock::Text("bbbb".into()),
        ]);
        // Two texts of 1, and an image of unknown size.
        assert_eq!(
            CharTokenCounter.count_message(&user).await.unwrap(),
            2 + crate::image::UNKNOWN_SIZE_TOKENS
        );
    }

    #[tokio::test]
    async fn every_counter_prices_images_by_the_one_rule() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&4096_u32.to_be_bytes());
        png.extend_from_slice(&8192_u32.to_be_bytes());
        let image = crate::ImageContent::new("image/png", png);
        let low = image.clone().with_detail("low");
        let user = Message::user_blocks(vec![
            ContentBlock::Text("abcd".into()),
            ContentBlock::Image(image),
            ContentBlock::Image(low),
        ]);
        let images = 1105 + 85;
        assert_eq!(
            CharTokenCounter.count_message(&user).await.unwrap(),
            1 + images
        );
        assert_eq!(Framed.count_message(&user).await.unwrap(), 1 + images + 4);
    }
}
