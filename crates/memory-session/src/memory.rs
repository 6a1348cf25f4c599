//! [`WindowMemory`]: a [`Memory`] over a [`Store`], trimmed by a strategy.

use std::sync::Arc;

use crate::left_out::{self, Folded, IndexSettings, LentMemo};
use memory_core::covered::{self, Covered};
use memory_core::recall::{RecallRequest, Recalled};
use memory_core::{
    Budget, CharTokenCounter, Context, History, Memory, MemoryError, Message, Store, StoreError,
    StoredMessage, TokenCounter, TrimResult, TrimStrategy, Version, summary,
};

use crate::own::OwnHistory;
use memory_window::WindowDrop;

/// Where the session is kept.
enum Keeping {
    /// In the memory itself: the state is the view, [`OwnHistory`] the
    /// rest of the history; each message is held once.
    Own(OwnHistory),
    /// In a store, which others may share.
    Store(Arc<dyn Store>),
}

/// The session as last read from or written to the store.
#[derive(Debug, Default)]
struct State {
    messages: Vec<Message>,
    counts: Vec<usize>,
    protected: Vec<usize>,
    total: usize,
    version: Version,
    /// What the view's summary stands for, within reach of the strategy.
    covered: Covered,
    /// Whether the view has a summary whose turns recovery from the store
    /// could not place (see [`crate::recover`]): what a compaction of it
    /// leaves within reach is then recovered from the store, not found in
    /// the history in hand.
    unplaced: bool,
}

impl State {
    fn from_stored(stored: Vec<StoredMessage>, version: Version) -> Self {
        let mut state = State {
            version,
            ..State::default()
        };
        for s in stored {
            state.push(s.message, s.tokens, s.protected);
        }
        state
    }

    fn push(&mut self, message: Message, tokens: usize, protected: bool) {
        if protected || summary::is_summary(&message) {
            self.protected.push(self.messages.len());
        }
        self.messages.push(message);
        self.counts.push(tokens);
        self.total += tokens;
    }

    /// The state `result` leaves, with `covered`.
    fn from_result(result: &TrimResult, version: Version, covered: Covered) -> Self {
        State {
            messages: result.messages.clone(),
            counts: result.counts.clone(),
            protected: result.protected.clone(),
            total: result.tokens(),
            version,
            covered,
            unplaced: false,
        }
    }

    /// The view's summaries and its covered set, to carry over a reload
    /// that finds the same summaries.
    fn carried(&self) -> Carried {
        Carried {
            summaries: summaries(self.messages.iter()),
            covered: self.covered.clone(),
            unplaced: self.unplaced,
        }
    }

    /// The view with each message's count and protection.
    fn stored(&self) -> Vec<StoredMessage> {
        stored(&self.messages, &self.counts, &self.protected)
    }

    fn stored_view(result: &TrimResult) -> Vec<StoredMessage> {
        stored(&result.messages, &result.counts, &result.protected)
    }
}

/// A covered set, with the summaries of the view it belongs to, kept
/// across a reload. All of them, not the first: a compaction may add a
/// summary after one the view opened with.
#[derive(Debug)]
struct Carried {
    summaries: Vec<Message>,
    covered: Covered,
    unplaced: bool,
}

/// The summaries among `messages`, in order.
fn summaries<'m>(messages: impl Iterator<Item = &'m Message>) -> Vec<Message> {
    messages
        .filter(|m| summary::is_summary(m))
        .cloned()
        .collect()
}

/// How many compactions one call lands at most. A compaction that lands
/// is followed by a fit of the stored view, so that the context shown is
/// the one the next call shows (and the session opened again); that fit
/// compacts again only where the stored view is still over the budget (a
/// summary that left the newest step no room), and then what it lands is
/// shown as it is. Why two: a third would be a third model call in one
/// turn where the next turn makes it anyway.
const MAX_PASSES: usize = 2;

/// `shown` after the `earlier` results of the same call that compacted
/// the session: what they reported comes first in its diagnostics, and
/// what they stored stays what it writes back.
fn after(earlier: Option<TrimResult>, mut shown: TrimResult) -> TrimResult {
    let Some(mut earlier) = earlier else {
        return shown;
    };
    let diagnostics = std::mem::take(&mut earlier.diagnostics);
    if shown.to_store().is_none() {
        let stored = if earlier.replace {
            Some(earlier)
        } else {
            earlier.write_back.map(|b| *b)
        };
        if let Some(stored) = stored {
            shown.write_back = Some(Box::new(stored));
            shown.replace = false;
        }
    }
    shown.diagnostics.follow(diagnostics);
    shown
}

