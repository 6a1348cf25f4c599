//! The [`Embedder`] contract: texts to vectors, one call; [`cosine`]: how
//! alike two vectors are; [`check_embeddings`]: whether a reply holds what
//! was asked.

use crate::provider::ProviderError;

/// A text-embedding model behind some API: one vector per text.
///
/// An implementation returns exactly one vector per text, in the order of
/// `texts`, all of one length (the model's dimensions); an empty `texts`
/// gives an empty result. Failures are [`ProviderError`]s, classified as a
/// chat call's are, so that the layers of `memory-layer`
/// (`Retry` and `Timeout`)
/// work over embedders too. Models that embed queries and passages
/// differently (e5, bge) take that choice from their implementation's
/// configuration: one embedder for each.
///
/// ```
/// use memory_core::{Embedder, ProviderError};
///
/// /// A vector of how often each of the letters a, b and c occurs.
/// struct Letters;
///
/// #[async_trait::async_trait]
/// impl Embedder for Letters {
///     async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
///         Ok(texts
///             .iter()
///             .map(|t| ['a', 'b', 'c'].map(|l| t.matches(l).count() as f32).to_vec())
///             .collect())
///     }
/// }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let vectors = Letters.embed(&["abba".into(), "cab".into()]).await.unwrap();
/// assert_eq!(vectors, vec![vec![2.0, 2.0, 0.0], vec![1.0, 1.0, 1.0]]);
/// # });
/// ```
#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// Embeds `texts`: one vector per text, in their order.
    ///
    /// # Errors
    ///
    /// A [`ProviderError`] classifying the failure.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError>;
}

#[async_trait::async_trait]
impl<T: Embedder + ?Sized> Embedder for std::sync::Arc<T> {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        (**self).embed(texts).await
    }
}

#[async_trait::async_trait]
impl<T: Embedder + ?Sized> Embedder for Box<T> {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        (**self).embed(texts).await
    }
}

/// The cosine similarity of `a` and `b`, from -1 to 1; 0 when either is all
/// zeros; `None` when their lengths differ or they are empty (vectors of
/// different models, or none).
///
/// ```
/// use memory_core::cosine;
/// assert_eq!(cosine(&[1.0, 0.0], &[2.0, 0.0]), Some(1.0));
/// assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), Some(0.0));
/// assert_eq!(cosine(&[1.0, 0.0], &[0.0, 0.0]), Some(0.0));
/// assert_eq!(cosine(&[1.0, 0.0], &[1.0, 0.0, 0.0]), None);
/// ```
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f32> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    // Eight independent sums, so that the compiler can vectorize the loop
    // (a single running sum of floats may not be reordered).
    const LANES: usize = 8;
    let (mut dot, mut aa, mut bb) = ([0.0f32; LANES], [0.0f32; LANES], [0.0f32; LANES]);
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (a_rest, b_rest) = (a_chunks.remainder(), b_chunks.remainder());
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..LANES {
            dot[lane] += x[lane] * y[lane];
            aa[lane] += x[lane] * x[lane];
            bb[lane] += y[lane] * y[lane];
        }
    }
    for (x, y) in a_rest.iter().zip(b_rest) {
        dot[0] += x * y;
        aa[0] += x * x;
        bb[0] += y * y;
    }
    let sum = |lanes: [f32; LANES]| lanes.iter().map(|&v| f64::from(v)).sum::<f64>();
    let norms = (sum(aa) * sum(bb)).sqrt();
    if norms == 0.0 || !norms.is_finite() {
        return Some(0.0);
    }
    Some((sum(dot) / norms).clamp(-1.0, 1.0) as f32)
}

