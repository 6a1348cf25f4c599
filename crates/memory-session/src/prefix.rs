//! [`PrefixKept`]: what a call's context keeps of the previous call's, as a
//! provider's prefix cache sees it.

/// What a context keeps of the previous call's context: the leading
/// messages the two share (a provider's prefix cache serves those again),
/// their tokens, and whether the previous context is not a prefix of this
/// one (the cached prefix broke). The `memory` command's replay rows and
/// the server's call reports both measure a call by it; the contexts may
/// be given as their messages or as the messages' keys
/// ([`message_key`](memory_core::identity::message_key)), which a caller
/// can keep from one call to the next for much less than a copy of the
/// messages.
///
/// ```
/// use memory_core::Message;
/// use memory_session::PrefixKept;
/// let before = [Message::system("rules"), Message::user("a")];
/// let appended = [Message::system("rules"), Message::user("a"), Message::assistant("b")];
/// let kept = PrefixKept::between(&before, &appended, &[3, 1, 1]);
/// assert_eq!((kept.messages, kept.tokens, kept.cache_break), (2, 4, false));
/// let shed = [Message::system("rules"), Message::assistant("b")];
/// assert!(PrefixKept::between(&before, &shed, &[3, 1]).cache_break);
/// assert_eq!(PrefixKept::between(&[], &shed, &[3, 1]), PrefixKept::default());
/// // The same, by keys.
/// use memory_core::identity::message_key;
/// let keys = |m: &[Message]| m.iter().map(message_key).collect::<Vec<_>>();
/// assert_eq!(PrefixKept::between(&keys(&before), &keys(&appended), &[3, 1, 1]), kept);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefixKept {
    /// Leading messages the two contexts share.
    pub messages: usize,
    /// Tokens of those messages.
    pub tokens: usize,
    /// Whether the previous context is not a prefix of this one.
    pub cache_break: bool,
}

impl PrefixKept {
    /// What `context` (whose messages count `counts`) keeps of `previous`,
    /// the context of the call before it (empty for a session's first
    /// call).
    pub fn between<T: PartialEq>(previous: &[T], context: &[T], counts: &[usize]) -> Self {
        let messages = previous
            .iter()
            .zip(context)
            .take_while(|(a, b)| a == b)
            .count();
        Self {
            messages,
            tokens: counts[..messages].iter().sum(),
            cache_break: messages < previous.len(),
        }
    }
}
