//! The human summary of an [`EvalReport`]: a few lines for one pipeline,
//! tables side by side for several.

use super::report::{CategoryRecall, ConversationRow, EvalReport, EvalSection, EvalTotals};
use crate::Table;

/// Conversations named one by one in a line; more are elided.
const LISTED: usize = 12;

impl EvalReport {
    /// A few lines for people: the input, the questions asked and skipped,
    /// then evidence and answer recall overall and per category, mean
    /// context tokens, the conversations and what the summarizer cost per
    /// conversation and while asking, and latency (tables with one column
    /// per pipeline when there are several).
    ///
    /// ```
    /// let report = memory_cli::eval::EvalReport { input: "l.json".into(), ..Default::default() };
    /// assert!(report.summary().starts_with("input:"));
    /// assert!(report.summary().contains("evidence recall"));
    /// assert!(report.summary().contains("answer recall"));
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
                "budget:       {} tokens (counter {}; conversations recorded {})",
                self.budget, self.counter, self.arrival
            ));
            lines.push(String::new());
            lines.push(self.comparison().to_string());
            if let Some(table) = self.calls_per_conversation() {
                lines.push(String::new());
                lines.push("summarizer calls per conversation, while recording it:".into());
                lines.push(table.to_string());
            }
            return lines.join("\n");
        }
        lines.push(format!(
            "pipeline:     {} (counter {}, budget {} tokens)",
            self.result.pipeline, self.counter, self.budget
        ));
        lines.extend(recall_lines(t));
        lines.push(format!(
            "context:      mean {:.0} tokens, not fitting: {}",
            t.context_tokens_mean, t.not_fitting
        ));
        lines.extend(self.cost_lines());
        lines.push(format!(
            "latency:      mean {:.0} us, p50 {} us, max {} us",
            t.latency_us_mean, t.latency_us_p50, t.latency_us_max
        ));
        lines.join("\n")
    }

    /// The conversations and what the summarizer cost, for one pipeline.
    fn cost_lines(&self) -> Vec<String> {
        let section = &self.result;
        let t = &section.totals;
        let states: usize = section.conversations.iter().map(|c| c.state_messages).sum();
        let mut lines = vec![format!(
            "conversations: {} recorded {}, {} contexts taken, {states} messages in the end states; summarizer calls per conversation: {}",
            section.conversations.len(),
            self.arrival,
            section
                .conversations
                .iter()
                .map(|c| c.contexts)
                .sum::<usize>(),
            calls_list(&section.conversations),
        )];
        if t.summarizer_calls > 0 {
            let failed = match t.summarizer_failures.total() {
                0 => String::new(),
                n => format!(", {n} failed ({})", t.summarizer_failures),
            };
            lines.push(format!(
                "summarizer:   {} calls ({} while recording, {} while asking), {} tokens in, {} out{failed}",
                t.summarizer_calls,
                t.conversation_summarizer_calls,
                t.question_summarizer_calls,
                t.summarizer_input_tokens,
                t.summarizer_output_tokens
            ));
        }
        lines
    }

    /// One column per pipeline: evidence and answer recall overall and per
    /// category, mean context tokens, rows not fitting, summarizer calls
    /// (in all, per conversation, while asking) and tokens, mean latency.
    ///
    /// ```
    /// use memory_cli::eval::{EvalReport, EvalSection};
    /// let one = |p: &str| EvalSection { pipeline: p.into(), ..Default::default() };
    /// let report = EvalReport { pipelines: vec![one("window"), one("window,window")], ..Default::default() };
    /// let table = report.comparison().to_string();
    /// assert!(table.lines().next().unwrap().contains("window,window"));
    /// assert!(table.contains("answer recall"));
    /// ```
    pub fn comparison(&self) -> Table {
        let sections = self.sections();
        let mut categories: Vec<&String> = sections
            .iter()
            .flat_map(|s| s.totals.by_category.keys())
            .collect();
        categories.sort_by_key(|c| (c.len(), c.as_str()));
        categories.dedup();
        let column = |f: &dyn Fn(&EvalSection) -> String| column(&sections, f);
        let category = |c: &str, f: &dyn Fn(&CategoryRecall) -> Option<f64>| {
            column(&|s| {
                let recall = s.totals.by_category.get(c).and_then(f);
                recall.map(|r| format!("{r:.3}")).unwrap_or_default()
            })
        };
        let mut table = Table::new(sections.iter().map(|s| s.pipeline.clone()));
        table
            .row(
                "questions asked",
                column(&|s| s.totals.questions.to_string()),
            )
            .row(
                "evidence recall",
                column(&|s| format!("{:.3}", s.totals.evidence_recall)),
            );
        for &c in &categories {
            table.row(
                format!("  category {c}"),
                category(c, &|r| Some(r.evidence_recall)),
            );
        }
        table.row(
            "evidence recall, reachable",
            column(&|s| format!("{:.3}", s.totals.reachable_evidence_recall)),
        );
        for &c in &categories {
            table.row(
                format!("  category {c}"),
                category(c, &|r| Some(r.reachable_evidence_recall)),
            );
        }
        table.row(
            "handles per question",
            column(&|s| format!("{:.1}", s.totals.handles_per_question)),
        );
        table.row(
            "answer recall",
            column(&|s| format!("{:.3}", s.totals.answer_recall)),
        );
        for &c in &categories {
            let cells = category(c, &|r| r.answer_recall);
            if cells.iter().any(|cell| !cell.is_empty()) {
                table.row(format!("  category {c}"), cells);
            }
        }
        add_cost_rows(&mut table, &sections);
        table
    }

    /// Summarizer calls made while recording each conversation, one row
    /// per conversation and one column per pipeline; `None` when no
    /// pipeline made any.
    fn calls_per_conversation(&self) -> Option<Table> {
        let sections = self.sections();
        let any = sections
            .iter()
            .any(|s| s.totals.conversation_summarizer_calls > 0);
        let first = sections.first()?;
        if !any {
            return None;
        }
        let mut table = Table::new(sections.iter().map(|s| s.pipeline.clone()));
        for (k, conversation) in first.conversations.iter().enumerate() {
            let label = self
                .samples
                .get(conversation.sample)
                .and_then(|s| s.label.clone())
                .unwrap_or_else(|| format!("sample {}", conversation.sample));
            let cells = sections.iter().map(|s| {
                s.conversations
                    .get(k)
                    .map(|c| c.summarizer_calls.to_string())
                    .unwrap_or_default()
            });
            table.row(format!("  {label}"), cells);
        }
        Some(table)
    }
}