/// `result` with what it would store dropped: a compaction that lost the
/// race to another, reported but not stored.
fn not_stored(mut result: TrimResult) -> TrimResult {
    result.replace = false;
    result.write_back = None;
    result
}

/// Messages with their counts, and the (sorted) protected ones flagged.
fn stored(messages: &[Message], counts: &[usize], protected: &[usize]) -> Vec<StoredMessage> {
    let mut protected = protected.iter().peekable();
    messages
        .iter()
        .zip(counts)
        .enumerate()
        .map(|(i, (m, &t))| {
            let is_protected = protected.next_if(|&&p| p == i).is_some();
            StoredMessage::new(m.clone(), t, is_protected)
        })
        .collect()
}

/// Records every message in a [`Store`] and trims on [`fitted`](Memory::fitted)
/// (and [`context`](Memory::context), its messages).
///
/// Each message is counted once, when recorded; the counts are stored with
/// it. The strategy (default [`WindowDrop`]) decides what the model sees: a
/// projection leaves the store as it is (raise the budget and the history is
/// back); a materializing result is committed to the store as a compaction
/// against the version it was computed from, and the store keeps what it
/// replaced. Protected messages are never shed.
///
/// Without [`with_store`](WindowMemory::with_store), the memory keeps the
/// session in itself, each message once: the view the strategy trims, and
/// of the history only what compactions took out of the view. What a
/// compaction replaced is then not kept beyond the history.
///
/// ```
/// use std::sync::Arc;
/// use memory_core::{InMemoryStore, Memory, Message};
/// use memory_session::WindowMemory;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = Arc::new(InMemoryStore::new());
/// let mut memory = WindowMemory::new(8_000).with_store(store.clone(), "session-1");
/// memory.record_protected(Message::system("You are a coding agent.")).await.unwrap();
/// memory.record(Message::user("Run the tests.")).await.unwrap();
///
/// // Reopened later, in another process say: the same context.
/// let mut reopened = WindowMemory::new(8_000).with_store(store, "session-1");
/// assert_eq!(reopened.context().await.unwrap(), memory.context().await.unwrap());
///
/// // With its size and whether it fits; and what is stored, for inspection.
/// let context = memory.fitted().await.unwrap();
/// assert!(context.fits && context.tokens > 0);
/// assert_eq!(memory.view().await.unwrap().len(), 2);
/// assert_eq!(memory.history().await.unwrap().len(), 2);
/// # });
/// ```
pub struct WindowMemory {
    budget: Budget,
    strategy: Arc<dyn TrimStrategy>,
    counter: Arc<dyn TokenCounter>,
    keeping: Keeping,
    session: String,
    state: Option<State>,
    keep_task: bool,
    floor_cut: bool,
    index: Option<IndexSettings>,
    /// The covered set of the state last dropped for a reload.
    carried: Option<Carried>,
    /// The turns compactions folded away that the covered set no longer
    /// holds, for the index (kept in memory; a session opened again from
    /// its store finds them in the store's history).
    folded: Folded,
    /// What the index keeps from one call to the next (lent to one call
    /// at a time; a call that finds it lent reads the history afresh).
    index_memo: LentMemo,
}

impl std::fmt::Debug for WindowMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowMemory")
            .field("budget", &self.budget)
            .field("strategy", &self.strategy.name())
            .field("session", &self.session)
            .field("messages", &self.state.as_ref().map(|s| s.messages.len()))
            .finish()
    }
}

impl WindowMemory {
    /// A memory with a token budget, [`WindowDrop`], [`CharTokenCounter`],
    /// keeping its session in itself.
    ///
    /// ```
    /// let memory = memory_session::WindowMemory::new(4096);
    /// assert_eq!(memory.budget().max_tokens, Some(4096));
    /// ```
    pub fn new(max_tokens: usize) -> Self {
        Self::with_budget(Budget::tokens(max_tokens))
    }

