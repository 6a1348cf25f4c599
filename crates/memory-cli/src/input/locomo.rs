//! LoCoMo: long two-person conversations in sessions, with questions whose
//! evidence is named by utterance id (`dia_id`, like `D3:12`).
//!
//! A sample is `{sample_id, conversation, qa, ...}`; `conversation` holds
//! `speaker_a`, `speaker_b`, `session_N` lists of `{speaker, dia_id,
//! text}` and each session's `session_N_date_time` (other fields are
//! ignored). The sessions are read in the order of their numbers;
//! `speaker_a` speaks as the user and `speaker_b` as the assistant, each
//! utterance's text taken verbatim so that evidence can be found in a
//! context as a whole message. A session with a date starts with it, as a
//! system message of its own (`Session 3: 1:56 pm on 8 May, 2023`), as a
//! chat application shows when each conversation took place: a time
//! marker that dates the utterances after it (see
//! [`Sample::is_marker`]).

use std::collections::HashMap;

use memory_core::Message;
use serde_json::{Map, Value};

use super::Located;
use super::json::Record;
use super::openai::kind;

/// How a time marker's `dia_id` starts: `session 3` for session 3's.
const MARKER_ID: &str = "session ";

/// Whether `id` is a time marker's (see [`Sample::is_marker`]).
pub(crate) fn is_marker_id(id: &str) -> bool {
    id.starts_with(MARKER_ID)
}

/// Whether `value` looks like a LoCoMo sample: an object with
/// `conversation` and `qa`.
pub(crate) fn is_sample(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|o| o.contains_key("conversation") && o.contains_key("qa"))
}

/// A loaded LoCoMo file: its samples, in file order.
///
/// ```
/// let locomo = memory_cli::input::parse_locomo(br#"[{"sample_id": "s1",
///   "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
///     "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
///                   {"speaker": "Bo", "dia_id": "D1:2", "text": "What is its name?"}]},
///   "qa": [{"question": "What did Ann adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 1}]}]"#).unwrap();
/// assert_eq!(locomo.samples.len(), 1);
/// assert_eq!(locomo.questions(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Locomo {
    /// The samples (one conversation each).
    pub samples: Vec<Sample>,
}

impl Locomo {
    /// Questions over all samples.
    ///
    /// ```
    /// assert_eq!(memory_cli::input::Locomo::default().questions(), 0);
    /// ```
    pub fn questions(&self) -> usize {
        self.samples.iter().map(|s| s.questions.len()).sum()
    }

    /// Utterances over all samples (time markers not counted).
    ///
    /// ```
    /// assert_eq!(memory_cli::input::Locomo::default().messages(), 0);
    /// ```
    pub fn messages(&self) -> usize {
        self.samples.iter().map(Sample::utterances).sum()
    }
}

/// One conversation and its questions.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Its `sample_id`, when it has one.
    pub label: Option<String>,
    /// `speaker_a` (recorded as the user) and `speaker_b` (the assistant).
    pub speakers: [String; 2],
    /// Number of sessions.
    pub sessions: usize,
    /// The utterances as messages, sessions in order, texts verbatim, each
    /// dated session after its date's time marker.
    pub messages: Vec<Message>,
    /// The `dia_id` of each message (`session N` for a time marker).
    pub dia_ids: Vec<String>,
    /// The questions, in file order.
    pub questions: Vec<Question>,
    /// Message index of each `dia_id`.
    by_id: HashMap<String, usize>,
}

/// One `qa` item.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The question text.
    pub text: String,
    /// Its category (1-5 in LoCoMo; 5 is adversarial).
    pub category: u64,
    /// The evidence ids as written (some are malformed).
    pub evidence: Vec<String>,
    /// The gold answer as text (a number as written, a list's items joined
    /// by `, `); `None` when the item has no `answer` (category 5 has an
    /// `adversarial_answer` instead) or one of another kind.
    pub answer: Option<String>,
}

