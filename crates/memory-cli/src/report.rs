//! The replay report: one [`Row`] per model call, [`Totals`], and the short
//! human summary printed on stdout (a side-by-side [`Table`] when several
//! pipelines ran).

use memory_layer::FailureCounts;
use serde::{Deserialize, Serialize};

use crate::Table;

/// One model call of a replay: the context taken before an assistant
/// message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Index of the trajectory in the input.
    pub trajectory: usize,
    /// Index, in the trajectory, of the assistant message about to be
    /// produced.
    pub turn: usize,
    /// Tokens of everything recorded so far: what an untrimmed call sends.
    pub tokens_in: usize,
    /// Tokens of the context.
    pub tokens_out: usize,
    /// Messages in the context.
    pub messages_out: usize,
    /// Tokens of the floor of the recorded transcript: its protected
    /// messages, the current question and the newest step.
    pub floor_tokens: usize,
    /// Model calls the pipeline made for this context.
    pub summarizer_calls: u64,
    /// Input tokens of those calls, as the provider reported them.
    pub summarizer_input_tokens: u64,
    /// Output tokens of those calls, as the provider reported them.
    pub summarizer_output_tokens: u64,
    /// Summarizer calls since the previous call that came to nothing
    /// usable, by class (left out of the JSON when there are none).
    #[serde(default, skip_serializing_if = "FailureCounts::is_empty")]
    pub summarizer_failures: FailureCounts,
    /// Summaries `compact` stages started since the previous call.
    pub summaries_started: u64,
    /// Of those, the ones started in the background.
    pub background_summaries_started: u64,
    /// Summaries of `compact` stages that replaced older history since the
    /// previous call (`summarize` makes its summaries on the call itself).
    pub summaries_landed: u64,
    /// Tokens of the longest common prefix, message by message, with the
    /// previous call's context in the same trajectory.
    pub prefix_kept_tokens: usize,
    /// Tokens a provider's prefix cache serves: `prefix_kept_tokens`.
    pub cached_tokens: usize,
    /// Tokens not served from the cache: `tokens_out - cached_tokens`.
    pub uncached_tokens: usize,
    /// What the call costs under the report's pricing, in fresh input
    /// tokens: `uncached x write + cached x read + summarizer input +
    /// summarizer output x output`.
    pub cost: f64,
    /// Identifiers of the next recorded assistant message that occur in the
    /// history before the call but not in its newest message.
    pub support_wanted: usize,
    /// Of those, the ones present in the context.
    pub support_found: usize,
    /// `support_found / support_wanted`; `None` (null) when nothing was
    /// wanted, or when no assistant message follows.
    pub support_recall: Option<f64>,
    /// Of `support_wanted`, the ones present in the context or within
    /// reach: inside a stretch whose recall handle the context carries and
    /// that one recall returns whole (at most a quarter of the budget; see
    /// [`memory_core::recall::reachable`]).
    #[serde(default)]
    pub reachable_support_found: usize,
    /// `reachable_support_found / support_wanted`.
    #[serde(default)]
    pub reachable_support_recall: Option<f64>,
    /// Recall handles the context carries.
    #[serde(default)]
    pub handles: usize,
    /// Tokens of the context's index of what it leaves out
    /// ([`memory_session::left_out`]); 0 without one.
    #[serde(default)]
    pub index_tokens: usize,
    /// Tokens of the context's protected messages and summaries (the task
    /// among them): a context may be over the budget only when these are.
    #[serde(default)]
    pub protected_tokens: usize,
    /// Whether the previous context is not a prefix of this one (a provider's
    /// prefix cache is lost).
    pub cache_break: bool,
    /// Time of the `context()` call, in microseconds.
    pub latency_us: u64,
    /// Whether the context passes [`memory_core::audit`] against the
    /// transcript and the budget; see `problems` otherwise.
    pub valid: bool,
    /// The result's own verdict: false only when the floor alone exceeds the
    /// budget.
    pub fits: bool,
    /// Whether the context holds the task (the transcript's first user
    /// request) verbatim; `None` (null) before the first user message.
    #[serde(default)]
    pub task_kept: Option<bool>,
    /// What broke, when `valid` is false: the audit's breaches, as text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// What a `thrift` stage shed in this call, per kind (tokens and counts
    /// before and after), when the pipeline has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thrift: Option<memory_thrift::ThriftTrace>,
    /// The context itself, when the run keeps contexts (`--contexts`);
    /// never part of the JSON report.
    #[serde(skip)]
    pub context: Option<Vec<memory_core::Message>>,
}

