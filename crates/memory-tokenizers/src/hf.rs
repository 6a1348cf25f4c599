//! Counting with a Hugging Face `tokenizer.json`.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use memory_core::{MemoryError, TokenCounter};

/// Exact counts with any Hugging Face tokenizer (Llama, Qwen, Mistral,
/// DeepSeek...), loaded from its `tokenizer.json`.
///
/// Nothing is ever downloaded: fetch the file once (it ships with the model's
/// weights) and load it from disk. Counts leave out the special tokens the
/// tokenizer would add around a sequence (`encode(text, false)`), and any
/// truncation or padding the file configures is switched off, so a long text
/// is counted in full. Cloning shares the loaded tokenizer.
///
/// ```
/// use memory_core::TokenCounter;
/// use memory_tokenizers::HfCounter;
///
/// let json = r#"{
///   "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
///   "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
///   "post_processor": null, "decoder": null,
///   "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hello": 1, "world": 2},
///             "unk_token": "[UNK]"}
/// }"#;
/// let dir = std::env::temp_dir().join(format!("hf-counter-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("tokenizer.json");
/// std::fs::write(&path, json).unwrap();
///
/// let counter = HfCounter::from_file(&path).unwrap();
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(counter.count("hello brave new world").await.unwrap(), 4);
/// # });
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Clone)]
pub struct HfCounter {
    tokenizer: Arc<tokenizers::Tokenizer>,
    source: Arc<str>,
}

impl HfCounter {
    /// Loads the `tokenizer.json` at `path`.
    ///
    /// # Errors
    ///
    /// [`MemoryError::TokenCount`], naming the path, when the file cannot be
    /// read or is not a tokenizer the `tokenizers` crate understands.
    ///
    /// ```
    /// let error = memory_tokenizers::HfCounter::from_file("no/such/tokenizer.json").unwrap_err();
    /// assert!(error.to_string().contains("no/such/tokenizer.json"));
    /// ```
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| {
            MemoryError::TokenCount(format!(
                "cannot read tokenizer file `{shown}`: {e}; pass the path of a Hugging Face tokenizer.json"
            ))
        })?;
        Self::load(&bytes, shown)
    }

    /// Loads a `tokenizer.json` already in memory (embedded with
    /// `include_bytes!`, say).
    ///
    /// # Errors
    ///
    /// [`MemoryError::TokenCount`] when the bytes are not a tokenizer the
    /// `tokenizers` crate understands.
    ///
    /// ```
    /// let error = memory_tokenizers::HfCounter::from_bytes(b"{ not json").unwrap_err();
    /// assert!(error.to_string().contains("tokenizer"));
    /// ```
    pub fn from_bytes(json: &[u8]) -> Result<Self, MemoryError> {
        Self::load(json, "<bytes>".to_owned())
    }

    fn load(json: &[u8], source: String) -> Result<Self, MemoryError> {
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(json).map_err(|e| {
            MemoryError::TokenCount(format!(
                "`{source}` is not a valid Hugging Face tokenizer.json: {e}; use the tokenizer.json published with the model"
            ))
        })?;
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| {
            MemoryError::TokenCount(format!("cannot switch off truncation of `{source}`: {e}"))
        })?;
        Ok(Self {
            tokenizer: Arc::new(tokenizer),
            source: source.into(),
        })
    }

    /// The count, synchronously.
    ///
    /// # Errors
    ///
    /// [`MemoryError::TokenCount`] when the tokenizer fails on the text.
    ///
    /// ```
    /// # let json = br#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
    /// #   "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
    /// #   "model":{"type":"WordLevel","vocab":{"[UNK]":0,"a":1},"unk_token":"[UNK]"}}"#;
    /// let counter = memory_tokenizers::HfCounter::from_bytes(json).unwrap();
    /// assert_eq!(counter.count_text("a a b").unwrap(), 3);
    /// ```
    pub fn count_text(&self, text: &str) -> Result<usize, MemoryError> {
        // `encode_fast` is `encode` without character offsets: the same ids.
        self.tokenizer
            .encode_fast(text, false)
            .map(|encoding| encoding.len())
            .map_err(|e| {
                MemoryError::TokenCount(format!(
                    "tokenizer `{}` failed on a text of {} bytes: {e}",
                    self.source,
                    text.len()
                ))
            })
    }

    /// Where the tokenizer was loaded from: the path as given, or `<bytes>`.
    ///
    /// ```
    /// # let json = br#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
    /// #   "normalizer":null,"pre_tokenizer":null,"post_processor":null,"decoder":null,
    /// #   "model":{"type":"WordLevel","vocab":{"[UNK]":0},"unk_token":"[UNK]"}}"#;
    /// let counter = memory_tokenizers::HfCounter::from_bytes(json).unwrap();
    /// assert_eq!(counter.source(), "<bytes>");
    /// ```
    pub fn source(&self) -> &str {
        &self.source
    }
}