/// A question's evidence, resolved against its conversation.
///
/// ```
/// let e = memory_cli::input::Evidence { messages: vec![3], skipped: vec!["D:1:2".into()] };
/// assert!(e.is_usable());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Message indices of the evidence utterances, in the order named.
    pub messages: Vec<usize>,
    /// Ids that are malformed or name no utterance of the conversation.
    pub skipped: Vec<String>,
}

impl Evidence {
    /// Whether at least one evidence id names an utterance.
    ///
    /// ```
    /// assert!(!memory_cli::input::Evidence::default().is_usable());
    /// ```
    pub fn is_usable(&self) -> bool {
        !self.messages.is_empty()
    }
}

impl Sample {
    /// How errors and reports name this sample: `sample 2 (conv-41)`.
    ///
    /// ```
    /// # let locomo = memory_cli::input::parse_locomo(br#"[{"sample_id": "c7", "qa": [],
    /// #   "conversation": {"speaker_a": "A", "speaker_b": "B"}}]"#).unwrap();
    /// assert_eq!(locomo.samples[0].name(0), "sample 0 (c7)");
    /// ```
    pub fn name(&self, index: usize) -> String {
        match &self.label {
            Some(label) => format!("sample {index} ({label})"),
            None => format!("sample {index}"),
        }
    }

    /// Number of utterances: the messages but the time markers.
    ///
    /// ```
    /// # let locomo = memory_cli::input::parse_locomo(br#"[{"qa": [], "conversation": {"speaker_a": "A", "speaker_b": "B",
    /// #   "session_1_date_time": "1:56 pm on 8 May, 2023",
    /// #   "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}]"#).unwrap();
    /// let sample = &locomo.samples[0];
    /// assert_eq!((sample.messages.len(), sample.utterances()), (2, 1));
    /// ```
    pub fn utterances(&self) -> usize {
        (0..self.messages.len())
            .filter(|&i| !self.is_marker(i))
            .count()
    }

    /// Whether message `i` is a session's time marker, not an utterance.
    ///
    /// ```
    /// # let locomo = memory_cli::input::parse_locomo(br#"[{"qa": [], "conversation": {"speaker_a": "A", "speaker_b": "B",
    /// #   "session_1_date_time": "1:56 pm on 8 May, 2023",
    /// #   "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}]"#).unwrap();
    /// let sample = &locomo.samples[0];
    /// assert!(sample.is_marker(0) && !sample.is_marker(1));
    /// assert_eq!(sample.messages[0].text(), "Session 1: 1:56 pm on 8 May, 2023");
    /// ```
    pub fn is_marker(&self, i: usize) -> bool {
        self.dia_ids.get(i).is_some_and(|id| is_marker_id(id))
            && self.messages.get(i).is_some_and(Message::is_system)
    }

    /// The message index of the utterance `dia_id`, when there is one.
    ///
    /// ```
    /// # let locomo = memory_cli::input::parse_locomo(br#"[{"qa": [], "conversation": {"speaker_a": "A", "speaker_b": "B",
    /// #   "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}]"#).unwrap();
    /// assert_eq!(locomo.samples[0].message_of("D1:1"), Some(0));
    /// assert_eq!(locomo.samples[0].message_of("D1:2"), None);
    /// ```
    pub fn message_of(&self, dia_id: &str) -> Option<usize> {
        self.by_id.get(dia_id).copied()
    }

    /// Resolves `question`'s evidence: each entry is split at `;` and `,`
    /// (`"D8:6; D9:17"` names two utterances); an id that is not of the form
    /// `D<session>:<turn>` (`D:11:26`) or names no utterance of this
    /// conversation is skipped.
    ///
    /// ```
    /// # let locomo = memory_cli::input::parse_locomo(br#"[{"qa": [], "conversation": {"speaker_a": "A", "speaker_b": "B",
    /// #   "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}, {"speaker": "B", "dia_id": "D1:2", "text": "yo"}]}}]"#).unwrap();
    /// let sample = &locomo.samples[0];
    /// let question = memory_cli::input::Question {
    ///     text: "?".into(), category: 1,
    ///     evidence: vec!["D1:2; D1:1".into(), "D:1:1".into(), "D1:9".into()], answer: None,
    /// };
    /// let e = sample.evidence(&question);
    /// assert_eq!(e.messages, [1, 0]);
    /// assert_eq!(e.skipped, ["D:1:1", "D1:9"]);
    /// ```
    pub fn evidence(&self, question: &Question) -> Evidence {
        let mut evidence = Evidence::default();
        for entry in &question.evidence {
            let pieces: Vec<&str> = entry
                .split([';', ','])
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect();
            if pieces.is_empty() {
                evidence.skipped.push(entry.clone());
            }
            for piece in pieces {
                match self.message_of(piece) {
                    Some(index) if parse_dia_id(piece).is_some() => {
                        if !evidence.messages.contains(&index) {
                            evidence.messages.push(index);
                        }
                    }
                    _ => evidence.skipped.push(piece.to_string()),
                }
            }
        }
        evidence
    }
}