/// Sums over all rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Rows (model calls).
    pub calls: usize,
    /// Rows whose invariants hold.
    pub valid_rows: usize,
    /// Rows whose context exceeds the budget.
    pub over_budget_rows: usize,
    /// Rows whose result says the floor alone exceeds the budget.
    pub not_fitting_rows: usize,
    /// Sum of `tokens_in`.
    pub tokens_in: usize,
    /// Sum of `tokens_out`.
    pub tokens_out: usize,
    /// Rows with `cache_break`.
    pub cache_breaks: usize,
    /// Sum of `summarizer_calls`.
    pub summarizer_calls: u64,
    /// Sum of `summarizer_input_tokens`.
    pub summarizer_input_tokens: u64,
    /// Sum of `summarizer_output_tokens`.
    pub summarizer_output_tokens: u64,
    /// Sum of `summarizer_failures`, by class.
    pub summarizer_failures: FailureCounts,
    /// Sum of `summaries_started`.
    pub summaries_started: u64,
    /// Sum of `background_summaries_started`.
    pub background_summaries_started: u64,
    /// Sum of `summaries_landed`.
    pub summaries_landed: u64,
    /// Sum of `cached_tokens`.
    pub cached_tokens: usize,
    /// Sum of `uncached_tokens`.
    pub uncached_tokens: usize,
    /// `cached_tokens / tokens_out`: the share of input served from cache.
    pub cached_share: f64,
    /// Sum of `cost`.
    pub cost: f64,
    /// Mean `cost` per call.
    pub cost_per_call: f64,
    /// Mean `support_recall` over the rows that have one.
    pub support_recall: Option<f64>,
    /// Rows with a `support_recall`.
    pub support_rows: usize,
    /// Mean `reachable_support_recall` over the rows that have one.
    #[serde(default)]
    pub reachable_support_recall: Option<f64>,
    /// Mean `handles` per call.
    #[serde(default)]
    pub handles_per_call: f64,
    /// Mean `index_tokens` per call over the budget's token limit: the
    /// index's share of the budget.
    #[serde(default)]
    pub index_share: f64,
    /// Rows over the budget though their protected messages fit in it.
    #[serde(default)]
    pub avoidable_over_budget_rows: usize,
    /// Rows whose context holds the task verbatim (`task_kept`).
    #[serde(default)]
    pub task_kept_rows: usize,
    /// Rows with a task (`task_kept` not null).
    #[serde(default)]
    pub task_rows: usize,
    /// Mean `latency_us`.
    pub latency_us_mean: f64,
    /// Median `latency_us` (the lower one for an even count).
    pub latency_us_p50: u64,
    /// Largest `latency_us`.
    pub latency_us_max: u64,
    /// Mean `latency_us` of the first and of the last [`LATENCY_WINDOW`]
    /// rows, in order, when there are at least twice as many: how the
    /// time per call grows over one long session. `None` otherwise.
    #[serde(default)]
    pub latency_us_first_last: Option<(f64, f64)>,
}

/// The mean of `values`, `None` for none.
fn mean_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The number of [`LATENCY_WINDOW`], as a literal: the side-by-side
/// table's row names it.
macro_rules! latency_window {
    () => {
        500
    };
}

/// Calls at each end of a session whose mean latencies
/// [`Totals::latency_us_first_last`] compares.
pub const LATENCY_WINDOW: usize = latency_window!();