    /// A memory with any [`Budget`].
    ///
    /// ```
    /// use memory_core::Budget;
    /// let memory = memory_session::WindowMemory::with_budget(Budget::rounds(5));
    /// assert_eq!(memory.budget().max_rounds, Some(5));
    /// ```
    pub fn with_budget(budget: Budget) -> Self {
        Self {
            budget,
            strategy: Arc::new(WindowDrop),
            counter: Arc::new(CharTokenCounter),
            keeping: Keeping::Own(OwnHistory::default()),
            session: "default".to_string(),
            keep_task: true,
            floor_cut: true,
            index: Some(IndexSettings::default()),
            state: None,
            carried: None,
            folded: Folded::default(),
            index_memo: LentMemo::default(),
        }
    }

    /// Also limits the number of rounds kept.
    ///
    /// ```
    /// let memory = memory_session::WindowMemory::new(100).with_max_rounds(2);
    /// assert_eq!(memory.budget().max_rounds, Some(2));
    /// ```
    pub fn with_max_rounds(mut self, max_rounds: usize) -> Self {
        self.budget.max_rounds = Some(max_rounds);
        self
    }

    /// Whether the task (the session's first user request) is part of the
    /// floor, as it is by default; `false` for sessions whose first request
    /// is not a standing task, such as a chat.
    ///
    /// ```
    /// use memory_core::{Memory, Message};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// // "the first request" is 5 tokens, "now" 1: over a budget of 3.
    /// let mut memory = memory_session::WindowMemory::new(3);
    /// memory.record(Message::user("the first request")).await.unwrap();
    /// memory.record(Message::user("now")).await.unwrap();
    /// let kept = memory.fitted().await.unwrap();
    /// assert_eq!(kept.messages.len(), 2); // the task stays, over budget
    /// assert!(!kept.fits);
    /// let mut memory = memory.with_task(false);
    /// assert_eq!(memory.context().await.unwrap(), vec![Message::user("now")]);
    /// # });
    /// ```
    pub fn with_task(mut self, keep: bool) -> Self {
        self.keep_task = keep;
        self
    }

    /// Whether to cut, as a last resort, the largest unprotected messages
    /// of a context the strategy could not fit (a text-only agent's long
    /// observation, the newest tool output), head and tail kept around a
    /// marker with the message's recall handle
    /// ([`floor_cut`](crate::floor_cut)); on by default. Off, such a
    /// context goes out over the budget.
    ///
    /// ```
    /// use memory_core::{Memory, Message};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// for (on, fits) in [(true, true), (false, false)] {
    ///     let mut memory = memory_session::WindowMemory::new(100).with_floor_cut(on);
    ///     memory.record(Message::user("fix the build")).await.unwrap();
    ///     memory.record(Message::user("x".repeat(2_000))).await.unwrap();
    ///     assert_eq!(memory.trimmed().await.unwrap().fits, fits);
    /// }
    /// # });
    /// ```
    pub fn with_floor_cut(mut self, on: bool) -> Self {
        self.floor_cut = on;
        self
    }

    /// How to index what a context leaves out ([`left_out`](crate::left_out)):
    /// one line per left-out piece, with its recall handle, in the room
    /// the strategy left, half of it kept (a tenth of the budget at most by
    /// default); `None`
    /// turns the index off.
    ///
    /// ```
    /// use memory_core::{Memory, Message};
    /// use memory_session::left_out;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// for (settings, indexed) in [(Some(left_out::IndexSettings::default()), true), (None, false)] {
    ///     let mut memory = memory_session::WindowMemory::new(400).with_index(settings);
    ///     memory.record(Message::user("Plan the garden.")).await.unwrap();
    ///     memory.record(Message::assistant("tomatoes and basil, ".repeat(100))).await.unwrap();
    ///     for turn in 0..3 {
    ///         memory.record(Message::user(format!("question {turn}"))).await.unwrap();
    ///         memory.record(Message::assistant(format!("answer {turn}"))).await.unwrap();
    ///     }
    ///     let context = memory.trimmed().await.unwrap().messages;
    ///     assert_eq!(context.iter().any(left_out::is_index), indexed);
    /// }
    /// # });
    /// ```
    pub fn with_index(mut self, settings: Option<IndexSettings>) -> Self {
        self.index = settings;
        self
    }