/// The session and turn numbers of a well-formed `dia_id` (`D3:12` is
/// session 3, turn 12).
///
/// ```
/// use memory_cli::input::parse_dia_id;
/// assert_eq!(parse_dia_id("D3:12"), Some((3, 12)));
/// assert_eq!(parse_dia_id("D:11:26"), None);
/// assert_eq!(parse_dia_id("D"), None);
/// ```
pub fn parse_dia_id(id: &str) -> Option<(usize, usize)> {
    let (session, turn) = id.strip_prefix('D')?.split_once(':')?;
    let number = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    Some((number(session)?, number(turn)?))
}

/// Loads the records as LoCoMo samples.
///
/// # Errors
///
/// The first malformed sample, utterance or question, with its position.
pub(crate) fn load(records: Vec<Record>) -> Result<Locomo, Located> {
    let mut samples = Vec::new();
    for record in records {
        let items = match record.value {
            Value::Array(items) => items,
            other => vec![other],
        };
        for item in &items {
            samples.push(sample(item, samples.len())?);
        }
    }
    Ok(Locomo { samples })
}

/// One `{sample_id, conversation, qa}` object.
fn sample(value: &Value, index: usize) -> Result<Sample, Located> {
    let at = format!("sample {index}");
    let object = value.as_object().ok_or_else(|| {
        Located::new(
            &at,
            format!(
                "expected a LoCoMo sample object with `conversation` and `qa`, found {}",
                kind(value)
            ),
        )
    })?;
    let label = object
        .get("sample_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    let at = match &label {
        Some(label) => format!("{at} ({label})"),
        None => at,
    };
    let conversation = field(object, "conversation", &at)?
        .as_object()
        .ok_or_else(|| {
            Located::new(
                &at,
                "field `conversation`: expected an object with `speaker_a`, `speaker_b` and `session_N` lists",
            )
        })?;
    let speakers = [
        string(conversation, "speaker_a", &at)?,
        string(conversation, "speaker_b", &at)?,
    ];

    let sessions = sessions(conversation, &at)?;
    let (messages, dia_ids, by_id) = transcript(conversation, &sessions, &speakers, &at)?;
    let questions = questions(object, &at)?;

    Ok(Sample {
        label,
        speakers,
        sessions: sessions.len(),
        messages,
        dia_ids,
        questions,
        by_id,
    })
}

/// A conversation's messages, their `dia_id`s, and where each id first
/// stands.
type Transcript = (Vec<Message>, Vec<String>, HashMap<String, usize>);