impl Totals {
    /// The totals of `rows` under `budget`.
    ///
    /// ```
    /// use memory_cli::report::{Row, Totals};
    /// let rows = [
    ///     Row { tokens_in: 10, tokens_out: 10, latency_us: 4, valid: true, fits: true, ..Row::default() },
    ///     Row { tokens_in: 30, tokens_out: 12, latency_us: 8, valid: true, fits: false, cache_break: true, ..Row::default() },
    /// ];
    /// let t = Totals::of(&rows, &memory_core::Budget::tokens(11));
    /// assert_eq!((t.calls, t.valid_rows, t.over_budget_rows, t.not_fitting_rows), (2, 2, 1, 1));
    /// assert_eq!((t.tokens_in, t.tokens_out, t.cache_breaks), (40, 22, 1));
    /// assert_eq!((t.latency_us_mean, t.latency_us_p50, t.latency_us_max), (6.0, 4, 8));
    /// ```
    pub fn of(rows: &[Row], budget: &memory_core::Budget) -> Self {
        let mut latencies: Vec<u64> = rows.iter().map(|r| r.latency_us).collect();
        latencies.sort_unstable();
        let count = |f: fn(&Row) -> bool| rows.iter().filter(|r| f(r)).count();
        let tokens_out: usize = rows.iter().map(|r| r.tokens_out).sum();
        let cached_tokens: usize = rows.iter().map(|r| r.cached_tokens).sum();
        let cost: f64 = rows.iter().map(|r| r.cost).sum();
        let recalls: Vec<f64> = rows.iter().filter_map(|r| r.support_recall).collect();
        let mut summarizer_failures = FailureCounts::default();
        for row in rows {
            summarizer_failures.merge(row.summarizer_failures);
        }
        Totals {
            summarizer_failures,
            summaries_started: rows.iter().map(|r| r.summaries_started).sum(),
            background_summaries_started: rows.iter().map(|r| r.background_summaries_started).sum(),
            summaries_landed: rows.iter().map(|r| r.summaries_landed).sum(),
            cached_tokens,
            uncached_tokens: rows.iter().map(|r| r.uncached_tokens).sum(),
            cached_share: ratio(cached_tokens as f64, tokens_out as f64),
            cost,
            cost_per_call: ratio(cost, rows.len() as f64),
            support_recall: (!recalls.is_empty())
                .then(|| recalls.iter().sum::<f64>() / recalls.len() as f64),
            support_rows: recalls.len(),
            task_kept_rows: count(|r| r.task_kept == Some(true)),
            task_rows: count(|r| r.task_kept.is_some()),
            calls: rows.len(),
            valid_rows: count(|r| r.valid),
            over_budget_rows: rows
                .iter()
                .filter(|r| !budget.admits_tokens(r.tokens_out))
                .count(),
            not_fitting_rows: count(|r| !r.fits),
            tokens_in: rows.iter().map(|r| r.tokens_in).sum(),
            tokens_out,
            cache_breaks: count(|r| r.cache_break),
            summarizer_calls: rows.iter().map(|r| r.summarizer_calls).sum(),
            summarizer_input_tokens: rows.iter().map(|r| r.summarizer_input_tokens).sum(),
            summarizer_output_tokens: rows.iter().map(|r| r.summarizer_output_tokens).sum(),
            latency_us_mean: if latencies.is_empty() {
                0.0
            } else {
                latencies.iter().sum::<u64>() as f64 / latencies.len() as f64
            },
            latency_us_p50: latencies
                .get(latencies.len().saturating_sub(1) / 2)
                .copied()
                .unwrap_or(0),
            latency_us_max: latencies.last().copied().unwrap_or(0),
            latency_us_first_last: first_last(rows),
            ..Totals::default()
        }
        .with_reach(rows, budget)
    }

    /// The figures of what is within reach: reachable support recall,
    /// handles, and the rows over the budget though protected messages fit.
    fn with_reach(mut self, rows: &[Row], budget: &memory_core::Budget) -> Self {
        self.reachable_support_recall =
            mean_of(rows.iter().filter_map(|r| r.reachable_support_recall));
        self.handles_per_call = ratio(
            rows.iter().map(|r| r.handles).sum::<usize>() as f64,
            rows.len() as f64,
        );
        let index_tokens = rows.iter().map(|r| r.index_tokens).sum::<usize>() as f64;
        self.index_share = ratio(
            index_tokens,
            (rows.len() * budget.max_tokens.unwrap_or(0)) as f64,
        );
        self.avoidable_over_budget_rows = rows
            .iter()
            .filter(|r| {
                !budget.admits_tokens(r.tokens_out) && budget.admits_tokens(r.protected_tokens)
            })
            .count();
        self
    }
}