    /// Uses `strategy` (a [`Pipeline`](memory_core::Pipeline) too) to trim.
    ///
    /// ```
    /// use memory_core::Pipeline;
    /// use memory_session::WindowMemory;
    /// use memory_window::WindowDrop;
    /// let memory = WindowMemory::new(100).with_strategy(Pipeline::new().then(WindowDrop::new()));
    /// # let _ = memory;
    /// ```
    pub fn with_strategy(mut self, strategy: impl TrimStrategy + 'static) -> Self {
        self.strategy = Arc::new(strategy);
        self
    }

    /// Uses `counter` to count recorded messages. Counts already stored are
    /// kept as they are.
    ///
    /// ```
    /// let memory = memory_session::WindowMemory::new(100)
    ///     .with_token_counter(memory_core::CharTokenCounter);
    /// # let _ = memory;
    /// ```
    pub fn with_token_counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.counter = Arc::new(counter);
        // What the index counted, it counted with the counter before.
        self.index_memo = LentMemo::default();
        self
    }

    /// Keeps the conversation in `store` under `session`; an existing
    /// session is loaded on first use.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let memory = memory_session::WindowMemory::new(100)
    ///     .with_store(Arc::new(memory_core::InMemoryStore::new()), "user-42");
    /// assert_eq!(memory.session(), "user-42");
    /// ```
    pub fn with_store(mut self, store: Arc<dyn Store>, session: impl Into<String>) -> Self {
        self.keeping = Keeping::Store(store);
        self.session = session.into();
        self.state = None;
        self.carried = None;
        self
    }

    /// The budget.
    ///
    /// ```
    /// assert_eq!(memory_session::WindowMemory::new(7).budget().max_tokens, Some(7));
    /// ```
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// Changes the budget; a larger one brings projected history back.
    ///
    /// ```
    /// let mut memory = memory_session::WindowMemory::new(7);
    /// memory.set_budget(memory_core::Budget::both(10, 2));
    /// assert_eq!(memory.budget().max_rounds, Some(2));
    /// ```
    pub fn set_budget(&mut self, budget: Budget) {
        self.budget = budget;
    }

    /// Changes the token limit.
    ///
    /// ```
    /// let mut memory = memory_session::WindowMemory::new(7);
    /// memory.set_max_tokens(1000);
    /// assert_eq!(memory.budget().max_tokens, Some(1000));
    /// ```
    pub fn set_max_tokens(&mut self, max_tokens: usize) {
        self.budget.max_tokens = Some(max_tokens);
    }

    /// The session id.
    ///
    /// ```
    /// assert_eq!(memory_session::WindowMemory::new(1).session(), "default");
    /// ```
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Tokens of the stored view (everything the strategy starts from).
    ///
    /// ```
    /// assert_eq!(memory_session::WindowMemory::new(1).total_tokens(), 0);
    /// ```
    pub fn total_tokens(&self) -> usize {
        self.state.as_ref().map_or(0, |s| s.total)
    }

    /// Number of messages in the stored view.
    ///
    /// ```
    /// assert_eq!(memory_session::WindowMemory::new(1).len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.state.as_ref().map_or(0, |s| s.messages.len())
    }

    /// Whether nothing is recorded (or the session is not loaded yet).
    ///
    /// ```
    /// assert!(memory_session::WindowMemory::new(1).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The originals the stored view's summary stands for, as far as the
    /// strategy can reach them (see [`memory_core::covered`]): set by a
    /// compaction, recovered from the store's history when a session is
    /// loaded. Empty before the session is loaded or compacted.
    ///
    /// ```
    /// assert!(memory_session::WindowMemory::new(1).covered().is_empty());
    /// ```
    pub fn covered(&self) -> Covered {
        self.state
            .as_ref()
            .map(|s| s.covered.clone())
            .unwrap_or_default()
    }

    /// Like [`fitted`](Memory::fitted), with everything the strategy
    /// reported: each message's count, the protected indices, and for a
    /// pipeline what it wrote back. The strategy fits the messages to the
    /// budget less the tokens the counter's framing adds once per request
    /// ([`Budget::for_messages`]).
    ///
    /// # Errors
    ///
    /// Counting, strategy and store errors. A compaction that lost a race
    /// with another writer's compaction is not an error: the session is
    /// reloaded and the compaction is retried on the next call.
    ///
    /// ```
    /// use memory_core::{Memory, Message};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mut memory = memory_session::WindowMemory::new(1);
    /// memory.record(Message::user("a long question")).await.unwrap();
    /// let result = memory.trimmed().await.unwrap();
    /// assert!(!result.fits);
    /// # });
    /// ```
    pub async fn trimmed(&mut self) -> Result<TrimResult, MemoryError> {
        // The request's framing (the reply's start) is not in any message.
        let budget = self.budget.for_messages(self.counter.framing());
        let mut earlier: Option<TrimResult> = None;
        for pass in 1..=MAX_PASSES {
            self.load().await?;
            let state = self.state.as_ref().expect("loaded above");
            let version = state.version;
            let history = self.history_of(state)?;
            let result = self.fit(&history, &budget).await?;
            let Some(stored) = result.to_store() else {
                let shown = self.indexed(&history, result, &budget).await?;
                return Ok(after(earlier, shown));
            };
            // What the view will hold within reach, found in the history in
            // hand by the rule a session opened again recovers it from the
            // store with; `None` where only the store can tell (the rule
            // places nothing, or could not place the summary's turns
            // before), and a session kept in a store is read again after
            // landing.
            let view = State::stored_view(stored);
            let found = if state.unplaced {
                None
            } else {
                let horizon = self.horizon();
                crate::recover::after_compaction(&view, &history, &*self.counter, horizon).await?
            };
            let within_reach = match self.keeping {
                Keeping::Own(_) => Some(found.unwrap_or_default()),
                Keeping::Store(_) => found,
            };
            if pass == MAX_PASSES {
                // What lands now is shown as it is.
                let shown = self.indexed(&history, result.clone(), &budget).await?;
                let landed = self
                    .land(stored, view, within_reach, version, &budget)
                    .await?;
                let shown = if landed { shown } else { not_stored(shown) };
                return Ok(after(earlier, shown));
            }
            // Landed or not, the next pass shows what the store holds.
            let landed = self
                .land(stored, view, within_reach, version, &budget)
                .await?;
            let result = if landed { result } else { not_stored(result) };
            earlier = Some(after(earlier, result));
        }
        unreachable!("the last pass returns")
    }

    /// The history the strategy is given of `state`.
    fn history_of<'s>(&self, state: &'s State) -> Result<History<'s>, MemoryError> {
        let mut history = History::from_parts(
            &state.messages,
            &state.counts,
            &state.protected,
            state.total,
        )?;
        if !self.keep_task {
            history = history.forget_task();
        }
        Ok(history.with_covered(state.covered.clone()))
    }

    /// Stores what a compaction made (`stored`, computed from `version`;
    /// `view` as stored): whether it landed (a conflict with another
    /// compaction did not; the session is then reloaded). The session goes
    /// on with `within_reach` (the covered set, and the turns folded beyond
    /// it under `budget`); without it, or rebased over another writer's
    /// appends, a session kept in a store is read afresh, recovering them
    /// from there as the session opened again does.
    async fn land(
        &mut self,
        stored: &TrimResult,
        view: Vec<StoredMessage>,
        within_reach: Option<(Covered, Vec<(Message, usize)>)>,
        version: Version,
        budget: &Budget,
    ) -> Result<bool, MemoryError> {
        let committed = match &mut self.keeping {
            Keeping::Own(own) => {
                let old = self.state.take().expect("loaded above");
                own.compacted(old.messages, stored.messages.len());
                version + 1
            }
            Keeping::Store(store) => match store.replace_view(&self.session, version, view).await {
                Ok(committed) => committed,
                Err(StoreError::Conflict { .. }) => {
                    tracing::warn!(
                        session = %self.session,
                        "another compaction of the session came first; reloading the session"
                    );
                    self.forget_state();
                    return Ok(false);
                }
                Err(other) => return Err(other.into()),
            },
        };
        match within_reach {
            Some((covered, older)) if committed == version + 1 => {
                self.state = Some(State::from_result(stored, committed, covered));
                self.folded.extend(&older, budget);
            }
            _ => {
                self.state = None;
                self.carried = None;
                self.folded = Folded::default();
            }
        }
        Ok(true)
    }

    /// Tokens of covered messages the session keeps within reach: the
    /// horizon ([`covered::horizon`]) of the least budget its strategy is
    /// given (the budget less the framing and, with the index, the room
    /// kept for it), so that the covered set a compaction leaves and the
    /// one the session opened again recovers from the store are the same.
    fn horizon(&self) -> usize {
        let budget = self.budget.for_messages(self.counter.framing());
        let least = match &self.index {
            Some(settings) => left_out::least_budget(&budget, settings),
            None => budget,
        };
        covered::horizon(&least)
    }

    /// The strategy's result for `history` (with room kept for the index),
    /// cut as a last resort to that room when it is over it
    /// ([`with_floor_cut`](Self::with_floor_cut)); [`indexed`](Self::indexed)
    /// then adds the index of what it leaves out.
    ///
    /// Cut when over the room, not only over the budget: a floor between
    /// the two (a long system prompt and task, and the newest observation,
    /// under a small budget) would otherwise leave the index a few tokens,
    /// and the context no handle to what it left out. Figure (chars
    /// counter, 2,000 tokens, reachable support recall): SWE-smith thrift
    /// 0.940 -> 0.976, compact,thrift 0.944 -> 0.964, window 0.940 ->
    /// 0.976; SWE-Gym window 0.957 -> 0.976; support recall in the context
    /// unchanged everywhere, and larger budgets and LoCoMo alike.
    async fn fit(&self, history: &History<'_>, budget: &Budget) -> Result<TrimResult, MemoryError> {
        let counter = &*self.counter;
        let index = self.index.as_ref();
        // `room`: the budget less the room kept for the index.
        let (result, room) =
            left_out::trim_reserving(&*self.strategy, history, budget, counter, index).await?;
        if self.floor_cut && !room.admits_tokens(result.tokens()) {
            // Cut to that room, so that the index keeps the room kept for
            // it.
            let mut cut = crate::floor_cut::cut_to_fit(result, &room, counter).await?;
            cut.fits = budget.admits_tokens(cut.tokens());
            Ok(cut)
        } else {
            Ok(result)
        }
    }

    /// `result` with the index of what it leaves out of `history`.
    async fn indexed(
        &self,
        history: &History<'_>,
        result: TrimResult,
        budget: &Budget,
    ) -> Result<TrimResult, MemoryError> {
        match &self.index {
            Some(settings) => {
                self.index_memo
                    .add_index(
                        history,
                        result,
                        budget,
                        &*self.counter,
                        settings,
                        &self.folded,
                    )
                    .await
            }
            None => Ok(result),
        }
    }

    /// Drops the state for a reload, keeping its covered set in case the
    /// reload finds the same summary.
    fn forget_state(&mut self) {
        if let Some(state) = self.state.take() {
            self.carried = Some(state.carried());
        }
    }

    async fn load(&mut self) -> Result<(), MemoryError> {
        if self.state.is_some() {
            return Ok(());
        }
        let carried = self.carried.take();
        let state = match &self.keeping {
            Keeping::Own(_) => State::default(),
            Keeping::Store(store) => {
                let snapshot = store.load(&self.session).await?;
                let summaries = summaries(snapshot.messages.iter().map(|s| &s.message));
                let (covered, unplaced) = match carried {
                    Some(c) if c.summaries == summaries => (c.covered, c.unplaced),
                    _ if !summaries.is_empty() => {
                        // A session loaded afresh: what its summary stands
                        // for is in the store's history.
                        let history = store.history(&self.session).await?;
                        let replaced = store.replaced(&self.session).await?;
                        let recovered = crate::recover::recover(
                            &snapshot.messages,
                            &history,
                            &replaced,
                            &*self.counter,
                            self.horizon(),
                            &self.budget.for_messages(self.counter.framing()),
                        )
                        .await?;
                        let unplaced = recovered.is_none();
                        let recovered = recovered.unwrap_or_default();
                        self.folded = recovered.folded;
                        (recovered.covered, unplaced)
                    }
                    _ => (Covered::default(), false),
                };
                let mut state = State::from_stored(snapshot.messages, snapshot.version);
                state.covered = covered;
                state.unplaced = unplaced;
                state
            }
        };
        self.state = Some(state);
        Ok(())
    }

    /// Records `message` with the count the caller already has for it (by
    /// the memory's own counter, as [`record`](Memory::record) would count
    /// it), so that it is not counted twice; `protected` as
    /// [`record_protected`](Memory::record_protected).
    ///
    /// # Errors
    ///
    /// Storage errors; the message is then not recorded.
    ///
    /// ```
    /// use memory_core::{Memory, Message, TokenCounter};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mut memory = memory_session::WindowMemory::new(100);
    /// let message = Message::user("hello there");
    /// let tokens = memory_core::CharTokenCounter.count_message(&message).await.unwrap();
    /// memory.record_counted(message, tokens, false).await.unwrap();
    /// assert_eq!(memory.fitted().await.unwrap().tokens, tokens);
    /// # });
    /// ```
    pub async fn record_counted(
        &mut self,
        message: Message,
        tokens: usize,
        protected: bool,
    ) -> Result<(), MemoryError> {
        self.load().await?;
        self.push(message, tokens, protected).await
    }

    /// [`record_counted`](Self::record_counted) for several messages at
    /// once, in one append to the store (each with its count and
    /// protection).
    ///
    /// # Errors
    ///
    /// Storage errors; nothing is recorded then.
    ///
    /// ```
    /// use memory_core::{Memory, Message, StoredMessage};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = std::sync::Arc::new(memory_core::InMemoryStore::new());
    /// let mut memory = memory_session::WindowMemory::new(100).with_store(store, "s1");
    /// memory.record_all_counted(vec![
    ///     StoredMessage::new(Message::system("rules"), 2, true),
    ///     StoredMessage::new(Message::user("hi"), 1, false),
    /// ]).await.unwrap();
    /// assert_eq!(memory.history().await.unwrap().len(), 2);
    /// # });
    /// ```
    pub async fn record_all_counted(
        &mut self,
        batch: Vec<StoredMessage>,
    ) -> Result<(), MemoryError> {
        self.load().await?;
        self.push_all(batch).await
    }

    async fn append(&mut self, message: Message, protected: bool) -> Result<(), MemoryError> {
        self.load().await?;
        let tokens = self.counter.count_message(&message).await?;
        self.push(message, tokens, protected).await
    }

    /// Appends a counted message to the loaded session.
    async fn push(
        &mut self,
        message: Message,
        tokens: usize,
        protected: bool,
    ) -> Result<(), MemoryError> {
        self.push_all(vec![StoredMessage::new(message, tokens, protected)])
            .await
    }

    /// Appends counted messages to the loaded session, in one store
    /// append.
    async fn push_all(&mut self, batch: Vec<StoredMessage>) -> Result<(), MemoryError> {
        let state = self.state.as_mut().expect("loaded above");
        let Keeping::Store(store) = &self.keeping else {
            for s in batch {
                state.version += 1;
                state.push(s.message, s.tokens, s.protected);
            }
            return Ok(());
        };
        let version = store.append(&self.session, batch.clone()).await?;
        if version == state.version + 1 {
            state.version = version;
            for s in batch {
                state.push(s.message, s.tokens, s.protected);
            }
        } else {
            // Another writer appended too: read the session afresh.
            self.forget_state();
            self.load().await?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Memory for WindowMemory {
    async fn record(&mut self, message: Message) -> Result<(), MemoryError> {
        self.append(message, false).await
    }

    async fn record_protected(&mut self, message: Message) -> Result<(), MemoryError> {
        self.append(message, true).await
    }

    async fn fitted(&mut self) -> Result<Context, MemoryError> {
        Ok(self.trimmed().await?.into())
    }

    async fn view(&self) -> Result<Vec<StoredMessage>, MemoryError> {
        match &self.keeping {
            Keeping::Own(_) => Ok(self.state.as_ref().map(State::stored).unwrap_or_default()),
            Keeping::Store(store) => Ok(store.load(&self.session).await?.messages),
        }
    }

    async fn history(&self) -> Result<Vec<Message>, MemoryError> {
        match &self.keeping {
            Keeping::Own(own) => Ok(self
                .state
                .as_ref()
                .map(|s| own.history(&s.messages))
                .unwrap_or_default()),
            Keeping::Store(store) => Ok(store.history(&self.session).await?),
        }
    }

    /// Answers from the session's whole history (the store's, when the
    /// memory keeps one), the cap measured with the memory's counter.
    async fn recall(&self, request: &RecallRequest) -> Result<Recalled, MemoryError> {
        let history = self.history().await?;
        memory_core::recall::resolve(&history, request, &*self.counter).await
    }
}
