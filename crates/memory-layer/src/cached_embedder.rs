//! [`CachedEmbedder`]: an [`Embedder`] that asks for each text once, in
//! batches.

use std::collections::HashMap;
use std::sync::Mutex;

use memory_core::{Embedder, ProviderError, check_embeddings};

/// Wraps an [`Embedder`] with a cache keyed by text, shared by every call
/// (and every clone of an `Arc` holding it): a call asks the inner embedder
/// only for the texts not cached yet, each once however often it appears,
/// in batches of at most [`batch_size`](Self::with_batch_size) texts sent
/// one after the other. Each batch's vectors are cached as they arrive, so
/// a failure part way keeps what was embedded before it, and the next call
/// asks only for the rest.
///
/// The cache holds at most [`capacity`](Self::with_capacity) texts with
/// their vectors (100,000 by default; at 384 dimensions that is 150 MB of
/// vectors plus the texts). Past that it forgets the texts used least
/// recently, roughly: texts live in two generations of at most half the
/// capacity each; a full young generation becomes the old one, and the old
/// one is dropped; a text found in the old generation moves to the young.
///
/// Two calls that miss the same text at the same time both ask for it. The
/// vectors of every batch are checked ([`check_embeddings`]), and against
/// the dimensions of the vectors cached before: a cache never mixes models.
/// Stack it over the [`Retry`](crate::Retry) and
/// [`Timeout`](crate::Timeout) layers, so that a retry resends one
/// batch, not the call.
///
/// ```
/// use memory_core::{Embedder, FakeEmbedder};
/// use memory_layer::CachedEmbedder;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let embedder = CachedEmbedder::new(FakeEmbedder::new(16)).with_batch_size(2);
/// let texts: Vec<String> = ["red apple", "green apple", "red car"].map(String::from).into();
/// let first = embedder.embed(&texts).await.unwrap();
/// assert_eq!(embedder.inner().requests().len(), 2, "two batches: two texts, then one");
/// let again = embedder.embed(&texts[1..]).await.unwrap();
/// assert_eq!(again, first[1..].to_vec());
/// assert_eq!(embedder.inner().requests().len(), 2, "served from the cache");
/// # });
/// ```
#[derive(Debug)]
pub struct CachedEmbedder<E> {
    inner: E,
    batch_size: usize,
    capacity: usize,
    cache: Mutex<Generations>,
}

/// Texts and their vectors in two generations (see [`CachedEmbedder`]).
#[derive(Debug, Default)]
struct Generations {
    young: HashMap<String, Vec<f32>>,
    old: HashMap<String, Vec<f32>>,
    /// The length of every cached vector, once one is cached.
    dimensions: Option<usize>,
}

impl Generations {
    fn get(&mut self, text: &str, half: usize) -> Option<Vec<f32>> {
        if let Some(vector) = self.young.get(text) {
            return Some(vector.clone());
        }
        let (text, vector) = self.old.remove_entry(text)?;
        self.insert(text, vector.clone(), half);
        Some(vector)
    }

    fn insert(&mut self, text: String, vector: Vec<f32>, half: usize) {
        self.young.insert(text, vector);
        if self.young.len() >= half {
            self.old = std::mem::take(&mut self.young);
        }
    }

    fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }
}

impl<E> CachedEmbedder<E> {
    /// Texts per request by default.
    pub const DEFAULT_BATCH_SIZE: usize = 64;
    /// Texts cached by default.
    pub const DEFAULT_CAPACITY: usize = 100_000;

    /// Caches the vectors of `inner`, with the default batch size and
    /// capacity.
    ///
    /// ```
    /// use memory_core::FakeEmbedder;
    /// use memory_layer::CachedEmbedder;
    /// let cached = CachedEmbedder::new(FakeEmbedder::new(8));
    /// assert_eq!(cached.batch_size(), CachedEmbedder::<FakeEmbedder>::DEFAULT_BATCH_SIZE);
    /// assert!(cached.is_empty());
    /// ```
    pub fn new(inner: E) -> Self {
        Self {
            inner,
            batch_size: Self::DEFAULT_BATCH_SIZE,
            capacity: Self::DEFAULT_CAPACITY,
            cache: Mutex::default(),
        }
    }