/// The mean `latency_us` of the first and the last [`LATENCY_WINDOW`] of
/// `rows`, when they do not overlap.
///
/// ```
/// use memory_cli::report::{Row, Totals};
/// let rows: Vec<Row> = (0..1_000).map(|k| Row { latency_us: if k < 500 { 10 } else { 30 }, ..Row::default() }).collect();
/// assert_eq!(Totals::of(&rows, &memory_core::Budget::tokens(100)).latency_us_first_last, Some((10.0, 30.0)));
/// assert_eq!(Totals::of(&rows[..999], &memory_core::Budget::tokens(100)).latency_us_first_last, None);
/// ```
fn first_last(rows: &[Row]) -> Option<(f64, f64)> {
    if rows.len() < 2 * LATENCY_WINDOW {
        return None;
    }
    let mean =
        |rows: &[Row]| rows.iter().map(|r| r.latency_us as f64).sum::<f64>() / rows.len() as f64;
    Some((
        mean(&rows[..LATENCY_WINDOW]),
        mean(&rows[rows.len() - LATENCY_WINDOW..]),
    ))
}

/// One input trajectory, as replayed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryInfo {
    /// Its index (the rows' `trajectory`).
    pub index: usize,
    /// Its name in the file, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Messages replayed (after any repair).
    pub messages: usize,
    /// Fixes `--repair` made to it.
    pub repairs: usize,
}

/// One pipeline's part of a report on several pipelines.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PipelineReport {
    /// The pipeline spec as given.
    pub pipeline: String,
    /// Sums over `rows`.
    pub totals: Totals,
    /// One row per model call.
    pub rows: Vec<Row>,
}

/// The whole report, as written by `--report FILE.json`.
///
/// The top-level `pipeline`, `totals` and `rows` are those of the first
/// `--pipeline`; with several, `pipelines` holds one section per pipeline,
/// in the order given (the first repeats the top level).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The input path as given.
    pub input: String,
    /// The detected input format.
    pub format: String,
    /// The (first) pipeline spec as given.
    pub pipeline: String,
    /// The token counter's name.
    pub counter: String,
    /// The token budget.
    pub budget: usize,
    /// The price factors every row's `cost` uses.
    #[serde(default)]
    pub pricing: String,
    /// The trajectories replayed.
    pub trajectories: Vec<TrajectoryInfo>,
    /// Sums over `rows`.
    pub totals: Totals,
    /// One row per model call.
    pub rows: Vec<Row>,
    /// With several `--pipeline`s, every pipeline's section; empty (and
    /// left out of the JSON) with one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipelines: Vec<PipelineReport>,
}

impl Report {
    /// A report on the sections, in order: the first one's figures at the
    /// top level, and `pipelines` filled when there is more than one.
    ///
    /// ```
    /// use memory_cli::report::{PipelineReport, Report};
    /// let one = |p: &str| PipelineReport { pipeline: p.into(), ..Default::default() };
    /// let base = Report { budget: 100, ..Default::default() };
    /// let r = Report::with_sections(base.clone(), vec![one("window")]);
    /// assert_eq!((r.pipeline.as_str(), r.pipelines.len()), ("window", 0));
    /// let r = Report::with_sections(base, vec![one("window"), one("window,window")]);
    /// assert_eq!((r.pipeline.as_str(), r.pipelines.len()), ("window", 2));
    /// ```
    pub fn with_sections(mut base: Report, mut sections: Vec<PipelineReport>) -> Report {
        if sections.len() > 1 {
            base.pipelines = sections.clone();
        }
        if !sections.is_empty() {
            let first = sections.swap_remove(0);
            base.pipeline = first.pipeline;
            base.totals = first.totals;
            base.rows = first.rows;
        }
        base
    }

    /// Every pipeline's section: `pipelines`, or the top level alone.
    ///
    /// ```
    /// let r = memory_cli::Report { pipeline: "window".into(), ..Default::default() };
    /// assert_eq!(r.sections()[0].pipeline, "window");
    /// ```
    pub fn sections(&self) -> Vec<PipelineReport> {
        if self.pipelines.is_empty() {
            vec![PipelineReport {
                pipeline: self.pipeline.clone(),
                totals: self.totals.clone(),
                rows: self.rows.clone(),
            }]
        } else {
            self.pipelines.clone()
        }
    }

