//! The gold answers of a LoCoMo file: each `qa` item's `answer`, by sample
//! and question, in the order [`parse_locomo`](crate::input::parse_locomo)
//! reads them.
//!
//! An answer is read as its text: a string as it is, a number (LoCoMo has
//! `2022`) as it is written, a list as its items' texts joined by `, `.
//! A question without `answer` (category 5 has `adversarial_answer`
//! instead), or with one of another kind, has none.

use serde_json::Value;

use crate::input::Located;

/// The gold answers of every sample.
///
/// ```
/// let gold = memory_cli::eval::GoldAnswers::parse(br#"[{"qa": [
///     {"question": "When?", "answer": 2022, "category": 2},
///     {"question": "Who?", "adversarial_answer": "Bo", "category": 5}],
///   "conversation": {}}]"#).unwrap();
/// assert_eq!(gold.get(0, 0), Some("2022"));
/// assert_eq!(gold.get(0, 1), None);
/// assert_eq!(gold.get(3, 0), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoldAnswers {
    by_sample: Vec<Vec<Option<String>>>,
}

impl GoldAnswers {
    /// Reads the answers of a LoCoMo document (or JSONL, one sample or an
    /// array of samples per line). Anything that is not a sample with a
    /// `qa` list counts as a sample without questions.
    ///
    /// # Errors
    ///
    /// The position of the first byte that is not UTF-8, or the line and
    /// column of the first JSON syntax error.
    ///
    /// ```
    /// let e = memory_cli::eval::GoldAnswers::parse(b"[{").unwrap_err();
    /// assert!(e.position.starts_with("line 1"), "{}", e.position);
    /// ```
    pub fn parse(bytes: &[u8]) -> Result<Self, Located> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Located::new(
                format!("byte {}", e.valid_up_to()),
                "invalid UTF-8; the input must be UTF-8 text",
            )
        })?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut by_sample = Vec::new();
        for record in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            let record = record.map_err(|e| {
                Located::new(
                    format!("line {}, column {}", e.line(), e.column()),
                    format!("{e}; expected LoCoMo JSON"),
                )
            })?;
            match record {
                Value::Array(samples) => by_sample.extend(samples.iter().map(answers)),
                sample => by_sample.push(answers(&sample)),
            }
        }
        Ok(Self { by_sample })
    }

    /// The answer of question `question` of sample `sample`, when it has
    /// one.
    ///
    /// ```
    /// assert_eq!(memory_cli::eval::GoldAnswers::default().get(0, 0), None);
    /// ```
    pub fn get(&self, sample: usize, question: usize) -> Option<&str> {
        self.by_sample.get(sample)?.get(question)?.as_deref()
    }
}

/// The answers of one sample's `qa` items, in order.
fn answers(sample: &Value) -> Vec<Option<String>> {
    match sample.get("qa") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.get("answer").and_then(text))
            .collect(),
        _ => Vec::new(),
    }
}

/// An answer value as text: strings and numbers as written, lists joined.
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().filter_map(text).collect();
            (!parts.is_empty()).then(|| parts.join(", "))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_follow_the_samples_of_every_record() {
        let jsonl = br#"{"qa": [{"answer": "one"}], "conversation": {}}
[{"qa": [{"answer": ["a", 2]}, {"answer": null}, {}]}, {"qa": "broken"}]"#;
        let gold = GoldAnswers::parse(jsonl).unwrap();
        assert_eq!(gold.get(0, 0), Some("one"));
        assert_eq!(gold.get(1, 0), Some("a, 2"));
        assert_eq!((gold.get(1, 1), gold.get(1, 2)), (None, None));
        assert_eq!(gold.get(2, 0), None);
        assert_eq!(gold.by_sample.len(), 3);
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_bad_bytes_are_placed() {
        let gold = GoldAnswers::parse("\u{feff}[{\"qa\": [{\"answer\": 3.5}]}]".as_bytes());
        assert_eq!(gold.unwrap().get(0, 0), Some("3.5"));
        let e = GoldAnswers::parse(b"[\xff]").unwrap_err();
        assert_eq!(e.position, "byte 1");
    }
}