    /// Sends at most `texts` texts per request to the inner embedder (at
    /// least one).
    ///
    /// ```
    /// use memory_core::FakeEmbedder;
    /// use memory_layer::CachedEmbedder;
    /// assert_eq!(CachedEmbedder::new(FakeEmbedder::new(8)).with_batch_size(0).batch_size(), 1);
    /// ```
    pub fn with_batch_size(mut self, texts: usize) -> Self {
        self.batch_size = texts.max(1);
        self
    }

    /// Keeps at most `texts` texts cached (at least two).
    ///
    /// ```
    /// use memory_core::FakeEmbedder;
    /// use memory_layer::CachedEmbedder;
    /// assert_eq!(CachedEmbedder::new(FakeEmbedder::new(8)).with_capacity(1_000).capacity(), 1_000);
    /// ```
    pub fn with_capacity(mut self, texts: usize) -> Self {
        self.capacity = texts.max(2);
        self
    }

    /// Texts per request.
    ///
    /// ```
    /// use memory_core::FakeEmbedder;
    /// use memory_layer::CachedEmbedder;
    /// assert_eq!(CachedEmbedder::new(FakeEmbedder::new(8)).with_batch_size(16).batch_size(), 16);
    /// ```
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Most texts cached.
    ///
    /// ```
    /// use memory_core::FakeEmbedder;
    /// use memory_layer::CachedEmbedder;
    /// assert_eq!(CachedEmbedder::new(FakeEmbedder::new(8)).capacity(), 100_000);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Texts cached now.
    ///
    /// ```
    /// use memory_core::FakeEmbedder;
    /// use memory_layer::CachedEmbedder;
    /// assert_eq!(CachedEmbedder::new(FakeEmbedder::new(8)).len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.cache().len()
    }

    /// Whether nothing is cached.
    ///
    /// ```
    /// use memory_core::FakeEmbedder;
    /// use memory_layer::CachedEmbedder;
    /// assert!(CachedEmbedder::new(FakeEmbedder::new(8)).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The wrapped embedder.
    ///
    /// ```
    /// use memory_core::FakeEmbedder;
    /// use memory_layer::CachedEmbedder;
    /// assert!(CachedEmbedder::new(FakeEmbedder::new(8)).inner().requests().is_empty());
    /// ```
    pub fn inner(&self) -> &E {
        &self.inner
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Generations> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn half(&self) -> usize {
        self.capacity / 2
    }
}

#[async_trait::async_trait]
impl<E: Embedder> Embedder for CachedEmbedder<E> {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        // The texts to ask for, each once, with where each goes.
        let mut missing: Vec<String> = Vec::new();
        let mut places: HashMap<&str, Vec<usize>> = HashMap::new();
        {
            let mut cache = self.cache();
            for (i, text) in texts.iter().enumerate() {
                if let Some(at) = places.get_mut(text.as_str()) {
                    at.push(i);
                } else if let Some(vector) = cache.get(text, self.half()) {
                    vectors[i] = Some(vector);
                } else {
                    places.insert(text, vec![i]);
                    missing.push(text.clone());
                }
            }
        }
        for batch in missing.chunks(self.batch_size) {
            let reply = self.inner.embed(batch).await?;
            let dimensions = check_embeddings(batch.len(), &reply)?;
            let mut cache = self.cache();
            match cache.dimensions {
                Some(cached) if cached != dimensions => {
                    return Err(ProviderError::MalformedReply(format!(
                        "the embedder returned vectors of {dimensions} dimensions where it returned {cached} before; \
                         one cache must serve one model"
                    )));
                }
                _ => cache.dimensions = Some(dimensions),
            }
            for (text, vector) in batch.iter().zip(reply) {
                for &i in places.get(text.as_str()).into_iter().flatten() {
                    vectors[i] = Some(vector.clone());
                }
                cache.insert(text.clone(), vector, self.half());
            }
        }
        vectors
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                ProviderError::Other("an embedding went missing between cache and reply".into())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::FakeEmbedder;

