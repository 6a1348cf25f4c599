//! [`Sessions`]: finds the session a request belongs to, and records into
//! it.
//!
//! A request that sends its whole history continues the stored session
//! whose history is a prefix of it: the [`Chain`] link each stored
//! session's history ends at is in the [`Ledger`], so the server looks up
//! the links of the request from its newest message back, one lookup per
//! message it has not seen, and appends only those. A request that shares a prefix
//! with a session that has since gone on differently (an edit, a retry, a
//! fork) starts a new session with its own history. A request that names
//! its session sends only the new messages.
//!
//! Everything is found in the request's principal's namespace of the
//! store (a [`Scope`]): the prefix index, names and states of one
//! principal never reach another's requests.
//!
//! Each session this process holds is one [`OpenSession`] behind an async
//! lock, so its calls run one at a time; the store is the truth, and an
//! open session whose state another replica moved is read afresh. A
//! request never waits long on another's call: a history whose session is
//! busy past [`ADMIT_WAIT`] starts a fork, and inspection and recall read
//! the store without the lock.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use memory_core::{
    Memory as _, Message, Store, StoreError, StoredMessage, TokenCounter, TrimResult, TrimStrategy,
    Version,
};
use memory_session::{SessionPool, WindowMemory};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::carrying::Carrying;
use crate::ledger::{Ledger, RESERVED_PREFIX, SessionState, state_written};
use crate::protocol::originals::{Original, Originals};
use crate::registry;
use crate::{Admission, ApiError, CallReport, Chain, Principal, ServeConfig};

/// The longest a request waits for the session its history continues
/// while another call holds it. A call that has answered has committed
/// its reply and state before its client saw the end of the reply, and
/// lets go of the session right after (microseconds; a loaded machine's
/// scheduling delay at worst); a call that holds it longer is running,
/// stalled or abandoned, and the request starts a fork holding the same
/// history rather than wait for it.
pub(crate) const ADMIT_WAIT: Duration = Duration::from_millis(250);

/// The longest session id a client may name: room for any UUID, path or
/// composite name, while a row's key stays small.
pub(crate) const MAX_SESSION_ID: usize = 256;

/// One principal's part of the store: its sessions, prefix index and
/// states.
#[derive(Clone)]
pub(crate) struct Scope {
    tenant: String,
    store: Arc<dyn Store>,
    ledger: Ledger,
}

impl Scope {
    /// The tenant whose part of the store it is.
    pub(crate) fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Its part of the store.
    pub(crate) fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }
}

/// A session as stored, read without waiting for a running call.
pub(crate) struct Stored {
    /// Messages in the history.
    pub(crate) length: usize,
    /// Tokens of the whole history.
    pub(crate) history_tokens: usize,
    /// The stored view.
    pub(crate) view: Vec<StoredMessage>,
    /// The report of the last call.
    pub(crate) last_call: Option<CallReport>,
}

/// One session as this process holds it: its entry in the server's map
/// of open sessions.
pub(crate) struct OpenSession {
    /// The session id.
    pub(crate) id: String,
    /// Its principal's part of the store.
    scope: Scope,
    /// The handle its memory writes through: a reply's append carries
    /// the prefix-index entry and the state with it.
    carrying: Arc<Carrying>,
    /// Whether the reply's commit wrote the state of the call running.
    state_written: bool,
    strategy: Arc<dyn TrimStrategy>,
    memory: Option<WindowMemory>,
    /// Messages in the history.
    pub(crate) length: usize,
    /// The history's last link.
    link: Chain,
    /// Tokens of the whole history.
    pub(crate) history_tokens: usize,
    /// Whether no assistant has spoken yet: a system message then is
    /// part of the session's instructions and protected, as a leading
    /// system prompt is (Claude Code sends its environment as a system
    /// turn after the task).
    opening: bool,
    /// The version of the stored state this process last read or wrote.
    state_version: Option<Version>,
    /// Whether it holds the session as the store has it.
    loaded: bool,
    /// The keys of the messages the last call sent
    /// ([`message_key`](memory_core::identity::message_key)): what the next
    /// call's report measures the prefix it keeps against, kept for less
    /// than a copy of the context (at the budget of 8,000 tokens, copying
    /// it was a sixth of the server's own time per call).
    pub(crate) last_context: Vec<u64>,
    /// The report of the last call.
    pub(crate) last_call: Option<CallReport>,
}

