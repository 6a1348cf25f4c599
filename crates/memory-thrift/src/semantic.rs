//! [`Semantic`]: relevance from embeddings blended with the lexical score.

use std::sync::Arc;

use memory_core::{Embedder, MemoryError, cosine};

use crate::scoring::{Lexical, Relevance};

/// Default share of the embedding similarity in a [`Semantic`] score.
pub const DEFAULT_SEMANTIC_WEIGHT: f64 = 0.5;

/// Most characters of a unit that are embedded (its head): embedding
/// models read a few hundred tokens at most.
const MAX_EMBEDDED_CHARS: usize = 2_000;

/// A [`Relevance`] that blends how alike the question and each unit are
/// by their embeddings with the [`Lexical`] score:
/// `(1 - weight) * lexical + weight * similarity`, where a unit's
/// similarity is its cosine to the question rescaled over the candidates
/// (0 at their mean or below, 1 for the most similar), so that only units
/// closer than usual count.
///
/// The embedders are called on every scoring: wrap them in a
/// [`CachedEmbedder`](memory_core::CachedEmbedder) so that each text is
/// embedded once. Models that embed questions and passages differently
/// (e5, bge) take one embedder for each. When embedding fails the lexical
/// score alone is used for that call (and a warning is logged): Thrift
/// never fails a turn for it.
///
/// ```
/// use memory_core::{Embedder, ProviderError};
/// use memory_thrift::{Relevance, Semantic};
///
/// /// Vectors of how often "cat" and "dog" occur.
/// struct Pets;
/// #[async_trait::async_trait]
/// impl Embedder for Pets {
///     async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
///         Ok(texts.iter().map(|t| vec![t.matches("cat").count() as f32, t.matches("dog").count() as f32]).collect())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let semantic = Semantic::new(Pets);
/// let units = vec![vec!["the dog barked"], vec!["a cat slept"], vec!["a dog ran"]];
/// let scores = semantic.score("where is my cat", &units).await.unwrap();
/// assert!(scores[1] > scores[0] && scores[1] > scores[2]);
/// # });
/// ```
#[derive(Clone)]
pub struct Semantic {
    questions: Arc<dyn Embedder>,
    passages: Arc<dyn Embedder>,
    weight: f64,
}

impl std::fmt::Debug for Semantic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semantic")
            .field("weight", &self.weight)
            .finish_non_exhaustive()
    }
}

impl Semantic {
    /// One embedder for questions and units alike, weight
    /// [`DEFAULT_SEMANTIC_WEIGHT`].
    pub fn new(embedder: impl Embedder + 'static) -> Self {
        let embedder: Arc<dyn Embedder> = Arc::new(embedder);
        Self {
            questions: embedder.clone(),
            passages: embedder,
            weight: DEFAULT_SEMANTIC_WEIGHT,
        }
    }

    /// Separate embedders for questions and for the units (passages), for
    /// models that embed them differently.
    ///
    /// ```
    /// use memory_core::test_util::FakeEmbedder;
    /// let semantic = memory_thrift::Semantic::with_embedders(FakeEmbedder::new(4), FakeEmbedder::new(4));
    /// assert_eq!(semantic.weight(), memory_thrift::DEFAULT_SEMANTIC_WEIGHT);
    /// ```
    pub fn with_embedders(
        questions: impl Embedder + 'static,
        passages: impl Embedder + 'static,
    ) -> Self {
        Self {
            questions: Arc::new(questions),
            passages: Arc::new(passages),
            weight: DEFAULT_SEMANTIC_WEIGHT,
        }
    }

    /// The share of the similarity in the score (0 to 1; 0 is
    /// [`Lexical`] alone).
    ///
    /// ```
    /// use memory_core::test_util::FakeEmbedder;
    /// let semantic = memory_thrift::Semantic::new(FakeEmbedder::new(4)).with_weight(0.7);
    /// assert_eq!(semantic.weight(), 0.7);
    /// ```
    pub fn with_weight(mut self, weight: f64) -> Self {
        self.weight = if weight.is_nan() {
            DEFAULT_SEMANTIC_WEIGHT
        } else {
            weight.clamp(0.0, 1.0)
        };
        self
    }

