//! [`Sessions`]: finds the session a request belongs to, and records into
//! it.
//!
//! A request that sends its whole history continues the stored session
//! whose history is a prefix of it: the [`Chain`] link of each stored
//! session's head is in the [`Ledger`], so the server looks up the links
//! of the request from its newest message back, one lookup per message it
//! has not seen, and appends only those. A request that shares a prefix
//! with a session that has since gone on differently (an edit, a retry, a
//! fork) starts a new session with its own history. A request that names
//! its session sends only the new messages.
//!
//! Each session is one [`Slot`] behind an async lock, so its calls run one
//! at a time; the store is the truth, and a slot whose head another
//! replica moved is read afresh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use memory_core::{
    Memory as _, Message, Store, StoreError, StoredMessage, TokenCounter, TrimResult, TrimStrategy,
    Version,
};
use memory_session::WindowMemory;
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::ledger::{Head, Ledger, RESERVED_PREFIX};
use crate::{Admission, ApiError, CallReport, Chain, ServeConfig};

/// One session as this process holds it.
pub(crate) struct Slot {
    /// The session id.
    pub(crate) id: String,
    strategy: Arc<dyn TrimStrategy>,
    memory: Option<WindowMemory>,
    /// Messages in the history.
    pub(crate) length: usize,
    /// The history's last link.
    link: Chain,
    /// Tokens of the whole history.
    pub(crate) history_tokens: usize,
    /// Whether every message so far is a system message (the next system
    /// message is then protected, as a leading system prompt is).
    leading_system: bool,
    /// The version of the head this slot last read or wrote.
    head_version: Option<Version>,
    /// Whether the slot holds the session as the store has it.
    loaded: bool,
    /// The context the last call sent, and its counts.
    pub(crate) last_context: Vec<Message>,
    pub(crate) last_counts: Vec<usize>,
    /// The report of the last call.
    pub(crate) last_call: Option<CallReport>,
}

/// A request's session, locked, and how it was found.
pub(crate) struct Admitted {
    pub(crate) slot: OwnedMutexGuard<Slot>,
    pub(crate) admission: Admission,
    pub(crate) new_messages: usize,
}

/// The loaded slots, least recently used first out.
#[derive(Default)]
struct Slots {
    map: HashMap<String, (Arc<AsyncMutex<Slot>>, u64)>,
    tick: u64,
}

/// Every session of the server.
pub(crate) struct Sessions {
    store: Arc<dyn Store>,
    ledger: Ledger,
    counter: Arc<dyn TokenCounter>,
    config: ServeConfig,
    slots: Mutex<Slots>,
}

impl Sessions {
    pub(crate) fn new(config: &ServeConfig) -> Self {
        Self {
            store: config.store.clone(),
            ledger: Ledger::new(config.store.clone()),
            counter: config.counter.clone(),
            config: config.clone(),
            slots: Mutex::new(Slots::default()),
        }
    }

