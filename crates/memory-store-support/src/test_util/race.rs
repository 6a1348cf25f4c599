//! The race of appenders and compactors on shared sessions, as the durable
//! stores' race tests run it: writers append numbered messages, a
//! compactor folds each long view into a summary and its newest messages,
//! taking a while to "write" the summary as a model would; afterwards every
//! session is checked.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use memory_core::{Message, Store, StoreError, StoredMessage, summary};

/// A compactor starts an attempt on a view of at least this many messages.
const LONG_VIEW: usize = 40;
/// What a compacted view keeps after the summary.
const KEPT: usize = 10;
/// Tries of one attempt before it gives up.
const MAX_TRIES: usize = 10;

/// The text of writer `task` of process `process`'s `i`-th message:
/// `p{process}-t{task}-{i}`, which [`check_session`] reads back.
///
/// ```
/// assert_eq!(memory_store_support::test_util::race_text(1, 2, 3), "p1-t2-3");
/// ```
pub fn race_text(process: usize, task: usize, i: usize) -> String {
    format!("p{process}-t{task}-{i}")
}

/// Writer `task` of process `process`: appends `messages` messages
/// ([`race_text`]) one by one to `session`, and returns each text with the
/// version its append returned.
///
/// # Panics
///
/// On a store error.
///
/// ```
/// use std::sync::Arc;
/// use memory_core::InMemoryStore;
/// use memory_store_support::test_util::appender;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let acked = appender(Arc::new(InMemoryStore::new()), "s".into(), 0, 1, 2).await;
/// assert_eq!(acked, vec![("p0-t1-0".to_string(), 1), ("p0-t1-1".to_string(), 2)]);
/// # });
/// ```
pub async fn appender(
    store: Arc<dyn Store>,
    session: String,
    process: usize,
    task: usize,
    messages: usize,
) -> Vec<(String, u64)> {
    let mut versions = Vec::with_capacity(messages);
    for i in 0..messages {
        let text = race_text(process, task, i);
        let message = StoredMessage::new(Message::user(&text), 3, false);
        let version = store
            .append(&session, vec![message])
            .await
            .unwrap_or_else(|e| panic!("append to {session}: {e}"));
        versions.push((text, version));
    }
    versions
}

/// What one compactor did. An attempt starts when a view is long; each
/// try reads the session, computes the new view and commits it; a
/// conflict starts another try.
///
/// ```
/// use memory_store_support::test_util::Compactions;
/// let tally = Compactions { attempts: 10, within_three: 9, committed: 10, conflicts: 2 };
/// assert_eq!(Compactions::parse(&tally.line()), Some(tally));
/// assert!((tally.share_within_three() - 0.9).abs() < 1e-9);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compactions {
    /// Attempts started.
    pub attempts: usize,
    /// Attempts that committed within three tries.
    pub within_three: usize,
    /// Attempts that committed at all.
    pub committed: usize,
    /// Tries that met a conflict.
    pub conflicts: usize,
}

impl Compactions {
    /// The tally as one line of text, for a child process to print.
    ///
    /// ```
    /// let line = memory_store_support::test_util::Compactions::default().line();
    /// assert!(line.starts_with("compactions "));
    /// ```
    pub fn line(&self) -> String {
        format!(
            "compactions {} {} {} {}",
            self.attempts, self.within_three, self.committed, self.conflicts
        )
    }

    /// A tally back from a [`line`](Self::line) (anywhere in `text`).
    ///
    /// ```
    /// assert_eq!(memory_store_support::test_util::Compactions::parse("no tally"), None);
    /// ```
    pub fn parse(text: &str) -> Option<Self> {
        let (_, numbers) = text.rsplit_once("compactions ")?;
        let numbers: Vec<usize> = numbers
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        match numbers[..] {
            [attempts, within_three, committed, conflicts] => Some(Self {
                attempts,
                within_three,
                committed,
                conflicts,
            }),
            _ => None,
        }
    }

    /// Two tallies together.
    ///
    /// ```
    /// use memory_store_support::test_util::Compactions;
    /// let one = Compactions { attempts: 1, within_three: 1, committed: 1, conflicts: 0 };
    /// assert_eq!(one.plus(one).attempts, 2);
    /// ```
    pub fn plus(self, other: Self) -> Self {
        Self {
            attempts: self.attempts + other.attempts,
            within_three: self.within_three + other.within_three,
            committed: self.committed + other.committed,
            conflicts: self.conflicts + other.conflicts,
        }
    }

    /// The share of attempts that committed within three tries (1 when
    /// there were none).
    ///
    /// ```
    /// assert_eq!(memory_store_support::test_util::Compactions::default().share_within_three(), 1.0);
    /// ```
    pub fn share_within_three(&self) -> f64 {
        if self.attempts == 0 {
            1.0
        } else {
            self.within_three as f64 / self.attempts as f64
        }
    }
}

