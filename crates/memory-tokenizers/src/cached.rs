//! [`CachedCounter`]: a bounded cache of counts in front of any counter.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::sync::Mutex;

use memory_core::{MemoryError, Message, TokenCounter};

/// Remembers the counts of the texts and messages it has seen, so that a
/// history counted again each turn is tokenized once.
///
/// Entries are keyed by a 64-bit hash of the text (two different texts
/// sharing a count needs a hash collision: about one chance in 10^11 at
/// 16k entries), so an entry costs a few dozen bytes whatever the length of
/// its text. At most `capacity` entries are kept; past that, entries not
/// read since the last sweep are evicted first (the CLOCK policy, an
/// approximation of least recently used). Errors of the inner counter are
/// passed on and never cached.
///
/// [`count_message`](TokenCounter::count_message) is cached as a whole and
/// computed by the inner counter's own `count_message`, so a counter that adds
/// per-message framing keeps it.
///
/// ```
/// use memory_core::{Memory, Message};
/// use memory_tokenizers::{CachedCounter, Cl100k};
/// use memory_session::WindowMemory;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let counter = std::sync::Arc::new(CachedCounter::with_capacity(Cl100k, 4_096));
/// let mut memory = WindowMemory::new(1_000).with_token_counter(counter.clone());
/// memory.record(Message::user("hello")).await.unwrap();
/// memory.context().await.unwrap();
/// memory.context().await.unwrap();
/// let stats = counter.stats();
/// assert!(stats.entries <= stats.capacity);
/// # });
/// ```
pub struct CachedCounter<C> {
    inner: C,
    cache: Mutex<Clock>,
}

/// Counters of a [`CachedCounter`].
///
/// ```
/// use memory_core::TokenCounter;
/// use memory_tokenizers::CachedCounter;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let counter = CachedCounter::new(memory_core::CharTokenCounter);
/// counter.count("abc").await.unwrap();
/// counter.count("abc").await.unwrap();
/// let stats = counter.stats();
/// assert_eq!((stats.hits, stats.misses, stats.entries), (1, 1, 1));
/// assert_eq!(stats.hit_rate(), 0.5);
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Counts answered from the cache.
    pub hits: u64,
    /// Counts that went to the inner counter.
    pub misses: u64,
    /// Entries held now.
    pub entries: usize,
    /// Most entries ever held.
    pub capacity: usize,
}

impl CacheStats {
    /// Share of counts answered from the cache; 0 before any count.
    ///
    /// ```
    /// assert_eq!(memory_tokenizers::CacheStats::default().hit_rate(), 0.0);
    /// ```
    pub fn hit_rate(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

impl<C> CachedCounter<C> {
    /// Entries kept by [`new`](CachedCounter::new): a few hundred kilobytes.
    ///
    /// ```
    /// assert!(memory_tokenizers::CachedCounter::<()>::DEFAULT_CAPACITY >= 1_000);
    /// ```
    pub const DEFAULT_CAPACITY: usize = 16_384;

    /// Caches up to [`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY) counts of
    /// `inner`.
    ///
    /// ```
    /// let counter = memory_tokenizers::CachedCounter::new(memory_tokenizers::O200k);
    /// assert_eq!(counter.stats().capacity, 16_384);
    /// ```
    pub fn new(inner: C) -> Self {
        Self::with_capacity(inner, Self::DEFAULT_CAPACITY)
    }

    /// Caches up to `capacity` counts of `inner`; 0 caches nothing.
    ///
    /// ```
    /// let counter = memory_tokenizers::CachedCounter::with_capacity(memory_tokenizers::Cl100k, 64);
    /// assert_eq!(counter.stats().capacity, 64);
    /// ```
    pub fn with_capacity(inner: C, capacity: usize) -> Self {
        Self {
            inner,
            cache: Mutex::new(Clock::new(capacity)),
        }
    }

    /// The wrapped counter.
    ///
    /// ```
    /// let counter = memory_tokenizers::CachedCounter::new(memory_tokenizers::Cl100k);
    /// assert_eq!(counter.inner().count_text("hi"), 1);
    /// ```
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// Hits, misses and size so far.
    ///
    /// ```
    /// let counter = memory_tokenizers::CachedCounter::new(memory_tokenizers::Cl100k);
    /// assert_eq!(counter.stats().hits + counter.stats().misses, 0);
    /// ```
    pub fn stats(&self) -> CacheStats {
        let clock = self.lock();
        CacheStats {
            hits: clock.hits,
            misses: clock.misses,
            entries: clock.index.len(),
            capacity: clock.capacity,
        }
    }

    /// Forgets every entry (the hit and miss counters stay); needed only if
    /// the inner counter's answers change.
    ///
    /// ```
    /// use memory_core::TokenCounter;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let counter = memory_tokenizers::CachedCounter::new(memory_core::CharTokenCounter);
    /// counter.count("abc").await.unwrap();
    /// counter.clear();
    /// assert_eq!(counter.stats().entries, 0);
    /// # });
    /// ```
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Clock> {
        // A panic while holding the lock cannot leave the cache inconsistent
        // in a way that matters: at worst an entry is missing.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lookup(&self, key: u64) -> Option<usize> {
        self.lock().get(key)
    }

    fn store(&self, key: u64, count: usize) {
        self.lock().insert(key, count);
    }
}

impl<C: std::fmt::Debug> std::fmt::Debug for CachedCounter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedCounter")
            .field("inner", &self.inner)
            .field("stats", &self.stats())
            .finish()
    }
}