    fn texts(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[tokio::test]
    async fn only_missing_texts_are_asked_for_once_each_in_batches() {
        let cached = CachedEmbedder::new(FakeEmbedder::new(8)).with_batch_size(2);
        let first = cached.embed(&texts(&["a", "b", "a", "c"])).await.unwrap();
        assert_eq!(first[0], first[2], "a repeated text gets the same vector");
        assert_eq!(first[1], cached.inner().vector("b"));
        assert_eq!(
            cached.inner().requests(),
            vec![texts(&["a", "b"]), texts(&["c"])]
        );
        let second = cached.embed(&texts(&["c", "d", "b"])).await.unwrap();
        assert_eq!(second[0], first[3]);
        assert_eq!(second[1], cached.inner().vector("d"));
        assert_eq!(cached.inner().requests().last(), Some(&texts(&["d"])));
        assert_eq!(cached.inner().requests().len(), 3);
        assert!(cached.embed(&[]).await.unwrap().is_empty());
        assert_eq!(cached.inner().requests().len(), 3, "nothing to ask for");
    }

    #[tokio::test]
    async fn a_failed_batch_keeps_the_batches_before_it() {
        let cached = CachedEmbedder::new(FakeEmbedder::new(8)).with_batch_size(1);
        cached
            .inner()
            .fail_after(1, ProviderError::Network("reset".into()));
        let error = cached.embed(&texts(&["a", "b"])).await.unwrap_err();
        assert_eq!(error, ProviderError::Network("reset".into()));
        assert_eq!(cached.len(), 1);
        cached.embed(&texts(&["a", "b"])).await.unwrap();
        assert_eq!(
            cached.inner().requests(),
            vec![texts(&["a"]), texts(&["b"]), texts(&["b"])]
        );
    }

    #[tokio::test]
    async fn the_cache_stays_within_its_capacity_and_keeps_recent_texts() {
        let cached = CachedEmbedder::new(FakeEmbedder::new(4)).with_capacity(4);
        for word in ["a", "b", "c", "d", "e", "f", "g"] {
            cached.embed(&texts(&[word])).await.unwrap();
            cached.embed(&texts(&["a"])).await.unwrap(); // used after every text
            assert!(cached.len() <= 4, "{} cached", cached.len());
        }
        let asked = cached.inner().requests().len();
        cached.embed(&texts(&["a", "g"])).await.unwrap();
        assert_eq!(cached.inner().requests().len(), asked, "recent texts kept");
        cached.embed(&texts(&["b"])).await.unwrap();
        assert_eq!(cached.inner().requests().len(), asked + 1, "b was dropped");
    }

    /// Replies with vectors of a length that grows at each call.
    struct Growing(Mutex<usize>);

    #[async_trait::async_trait]
    impl Embedder for Growing {
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
            let mut length = self.0.lock().unwrap();
            *length += 1;
            Ok(texts.iter().map(|_| vec![1.0; *length]).collect())
        }
    }

    #[tokio::test]
    async fn vectors_of_another_length_than_the_cached_ones_are_refused() {
        let cached = CachedEmbedder::new(Growing(Mutex::new(0)));
        cached.embed(&texts(&["a"])).await.unwrap();
        let Err(ProviderError::MalformedReply(message)) = cached.embed(&texts(&["b"])).await else {
            panic!("a second model's vectors must not enter the cache");
        };
        assert!(
            message.contains("2 dimensions where it returned 1"),
            "{message}"
        );
        assert_eq!(cached.len(), 1);
    }
}