/// A request's session, locked, and how it was found.
pub(crate) struct Admitted {
    pub(crate) session: OwnedMutexGuard<OpenSession>,
    pub(crate) admission: Admission,
    pub(crate) new_messages: usize,
}

/// Whether a history goes on in a session.
enum Going {
    /// It does.
    On(Admitted),
    /// The session was erased.
    Gone,
    /// The session holds another history, or is busy.
    Apart,
}

/// Every session of the server.
pub(crate) struct Sessions {
    store: Arc<dyn Store>,
    counter: Arc<dyn TokenCounter>,
    config: ServeConfig,
    open: SessionPool<OpenSession>,
    /// The server's secret, read from the store once.
    secret: tokio::sync::OnceCell<[u8; 32]>,
    /// The principals this process noted in the registry.
    principals: std::sync::Mutex<HashSet<String>>,
}

impl Sessions {
    pub(crate) fn new(config: &ServeConfig) -> Self {
        Self {
            store: config.store.clone(),
            counter: config.counter.clone(),
            config: config.clone(),
            open: SessionPool::new(config.max_loaded_sessions),
            secret: tokio::sync::OnceCell::new(),
            principals: std::sync::Mutex::new(HashSet::new()),
        }
    }

    /// The server's secret (made by the first replica that needs it).
    pub(crate) async fn secret(&self) -> Result<[u8; 32], ApiError> {
        let ledger = Ledger::new(self.store.clone());
        Ok(*self
            .secret
            .get_or_try_init(|| async move { ledger.secret().await })
            .await?)
    }

    /// `principal`'s part of the store.
    pub(crate) fn scope(&self, principal: &Principal) -> Scope {
        self.scope_of(principal.tenant())
    }

    /// The part of the store of the principal whose tenant is `tenant`.
    fn scope_of(&self, tenant: &str) -> Scope {
        let store = self.store.for_tenant(tenant);
        Scope {
            tenant: tenant.to_string(),
            ledger: Ledger::new(store.clone()),
            store,
        }
    }

    /// The key of session `id` of `scope` among the open sessions.
    fn pool_key(scope: &Scope, id: &str) -> String {
        // A control character joins the two: no tenant or id holds one.
        format!("{}\u{0}{id}", scope.tenant)
    }

    /// The open session of `id` in `scope`, opened (not loaded) when this
    /// process has none.
    fn open_session(&self, scope: &Scope, id: &str) -> Arc<AsyncMutex<OpenSession>> {
        let key = Self::pool_key(scope, id);
        self.open.open(&key, || OpenSession {
            id: id.to_string(),
            scope: scope.clone(),
            carrying: Arc::new(Carrying::new(scope.store.clone())),
            state_written: false,
            strategy: (self.config.pipeline)(),
            memory: None,
            length: 0,
            link: Chain::START,
            history_tokens: 0,
            opening: true,
            state_version: None,
            loaded: false,
            last_context: Vec::new(),
            last_call: None,
        })
    }

    fn memory(&self, session: &OpenSession) -> WindowMemory {
        WindowMemory::new(self.config.budget.for_call(None))
            .with_strategy(session.strategy.clone())
            .with_token_counter(self.counter.clone())
            .with_store(session.carrying.clone(), &session.id)
            .with_task(self.config.task_floor)
    }