/// Compacts `sessions` in turn, from `first` on, until `done`: an attempt
/// on every view of at least 40 messages, each try taking `think` between
/// reading the session and committing (the summary being written while
/// appends go on). The new view is a summary naming `label` and the
/// version read, then the view's ten newest messages.
///
/// # Panics
///
/// On a store error other than a conflict.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::AtomicBool;
/// use std::time::Duration;
/// use memory_core::{InMemoryStore, Message, Store, StoredMessage};
/// use memory_store_support::test_util::compactor;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
/// let long = (0..50).map(|i| StoredMessage::new(Message::user(i.to_string()), 1, false)).collect();
/// store.append("s", long).await.unwrap();
/// let done = Arc::new(AtomicBool::new(true));
/// let tally = compactor(store.clone(), vec!["s".into()], 0, "c".into(), Duration::ZERO, done).await;
/// assert_eq!((tally.attempts, tally.committed), (1, 1));
/// assert_eq!(store.load("s").await.unwrap().messages.len(), 11);
/// # });
/// ```
pub async fn compactor(
    store: Arc<dyn Store>,
    sessions: Vec<String>,
    first: usize,
    label: String,
    think: Duration,
    done: Arc<AtomicBool>,
) -> Compactions {
    let mut tally = Compactions::default();
    let mut turn = first;
    loop {
        // One round over the sessions even when already done.
        for _ in 0..sessions.len() {
            let id = &sessions[turn % sessions.len()];
            turn += 1;
            let snapshot = store.load(id).await.expect("compactor: load");
            if snapshot.messages.len() < LONG_VIEW {
                continue;
            }
            tally.attempts += 1;
            for tries in 1..=MAX_TRIES {
                let snapshot = store.load(id).await.expect("compactor: load");
                let mut view = vec![StoredMessage::new(
                    summary::message(format!("{label} at version {}", snapshot.version)),
                    8,
                    true,
                )];
                let keep = snapshot.messages.len().saturating_sub(KEPT);
                view.extend_from_slice(&snapshot.messages[keep..]);
                tokio::time::sleep(think).await;
                match store.replace_view(id, snapshot.version, view).await {
                    Ok(_) => {
                        tally.committed += 1;
                        tally.within_three += usize::from(tries <= 3);
                        break;
                    }
                    Err(StoreError::Conflict { .. }) => tally.conflicts += 1,
                    Err(e) => panic!("compactor: replace the view of {id}: {e}"),
                }
            }
        }
        if done.load(Ordering::Relaxed) {
            return tally;
        }
    }
}

/// Checks session `id` after a race: its history holds `expected` messages,
/// each once; each writer's messages in the order it wrote them; in the
/// order of the versions their appends returned (`versions`, by text); one
/// version per append and per compaction; and a view that is a summary
/// followed by the end of the history. Returns how many compactions
/// committed.
///
/// # Panics
///
/// When any of that does not hold.
///
/// ```
/// use std::collections::HashMap;
/// use memory_core::{InMemoryStore, Message, Store, StoredMessage};
/// use memory_store_support::test_util::{check_session, race_text};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// let mut versions = HashMap::new();
/// for i in 0..3 {
///     let text = race_text(0, 0, i);
///     let v = store.append("s", vec![StoredMessage::new(Message::user(&text), 1, false)]).await.unwrap();
///     versions.insert(text, v);
/// }
/// assert_eq!(check_session(&store, "s", &versions, 3).await, 0);
/// # });
/// ```
pub async fn check_session(
    store: &dyn Store,
    id: &str,
    versions: &HashMap<String, u64>,
    expected: usize,
) -> usize {
    let history = store.history(id).await.expect("history");
    assert_eq!(history.len(), expected, "{id}: messages in the history");
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut next: HashMap<String, usize> = HashMap::new();
    for m in &history {
        let text = m.text();
        *seen.entry(text.clone()).or_default() += 1;
        let (writer, i) = text.rsplit_once('-').expect("p-t-i");
        let wanted = next.entry(writer.to_string()).or_default();
        assert_eq!(
            i.parse::<usize>().ok(),
            Some(*wanted),
            "{text} out of order"
        );
        *wanted += 1;
    }
    assert!(seen.values().all(|&n| n == 1), "{id}: a message twice");
    let returned: Vec<u64> = history
        .iter()
        .map(|m| versions.get(&m.text()).copied().expect("acknowledged"))
        .collect();
    assert!(
        returned.windows(2).all(|w| w[0] < w[1]),
        "{id}: the history's order is not the order of the versions appends returned"
    );
    let snapshot = store.load(id).await.expect("load");
    let replaced = store.replaced(id).await.expect("replaced");
    assert_eq!(
        snapshot.version as usize,
        history.len() + replaced.len(),
        "{id}: one version per append and per compaction"
    );
    let view: Vec<Message> = snapshot
        .messages
        .iter()
        .map(|m| m.message.clone())
        .collect();
    let tail = match view.first() {
        Some(first) if summary::is_summary(first) => &view[1..],
        _ => &view[..],
    };
    assert!(
        tail.iter().all(|m| !summary::is_summary(m)),
        "{id}: a summary inside the view"
    );
    assert!(
        history.ends_with(tail),
        "{id}: the view's tail is not the history's end (an append lost from the view)"
    );
    replaced.len()
}