    /// The share of the similarity in the score.
    pub fn weight(&self) -> f64 {
        self.weight
    }

    /// Each unit's cosine to the question, `None` when embedding failed.
    async fn similarities(&self, question: &str, units: &[Vec<&str>]) -> Option<Vec<f64>> {
        let texts: Vec<String> = units.iter().map(|texts| head(texts)).collect();
        let asked = self.questions.embed(&[question.to_string()]).await;
        let vectors = self.passages.embed(&texts).await;
        let failed = |error: &dyn std::fmt::Display| {
            tracing::warn!(%error, "embedding failed; relevance is lexical for this call");
        };
        let asked = match asked {
            Ok(mut v) if v.len() == 1 => v.pop()?,
            Ok(v) => {
                failed(&format!("{} vectors for one question", v.len()));
                return None;
            }
            Err(e) => {
                failed(&e);
                return None;
            }
        };
        let vectors = match vectors {
            Ok(v) if v.len() == units.len() => v,
            Ok(v) => {
                failed(&format!("{} vectors for {} units", v.len(), units.len()));
                return None;
            }
            Err(e) => {
                failed(&e);
                return None;
            }
        };
        let mut out = Vec::with_capacity(vectors.len());
        for v in &vectors {
            let Some(c) = cosine(&asked, v) else {
                failed(&"vectors of different lengths");
                return None;
            };
            out.push(f64::from(c));
        }
        Some(out)
    }
}

/// A unit's texts joined, cut to [`MAX_EMBEDDED_CHARS`] on a character
/// boundary.
fn head(texts: &[&str]) -> String {
    let mut out = String::new();
    for t in texts {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(t);
        if out.len() >= MAX_EMBEDDED_CHARS {
            break;
        }
    }
    if out.len() > MAX_EMBEDDED_CHARS {
        let mut end = MAX_EMBEDDED_CHARS;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
}

/// Cosines rescaled over the candidates: 0 at their mean or below, 1 for
/// the highest.
fn rescale(cosines: &[f64]) -> Vec<f64> {
    if cosines.is_empty() {
        return Vec::new();
    }
    let mean = cosines.iter().sum::<f64>() / cosines.len() as f64;
    let top = cosines.iter().copied().fold(f64::MIN, f64::max);
    if top - mean <= f64::EPSILON {
        return vec![0.0; cosines.len()];
    }
    cosines
        .iter()
        .map(|c| ((c - mean) / (top - mean)).clamp(0.0, 1.0))
        .collect()
}

#[async_trait::async_trait]
impl Relevance for Semantic {
    fn name(&self) -> &str {
        "semantic"
    }

    async fn score(&self, question: &str, units: &[Vec<&str>]) -> Result<Vec<f64>, MemoryError> {
        let lexical = Lexical::score_now(question, units);
        if units.is_empty() || question.trim().is_empty() || self.weight == 0.0 {
            return Ok(lexical);
        }
        let Some(cosines) = self.similarities(question, units).await else {
            return Ok(lexical);
        };
        let w = self.weight;
        Ok(lexical
            .iter()
            .zip(rescale(&cosines))
            .map(|(l, s)| (1.0 - w) * l + w * s)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rescaling_puts_the_mean_at_zero_and_the_top_at_one() {
        assert_eq!(rescale(&[0.8, 0.8, 0.8, 0.9]), vec![0.0, 0.0, 0.0, 1.0]);
        assert_eq!(rescale(&[0.5, 0.5]), vec![0.0, 0.0]);
        assert!(rescale(&[]).is_empty());
        let r = rescale(&[0.7, 0.8, 0.9]);
        assert_eq!(r[0], 0.0);
        assert!((r[1] - 0.0).abs() < 1e-9 && (r[2] - 1.0).abs() < 1e-9);
    }

    #[test]
    fn long_units_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_EMBEDDED_CHARS);
        let cut = head(&[&long]);
        assert!(cut.len() <= MAX_EMBEDDED_CHARS && !cut.is_empty());
        assert_eq!(head(&["a", "b"]), "a\nb");
    }
}