/// A conversation's sessions as messages, each opened by its date's time
/// marker when it has one, with each message's `dia_id` and where each id
/// first stands.
fn transcript(
    conversation: &Map<String, Value>,
    sessions: &[(u64, &Vec<Value>)],
    speakers: &[String; 2],
    at: &str,
) -> Result<Transcript, Located> {
    let mut messages = Vec::new();
    let mut dia_ids = Vec::new();
    let mut by_id = HashMap::new();
    for (number, utterances) in sessions {
        // The session's date, when it has one, as its time marker.
        if let Some(date) = conversation
            .get(&format!("session_{number}_date_time"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|d| !d.is_empty())
        {
            messages.push(Message::system(format!("Session {number}: {date}")));
            dia_ids.push(format!("{MARKER_ID}{number}"));
        }
        for (k, value) in utterances.iter().enumerate() {
            let at = format!("{at}, session {number}, utterance {k}");
            let (message, dia_id) = utterance(value, speakers, &at)?;
            by_id.entry(dia_id.clone()).or_insert(messages.len());
            messages.push(message);
            dia_ids.push(dia_id);
        }
    }
    Ok((messages, dia_ids, by_id))
}

/// The `session_N` lists of a conversation, in session order.
fn sessions<'v>(
    conversation: &'v Map<String, Value>,
    at: &str,
) -> Result<Vec<(u64, &'v Vec<Value>)>, Located> {
    let mut sessions = Vec::new();
    for (key, value) in conversation {
        let Some(number) = key
            .strip_prefix("session_")
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        match value {
            Value::Array(utterances) => sessions.push((number, utterances)),
            other => {
                return Err(Located::new(
                    at,
                    format!(
                        "field `conversation.{key}`: expected an array of utterances, found {}",
                        kind(other)
                    ),
                ));
            }
        }
    }
    sessions.sort_by_key(|(number, _)| *number);
    Ok(sessions)
}

/// One `{speaker, dia_id, text}` utterance as a message (speaker_a's as the
/// user's, speaker_b's as the assistant's) and its `dia_id`.
fn utterance(
    value: &Value,
    speakers: &[String; 2],
    at: &str,
) -> Result<(Message, String), Located> {
    let object = value.as_object().ok_or_else(|| {
        Located::new(
            at,
            format!(
                "expected an utterance object {{speaker, dia_id, text}}, found {}",
                kind(value)
            ),
        )
    })?;
    let speaker = string(object, "speaker", at)?;
    let dia_id = string(object, "dia_id", at)?;
    let text = string(object, "text", at)?;
    let message = if speaker == speakers[0] {
        Message::user(text)
    } else if speaker == speakers[1] {
        Message::assistant(text)
    } else {
        return Err(Located::new(
            at,
            format!(
                "field `speaker`: `{speaker}` is neither speaker_a `{}` nor speaker_b `{}`",
                speakers[0], speakers[1]
            ),
        ));
    };
    Ok((message, dia_id))
}

/// The `qa` items of a sample.
fn questions(sample: &Map<String, Value>, at: &str) -> Result<Vec<Question>, Located> {
    let qa = match field(sample, "qa", at)? {
        Value::Array(items) => items,
        other => {
            return Err(Located::new(
                at,
                format!(
                    "field `qa`: expected an array of questions, found {}",
                    kind(other)
                ),
            ));
        }
    };
    qa.iter()
        .enumerate()
        .map(|(k, item)| question(item, &format!("{at}, qa {k}")))
        .collect()
}

/// One `{question, answer | adversarial_answer, evidence, category}` item.
/// Evidence that is missing or not a list of strings leaves the question
/// without usable evidence; it is skipped, not an error.
fn question(value: &Value, at: &str) -> Result<Question, Located> {
    let object = value.as_object().ok_or_else(|| {
        Located::new(
            at,
            format!(
                "expected a question object {{question, evidence, category}}, found {}",
                kind(value)
            ),
        )
    })?;
    let text = string(object, "question", at)?;
    let category = field(object, "category", at)?
        .as_u64()
        .ok_or_else(|| Located::new(at, "field `category`: expected a whole number (1-5)"))?;
    let evidence = match object.get("evidence") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(id) => id.clone(),
                other => other.to_string(),
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Question {
        text,
        category,
        evidence,
        answer: object.get("answer").and_then(answer_text),
    })
}

/// An answer value as text: strings and numbers as written, lists joined.
fn answer_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().filter_map(answer_text).collect();
            (!parts.is_empty()).then(|| parts.join(", "))
        }
        _ => None,
    }
}

fn field<'v>(object: &'v Map<String, Value>, name: &str, at: &str) -> Result<&'v Value, Located> {
    object
        .get(name)
        .ok_or_else(|| Located::new(at, format!("field `{name}`: is missing")))
}

