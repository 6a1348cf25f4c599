//! The evaluation report: one [`QuestionRow`] per question asked, one
//! [`ConversationRow`] per conversation recorded, and [`EvalTotals`] with
//! evidence and answer recall overall and per category, and what the
//! summarizer cost. The human summary is in `summary.rs`.

use std::collections::BTreeMap;

use memory_layer::FailureCounts;
use serde::{Deserialize, Serialize};

use super::Arrival;
use crate::input::Sample;

/// LoCoMo's adversarial category: its questions have no `answer`, so they
/// count for evidence recall only.
///
/// ```
/// assert_eq!(memory_cli::eval::ADVERSARIAL, 5);
/// ```
pub const ADVERSARIAL: u64 = 5;

/// One question asked through one pipeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QuestionRow {
    /// Index of the sample in the input.
    pub sample: usize,
    /// Index of the question in the sample's `qa`.
    pub question: usize,
    /// The question's category.
    pub category: u64,
    /// Evidence utterances the question names (usable ids only).
    pub evidence: usize,
    /// Of those, the ones in the context verbatim.
    pub found: usize,
    /// Whether all of them are.
    pub recalled: bool,
    /// Of the evidence utterances, the ones in the context or within reach
    /// of one recall (inside a stretch whose handle the context carries
    /// and that holds at most a quarter of the budget).
    #[serde(default)]
    pub reachable_found: usize,
    /// Whether all of them are.
    #[serde(default)]
    pub reachable: bool,
    /// Recall handles the context carries.
    #[serde(default)]
    pub handles: usize,
    /// Distinct content words of the gold answer (0 without one).
    #[serde(default)]
    pub answer_words: usize,
    /// Of those, the ones among the context's words.
    #[serde(default)]
    pub answer_found: usize,
    /// Whether all of them are; absent for category 5 and for an answer
    /// that is missing or has no content word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_recalled: Option<bool>,
    /// Tokens of the context (the question included).
    pub tokens_out: usize,
    /// Messages in the context.
    pub messages_out: usize,
    /// The result's own verdict: false only when its floor exceeds the budget.
    pub fits: bool,
    /// Model calls made while asking this question (not those made while
    /// the conversation was recorded: see [`ConversationRow`]).
    pub summarizer_calls: u64,
    /// Of those, the ones that failed, by class.
    #[serde(default)]
    pub summarizer_failures: FailureCounts,
    /// Input tokens of those calls.
    pub summarizer_input_tokens: u64,
    /// Output tokens of those calls.
    pub summarizer_output_tokens: u64,
    /// Time of the trim, in microseconds.
    pub latency_us: u64,
}

impl QuestionRow {
    /// Whether the question should have been judged on its answer
    /// (categories 1-4) and was not: no answer, or no content word in it.
    ///
    /// ```
    /// use memory_cli::eval::QuestionRow;
    /// assert!(QuestionRow { category: 1, ..Default::default() }.answer_skipped());
    /// assert!(!QuestionRow { category: 5, ..Default::default() }.answer_skipped());
    /// ```
    pub fn answer_skipped(&self) -> bool {
        self.category != ADVERSARIAL && self.answer_recalled.is_none()
    }
}

/// One conversation recorded through one pipeline, up to the state its
/// questions are asked against.
///
/// ```
/// let row = memory_cli::eval::ConversationRow { utterances: 400, contexts: 200, ..Default::default() };
/// assert_eq!(serde_json::to_value(&row).unwrap()["contexts"], 200);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationRow {
    /// Index of the sample in the input.
    pub sample: usize,
    /// Utterances recorded.
    pub utterances: usize,
    /// Contexts taken while recording.
    pub contexts: usize,
    /// Messages of the state at the end.
    pub state_messages: usize,
    /// Tokens of the state at the end.
    pub state_tokens: usize,
    /// Summary messages in the state at the end.
    pub summaries: usize,
    /// Model calls made while recording.
    pub summarizer_calls: u64,
    /// Of those, the ones that failed, by class.
    #[serde(default)]
    pub summarizer_failures: FailureCounts,
    /// Input tokens of those calls.
    pub summarizer_input_tokens: u64,
    /// Output tokens of those calls.
    pub summarizer_output_tokens: u64,
    /// Time taken to record it, in microseconds.
    pub latency_us: u64,
}

/// Recall over the questions of one category.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CategoryRecall {
    /// Questions asked.
    pub questions: usize,
    /// Questions recalled.
    pub recalled: usize,
    /// `recalled / questions` (0 for none).
    pub evidence_recall: f64,
    /// Questions whose evidence is all in the context or within reach.
    #[serde(default)]
    pub reachable: usize,
    /// `reachable / questions` (0 for none).
    #[serde(default)]
    pub reachable_evidence_recall: f64,
    /// Questions judged on their answer.
    #[serde(default)]
    pub answer_questions: usize,
    /// Of those, the ones whose answer words are all in the context.
    #[serde(default)]
    pub answer_recalled: usize,
    /// Questions not judged on their answer: no answer, or no content word.
    #[serde(default)]
    pub answer_skipped: usize,
    /// `answer_recalled / answer_questions`; absent when no question of the
    /// category was judged (category 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_recall: Option<f64>,
}