/// Checks that `vectors`, an embedder's reply to `expected` texts, holds
/// one vector per text, all of one non-zero length, with finite values: a
/// [`ProviderError::MalformedReply`] saying what is wrong otherwise.
/// Returns the vectors' length (0 when `expected` is 0).
///
/// ```
/// use memory_core::{check_embeddings, ProviderError};
/// assert_eq!(check_embeddings(2, &[vec![0.1, 0.2], vec![0.3, 0.4]]), Ok(2));
/// assert!(matches!(check_embeddings(2, &[vec![0.1, 0.2]]), Err(ProviderError::MalformedReply(_))));
/// assert!(check_embeddings(2, &[vec![0.1, 0.2], vec![0.3]]).is_err());
/// assert!(check_embeddings(1, &[vec![f32::NAN]]).is_err());
/// ```
///
/// # Errors
///
/// [`ProviderError::MalformedReply`] naming the first defect found.
pub fn check_embeddings(expected: usize, vectors: &[Vec<f32>]) -> Result<usize, ProviderError> {
    if vectors.len() != expected {
        return Err(ProviderError::MalformedReply(format!(
            "{} embeddings for {expected} texts; check that the endpoint embeds every input",
            vectors.len()
        )));
    }
    let Some(first) = vectors.first() else {
        return Ok(0);
    };
    let dimensions = first.len();
    for (i, vector) in vectors.iter().enumerate() {
        if vector.is_empty() || vector.len() != dimensions {
            return Err(ProviderError::MalformedReply(format!(
                "embedding {i} has {} dimensions, embedding 0 has {dimensions}; check the model",
                vector.len()
            )));
        }
        if let Some(at) = vector.iter().position(|v| !v.is_finite()) {
            return Err(ProviderError::MalformedReply(format!(
                "embedding {i} holds a value that is not a finite number at position {at}"
            )));
        }
    }
    Ok(dimensions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain formula, in f64, to compare the vectorized one with.
    fn reference(a: &[f32], b: &[f32]) -> f64 {
        let dot: f64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        dot / (norm(a) * norm(b))
    }

    #[test]
    fn cosine_matches_the_formula_at_every_length() {
        // Lengths below, at and past the lane count, with a remainder.
        for len in [1usize, 3, 8, 9, 17, 384] {
            let a: Vec<f32> = (0..len).map(|i| ((i * 7 + 3) % 11) as f32 - 5.0).collect();
            let b: Vec<f32> = (0..len).map(|i| ((i * 5 + 1) % 13) as f32 - 6.0).collect();
            let got = f64::from(cosine(&a, &b).unwrap());
            let want = reference(&a, &b);
            assert!(
                (got - want).abs() < 1e-6,
                "length {len}: {got} against {want}"
            );
            let itself = cosine(&a, &a).unwrap();
            assert!((itself - 1.0).abs() < 1e-6, "length {len}: {itself}");
            let negated: Vec<f32> = a.iter().map(|x| -x).collect();
            assert!((cosine(&a, &negated).unwrap() + 1.0).abs() < 1e-6);
        }
    }

    #[test]
    fn cosine_ignores_scale_and_refuses_mismatched_vectors() {
        let a = [0.3, -0.2, 0.9];
        let scaled = [3.0, -2.0, 9.0];
        assert!((cosine(&a, &scaled).unwrap() - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[], &[]), None);
        assert_eq!(cosine(&a, &a[..2]), None);
        assert_eq!(cosine(&[0.0; 3], &a), Some(0.0));
    }

    #[test]
    fn check_embeddings_names_the_defect() {
        assert_eq!(check_embeddings(0, &[]), Ok(0));
        let Err(ProviderError::MalformedReply(message)) = check_embeddings(1, &[]) else {
            panic!("a missing vector is malformed");
        };
        assert!(message.contains("0 embeddings for 1 texts"), "{message}");
        let Err(ProviderError::MalformedReply(message)) = check_embeddings(2, &[vec![1.0], vec![]])
        else {
            panic!("an empty vector is malformed");
        };
        assert!(
            message.contains("embedding 1 has 0 dimensions"),
            "{message}"
        );
        let Err(ProviderError::MalformedReply(message)) =
            check_embeddings(1, &[vec![1.0, f32::INFINITY]])
        else {
            panic!("an infinite value is malformed");
        };
        assert!(message.contains("position 1"), "{message}");
    }
}