#[async_trait::async_trait]
impl<C: TokenCounter> TokenCounter for CachedCounter<C> {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        let key = text_key(text);
        if let Some(count) = self.lookup(key) {
            return Ok(count);
        }
        let count = self.inner.count(text).await?;
        self.store(key, count);
        Ok(count)
    }

    async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
        let Some(key) = message_key(message) else {
            return self.inner.count_message(message).await;
        };
        if let Some(count) = self.lookup(key) {
            return Ok(count);
        }
        let count = self.inner.count_message(message).await?;
        self.store(key, count);
        Ok(count)
    }

    /// The inner counter's.
    fn framing(&self) -> memory_core::Framing {
        self.inner.framing()
    }
}

/// Domain tags keep a text and a message from sharing a key.
const TEXT: u8 = 0;
const MESSAGE: u8 = 1;

fn text_key(text: &str) -> u64 {
    // SipHash with fixed keys: well mixed, and the same in every run.
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write_u8(TEXT);
    hasher.write_usize(text.len());
    hasher.write(text.as_bytes());
    hasher.finish()
}

/// Hashes the message's JSON form as it is written, without building it.
fn message_key(message: &Message) -> Option<u64> {
    struct HashWriter(std::hash::DefaultHasher);
    impl io::Write for HashWriter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.write(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut writer = HashWriter(std::hash::DefaultHasher::new());
    writer.0.write_u8(MESSAGE);
    serde_json::to_writer(&mut writer, message).ok()?;
    Some(writer.0.finish())
}

/// Keys are already hashes: use them as they are.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A count the cache keeps: the count of the text or message whose hash is
/// `key`, and whether it was read since the clock's hand last passed it.
struct KeyedCount {
    key: u64,
    count: usize,
    referenced: bool,
}

/// A fixed-size table with CLOCK eviction: a hand sweeps the counts kept,
/// giving each entry read since the last pass a second chance and evicting
/// the first that was not.
struct Clock {
    index: HashMap<u64, usize, BuildHasherDefault<KeyHasher>>,
    counts: Vec<KeyedCount>,
    hand: usize,
    capacity: usize,
    hits: u64,
    misses: u64,
}

impl Clock {
    fn new(capacity: usize) -> Self {
        Self {
            index: HashMap::default(),
            counts: Vec::new(),
            hand: 0,
            capacity,
            hits: 0,
            misses: 0,
        }
    }

    fn get(&mut self, key: u64) -> Option<usize> {
        match self.index.get(&key) {
            Some(&i) => {
                self.hits += 1;
                let kept = &mut self.counts[i];
                kept.referenced = true;
                Some(kept.count)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    fn insert(&mut self, key: u64, count: usize) {
        if let Some(&i) = self.index.get(&key) {
            // Counted concurrently by another caller: same answer.
            self.counts[i].count = count;
            return;
        }
        if self.capacity == 0 {
            return;
        }
        if self.counts.len() < self.capacity {
            self.index.insert(key, self.counts.len());
            self.counts.push(KeyedCount {
                key,
                count,
                referenced: false,
            });
            return;
        }
        loop {
            let kept = &mut self.counts[self.hand];
            if kept.referenced {
                kept.referenced = false;
                self.hand = (self.hand + 1) % self.capacity;
                continue;
            }
            self.index.remove(&kept.key);
            self.index.insert(key, self.hand);
            *kept = KeyedCount {
                key,
                count,
                referenced: false,
            };
            self.hand = (self.hand + 1) % self.capacity;
            return;
        }
    }

    fn clear(&mut self) {
        self.index.clear();
        self.counts.clear();
        self.hand = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use memory_core::{CharTokenCounter, ToolCall};

    use super::*;
    use crate::Cl100k;

    /// Counts words and how often it was asked.
    #[derive(Default)]
    struct Probe {
        calls: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl TokenCounter for Probe {
        async fn count(&self, text: &str) -> Result<usize, MemoryError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            if text == "fail" {
                return Err(MemoryError::TokenCount("probe".into()));
            }
            Ok(text.split_whitespace().count())
        }
    }

    #[tokio::test]
    async fn repeated_texts_are_counted_once() {
        let counter = CachedCounter::new(Probe::default());
        for _ in 0..5 {
            assert_eq!(counter.count("one two three").await.unwrap(), 3);
        }
        assert_eq!(counter.inner().calls.load(Ordering::Relaxed), 1);
        let stats = counter.stats();
        assert_eq!((stats.hits, stats.misses, stats.entries), (4, 1, 1));
        assert!((stats.hit_rate() - 0.8).abs() < 1e-12);
    }

    #[tokio::test]
    async fn capacity_is_never_exceeded_and_results_match_the_inner_counter() {
        let capacity = 37;
        let counter = CachedCounter::with_capacity(Cl100k, capacity);
        // A skewed stream: a few hot texts among many cold ones.
        for i in 0..2_000usize {
            let text = if i % 3 == 0 {
                format!("hot text number {}", i % 5)
            } else {
                format!("cold text {i} {}", "word ".repeat(i % 17))
            };
            let cached = counter.count(&text).await.unwrap();
            assert_eq!(cached, Cl100k.count_text(&text), "{text:?}");
            assert!(counter.stats().entries <= capacity);
        }
        let stats = counter.stats();
        assert_eq!(stats.entries, capacity);
        assert_eq!(stats.hits + stats.misses, 2_000);
        // The five hot texts survive the cold stream.
        assert!(stats.hits >= 600, "{stats:?}");
        assert!(counter.lock().counts.len() <= capacity);
    }

    #[tokio::test]
    async fn zero_capacity_caches_nothing() {
        let counter = CachedCounter::with_capacity(Probe::default(), 0);
        for _ in 0..3 {
            assert_eq!(counter.count("a b").await.unwrap(), 2);
        }
        assert_eq!(counter.inner().calls.load(Ordering::Relaxed), 3);
        assert_eq!(counter.stats().entries, 0);
        assert_eq!(counter.stats().misses, 3);
    }

    #[tokio::test]
    async fn errors_pass_through_and_are_not_cached() {
        let counter = CachedCounter::new(Probe::default());
        assert!(counter.count("fail").await.is_err());
        assert!(counter.count("fail").await.is_err());
        assert_eq!(counter.inner().calls.load(Ordering::Relaxed), 2);
        assert_eq!(counter.stats().entries, 0);
    }

    #[tokio::test]
    async fn messages_keep_the_inner_counters_framing() {
        /// Four tokens of framing a message on top of the default sum.
        struct Framed;
        #[async_trait::async_trait]
        impl TokenCounter for Framed {
            async fn count(&self, text: &str) -> Result<usize, MemoryError> {
                CharTokenCounter.count(text).await
            }
            async fn count_message(&self, message: &Message) -> Result<usize, MemoryError> {
                Ok(4 + CharTokenCounter.count_message(message).await?)
            }
        }
        let counter = CachedCounter::new(Framed);
        let call = Message::Assistant {
            content: "abcd".into(),
            reasoning: Some("abcdabcd".into()),
            tool_calls: vec![ToolCall::new("c1", "calc", "1+1")],
        };
        let other = Message::user("abcd");
        for _ in 0..3 {
            assert_eq!(counter.count_message(&call).await.unwrap(), 9);
            assert_eq!(counter.count_message(&other).await.unwrap(), 5);
        }
        assert_eq!(counter.stats().misses, 2);
        assert_eq!(counter.stats().hits, 4);
        // A text equal to a message's content is a different entry.
        assert_eq!(counter.count("abcd").await.unwrap(), 1);
        assert_eq!(counter.stats().entries, 3);
    }

    #[tokio::test]
    async fn clear_forgets_entries() {
        let counter = CachedCounter::new(Probe::default());
        counter.count("a").await.unwrap();
        counter.clear();
        counter.count("a").await.unwrap();
        assert_eq!(counter.inner().calls.load(Ordering::Relaxed), 2);
        assert_eq!(counter.stats().entries, 1);
    }

    #[test]
    fn clock_gives_read_entries_a_second_chance() {
        let mut clock = Clock::new(3);
        for key in 1..=3 {
            clock.insert(key, key as usize);
        }
        assert_eq!(clock.get(1), Some(1));
        clock.insert(4, 4); // evicts 2, the first unread
        assert_eq!(clock.get(2), None);
        assert_eq!(clock.get(1), Some(1));
        assert_eq!(clock.get(3), Some(3));
        assert_eq!(clock.get(4), Some(4));
        assert_eq!(clock.index.len(), 3);
    }

    #[test]
    fn keys_separate_texts_and_messages() {
        assert_ne!(text_key("a"), text_key("b"));
        assert_eq!(text_key("same"), text_key("same"));
        let a = message_key(&Message::user("x")).unwrap();
        let b = message_key(&Message::assistant("x")).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, text_key("x"));
    }
}