/// Counts over some rows.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    questions: usize,
    recalled: usize,
    reachable: usize,
    answer_questions: usize,
    answer_recalled: usize,
    answer_skipped: usize,
}

impl Tally {
    fn add(&mut self, row: &QuestionRow) {
        self.questions += 1;
        self.recalled += usize::from(row.recalled);
        self.reachable += usize::from(row.reachable);
        self.answer_questions += usize::from(row.answer_recalled.is_some());
        self.answer_recalled += usize::from(row.answer_recalled == Some(true));
        self.answer_skipped += usize::from(row.answer_skipped());
    }
}

impl From<Tally> for CategoryRecall {
    fn from(t: Tally) -> Self {
        Self {
            questions: t.questions,
            recalled: t.recalled,
            evidence_recall: share(t.recalled, t.questions),
            reachable: t.reachable,
            reachable_evidence_recall: share(t.reachable, t.questions),
            answer_questions: t.answer_questions,
            answer_recalled: t.answer_recalled,
            answer_skipped: t.answer_skipped,
            answer_recall: (t.answer_questions > 0)
                .then(|| share(t.answer_recalled, t.answer_questions)),
        }
    }
}

/// Sums over one pipeline's rows and conversations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalTotals {
    /// Questions asked (those with at least one usable evidence id).
    pub questions: usize,
    /// Questions left out: no evidence id names an utterance.
    pub skipped_questions: usize,
    /// Evidence ids left out, over all questions: malformed (`D:11:26`) or
    /// naming no utterance.
    pub skipped_evidence_ids: usize,
    /// Questions recalled.
    pub recalled: usize,
    /// Share of questions whose evidence is all in the context.
    pub evidence_recall: f64,
    /// Questions whose evidence is all in the context or within reach of
    /// one recall.
    #[serde(default)]
    pub reachable: usize,
    /// `reachable / questions`.
    #[serde(default)]
    pub reachable_evidence_recall: f64,
    /// Mean recall handles per context.
    #[serde(default)]
    pub handles_per_question: f64,
    /// Questions of categories 1-4 judged on their answer.
    #[serde(default)]
    pub answer_questions: usize,
    /// Of those, the ones whose answer words are all in the context.
    #[serde(default)]
    pub answer_recalled: usize,
    /// Questions of categories 1-4 not judged: no answer, or no content
    /// word in it.
    #[serde(default)]
    pub answer_skipped: usize,
    /// `answer_recalled / answer_questions` (0 for none).
    #[serde(default)]
    pub answer_recall: f64,
    /// Recall per category (`"1"` to `"5"`).
    pub by_category: BTreeMap<String, CategoryRecall>,
    /// Mean tokens of the context.
    pub context_tokens_mean: f64,
    /// Rows whose result says the floor alone exceeds the budget.
    pub not_fitting: usize,
    /// Model calls made while recording the conversations.
    #[serde(default)]
    pub conversation_summarizer_calls: u64,
    /// `conversation_summarizer_calls` per conversation recorded (0 for
    /// none).
    #[serde(default)]
    pub summarizer_calls_per_conversation: f64,
    /// Model calls made while asking (the rows' `summarizer_calls`).
    #[serde(default)]
    pub question_summarizer_calls: u64,
    /// All model calls: while recording and while asking.
    pub summarizer_calls: u64,
    /// Of those, the ones that failed, by class.
    #[serde(default)]
    pub summarizer_failures: FailureCounts,
    /// Input tokens of all model calls.
    pub summarizer_input_tokens: u64,
    /// Output tokens of all model calls.
    pub summarizer_output_tokens: u64,
    /// Mean `latency_us` of the rows.
    pub latency_us_mean: f64,
    /// Median `latency_us` (the lower one for an even count).
    pub latency_us_p50: u64,
    /// Largest `latency_us`.
    pub latency_us_max: u64,
}