    /// A few lines for people: input, pipeline, budget, calls, mean tokens
    /// in and out, cache breaks, invalid and not-fitting rows, latency.
    /// With several pipelines: the input, then a [`comparison`](Self::comparison).
    ///
    /// ```
    /// let report = memory_cli::Report { input: "s.json".into(), budget: 100, ..Default::default() };
    /// assert!(report.summary().starts_with("input:"));
    /// ```
    pub fn summary(&self) -> String {
        if self.pipelines.len() > 1 {
            return self.comparison();
        }
        let mut lines = self.heading();
        lines.extend(self.totals.lines(&self.pricing));
        let repairs: usize = self.trajectories.iter().map(|t| t.repairs).sum();
        if repairs > 0 {
            lines.push(format!("repaired:     {}", plural(repairs, "fix", "fixes")));
        }
        let t = &self.totals;
        lines.push(format!(
            "latency:      mean {:.0} us, p50 {} us, max {} us",
            t.latency_us_mean, t.latency_us_p50, t.latency_us_max
        ));
        if let Some((first, last)) = t.latency_us_first_last {
            lines.push(format!(
                "              mean {first:.0} us over the first {LATENCY_WINDOW} calls, {last:.0} us over the last {LATENCY_WINDOW}"
            ));
        }
        lines.join("\n")
    }

    /// The input, its format and the pipeline.
    fn heading(&self) -> Vec<String> {
        let messages: usize = self.trajectories.iter().map(|t| t.messages).sum();
        vec![
            format!("input:        {}", self.input),
            format!(
                "format:       {} ({}, {})",
                self.format,
                plural(self.trajectories.len(), "trajectory", "trajectories"),
                plural(messages, "message", "messages"),
            ),
            format!(
                "pipeline:     {} (counter {}, budget {} tokens)",
                self.pipeline, self.counter, self.budget
            ),
        ]
    }
}

impl Totals {
    /// The summary's lines about the calls: tokens, cache, cost, support,
    /// validity and the summarizer.
    fn lines(&self, pricing: &str) -> Vec<String> {
        let t = self;
        let saved = if t.tokens_in == 0 {
            0.0
        } else {
            100.0 * (1.0 - t.tokens_out as f64 / t.tokens_in as f64)
        };
        let support = match t.support_recall {
            Some(recall) => format!(
                "recall {recall:.3} ({:.3} within reach of a recall, {:.1} handles per call, the index {:.1}% of the budget) over {} calls with something to recall",
                t.reachable_support_recall.unwrap_or(recall),
                t.handles_per_call,
                100.0 * t.index_share,
                t.support_rows
            ),
            None => "no call had anything to recall".to_string(),
        };
        let mut lines = vec![
            format!(
                "calls:        {}, tokens in -> out per call: mean {} -> {} ({saved:.0}% fewer)",
                t.calls,
                mean(t.tokens_in, t.calls),
                mean(t.tokens_out, t.calls)
            ),
            format!(
                "cache:        {} breaks in {} calls, {:.0}% of input served from cache",
                t.cache_breaks,
                t.calls,
                100.0 * t.cached_share
            ),
            format!(
                "cost:         {:.0} per call, {:.0} in all, in fresh input tokens priced {pricing}",
                t.cost_per_call, t.cost
            ),
            format!("support:      {support}"),
            format!(
                "task:         kept verbatim in {} of {} calls after it",
                t.task_kept_rows, t.task_rows
            ),
            format!(
                "invalid rows: {}, not fitting: {}, over budget: {} ({} with protected messages that fit)",
                t.calls - t.valid_rows,
                t.not_fitting_rows,
                t.over_budget_rows,
                t.avoidable_over_budget_rows
            ),
        ];
        if t.summarizer_calls > 0 {
            lines.push(format!(
                "summarizer:   {} calls, {} tokens in, {} out, {} failed ({})",
                t.summarizer_calls,
                t.summarizer_input_tokens,
                t.summarizer_output_tokens,
                t.summarizer_failures.total(),
                t.summarizer_failures
            ));
        }
        lines
    }
}

