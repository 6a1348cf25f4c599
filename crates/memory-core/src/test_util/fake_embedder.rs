//! [`FakeEmbedder`]: a deterministic embedder for tests.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::embedder::Embedder;
use crate::provider::ProviderError;

/// Embeds each text as its words counted into `dimensions` buckets (a
/// word's bucket is a hash of it, lowercased), so that texts sharing words
/// are alike by [`cosine`](crate::cosine) and texts sharing none are
/// orthogonal but for collisions. Stands in for a model's judgement in
/// tests; records every request, and fails the calls it is told to.
///
/// ```
/// use memory_core::{cosine, Embedder, FakeEmbedder};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let fake = FakeEmbedder::new(64);
/// let v = fake.embed(&["Caroline went hiking".into(), "caroline hiking trip".into()]).await.unwrap();
/// assert!(cosine(&v[0], &v[1]).unwrap() > 0.5);
/// assert_eq!(v[0], fake.vector("Caroline went hiking"));
/// assert_eq!(fake.requests().len(), 1);
/// # });
/// ```
#[derive(Debug)]
pub struct FakeEmbedder {
    dimensions: usize,
    requests: Mutex<Vec<Vec<String>>>,
    /// Calls to fail, by their number (0 the first), with their error.
    failures: Mutex<HashMap<usize, ProviderError>>,
}

impl FakeEmbedder {
    /// An embedder of `dimensions` dimensions (at least one).
    ///
    /// ```
    /// assert_eq!(memory_core::FakeEmbedder::new(4).vector("a b").len(), 4);
    /// ```
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions: dimensions.max(1),
            requests: Mutex::default(),
            failures: Mutex::default(),
        }
    }

    /// The vector this embedder gives `text`.
    ///
    /// ```
    /// let fake = memory_core::FakeEmbedder::new(8);
    /// assert_eq!(fake.vector("Hello, hello"), fake.vector("hello").iter().map(|v| v * 2.0).collect::<Vec<_>>());
    /// ```
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0; self.dimensions];
        for word in memory_text::words(text) {
            // FNV-1a: stable across runs and platforms.
            let hash = word
                .to_lowercase()
                .bytes()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
            vector[(hash % self.dimensions as u64) as usize] += 1.0;
        }
        vector
    }

    /// Fails the call that comes after `successes` more calls, with
    /// `error` (`fail_after(0, ..)`: the next call).
    ///
    /// ```
    /// use memory_core::{Embedder, FakeEmbedder, ProviderError};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let fake = FakeEmbedder::new(4);
    /// fake.fail_after(1, ProviderError::Timeout(10));
    /// assert!(fake.embed(&["a".into()]).await.is_ok());
    /// assert_eq!(fake.embed(&["a".into()]).await, Err(ProviderError::Timeout(10)));
    /// assert!(fake.embed(&["a".into()]).await.is_ok());
    /// # });
    /// ```
    pub fn fail_after(&self, successes: usize, error: ProviderError) {
        let call = self.requests().len() + successes;
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(call, error);
    }

    /// The texts of every call so far, failed ones included.
    ///
    /// ```
    /// assert!(memory_core::FakeEmbedder::new(4).requests().is_empty());
    /// ```
    pub fn requests(&self) -> Vec<Vec<String>> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[async_trait::async_trait]
impl Embedder for FakeEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let call = {
            let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
            requests.push(texts.to_vec());
            requests.len() - 1
        };
        let failure = self
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&call);
        match failure {
            Some(error) => Err(error),
            None => Ok(texts.iter().map(|t| self.vector(t)).collect()),
        }
    }
}