impl fmt::Debug for HfCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HfCounter")
            .field("source", &self.source)
            .field("vocab_size", &self.tokenizer.get_vocab_size(true))
            .finish()
    }
}

#[async_trait::async_trait]
impl TokenCounter for HfCounter {
    async fn count(&self, text: &str) -> Result<usize, MemoryError> {
        self.count_text(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORDS: &str = r#"{
        "version": "1.0",
        "truncation": {"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0},
        "padding": null,
        "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
                          "rstrip": false, "normalized": false, "special": true}],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel",
                  "vocab": {"[UNK]": 0, "the": 1, "cat": 2, "sat": 3, ".": 4},
                  "unk_token": "[UNK]"}
    }"#;

    /// A directory of its own under the system temp dir, removed on drop.
    struct TempDir(std::path::PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "memory-tokenizers-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::create_dir_all(&dir).expect("temp dir");
            Self(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[tokio::test]
    async fn counts_words_of_a_tokenizer_json_file() {
        let dir = TempDir::new("words");
        let path = dir.0.join("tokenizer.json");
        std::fs::write(&path, WORDS).expect("write tokenizer");
        let counter = HfCounter::from_file(&path).expect("load");
        assert_eq!(counter.source(), path.display().to_string());
        assert_eq!(counter.count("").await.unwrap(), 0);
        // Unknown words count as one [UNK] each; punctuation splits off.
        assert_eq!(counter.count("The cat sat.").await.unwrap(), 4);
        assert_eq!(counter.count("the dog sat on the mat").await.unwrap(), 6);
        // The file's truncation (max 2) is switched off: long texts count in full.
        let long = "the cat ".repeat(500);
        assert_eq!(counter.count(&long).await.unwrap(), 1000);
        // Clones share the tokenizer and agree.
        let clone = counter.clone();
        assert_eq!(clone.count("cat cat").await.unwrap(), 2);
        assert!(format!("{counter:?}").contains("tokenizer.json"));
    }

    #[test]
    fn fast_encoding_gives_the_ids_of_encode() {
        let counter = HfCounter::from_bytes(WORDS.as_bytes()).expect("load");
        for text in [
            "",
            "the cat",
            "The cat sat. The dog did not.",
            "  spaces   ",
        ] {
            let full = counter.tokenizer.encode(text, false).expect("encode");
            let fast = counter.tokenizer.encode_fast(text, false).expect("encode");
            assert_eq!(full.get_ids(), fast.get_ids(), "{text:?}");
        }
    }

    #[test]
    fn missing_file_names_the_path() {
        let dir = TempDir::new("missing");
        let path = dir.0.join("absent").join("tokenizer.json");
        let error = HfCounter::from_file(&path).unwrap_err();
        assert!(matches!(error, MemoryError::TokenCount(_)), "{error:?}");
        let text = error.to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.contains("cannot read"), "{text}");
    }

    #[test]
    fn invalid_json_names_the_path() {
        let dir = TempDir::new("invalid");
        let path = dir.0.join("tokenizer.json");
        std::fs::write(&path, "{\"model\": 42").expect("write");
        let error = HfCounter::from_file(&path).unwrap_err();
        assert!(matches!(error, MemoryError::TokenCount(_)), "{error:?}");
        let text = error.to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.contains("not a valid"), "{text}");
    }
}
