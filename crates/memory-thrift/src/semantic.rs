//! [`Semantic`]: relevance from embeddings blended with the lexical score.

use std::sync::Arc;

use memory_core::{Embedder, MemoryError, cosine};

use crate::scoring::{Lexical, Relevance};

/// Default [`Semantic::with_weight`]: the most that embedding similarity
/// adds to a unit's lexical score (which runs from 0 to 1).
///
/// Why: a paraphrase the question's words miss can still rank among the
/// units they find. Figure: on LoCoMo with multilingual-e5-small, 0.759 /
/// 0.804 evidence recall at 1,000 / 2,000 tokens, against 0.734 / 0.789
/// for the lexical score alone and 0.706 / 0.778 for a 50/50 blend.
pub const DEFAULT_SEMANTIC_WEIGHT: f64 = 0.4;

/// Standard deviations above the candidates' mean cosine from which a unit
/// gains from its similarity. Why: most units sit near the mean; only one
/// unusually close to the question says something. Figure: the LoCoMo
/// figures of [`DEFAULT_SEMANTIC_WEIGHT`], measured with this lift.
const LIFT_FROM: f64 = 1.0;

/// Standard deviations over [`LIFT_FROM`] at which a unit gains the whole
/// weight. Why: the lift grows with how far a unit stands out, up to four
/// deviations. Figure: the LoCoMo figures of [`DEFAULT_SEMANTIC_WEIGHT`],
/// measured with this lift.
const LIFT_SPAN: f64 = 3.0;

/// Most characters of a unit that are embedded (its head). Why: embedding
/// models read a few hundred tokens at most (512 for e5). Figure: none
/// recorded.
const MAX_EMBEDDED_CHARS: usize = 2_000;

/// A [`Relevance`] that adds to the [`Lexical`] score a lift for units whose
/// embedding is unusually close to the question's: `lexical + weight *
/// lift`, where a unit's lift is 0 up to one standard deviation above the
/// candidates' mean cosine to the question and grows linearly to 1 at four.
///
/// The lift only adds: a unit the question's words find keeps its score,
/// and one they miss (a paraphrase, "my sister" for a name) can still rank
/// among them when its meaning is close. Measured on LoCoMo with
/// multilingual-e5-small, this beat blending the two scores as shares of
/// one (`(1 - w) * lexical + w * similarity`), which lowered recall below
/// the lexical score's alone.
///
/// The embedders are called on every scoring: wrap them in a
/// `memory_layer::CachedEmbedder` so that each text is
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

    /// The most the similarity adds to a unit's score (0 to 1; 0 is
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

    /// The most the similarity adds to a unit's score.
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

/// Each cosine's lift (0 to 1): how far it stands above the candidates'
/// mean, in standard deviations, past [`LIFT_FROM`] and over
/// [`LIFT_SPAN`].
fn lift(cosines: &[f64]) -> Vec<f64> {
    if cosines.is_empty() {
        return Vec::new();
    }
    let n = cosines.len() as f64;
    let mean = cosines.iter().sum::<f64>() / n;
    let spread = (cosines.iter().map(|c| (c - mean) * (c - mean)).sum::<f64>() / n).sqrt();
    if spread <= f64::EPSILON {
        return vec![0.0; cosines.len()];
    }
    cosines
        .iter()
        .map(|c| (((c - mean) / spread - LIFT_FROM) / LIFT_SPAN).clamp(0.0, 1.0))
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
            .zip(lift(&cosines))
            .map(|(l, s)| l + w * s)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_units_well_above_the_mean_are_lifted() {
        // Nine at 0.8 and one at 0.9: the one stands 3 deviations above
        // the mean, two thirds of the way to the whole lift.
        let mut c = vec![0.8; 9];
        c.push(0.9);
        let l = lift(&c);
        assert!(l[..9].iter().all(|&x| x == 0.0));
        assert!((l[9] - 2.0 / 3.0).abs() < 1e-9, "{l:?}");
        assert_eq!(lift(&[0.5, 0.5]), vec![0.0, 0.0]);
        assert_eq!(lift(&[0.1, 0.9]), vec![0.0, 0.0], "one deviation each way");
        assert!(lift(&[]).is_empty());
        // Far above: capped at 1.
        let mut c = vec![0.5; 99];
        c.push(0.9);
        assert_eq!(lift(&c)[99], 1.0);
    }

    #[test]
    fn long_units_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_EMBEDDED_CHARS);
        let cut = head(&[&long]);
        assert!(cut.len() <= MAX_EMBEDDED_CHARS && !cut.is_empty());
        assert_eq!(head(&["a", "b"]), "a\nb");
    }
}