impl EvalTotals {
    /// The totals of `rows` and `conversations`; `samples` supplies the
    /// skipped counts.
    ///
    /// ```
    /// use memory_cli::eval::{ConversationRow, EvalTotals, QuestionRow};
    /// let rows = [
    ///     QuestionRow { category: 1, recalled: true, answer_recalled: Some(true), tokens_out: 10, latency_us: 4, ..Default::default() },
    ///     QuestionRow { category: 1, answer_recalled: Some(false), tokens_out: 20, latency_us: 8, summarizer_calls: 1, ..Default::default() },
    ///     QuestionRow { category: 5, recalled: true, tokens_out: 30, latency_us: 6, ..Default::default() },
    /// ];
    /// let conversations = [ConversationRow { summarizer_calls: 4, ..Default::default() }];
    /// let t = EvalTotals::of(&rows, &conversations, &[]);
    /// assert_eq!((t.questions, t.recalled), (3, 2));
    /// assert!((t.evidence_recall - 2.0 / 3.0).abs() < 1e-12);
    /// assert_eq!((t.answer_questions, t.answer_recalled, t.answer_recall), (2, 1, 0.5));
    /// assert_eq!(t.by_category["1"].evidence_recall, 0.5);
    /// assert_eq!(t.by_category["1"].answer_recall, Some(0.5));
    /// assert_eq!(t.by_category["5"].answer_recall, None);
    /// assert_eq!((t.context_tokens_mean, t.latency_us_p50), (20.0, 6));
    /// assert_eq!((t.summarizer_calls, t.question_summarizer_calls), (5, 1));
    /// assert_eq!(t.summarizer_calls_per_conversation, 4.0);
    /// ```
    pub fn of(
        rows: &[QuestionRow],
        conversations: &[ConversationRow],
        samples: &[SampleInfo],
    ) -> Self {
        let mut all = Tally::default();
        let mut categories: BTreeMap<u64, Tally> = BTreeMap::new();
        for row in rows {
            all.add(row);
            categories.entry(row.category).or_default().add(row);
        }
        let mut totals = EvalTotals {
            questions: rows.len(),
            skipped_questions: samples.iter().map(|s| s.skipped_questions).sum(),
            skipped_evidence_ids: samples.iter().map(|s| s.skipped_evidence_ids).sum(),
            recalled: all.recalled,
            evidence_recall: share(all.recalled, all.questions),
            reachable: all.reachable,
            reachable_evidence_recall: share(all.reachable, all.questions),
            handles_per_question: mean(rows.iter().map(|r| r.handles as f64), rows.len()),
            answer_questions: all.answer_questions,
            answer_recalled: all.answer_recalled,
            answer_skipped: all.answer_skipped,
            answer_recall: share(all.answer_recalled, all.answer_questions),
            by_category: categories
                .into_iter()
                .map(|(c, tally)| (c.to_string(), tally.into()))
                .collect(),
            context_tokens_mean: mean(rows.iter().map(|r| r.tokens_out as f64), rows.len()),
            not_fitting: rows.iter().filter(|r| !r.fits).count(),
            ..EvalTotals::default()
        };
        totals.add_costs(rows, conversations);
        totals.add_latencies(rows);
        totals
    }

    /// The summarizer's figures: per conversation, while asking, in all.
    fn add_costs(&mut self, rows: &[QuestionRow], conversations: &[ConversationRow]) {
        let c = conversations;
        self.conversation_summarizer_calls = c.iter().map(|c| c.summarizer_calls).sum();
        self.summarizer_calls_per_conversation =
            mean(c.iter().map(|c| c.summarizer_calls as f64), c.len());
        self.question_summarizer_calls = rows.iter().map(|r| r.summarizer_calls).sum();
        self.summarizer_calls = self.conversation_summarizer_calls + self.question_summarizer_calls;
        self.summarizer_failures = FailureCounts::default();
        let failures = c.iter().map(|c| c.summarizer_failures);
        for counts in failures.chain(rows.iter().map(|r| r.summarizer_failures)) {
            self.summarizer_failures.merge(counts);
        }
        self.summarizer_input_tokens = c.iter().map(|c| c.summarizer_input_tokens).sum::<u64>()
            + rows.iter().map(|r| r.summarizer_input_tokens).sum::<u64>();
        self.summarizer_output_tokens = c.iter().map(|c| c.summarizer_output_tokens).sum::<u64>()
            + rows.iter().map(|r| r.summarizer_output_tokens).sum::<u64>();
    }

    /// Mean, median and largest trim time of the questions.
    fn add_latencies(&mut self, rows: &[QuestionRow]) {
        let mut latencies: Vec<u64> = rows.iter().map(|r| r.latency_us).collect();
        latencies.sort_unstable();
        self.latency_us_mean = mean(latencies.iter().map(|&l| l as f64), latencies.len());
        self.latency_us_p50 = latencies
            .get(latencies.len().saturating_sub(1) / 2)
            .copied()
            .unwrap_or(0);
        self.latency_us_max = latencies.last().copied().unwrap_or(0);
    }
}

/// `part / whole`, 0 for an empty whole.
fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The mean of `values` (`n` of them), 0 for none.
fn mean(values: impl Iterator<Item = f64>, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        values.sum::<f64>() / n as f64
    }
}