/// Evidence and answer recall, overall and per category.
fn recall_lines(t: &EvalTotals) -> Vec<String> {
    let mut lines = vec![format!(
        "evidence recall: {:.3} ({} of {} questions); answer recall: {:.3} ({} of {} questions of categories 1-4, {} not judged)",
        t.evidence_recall,
        t.recalled,
        t.questions,
        t.answer_recall,
        t.answer_recalled,
        t.answer_questions,
        t.answer_skipped
    )];
    let by_category: Vec<String> = t
        .by_category
        .iter()
        .map(|(category, c)| format!("{category}: {:.3}", c.reachable_evidence_recall))
        .collect();
    lines.push(format!(
        "within reach:    {:.3} ({} of {} questions have their evidence in the context or one recall away; by category {}; {:.1} handles per context)",
        t.reachable_evidence_recall,
        t.reachable,
        t.questions,
        by_category.join(", "),
        t.handles_per_question
    ));
    for (category, c) in &t.by_category {
        let answer = match c.answer_recall {
            Some(recall) => format!(
                "; answer {recall:.3} ({} of {})",
                c.answer_recalled, c.answer_questions
            ),
            None if c.answer_skipped > 0 => format!("; answer not judged ({})", c.answer_skipped),
            None => String::new(),
        };
        lines.push(format!(
            "  category {category}:   {:.3} ({} of {}){answer}",
            c.evidence_recall, c.recalled, c.questions
        ));
    }
    lines
}