    /// The session of `scope` a whole history continues, or a new one;
    /// the history's messages it had not seen are recorded. `hint` names
    /// the session the history is known to come from (a compaction's or a
    /// stored response's), tried first.
    pub(crate) async fn admit_history(
        &self,
        scope: &Scope,
        messages: &[Message],
        group: Option<&str>,
        hint: Option<&str>,
    ) -> Result<Admitted, ApiError> {
        let links = Chain::START.links(messages);
        if let Some(id) = hint
            && let Going::On(admitted) = self.go_on(scope, id, messages, &links, 0).await?
        {
            return Ok(admitted);
        }
        let Some((id, length)) = self.longest_stored_prefix(scope, messages, &links).await? else {
            return self.create(scope, messages, Admission::New, group).await;
        };
        let admission = match self.go_on(scope, &id, messages, &links, length).await? {
            Going::On(admitted) => return Ok(admitted),
            Going::Gone => Admission::New,
            Going::Apart => Admission::Forked,
        };
        self.create(scope, messages, admission, group).await
    }

    /// Session `id` of `scope` with the messages of `messages` it had not
    /// seen, when its whole history (at least `length` messages) is a
    /// prefix of them.
    async fn go_on(
        &self,
        scope: &Scope,
        id: &str,
        messages: &[Message],
        links: &[Chain],
        length: usize,
    ) -> Result<Going, ApiError> {
        let lock = self.open_session(scope, id);
        let Ok(mut session) = tokio::time::timeout(ADMIT_WAIT, lock.lock_owned()).await else {
            tracing::info!(session = %id, "the session is busy with another call; the request starts a fork");
            return Ok(Going::Apart);
        };
        self.sync(&mut session).await?;
        let at = session.length;
        if at == 0 {
            // Erased since it was noted: as if it never was.
            drop(session);
            self.open.close_idle(&Self::pool_key(scope, id));
            return Ok(Going::Gone);
        }
        // The session may have gone on since `length` (and been repaired
        // past it); it continues when its whole history is still a prefix.
        if at >= length && at <= messages.len() && links[at - 1] == session.link {
            self.append(&mut session, &messages[at..], false).await?;
            return Ok(Going::On(Admitted {
                session,
                admission: Admission::Continued,
                new_messages: messages.len() - at,
            }));
        }
        Ok(Going::Apart)
    }

    /// The session `id` of `scope`, with `messages` appended: those after
    /// its history when the request repeats it, all of them otherwise.
    pub(crate) async fn admit_named(
        &self,
        scope: &Scope,
        id: &str,
        messages: &[Message],
        originals: &Originals,
    ) -> Result<Admitted, ApiError> {
        check_id(id)?;
        let mut session = self.open_session(scope, id).lock_owned().await;
        self.sync(&mut session).await?;
        let at = session.length;
        let repeats = at > 0
            && messages.len() >= at
            && Chain::START.links(&messages[..at]).last() == Some(&session.link);
        let mut riders = Vec::new();
        if at == 0 && !messages.is_empty() {
            // A name used for the first time: a session made.
            self.may_make_session(scope).await?;
            riders.push(registry::register(id, None));
        }
        let from = if repeats {
            at
        } else if self.holds(&mut session, messages).await? {
            // A retry of a history the session already holds (its reply
            // recorded since): nothing is new.
            messages.len()
        } else {
            0
        };
        let new = &messages[from..];
        // The new messages' wire forms, for the calls that will not send
        // them again.
        riders.extend(crate::kept::write(id, originals.kept_for(new)));
        session.carrying.carry(riders);
        self.append(&mut session, new, false).await?;
        Ok(Admitted {
            session,
            admission: Admission::Named,
            new_messages: new.len(),
        })
    }

    /// Whether the session's history begins with `messages` (all of them,
    /// and no more than it holds): a history sent again. One message alone
    /// is taken as new, never as a retry: a user may say again what the
    /// session began with.
    async fn holds(
        &self,
        session: &mut OpenSession,
        messages: &[Message],
    ) -> Result<bool, ApiError> {
        if messages.len() < 2 || messages.len() > session.length {
            return Ok(false);
        }
        let history = self.memory_of(session).history().await?;
        let held = Chain::START
            .links(&history[..messages.len()])
            .last()
            .copied();
        Ok(held == Chain::START.links(messages).last().copied())
    }

