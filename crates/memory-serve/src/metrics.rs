//! [`Metrics`]: what `GET /metrics` shows, in the Prometheus text format.

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::{CallReport, StatsSource, SummarizerStats};

type Labels = Vec<(&'static str, String)>;

/// The server's counters and latency histograms.
///
/// ```
/// let metrics = memory_serve::Metrics::new(None);
/// metrics.count_request("chat", 200);
/// let text = metrics.render();
/// assert!(text.contains("memory_serve_requests_total{route=\"chat\",status=\"200\"} 1"));
/// ```
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    sessions: Family<Labels, Counter>,
    tokens_received: Counter,
    tokens_sent: Counter,
    tokens_saved: Counter,
    cache_breaks: Counter,
    over_budget: Counter,
    compactions: Counter,
    summarizer_calls: Counter,
    summarizer_failures: Family<Labels, Counter>,
    recalls: Family<Labels, Counter>,
    own_seconds: Histogram,
    upstream_seconds: Histogram,
    stats: Option<StatsSource>,
    seen: Mutex<SummarizerStats>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// The metrics, reading the summarizer's statistics from `stats` at
    /// each scrape.
    ///
    /// ```
    /// assert!(memory_serve::Metrics::new(None).render().contains("memory_serve_tokens_sent"));
    /// ```
    pub fn new(stats: Option<StatsSource>) -> Self {
        let mut metrics = Self {
            registry: Registry::default(),
            requests: Family::default(),
            sessions: Family::default(),
            tokens_received: Counter::default(),
            tokens_sent: Counter::default(),
            tokens_saved: Counter::default(),
            cache_breaks: Counter::default(),
            over_budget: Counter::default(),
            compactions: Counter::default(),
            summarizer_calls: Counter::default(),
            summarizer_failures: Family::default(),
            recalls: Family::default(),
            // From 50 us to about 26 s, doubling.
            own_seconds: Histogram::new(exponential_buckets(0.000_05, 2.0, 20)),
            // From 1 ms to about 131 s, doubling.
            upstream_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 18)),
            stats,
            seen: Mutex::new(SummarizerStats::default()),
        };
        metrics.registry = metrics.registry();
        metrics
    }

    /// A registry of every metric, with its name and help.
    fn registry(&self) -> Registry {
        let mut r = Registry::default();
        self.register_counters(&mut r);
        let families = [
            (
                "memory_serve_requests",
                "Requests answered, by route and status",
                &self.requests,
            ),
            (
                "memory_serve_sessions",
                "Chat requests by how they found their session (new, continued, forked, named)",
                &self.sessions,
            ),
            (
                "memory_serve_summarizer_failures",
                "Failed summarizer requests, by class",
                &self.summarizer_failures,
            ),
            (
                "memory_serve_recalls",
                "The model's recall calls the server answered (--recall server), by outcome: returned, or refused (a handle the session does not hold, bad arguments)",
                &self.recalls,
            ),
        ];
        for (name, help, family) in families {
            r.register(name, help, family.clone());
        }
        r.register(
            "memory_serve_own_seconds",
            "The server's own time per chat request, the upstream's excluded",
            self.own_seconds.clone(),
        );
        r.register(
            "memory_serve_upstream_seconds",
            "Time to the upstream's response headers",
            self.upstream_seconds.clone(),
        );
        r
    }

    /// Registers the plain counters.
    fn register_counters(&self, r: &mut Registry) {
        let counters = [
            (
                "memory_serve_tokens_received",
                "Tokens of the sessions' whole histories at each call",
                &self.tokens_received,
            ),
            (
                "memory_serve_tokens_sent",
                "Tokens of the messages sent upstream",
                &self.tokens_sent,
            ),
            (
                "memory_serve_tokens_saved",
                "Tokens of history not sent upstream",
                &self.tokens_saved,
            ),
            (
                "memory_serve_cache_breaks",
                "Calls whose context does not start with the previous call's",
                &self.cache_breaks,
            ),
            (
                "memory_serve_over_budget",
                "Calls whose floor alone exceeded the budget",
                &self.over_budget,
            ),
            (
                "memory_serve_compactions",
                "Calls that wrote a new stored view",
                &self.compactions,
            ),
            (
                "memory_serve_summarizer_calls",
                "Requests sent to the summarizer",
                &self.summarizer_calls,
            ),
        ];
        for (name, help, counter) in counters {
            r.register(name, help, counter.clone());
        }
    }

    /// Counts a request answered on `route` with `status`.
    ///
    /// ```
    /// memory_serve::Metrics::new(None).count_request("models", 502);
    /// ```
    pub fn count_request(&self, route: &'static str, status: u16) {
        self.requests
            .get_or_create(&vec![
                ("route", route.to_string()),
                ("status", status.to_string()),
            ])
            .inc();
    }

    /// Counts a chat call by its report.
    ///
    /// ```
    /// let metrics = memory_serve::Metrics::new(None);
    /// metrics.count_call(&memory_serve::CallReport { cache_break: true, ..Default::default() });
    /// assert!(metrics.render().contains("memory_serve_cache_breaks_total 1"));
    /// ```
    pub fn count_call(&self, report: &CallReport) {
        if let Some(admission) = report.admission {
            self.sessions
                .get_or_create(&vec![("admission", admission.as_str().to_string())])
                .inc();
        }
        self.tokens_received.inc_by(report.history_tokens as u64);
        self.tokens_sent.inc_by(report.tokens_out as u64);
        self.tokens_saved.inc_by(report.tokens_saved as u64);
        self.cache_breaks.inc_by(u64::from(report.cache_break));
        self.over_budget.inc_by(u64::from(!report.fits));
        self.compactions.inc_by(u64::from(report.compacted));
    }

    /// Counts one recall call the server answered under `--recall server`:
    /// `returned` when the handle brought something back, else refused.
    ///
    /// ```
    /// let metrics = memory_serve::Metrics::new(None);
    /// metrics.count_recall(true);
    /// metrics.count_recall(false);
    /// let text = metrics.render();
    /// assert!(text.contains("memory_serve_recalls_total{outcome=\"returned\"} 1"));
    /// assert!(text.contains("memory_serve_recalls_total{outcome=\"refused\"} 1"));
    /// ```
    pub fn count_recall(&self, returned: bool) {
        let outcome = if returned { "returned" } else { "refused" };
        self.recalls
            .get_or_create(&vec![("outcome", outcome.to_string())])
            .inc();
    }

    /// Records the server's own time for one chat request.
    ///
    /// ```
    /// memory_serve::Metrics::new(None).observe_own(std::time::Duration::from_micros(300));
    /// ```
    pub fn observe_own(&self, time: Duration) {
        self.own_seconds.observe(time.as_secs_f64());
    }

    /// Records the upstream's time to its response headers.
    ///
    /// ```
    /// memory_serve::Metrics::new(None).observe_upstream(std::time::Duration::from_millis(50));
    /// ```
    pub fn observe_upstream(&self, time: Duration) {
        self.upstream_seconds.observe(time.as_secs_f64());
    }

    /// The metrics in the text format, the summarizer's brought up to date.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use memory_serve::{Metrics, SummarizerStats};
    /// let metrics = Metrics::new(Some(Arc::new(|| SummarizerStats { calls: 2, failures: vec![("timeout".into(), 1)] })));
    /// let text = metrics.render();
    /// assert!(text.contains("memory_serve_summarizer_calls_total 2"));
    /// assert!(text.contains("memory_serve_summarizer_failures_total{class=\"timeout\"} 1"));
    /// ```
    pub fn render(&self) -> String {
        self.sync_summarizer();
        let mut text = String::new();
        if encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }

    /// Adds what the summarizer did since the last scrape.
    fn sync_summarizer(&self) {
        let Some(stats) = &self.stats else {
            return;
        };
        let now = stats();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        self.summarizer_calls
            .inc_by(now.calls.saturating_sub(seen.calls));
        for (class, count) in &now.failures {
            let before = seen
                .failures
                .iter()
                .find(|(c, _)| c == class)
                .map_or(0, |(_, n)| *n);
            self.summarizer_failures
                .get_or_create(&vec![("class", class.clone())])
                .inc_by(count.saturating_sub(before));
        }
        *seen = now;
    }
}