/// The rows after recall: context, fit, summarizer and latency.
fn add_cost_rows(table: &mut Table, sections: &[&EvalSection]) {
    let column = |f: &dyn Fn(&EvalSection) -> String| column(sections, f);
    table
        .row(
            "context tokens, mean",
            column(&|s| format!("{:.0}", s.totals.context_tokens_mean)),
        )
        .row("not fitting", column(&|s| s.totals.not_fitting.to_string()))
        .row(
            "summarizer calls",
            column(&|s| s.totals.summarizer_calls.to_string()),
        )
        .row(
            "  per conversation",
            column(&|s| calls_range(&s.conversations)),
        )
        .row(
            "  while asking",
            column(&|s| s.totals.question_summarizer_calls.to_string()),
        )
        .row(
            "summarizer tokens in/out",
            column(&|s| {
                let t = &s.totals;
                format!(
                    "{}/{}",
                    t.summarizer_input_tokens, t.summarizer_output_tokens
                )
            }),
        )
        .row(
            "latency, mean (us)",
            column(&|s| format!("{:.0}", s.totals.latency_us_mean)),
        );
}

/// One cell per section: `f` of it.
fn column(sections: &[&EvalSection], f: &dyn Fn(&EvalSection) -> String) -> Vec<String> {
    sections.iter().map(|s| f(s)).collect()
}

/// `3, 5, 2 (mean 3.3)`: the calls made while recording each conversation.
fn calls_list(conversations: &[ConversationRow]) -> String {
    let calls: Vec<String> = conversations
        .iter()
        .take(LISTED)
        .map(|c| c.summarizer_calls.to_string())
        .collect();
    let more = if conversations.len() > LISTED {
        ", ..."
    } else {
        ""
    };
    match conversations.len() {
        0 => "none recorded".to_string(),
        1 => calls.join(""),
        n => {
            let sum: u64 = conversations.iter().map(|c| c.summarizer_calls).sum();
            format!(
                "{}{more} (mean {:.1})",
                calls.join(", "),
                sum as f64 / n as f64
            )
        }
    }
}

/// `3.3 (2-5)`: the mean and range of the calls made while recording each
/// conversation; `0` when none made any.
fn calls_range(conversations: &[ConversationRow]) -> String {
    let calls = conversations.iter().map(|c| c.summarizer_calls);
    let (Some(min), Some(max)) = (calls.clone().min(), calls.clone().max()) else {
        return "0".to_string();
    };
    if max == 0 {
        return "0".to_string();
    }
    let mean = calls.sum::<u64>() as f64 / conversations.len() as f64;
    format!("{mean:.1} ({min}-{max})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(list: &[u64]) -> Vec<ConversationRow> {
        list.iter()
            .map(|&summarizer_calls| ConversationRow {
                summarizer_calls,
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn calls_per_conversation_read_as_a_list_and_a_range() {
        assert_eq!(calls_list(&calls(&[3, 5, 1])), "3, 5, 1 (mean 3.0)");
        assert_eq!(calls_list(&calls(&[4])), "4");
        assert_eq!(calls_list(&[]), "none recorded");
        assert!(calls_list(&calls(&[1; 20])).ends_with("1, ... (mean 1.0)"));
        assert_eq!(calls_range(&calls(&[3, 5, 1])), "3.0 (1-5)");
        assert_eq!(calls_range(&calls(&[0, 0])), "0");
        assert_eq!(calls_range(&[]), "0");
    }

    #[test]
    fn categories_without_judged_answers_say_so() {
        let mut t = EvalTotals::default();
        t.by_category.insert(
            "5".into(),
            CategoryRecall {
                questions: 2,
                recalled: 1,
                evidence_recall: 0.5,
                ..Default::default()
            },
        );
        t.by_category.insert(
            "2".into(),
            CategoryRecall {
                questions: 1,
                answer_skipped: 1,
                ..Default::default()
            },
        );
        let lines = recall_lines(&t);
        assert!(
            lines[1].starts_with("within reach:")
                && lines[1].contains("by category 2: 0.000, 5: 0.000"),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[2],
            "  category 2:   0.000 (0 of 1); answer not judged (1)"
        );
        assert_eq!(lines[3], "  category 5:   0.500 (1 of 2)");
    }
}