    /// The session `id` of `scope` as stored, read without its lock (a
    /// running call does not hold it up); `None` when it has no history.
    pub(crate) async fn inspect(
        &self,
        scope: &Scope,
        id: &str,
    ) -> Result<Option<Stored>, ApiError> {
        check_id(id)?;
        let state = scope.ledger.session_state(id).await?;
        let view = scope.store.load(id).await?.messages;
        let stored = match state {
            Some((state, _)) if state.length > 0 => Stored {
                length: state.length,
                history_tokens: state.history_tokens,
                view,
                last_call: state.last_call,
            },
            // A process that stopped before it wrote the state.
            _ => {
                let history = scope.store.history(id).await?;
                if history.is_empty() {
                    return Ok(None);
                }
                let mut tokens = 0;
                for m in &history {
                    tokens += self.counter.count_message(m).await?;
                }
                Stored {
                    length: history.len(),
                    history_tokens: tokens,
                    view,
                    last_call: None,
                }
            }
        };
        Ok(Some(stored))
    }

    /// Checks that `scope`'s principal may make one more session, and
    /// notes it among the principals that hold sessions.
    ///
    /// # Errors
    ///
    /// 429 at its limit of sessions.
    async fn may_make_session(&self, scope: &Scope) -> Result<(), ApiError> {
        if let Some(limit) = self.config.limits.sessions
            && registry::sessions(&*scope.store).await?.len() >= limit
        {
            return Err(crate::limits::too_many_sessions(
                limit,
                self.config.session_ttl,
            ));
        }
        self.note_principal(scope).await
    }

