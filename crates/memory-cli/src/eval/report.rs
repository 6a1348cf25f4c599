//! The evaluation report: one [`QuestionRow`] per question asked,
//! [`EvalTotals`] with evidence recall overall and per category, and the
//! human summary.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Table;
use crate::input::Sample;

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
    /// Tokens of the context (the question included).
    pub tokens_out: usize,
    /// Messages in the context.
    pub messages_out: usize,
    /// The result's own verdict: false only when its floor exceeds the budget.
    pub fits: bool,
    /// Model calls the pipeline made for this context.
    pub summarizer_calls: u64,
    /// Input tokens of those calls.
    pub summarizer_input_tokens: u64,
    /// Output tokens of those calls.
    pub summarizer_output_tokens: u64,
    /// Time of the trim, in microseconds.
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
}

impl CategoryRecall {
    fn of(questions: usize, recalled: usize) -> Self {
        Self {
            questions,
            recalled,
            evidence_recall: share(recalled, questions),
        }
    }
}

/// Sums over one pipeline's rows.
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
    /// Recall per category (`"1"` to `"5"`).
    pub by_category: BTreeMap<String, CategoryRecall>,
    /// Mean tokens of the context.
    pub context_tokens_mean: f64,
    /// Rows whose result says the floor alone exceeds the budget.
    pub not_fitting: usize,
    /// Sum of `summarizer_calls`.
    pub summarizer_calls: u64,
    /// Sum of `summarizer_input_tokens`.
    pub summarizer_input_tokens: u64,
    /// Sum of `summarizer_output_tokens`.
    pub summarizer_output_tokens: u64,
    /// Mean `latency_us`.
    pub latency_us_mean: f64,
    /// Median `latency_us` (the lower one for an even count).
    pub latency_us_p50: u64,
    /// Largest `latency_us`.
    pub latency_us_max: u64,
}

impl EvalTotals {
    /// The totals of `rows`; `samples` supplies the skipped counts.
    ///
    /// ```
    /// use memory_cli::eval::{EvalTotals, QuestionRow};
    /// let rows = [
    ///     QuestionRow { category: 1, recalled: true, tokens_out: 10, latency_us: 4, ..Default::default() },
    ///     QuestionRow { category: 1, tokens_out: 20, latency_us: 8, ..Default::default() },
    ///     QuestionRow { category: 5, recalled: true, tokens_out: 30, latency_us: 6, ..Default::default() },
    /// ];
    /// let t = EvalTotals::of(&rows, &[]);
    /// assert_eq!((t.questions, t.recalled), (3, 2));
    /// assert!((t.evidence_recall - 2.0 / 3.0).abs() < 1e-12);
    /// assert_eq!(t.by_category["1"].evidence_recall, 0.5);
    /// assert_eq!(t.by_category["5"].recalled, 1);
    /// assert_eq!((t.context_tokens_mean, t.latency_us_p50), (20.0, 6));
    /// ```
    pub fn of(rows: &[QuestionRow], samples: &[SampleInfo]) -> Self {
        let mut categories: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
        for row in rows {
            let entry = categories.entry(row.category).or_default();
            entry.0 += 1;
            entry.1 += usize::from(row.recalled);
        }
        let recalled = rows.iter().filter(|r| r.recalled).count();
        let mut latencies: Vec<u64> = rows.iter().map(|r| r.latency_us).collect();
        latencies.sort_unstable();
        let mean = |sum: f64| {
            if rows.is_empty() {
                0.0
            } else {
                sum / rows.len() as f64
            }
        };
        EvalTotals {
            questions: rows.len(),
            skipped_questions: samples.iter().map(|s| s.skipped_questions).sum(),
            skipped_evidence_ids: samples.iter().map(|s| s.skipped_evidence_ids).sum(),
            recalled,
            evidence_recall: share(recalled, rows.len()),
            by_category: categories
                .into_iter()
                .map(|(c, (n, r))| (c.to_string(), CategoryRecall::of(n, r)))
                .collect(),
            context_tokens_mean: mean(rows.iter().map(|r| r.tokens_out as f64).sum()),
            not_fitting: rows.iter().filter(|r| !r.fits).count(),
            summarizer_calls: rows.iter().map(|r| r.summarizer_calls).sum(),
            summarizer_input_tokens: rows.iter().map(|r| r.summarizer_input_tokens).sum(),
            summarizer_output_tokens: rows.iter().map(|r| r.summarizer_output_tokens).sum(),
            latency_us_mean: mean(latencies.iter().map(|&l| l as f64).sum()),
            latency_us_p50: latencies
                .get(latencies.len().saturating_sub(1) / 2)
                .copied()
                .unwrap_or(0),
            latency_us_max: latencies.last().copied().unwrap_or(0),
        }
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
            messages: sample.messages.len(),
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
    /// Sums over `rows`.
    #[serde(flatten)]
    pub totals: EvalTotals,
    /// One row per question asked.
    pub rows: Vec<QuestionRow>,
}

/// The whole report, as written by `--report FILE.json`.
///
/// The first pipeline's section is flattened into the top level
/// (`pipeline`, `evidence_recall`, `by_category`, ..., `rows`); with several
/// `--pipeline`s, `pipelines` holds one section per pipeline, in the order
/// given.
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