    /// The slot of `id`, made (unloaded) when this process has none.
    fn slot(&self, id: &str) -> Arc<AsyncMutex<Slot>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.tick += 1;
        let tick = slots.tick;
        if let Some((slot, used)) = slots.map.get_mut(id) {
            *used = tick;
            return slot.clone();
        }
        if slots.map.len() >= self.config.max_loaded_sessions {
            evict(&mut slots.map);
        }
        let slot = Arc::new(AsyncMutex::new(Slot {
            id: id.to_string(),
            strategy: (self.config.pipeline)(),
            memory: None,
            length: 0,
            link: Chain::START,
            history_tokens: 0,
            leading_system: true,
            head_version: None,
            loaded: false,
            last_context: Vec::new(),
            last_counts: Vec::new(),
            last_call: None,
        }));
        slots.map.insert(id.to_string(), (slot.clone(), tick));
        slot
    }

    fn memory(&self, id: &str, strategy: Arc<dyn TrimStrategy>) -> WindowMemory {
        WindowMemory::new(self.config.budget.for_call(None))
            .with_strategy(strategy)
            .with_token_counter(self.counter.clone())
            .with_store(self.store.clone(), id)
            .with_task(self.config.task_floor)
    }

    /// The session a whole history continues, or a new one; the history's
    /// messages it had not seen are recorded.
    pub(crate) async fn admit_history(&self, messages: &[Message]) -> Result<Admitted, ApiError> {
        let links = Chain::START.links(messages);
        let Some((id, length)) = self.longest_stored_prefix(&links).await? else {
            return self.create(messages, Admission::New).await;
        };
        let mut slot = self.slot(&id).lock_owned().await;
        self.sync(&mut slot).await?;
        let at = slot.length;
        // The session may have gone on since `length` (and been repaired
        // past it); it continues when its whole history is still a prefix.
        if at >= length && at <= messages.len() && at > 0 && links[at - 1] == slot.link {
            self.append(&mut slot, &messages[at..], false).await?;
            return Ok(Admitted {
                slot,
                admission: Admission::Continued,
                new_messages: messages.len() - at,
            });
        }
        drop(slot);
        self.create(messages, Admission::Forked).await
    }

    /// The session `id`, with `messages` appended: those after its
    /// history when the request repeats it, all of them otherwise.
    pub(crate) async fn admit_named(
        &self,
        id: &str,
        messages: &[Message],
    ) -> Result<Admitted, ApiError> {
        check_id(id)?;
        let mut slot = self.slot(id).lock_owned().await;
        self.sync(&mut slot).await?;
        let at = slot.length;
        let repeats = at > 0
            && messages.len() >= at
            && Chain::START.links(&messages[..at]).last() == Some(&slot.link);
        let new = if repeats { &messages[at..] } else { messages };
        // A session's first messages are noted, so that a retry finds it.
        self.append(&mut slot, new, at == 0).await?;
        Ok(Admitted {
            slot,
            admission: Admission::Named,
            new_messages: new.len(),
        })
    }

    /// The session `id` as stored, locked; `None` when it has no history.
    pub(crate) async fn inspect(
        &self,
        id: &str,
    ) -> Result<Option<OwnedMutexGuard<Slot>>, ApiError> {
        check_id(id)?;
        let mut slot = self.slot(id).lock_owned().await;
        self.sync(&mut slot).await?;
        if slot.length > 0 {
            return Ok(Some(slot));
        }
        // No such session: hold no slot (nor pipeline) for a name asked
        // about.
        drop(slot);
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if slots
            .map
            .get(id)
            .is_some_and(|(s, _)| Arc::strong_count(s) == 1)
        {
            slots.map.remove(id);
        }
        Ok(None)
    }

    /// Records the reply of the call the slot's lock was taken for.
    pub(crate) async fn record_reply(
        &self,
        slot: &mut Slot,
        reply: Message,
    ) -> Result<(), ApiError> {
        self.append(slot, std::slice::from_ref(&reply), true).await
    }

    /// Fits the session into `budget` tokens.
    pub(crate) async fn fit(&self, slot: &mut Slot, budget: usize) -> Result<TrimResult, ApiError> {
        let memory = self.memory_of(slot);
        memory.set_max_tokens(budget);
        Ok(memory.trimmed().await?)
    }

    /// Tokens and messages of the stored view (after [`fit`](Self::fit)).
    pub(crate) fn view_size(&self, slot: &mut Slot) -> (usize, usize) {
        let memory = self.memory_of(slot);
        (memory.total_tokens(), memory.len())
    }

    /// Everything the session recorded (what recalls are answered from).
    pub(crate) async fn history(&self, slot: &mut Slot) -> Result<Vec<Message>, ApiError> {
        Ok(self.memory_of(slot).history().await?)
    }

    /// The stored view, as the next call starts from it.
    pub(crate) async fn memory_view(
        &self,
        slot: &mut Slot,
    ) -> Result<Vec<StoredMessage>, ApiError> {
        Ok(self.memory_of(slot).view().await?)
    }

    /// Writes the session's head, with the last call's report.
    pub(crate) async fn finish(&self, slot: &mut Slot) {
        let head = Head {
            length: slot.length,
            link: slot.link.to_hex(),
            history_tokens: slot.history_tokens,
            last_call: slot.last_call.clone(),
        };
        match self
            .ledger
            .set_head(&slot.id, &head, slot.head_version)
            .await
        {
            Ok(version) => slot.head_version = Some(version),
            Err(StoreError::Conflict { .. }) => {
                tracing::warn!(session = %slot.id, "another replica wrote the session's head at the same time; reading the session afresh next time");
                slot.loaded = false;
            }
            Err(e) => {
                tracing::warn!(session = %slot.id, error = %e, "cannot write the session's head");
                slot.loaded = false;
            }
        }
    }

    fn memory_of<'s>(&self, slot: &'s mut Slot) -> &'s mut WindowMemory {
        if slot.memory.is_none() {
            slot.memory = Some(self.memory(&slot.id, slot.strategy.clone()));
        }
        slot.memory.as_mut().expect("set above")
    }

    /// The stored session and length whose head the longest prefix of the
    /// history ends at.
    async fn longest_stored_prefix(
        &self,
        links: &[Chain],
    ) -> Result<Option<(String, usize)>, ApiError> {
        for length in (1..=links.len()).rev() {
            if let Some((id, at)) = self.ledger.find(&links[length - 1]).await?
                && at == length
            {
                return Ok(Some((id, at)));
            }
        }
        Ok(None)
    }

    /// A new session holding `messages`.
    async fn create(
        &self,
        messages: &[Message],
        admission: Admission,
    ) -> Result<Admitted, ApiError> {
        let id = format!("s-{}", uuid::Uuid::new_v4().simple());
        let mut slot = self.slot(&id).lock_owned().await;
        slot.loaded = true;
        self.append(&mut slot, messages, true).await?;
        Ok(Admitted {
            slot,
            admission,
            new_messages: messages.len(),
        })
    }

    /// Brings the slot to the session as the store has it: read afresh
    /// when not loaded or when its head moved (another replica); a history
    /// longer than its head (a process that stopped between the two
    /// writes) gets its head's link noted.
    async fn sync(&self, slot: &mut Slot) -> Result<(), ApiError> {
        let head = self.ledger.head(&slot.id).await?;
        let version = head.as_ref().map(|(_, v)| *v);
        if slot.loaded && version == slot.head_version {
            return Ok(());
        }
        let history = self.store.history(&slot.id).await?;
        let link = Chain::START
            .links(&history)
            .last()
            .copied()
            .unwrap_or(Chain::START);
        let (tokens, last_call) = match &head {
            Some((h, _)) if h.length == history.len() => (h.history_tokens, h.last_call.clone()),
            other => {
                if !history.is_empty() {
                    self.ledger.note(&link, &slot.id, history.len()).await?;
                }
                let mut tokens = 0;
                for m in &history {
                    tokens += self.counter.count_message(m).await?;
                }
                (
                    tokens,
                    other.as_ref().and_then(|(h, _)| h.last_call.clone()),
                )
            }
        };
        slot.memory = None;
        slot.length = history.len();
        slot.link = link;
        slot.leading_system = history.iter().all(Message::is_system);
        slot.history_tokens = tokens;
        slot.head_version = version;
        slot.loaded = true;
        slot.last_context.clear();
        slot.last_counts.clear();
        slot.last_call = last_call;
        Ok(())
    }

    /// Records `messages` through the session's memory, in one append.
    /// The new head's link is noted only when `note` says: a continuing
    /// call's is not (its next request finds the session by the head noted
    /// with the previous reply, and goes on from the stored length); a new
    /// session's and a reply's are.
    async fn append(
        &self,
        slot: &mut Slot,
        messages: &[Message],
        note: bool,
    ) -> Result<(), ApiError> {
        if messages.is_empty() {
            return Ok(());
        }
        let mut batch = Vec::with_capacity(messages.len());
        for message in messages {
            let protected = slot.leading_system && message.is_system();
            let tokens = self.counter.count_message(message).await?;
            slot.leading_system &= message.is_system();
            slot.history_tokens += tokens;
            slot.link = slot.link.then(message);
            batch.push(StoredMessage::new(message.clone(), tokens, protected));
        }
        self.memory_of(slot).record_all_counted(batch).await?;
        slot.length += messages.len();
        if note {
            self.ledger.note(&slot.link, &slot.id, slot.length).await?;
        }
        Ok(())
    }
}

/// Drops the least recently used slot that no call holds.
fn evict(map: &mut HashMap<String, (Arc<AsyncMutex<Slot>>, u64)>) {
    let idle = map
        .iter()
        .filter(|(_, (slot, _))| Arc::strong_count(slot) == 1)
        .min_by_key(|(_, (_, used))| *used)
        .map(|(id, _)| id.clone());
    if let Some(id) = idle {
        map.remove(&id);
    }
}

/// A session id a client may name: what the store accepts, outside the
/// server's own names.
fn check_id(id: &str) -> Result<(), ApiError> {
    memory_core::store::check_session(id)
        .map_err(|e| ApiError::bad_request(e.to_string(), None))?;
    if id.starts_with(RESERVED_PREFIX) {
        return Err(ApiError::bad_request(
            format!("session ids starting with `{RESERVED_PREFIX}` are the server's own"),
            None,
        ));
    }
    Ok(())
}