fn string(object: &Map<String, Value>, name: &str, at: &str) -> Result<String, Located> {
    match field(object, name, at)? {
        Value::String(text) => Ok(text.clone()),
        other => Err(Located::new(
            at,
            format!("field `{name}`: expected a string, found {}", kind(other)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::json;

    fn parse(text: &str) -> Result<Locomo, Located> {
        load(json::records(text).unwrap())
    }

    const SAMPLE: &str = r#"[{"sample_id": "s",
      "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
        "session_2_date_time": "2 May", "session_10": [{"speaker": "Bo", "dia_id": "D10:1", "text": "late"}],
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "early"}, {"speaker": "Bo", "dia_id": "D2:2", "text": "yes"}]},
      "qa": [{"question": "q", "adversarial_answer": "x", "evidence": ["D2:2", 7], "category": 5}]}]"#;

    #[test]
    fn sessions_go_in_numeric_order_and_speakers_map_to_roles() {
        let locomo = parse(SAMPLE).unwrap();
        let s = &locomo.samples[0];
        assert_eq!(s.sessions, 2);
        // Session 2 is dated, session 10 is not.
        assert_eq!(
            s.messages,
            [
                Message::system("Session 2: 2 May"),
                Message::user("early"),
                Message::assistant("yes"),
                Message::assistant("late")
            ]
        );
        assert_eq!(s.dia_ids, ["session 2", "D2:1", "D2:2", "D10:1"]);
        assert_eq!(s.utterances(), 3);
        assert_eq!(locomo.messages(), 3);
        let e = s.evidence(&s.questions[0]);
        assert_eq!((e.messages, e.skipped), (vec![2], vec!["7".to_string()]));
        // A marker is not an utterance that evidence can name.
        assert_eq!(s.message_of("session 2"), None);
    }

    #[test]
    fn problems_name_the_sample_session_and_utterance() {
        let e = parse(r#"[{"sample_id": "s", "qa": [], "conversation": {"speaker_a": "A", "speaker_b": "B",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "a"}, {"speaker": "C", "dia_id": "D1:2", "text": "b"}]}}]"#)
            .unwrap_err();
        assert_eq!(e.position, "sample 0 (s), session 1, utterance 1");
        assert!(e.problem.contains("`C` is neither"), "{}", e.problem);
        let e = parse(
            r#"[{"qa": [{"evidence": []}], "conversation": {"speaker_a": "A", "speaker_b": "B"}}]"#,
        )
        .unwrap_err();
        assert_eq!(
            e,
            Located::new("sample 0, qa 0", "field `question`: is missing")
        );
        let e = parse(r#"[{"qa": [], "conversation": {"speaker_a": "A"}}]"#).unwrap_err();
        assert_eq!(e, Located::new("sample 0", "field `speaker_b`: is missing"));
    }

    #[test]
    fn dia_ids_must_be_well_formed() {
        for bad in ["", "D", "D:11:26", "D1", "D1:", "d1:2", "D1:2x", "D+1:2"] {
            assert_eq!(parse_dia_id(bad), None, "{bad}");
        }
        assert_eq!(parse_dia_id("D10:019"), Some((10, 19)));
    }

    #[test]
    fn answers_are_read_as_text_and_category_5_has_none() {
        let bytes = br#"[{"sample_id": "s", "conversation": {"speaker_a": "A", "speaker_b": "B"},
            "qa": [{"question": "When?", "answer": 2022, "evidence": [], "category": 2},
                   {"question": "What?", "answer": ["a", 2], "evidence": [], "category": 1},
                   {"question": "Who?", "adversarial_answer": "Bo", "evidence": [], "category": 5},
                   {"question": "Why?", "answer": null, "evidence": [], "category": 3}]}]"#;
        let locomo = crate::input::parse_locomo(bytes).unwrap();
        let answers: Vec<Option<&str>> = locomo.samples[0]
            .questions
            .iter()
            .map(|q| q.answer.as_deref())
            .collect();
        assert_eq!(answers, [Some("2022"), Some("a, 2"), None, None]);
    }
}