    /// Notes once per process that `scope`'s principal holds sessions
    /// (what expiry walks).
    async fn note_principal(&self, scope: &Scope) -> Result<(), ApiError> {
        if self.config.session_ttl.is_none() {
            return Ok(());
        }
        let known = self
            .principals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&scope.tenant);
        if !known {
            registry::note_principal(&*self.store, &scope.tenant).await?;
            self.principals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(scope.tenant.clone());
        }
        Ok(())
    }

    /// Erases the sessions of every principal untouched for `ttl`; how
    /// many. A session a call holds is left for the next sweep.
    pub(crate) async fn sweep(&self, ttl: Duration) -> Result<usize, ApiError> {
        let now = registry::now();
        let mut erased = 0;
        for tenant in registry::principals(&*self.store).await? {
            let scope = self.scope_of(&tenant);
            let mut gone = HashSet::new();
            for entry in registry::sessions(&*scope.store).await? {
                let touched = match scope.ledger.session_state(&entry.session).await? {
                    Some((state, _)) if state.updated > 0 => state.updated,
                    _ => entry.created,
                };
                if now.saturating_sub(touched) < ttl.as_secs() {
                    continue;
                }
                if self.delete(&scope, &entry.session).await.is_ok() {
                    gone.insert(entry.session);
                }
            }
            erased += gone.len();
        }
        Ok(erased)
    }

    /// Erases session `id` of `scope` (its history, views and state) and
    /// closes it in this process; false when there was none.
    ///
    /// # Errors
    ///
    /// 409 while a call holds the session past [`ADMIT_WAIT`]; store
    /// failures.
    pub(crate) async fn delete(&self, scope: &Scope, id: &str) -> Result<bool, ApiError> {
        check_id(id)?;
        let key = Self::pool_key(scope, id);
        let lock = self.open_session(scope, id);
        let Ok(mut session) = tokio::time::timeout(ADMIT_WAIT, lock.lock_owned()).await else {
            return Err(ApiError::conflict(format!(
                "session `{id}` has a call running; delete it once the call is done"
            )));
        };
        let existed = scope.store.load(id).await?.version > 0;
        scope.store.delete(id).await?;
        scope.ledger.forget(id).await?;
        registry::remove(&*scope.store, &HashSet::from([id.to_string()])).await?;
        // What this process held of it goes too.
        session.loaded = false;
        session.memory = None;
        drop(session);
        self.open.close(&key);
        Ok(existed)
    }

    /// The originals named session `id` of `scope` kept from earlier calls.
    pub(crate) async fn kept_originals(
        &self,
        scope: &Scope,
        id: &str,
    ) -> Result<Vec<([u8; 32], Original)>, ApiError> {
        Ok(crate::kept::load(&*scope.store, id).await?)
    }

    /// The first `length` messages session `id` of `scope` recorded, for a
    /// request that goes on from them (a compaction's, a stored
    /// response's): the request is told the session, and given their
    /// originals when its upstream speaks its protocol. `None` when the
    /// session holds fewer.
    pub(crate) async fn resume(
        &self,
        scope: &Scope,
        id: &str,
        length: usize,
        request: &mut crate::protocol::Decoded,
    ) -> Result<Option<Vec<Message>>, ApiError> {
        let mut history = self.stored_history(scope, id).await?.unwrap_or_default();
        if history.len() < length {
            return Ok(None);
        }
        history.truncate(length);
        request.asks.session = Some(id.to_string());
        if request.front == self.config.upstream_api {
            request.stored = self.kept_originals(scope, id).await?;
        }
        Ok(Some(history))
    }

    /// The sessions of `scope` a client grouped under `group`, as stored,
    /// oldest first.
    pub(crate) async fn group(
        &self,
        scope: &Scope,
        group: &str,
    ) -> Result<Vec<(registry::Entry, Stored)>, ApiError> {
        let mut found = Vec::new();
        for entry in registry::sessions(&*scope.store).await? {
            if entry.group.as_deref() != Some(group) {
                continue;
            }
            if let Some(stored) = self.inspect(scope, &entry.session).await? {
                found.push((entry, stored));
            }
        }
        Ok(found)
    }

    /// Everything session `id` of `scope` recorded, read without its
    /// lock; `None` when it has no history.
    pub(crate) async fn stored_history(
        &self,
        scope: &Scope,
        id: &str,
    ) -> Result<Option<Vec<Message>>, ApiError> {
        check_id(id)?;
        let history = scope.store.history(id).await?;
        Ok((!history.is_empty()).then_some(history))
    }

    /// The tokens of the context a request sending `messages` would be
    /// fitted to, found without recording anything: the session the
    /// history continues, as stored, with the messages it has not seen,
    /// fitted by a fresh pipeline into `budget` (the whole history when no
    /// session holds a prefix of it).
    pub(crate) async fn count(
        &self,
        scope: &Scope,
        messages: &[Message],
        budget: usize,
    ) -> Result<usize, ApiError> {
        let links = Chain::START.links(messages);
        let (mut batch, from) = match self.longest_stored_prefix(scope, messages, &links).await? {
            Some((id, length)) => (scope.store.load(&id).await?.messages, length),
            None => (Vec::new(), 0),
        };
        let mut leading = !batch.iter().any(|s| s.message.is_assistant());
        for message in &messages[from..] {
            let count = self.counter.count_message(message).await?;
            batch.push(StoredMessage::new(
                message.clone(),
                count,
                leading && message.is_system(),
            ));
            leading &= !message.is_assistant();
        }
        let mut memory = WindowMemory::new(budget)
            .with_strategy((self.config.pipeline)())
            .with_token_counter(self.counter.clone())
            .with_task(self.config.task_floor);
        memory.record_all_counted(batch).await?;
        Ok(memory.trimmed().await?.tokens())
    }

    /// Records the reply of the call the session's lock was taken for.
    pub(crate) async fn record_reply(
        &self,
        session: &mut OpenSession,
        reply: Message,
    ) -> Result<(), ApiError> {
        self.append(session, std::slice::from_ref(&reply), true)
            .await
    }

    /// Fits the session into `budget` tokens.
    pub(crate) async fn fit(
        &self,
        session: &mut OpenSession,
        budget: usize,
    ) -> Result<TrimResult, ApiError> {
        let memory = self.memory_of(session);
        memory.set_max_tokens(budget);
        Ok(memory.trimmed().await?)
    }

    /// Tokens and messages of the stored view (after [`fit`](Self::fit)).
    pub(crate) fn view_size(&self, session: &mut OpenSession) -> (usize, usize) {
        let memory = self.memory_of(session);
        (memory.total_tokens(), memory.len())
    }

    /// Everything the session recorded (what recalls are answered from).
    pub(crate) async fn history(
        &self,
        session: &mut OpenSession,
    ) -> Result<Vec<Message>, ApiError> {
        Ok(self.memory_of(session).history().await?)
    }

    /// Writes the session's state, with the last call's report, unless
    /// the reply's commit wrote it.
    pub(crate) async fn finish(&self, session: &mut OpenSession) {
        if std::mem::take(&mut session.state_written) {
            return;
        }
        let state = SessionState {
            length: session.length,
            link: session.link.to_hex(),
            history_tokens: session.history_tokens,
            last_call: session.last_call.clone(),
            updated: registry::now(),
        };
        match session
            .scope
            .ledger
            .set_session_state(&session.id, &state, session.state_version)
            .await
        {
            Ok(version) => session.state_version = Some(version),
            Err(e) => state_refused(session, &e),
        }
    }

    fn memory_of<'s>(&self, session: &'s mut OpenSession) -> &'s mut WindowMemory {
        if session.memory.is_none() {
            session.memory = Some(self.memory(session));
        }
        session.memory.as_mut().expect("set above")
    }

    /// The session and length noted for the longest prefix of the history
    /// (the prefix a stored session's history ends at). Only a reply's
    /// link is ever noted, so only prefixes that end at an assistant's
    /// message are looked up: one lookup a call in a tool loop.
    async fn longest_stored_prefix(
        &self,
        scope: &Scope,
        messages: &[Message],
        links: &[Chain],
    ) -> Result<Option<(String, usize)>, ApiError> {
        let ends_at_a_reply = |length: &usize| messages[*length - 1].is_assistant();
        for length in (1..=links.len()).rev().filter(ends_at_a_reply) {
            if let Some((id, at)) = scope.ledger.find(&links[length - 1]).await?
                && at == length
            {
                return Ok(Some((id, at)));
            }
        }
        Ok(None)
    }

    /// A new session of `scope` holding `messages`. Its history is noted
    /// in the prefix index only with its first reply: a session whose
    /// first call failed holds nothing another request can fall into.
    async fn create(
        &self,
        scope: &Scope,
        messages: &[Message],
        admission: Admission,
        group: Option<&str>,
    ) -> Result<Admitted, ApiError> {
        self.may_make_session(scope).await?;
        let id = format!("s-{}", uuid::Uuid::new_v4().simple());
        let mut session = self.open_session(scope, &id).lock_owned().await;
        session.loaded = true;
        // Registered in the same commit as its first messages.
        session.carrying.carry(vec![registry::register(&id, group)]);
        self.append(&mut session, messages, false).await?;
        Ok(Admitted {
            session,
            admission,
            new_messages: messages.len(),
        })
    }

    /// Brings the open session to the session as the store has it: read
    /// afresh when not loaded or when its stored state moved (another
    /// replica); a history longer than its state says (a call that stopped
    /// before its reply) is counted again.
    async fn sync(&self, session: &mut OpenSession) -> Result<(), ApiError> {
        let stored = session.scope.ledger.session_state(&session.id).await?;
        let version = stored.as_ref().map(|(_, v)| *v);
        if session.loaded && version == session.state_version {
            return Ok(());
        }
        let history = session.scope.store.history(&session.id).await?;
        let link = Chain::START
            .links(&history)
            .last()
            .copied()
            .unwrap_or(Chain::START);
        let (tokens, last_call) = match &stored {
            Some((h, _)) if h.length == history.len() => (h.history_tokens, h.last_call.clone()),
            // A call that stopped before its reply (and its state): its
            // messages are counted; nothing is noted, so no request falls
            // into a call whose reply never came.
            other => {
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
        session.memory = None;
        session.length = history.len();
        session.link = link;
        session.opening = !history.iter().any(Message::is_assistant);
        session.history_tokens = tokens;
        session.state_version = version;
        session.loaded = true;
        session.last_context.clear();
        session.last_call = last_call;
        Ok(())
    }

    /// Records `messages` through the session's memory, in one append.
    /// A reply (`reply`) is noted in the prefix index, and the session's
    /// state written, in the same commit ([`Carrying`]); a request's
    /// messages are not noted (its next request finds the session by the
    /// link noted with the reply, and goes on from the stored length).
    /// Nothing of the session moves unless the append succeeds.
    async fn append(
        &self,
        session: &mut OpenSession,
        messages: &[Message],
        reply: bool,
    ) -> Result<(), ApiError> {
        if messages.is_empty() {
            return Ok(());
        }
        let (mut link, mut tokens, mut leading) =
            (session.link, session.history_tokens, session.opening);
        let mut batch = Vec::with_capacity(messages.len());
        for message in messages {
            let protected = leading && message.is_system();
            let count = self.counter.count_message(message).await?;
            leading &= !message.is_assistant();
            tokens += count;
            link = link.then(message);
            batch.push(StoredMessage::new(message.clone(), count, protected));
        }
        let length = session.length + messages.len();
        if reply {
            let state = SessionState {
                length,
                link: link.to_hex(),
                history_tokens: tokens,
                last_call: session.last_call.clone(),
                updated: registry::now(),
            };
            session.carrying.carry(vec![
                Ledger::note_write(&link, &session.id, length),
                Ledger::state_write(&session.id, &state, session.state_version),
            ]);
        }
        let recorded = self.memory_of(session).record_all_counted(batch).await;
        let answers = session.carrying.answers();
        recorded?;
        (session.link, session.history_tokens) = (link, tokens);
        (session.opening, session.length) = (leading, length);
        if reply {
            self.carried(session, answers).await?;
        }
        Ok(())
    }

    /// Takes the answers of what a reply's append carried: the note, then
    /// the state. Writes the note alone when the append carried nothing.
    async fn carried(
        &self,
        session: &mut OpenSession,
        answers: Vec<Result<Version, StoreError>>,
    ) -> Result<(), ApiError> {
        let mut answers = answers.into_iter();
        let Some(note) = answers.next() else {
            let ledger = &session.scope.ledger;
            return Ok(ledger
                .note(&session.link, &session.id, session.length)
                .await?);
        };
        note?;
        let id = session.id.clone();
        match answers
            .next()
            .map(|a| state_written(&id, session.state_version, a))
        {
            Some(Ok(version)) => {
                session.state_version = Some(version);
                session.state_written = true;
            }
            Some(Err(e)) => state_refused(session, &e),
            None => {}
        }
        Ok(())
    }
}

/// A state write that failed: the session is read afresh next time.
fn state_refused(session: &mut OpenSession, e: &StoreError) {
    if matches!(e, StoreError::Conflict { .. }) {
        tracing::warn!(session = %session.id, "another replica wrote the session's head at the same time; reading the session afresh next time");
    } else {
        tracing::warn!(session = %session.id, error = %e, "cannot write the session's head");
    }
    session.loaded = false;
}

/// A session id a client may name: what the store accepts, outside the
/// server's own names.
fn check_id(id: &str) -> Result<(), ApiError> {
    memory_core::store::check_session(id)
        .map_err(|e| ApiError::bad_request(e.to_string(), None))?;
    if id.len() > MAX_SESSION_ID {
        return Err(ApiError::bad_request(
            format!("a session id holds at most {MAX_SESSION_ID} bytes"),
            None,
        ));
    }
    if id.starts_with(RESERVED_PREFIX) {
        return Err(ApiError::bad_request(
            format!("session ids starting with `{RESERVED_PREFIX}` are the server's own"),
            None,
        ));
    }
    Ok(())
}

/// How often expiry looks for sessions past their time: a quarter of the
/// time to live, so a session goes at most a quarter late, and at least
/// once a minute.
fn sweep_every(ttl: Duration) -> Duration {
    (ttl / 4).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// Erases sessions untouched for `ttl`, for as long as the server runs.
pub(crate) async fn expire(state: Arc<crate::state::AppState>, ttl: Duration) {
    loop {
        tokio::time::sleep(sweep_every(ttl)).await;
        match state.sessions.sweep(ttl).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(sessions = n, "erased sessions past --session-ttl"),
            Err(e) => tracing::warn!(error = %e, "cannot expire sessions; trying again later"),
        }
    }
}
