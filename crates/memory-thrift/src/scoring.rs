//! [`Relevance`]: how Thrift scores older units of history against the
//! current question, and [`Lexical`], the default scorer.

use memory_core::MemoryError;

use crate::relevance::TermScorer;

/// Scores older units of history (rounds and steps) against the current
/// question. Thrift keeps the units that score higher when it has to drop
/// some, and gives a unit's neighbours a share of its score.
///
/// [`Lexical`] is the default: weighted shared terms, no model, no network.
/// [`Semantic`](crate::Semantic) adds the similarity of embeddings from any
/// [`Embedder`](memory_core::Embedder).
///
/// ```
/// use memory_core::MemoryError;
/// use memory_thrift::{Relevance, Thrift};
///
/// /// Prefers the units that mention a deadline, whatever the question.
/// #[derive(Debug)]
/// struct Deadlines;
///
/// #[async_trait::async_trait]
/// impl Relevance for Deadlines {
///     fn name(&self) -> &str {
///         "deadlines"
///     }
///     async fn score(&self, _question: &str, units: &[Vec<&str>]) -> Result<Vec<f64>, MemoryError> {
///         Ok(units
///             .iter()
///             .map(|texts| f64::from(u8::from(texts.iter().any(|t| t.contains("deadline")))))
///             .collect())
///     }
/// }
///
/// let thrift = Thrift::new().with_relevance(Deadlines);
/// assert_eq!(thrift.relevance().name(), "deadlines");
/// ```
#[async_trait::async_trait]
pub trait Relevance: Send + Sync + std::fmt::Debug {
    /// A short name for reports.
    fn name(&self) -> &str;

    /// One score in `[0, 1]` per unit, in order: how much of what
    /// `question` asks each unit holds. A unit is given as the texts it
    /// shows the model (placeholders left out). The units are the corpus
    /// too: a scorer may learn term weights from them.
    ///
    /// # Errors
    ///
    /// Whatever the scorer cannot recover from; Thrift then falls back to
    /// recency alone for this call rather than failing it.
    async fn score(&self, question: &str, units: &[Vec<&str>]) -> Result<Vec<f64>, MemoryError>;

    /// Whether this scorer's scores are exactly [`Lexical`]'s (default
    /// `false`). Thrift then computes them from the terms it keeps of each
    /// message from call to call, rather than passing every unit's texts
    /// to [`score`](Relevance::score) on every call.
    ///
    /// ```
    /// use memory_thrift::{Lexical, Relevance};
    /// assert!(Lexical.is_lexical());
    /// let shared: std::sync::Arc<dyn Relevance> = std::sync::Arc::new(Lexical);
    /// assert!(shared.is_lexical());
    /// ```
    fn is_lexical(&self) -> bool {
        false
    }
}

#[async_trait::async_trait]
impl<T: Relevance + ?Sized> Relevance for std::sync::Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn is_lexical(&self) -> bool {
        (**self).is_lexical()
    }

    async fn score(&self, question: &str, units: &[Vec<&str>]) -> Result<Vec<f64>, MemoryError> {
        (**self).score(question, units).await
    }
}

/// The default [`Relevance`]: the weighted share of the question's terms a
/// unit holds, each term weighted by its inverse document frequency over
/// the units (see [`relevance`](crate::relevance)).
///
/// ```
/// use memory_thrift::{Lexical, Relevance};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let units = vec![vec!["We pinned Kubernetes 1.29."], vec!["Lunch was good."]];
/// let scores = Lexical.score("Which kubernetes version did we pin?", &units).await.unwrap();
/// assert!(scores[0] > scores[1]);
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lexical;

impl Lexical {
    /// The scores, computed without waiting on anything.
    pub(crate) fn score_now(question: &str, units: &[Vec<&str>]) -> Vec<f64> {
        let mut scorer = TermScorer::new(question);
        if scorer.is_empty() {
            return vec![0.0; units.len()];
        }
        // The terms each unit holds, one after the other.
        let mut terms = Vec::new();
        let mut ends = Vec::with_capacity(units.len());
        for texts in units {
            scorer.match_into(texts.iter().copied(), &mut terms);
            ends.push(terms.len());
        }
        let mut start = 0;
        for &end in &ends {
            scorer.add_terms(&terms[start..end]);
            start = end;
        }
        let score = scorer.scorer();
        let mut start = 0;
        ends.iter()
            .map(|&end| {
                let s = score(&terms[start..end]);
                start = end;
                s
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl Relevance for Lexical {
    fn name(&self) -> &str {
        "lexical"
    }

    fn is_lexical(&self) -> bool {
        true
    }

    async fn score(&self, question: &str, units: &[Vec<&str>]) -> Result<Vec<f64>, MemoryError> {
        Ok(Self::score_now(question, units))
    }
}