/// One sample of the input, as evaluated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleInfo {
    /// Its index (the rows' `sample`).
    pub index: usize,
    /// Its `sample_id`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Sessions of the conversation.
    pub sessions: usize,
    /// Utterances of the conversation.
    pub messages: usize,
    /// Questions asked.
    pub questions: usize,
    /// Questions left out: no evidence id names an utterance.
    pub skipped_questions: usize,
    /// Evidence ids left out: malformed or naming no utterance.
    pub skipped_evidence_ids: usize,
}

impl SampleInfo {
    /// What `sample` (number `index`) holds and what will be asked.
    ///
    /// ```
    /// let locomo = memory_cli::input::parse_locomo(br#"[{"qa": [
    ///     {"question": "a?", "evidence": ["D1:1", "D:1:1"], "category": 1},
    ///     {"question": "b?", "evidence": [], "category": 2}],
    ///   "conversation": {"speaker_a": "A", "speaker_b": "B",
    ///     "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}]"#).unwrap();
    /// let info = memory_cli::eval::SampleInfo::of(0, &locomo.samples[0]);
    /// assert_eq!((info.questions, info.skipped_questions, info.skipped_evidence_ids), (1, 1, 1));
    /// ```
    pub fn of(index: usize, sample: &Sample) -> Self {
        let mut info = SampleInfo {
            index,
            label: sample.label.clone(),
            sessions: sample.sessions,
            messages: sample.utterances(),
            ..Default::default()
        };
        for question in &sample.questions {
            let evidence = sample.evidence(question);
            info.skipped_evidence_ids += evidence.skipped.len();
            if evidence.is_usable() {
                info.questions += 1;
            } else {
                info.skipped_questions += 1;
            }
        }
        info
    }
}

/// One pipeline's results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalSection {
    /// The pipeline spec as given.
    pub pipeline: String,
    /// Sums over `rows` and `conversations`.
    #[serde(flatten)]
    pub totals: EvalTotals,
    /// One row per conversation recorded (samples with a question to ask).
    #[serde(default)]
    pub conversations: Vec<ConversationRow>,
    /// One row per question asked.
    pub rows: Vec<QuestionRow>,
}

impl EvalSection {
    /// The section of `pipeline`, its totals computed.
    ///
    /// ```
    /// let s = memory_cli::eval::EvalSection::new("window", Vec::new(), Vec::new(), &[]);
    /// assert_eq!((s.pipeline.as_str(), s.totals.questions), ("window", 0));
    /// ```
    pub fn new(
        pipeline: &str,
        rows: Vec<QuestionRow>,
        conversations: Vec<ConversationRow>,
        samples: &[SampleInfo],
    ) -> Self {
        Self {
            pipeline: pipeline.to_string(),
            totals: EvalTotals::of(&rows, &conversations, samples),
            conversations,
            rows,
        }
    }
}

/// The whole report, as written by `--report FILE.json`.
///
/// The first pipeline's section is flattened into the top level
/// (`pipeline`, `evidence_recall`, `answer_recall`, `by_category`, ...,
/// `conversations`, `rows`); with several `--pipeline`s, `pipelines` holds
/// one section per pipeline, in the order given.
///
/// ```
/// use memory_cli::eval::{EvalReport, EvalSection};
/// let report = EvalReport {
///     budget: 2000,
///     result: EvalSection { pipeline: "window".into(), ..Default::default() },
///     ..Default::default()
/// };
/// let json = serde_json::to_value(&report).unwrap();
/// assert_eq!(json["pipeline"], "window");
/// assert_eq!(json["evidence_recall"], 0.0);
/// assert_eq!(json["answer_recall"], 0.0);
/// assert_eq!(json["arrival"], "live");
/// assert!(json.get("pipelines").is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// The input path as given.
    pub input: String,
    /// The detected input format.
    pub format: String,
    /// The token counter as given.
    pub counter: String,
    /// The token budget.
    pub budget: usize,
    /// How each conversation reached the state its questions were asked
    /// against.
    #[serde(default)]
    pub arrival: Arrival,
    /// The samples evaluated.
    pub samples: Vec<SampleInfo>,
    /// The (first) pipeline's results.
    #[serde(flatten)]
    pub result: EvalSection,
    /// With several `--pipeline`s, every pipeline's section; empty (and
    /// left out of the JSON) with one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipelines: Vec<EvalSection>,
}

impl EvalReport {
    /// Every pipeline's section: `pipelines`, or the top level alone.
    ///
    /// ```
    /// assert_eq!(memory_cli::eval::EvalReport::default().sections().len(), 1);
    /// ```
    pub fn sections(&self) -> Vec<&EvalSection> {
        if self.pipelines.is_empty() {
            vec![&self.result]
        } else {
            self.pipelines.iter().collect()
        }
    }
}