impl Report {
    /// The input, then one column per pipeline: calls, tokens out (mean and
    /// total), cache breaks, summarizer calls and tokens, invalid rows,
    /// rows not fitting, mean latency.
    ///
    /// ```
    /// use memory_cli::report::{PipelineReport, Report};
    /// let one = |p: &str| PipelineReport { pipeline: p.into(), ..Default::default() };
    /// let r = Report::with_sections(Report::default(), vec![one("window"), one("window,window")]);
    /// let text = r.comparison();
    /// assert!(text.lines().any(|l| l.contains("window") && l.contains("window,window")));
    /// assert!(text.contains("cache breaks"));
    /// ```
    pub fn comparison(&self) -> String {
        let sections = self.sections();
        let messages: usize = self.trajectories.iter().map(|t| t.messages).sum();
        let calls = sections.first().map_or(0, |s| s.totals.calls);
        let tokens_in = sections.first().map_or(0, |s| s.totals.tokens_in);
        let mut table = Table::new(sections.iter().map(|s| s.pipeline.clone()));
        for (label, cell) in COMPARED {
            table.row(*label, sections.iter().map(|s| cell(&s.totals)));
        }
        [
            format!("input:        {}", self.input),
            format!(
                "format:       {} ({}, {})",
                self.format,
                plural(self.trajectories.len(), "trajectory", "trajectories"),
                plural(messages, "message", "messages"),
            ),
            format!(
                "budget:       {} tokens (counter {}); tokens in per call: mean {}",
                self.budget,
                self.counter,
                mean(tokens_in, calls)
            ),
            format!("pricing:      {}; cost in fresh input tokens", self.pricing),
            String::new(),
            table.to_string(),
        ]
        .join("\n")
    }
}

/// How a pipeline's totals fill one cell of the side-by-side table.
type Cell = fn(&Totals) -> String;

/// The rows of [`Report::comparison`]: a label and how a pipeline's totals
/// fill its cell.
const COMPARED: &[(&str, Cell)] = &[
    ("calls", |t| t.calls.to_string()),
    ("tokens out, mean", |t| {
        mean(t.tokens_out, t.calls).to_string()
    }),
    ("tokens out, total", |t| t.tokens_out.to_string()),
    ("cached share", |t| {
        format!("{:.0}%", 100.0 * t.cached_share)
    }),
    ("cost per call", |t| format!("{:.0}", t.cost_per_call)),
    ("support recall", |t| {
        t.support_recall.map_or("-".into(), |r| format!("{r:.3}"))
    }),
    ("support recall, reachable", |t| {
        t.reachable_support_recall
            .map_or("-".into(), |r| format!("{r:.3}"))
    }),
    ("handles per call", |t| format!("{:.1}", t.handles_per_call)),
    ("task kept", |t| {
        format!("{}/{}", t.task_kept_rows, t.task_rows)
    }),
    ("cache breaks", |t| t.cache_breaks.to_string()),
    ("summarizer calls", |t| t.summarizer_calls.to_string()),
    ("summarizer tokens in/out", |t| {
        format!(
            "{}/{}",
            t.summarizer_input_tokens, t.summarizer_output_tokens
        )
    }),
    ("summarizer failures", |t| {
        t.summarizer_failures.total().to_string()
    }),
    ("invalid rows", |t| (t.calls - t.valid_rows).to_string()),
    ("not fitting", |t| t.not_fitting_rows.to_string()),
    ("over budget", |t| t.over_budget_rows.to_string()),
    ("over budget, protected fit", |t| {
        t.avoidable_over_budget_rows.to_string()
    }),
    ("latency, mean (us)", |t| {
        format!("{:.0}", t.latency_us_mean)
    }),
    (
        concat!("latency, first/last ", latency_window!(), " (us)"),
        |t| {
            t.latency_us_first_last
                .map_or("-".into(), |(first, last)| format!("{first:.0}/{last:.0}"))
        },
    ),
];

/// `a / b`, 0 when `b` is 0.
fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}

/// `sum / n` rounded, 0 for no items.
pub(crate) fn mean(sum: usize, n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (sum as f64 / n as f64).round() as usize
    }
}

/// `1 fix`, `2 fixes`.
fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}