    /// A few lines for people: the input, the questions asked and skipped,
    /// then recall overall and per category, mean context tokens and latency
    /// (one column per pipeline when there are several).
    ///
    /// ```
    /// let report = memory_cli::eval::EvalReport { input: "l.json".into(), ..Default::default() };
    /// assert!(report.summary().starts_with("input:"));
    /// assert!(report.summary().contains("evidence recall"));
    /// ```
    pub fn summary(&self) -> String {
        let t = &self.result.totals;
        let messages: usize = self.samples.iter().map(|s| s.messages).sum();
        let mut lines = vec![
            format!("input:        {}", self.input),
            format!(
                "format:       {} ({} samples, {messages} utterances)",
                self.format,
                self.samples.len()
            ),
            format!(
                "questions:    {} asked, {} skipped (no usable evidence id); {} evidence ids skipped",
                t.questions, t.skipped_questions, t.skipped_evidence_ids
            ),
        ];
        if self.pipelines.len() > 1 {
            lines.push(format!(
                "budget:       {} tokens (counter {})",
                self.budget, self.counter
            ));
            lines.push(String::new());
            lines.push(self.comparison().to_string());
            return lines.join("\n");
        }
        lines.push(format!(
            "pipeline:     {} (counter {}, budget {} tokens)",
            self.result.pipeline, self.counter, self.budget
        ));
        lines.push(format!(
            "evidence recall: {:.3} ({} of {} questions)",
            t.evidence_recall, t.recalled, t.questions
        ));
        for (category, c) in &t.by_category {
            lines.push(format!(
                "  category {category}:   {:.3} ({} of {})",
                c.evidence_recall, c.recalled, c.questions
            ));
        }
        lines.push(format!(
            "context:      mean {:.0} tokens, not fitting: {}",
            t.context_tokens_mean, t.not_fitting
        ));
        if t.summarizer_calls > 0 {
            lines.push(format!(
                "summarizer:   {} calls, {} tokens in, {} out",
                t.summarizer_calls, t.summarizer_input_tokens, t.summarizer_output_tokens
            ));
        }
        lines.push(format!(
            "latency:      mean {:.0} us, p50 {} us, max {} us",
            t.latency_us_mean, t.latency_us_p50, t.latency_us_max
        ));
        lines.join("\n")
    }

    /// One column per pipeline: recall overall and per category, mean
    /// context tokens, rows not fitting, summarizer calls, mean latency.
    ///
    /// ```
    /// use memory_cli::eval::{EvalReport, EvalSection};
    /// let one = |p: &str| EvalSection { pipeline: p.into(), ..Default::default() };
    /// let report = EvalReport { pipelines: vec![one("window"), one("window,window")], ..Default::default() };
    /// let table = report.comparison().to_string();
    /// assert!(table.lines().next().unwrap().contains("window,window"));
    /// ```
    pub fn comparison(&self) -> Table {
        let sections = self.sections();
        let mut categories: Vec<&String> = sections
            .iter()
            .flat_map(|s| s.totals.by_category.keys())
            .collect();
        categories.sort_by_key(|c| (c.len(), c.as_str()));
        categories.dedup();
        let column = |f: &dyn Fn(&EvalTotals) -> String| -> Vec<String> {
            sections.iter().map(|s| f(&s.totals)).collect()
        };
        let mut table = Table::new(sections.iter().map(|s| s.pipeline.clone()));
        table
            .row("questions asked", column(&|t| t.questions.to_string()))
            .row(
                "evidence recall",
                column(&|t| format!("{:.3}", t.evidence_recall)),
            );
        for category in categories {
            table.row(
                format!("  category {category}"),
                column(&|t| {
                    t.by_category
                        .get(category)
                        .map(|c| format!("{:.3}", c.evidence_recall))
                        .unwrap_or_default()
                }),
            );
        }
        table
            .row(
                "context tokens, mean",
                column(&|t| format!("{:.0}", t.context_tokens_mean)),
            )
            .row("not fitting", column(&|t| t.not_fitting.to_string()))
            .row(
                "summarizer calls",
                column(&|t| t.summarizer_calls.to_string()),
            )
            .row(
                "summarizer tokens in/out",
                column(&|t| {
                    format!(
                        "{}/{}",
                        t.summarizer_input_tokens, t.summarizer_output_tokens
                    )
                }),
            )
            .row(
                "latency, mean (us)",
                column(&|t| format!("{:.0}", t.latency_us_mean)),
            );
        table
    }
}
