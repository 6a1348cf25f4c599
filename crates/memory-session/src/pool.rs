//! [`SessionPool`]: the open sessions of a process, by id, bounded.

use std::sync::{Arc, Mutex};

use lru::LruCache;
use tokio::sync::Mutex as AsyncMutex;

/// How many idle sessions a [`SessionPool`] keeps open by default. Why: an
/// open session holds its view and counts in memory (a long agent session
/// is a few megabytes), so a server with thousands of clients keeps the
/// recent ones open and reads the others back from the store when they
/// return. Figure: none recorded; the server's `--max-loaded-sessions`
/// and the Rig adapter's builder set their own.
pub const DEFAULT_OPEN_SESSIONS: usize = 4_096;

/// The open sessions of a process (a server's, an agent framework's), each
/// behind an async lock so that its calls run one at a time, at most
/// `capacity` of them kept: opening one more closes the least recently
/// used session that no call holds. A session every call holds is never
/// closed under it; the pool then grows past its capacity until one is
/// let go. A closed session is opened again from its store.
///
/// ```
/// use memory_session::SessionPool;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let pool = SessionPool::new(2);
/// *pool.open("a", || 0).lock().await += 1;
/// let held = pool.open("b", || 0);
/// pool.open("a", || 0); // "a" is now the most recently used
/// pool.open("c", || 0); // "b" is held: nothing idle to close but "a"
/// assert_eq!(pool.len(), 2);
/// assert!(pool.get("b").is_some() && pool.get("a").is_none());
/// drop(held);
/// assert_eq!(*pool.open("c", || 7).lock().await, 0); // "c" was open already
/// # });
/// ```
pub struct SessionPool<S> {
    open: Mutex<LruCache<String, Arc<AsyncMutex<S>>>>,
    capacity: usize,
}

impl<S> SessionPool<S> {
    /// A pool that keeps at most `capacity` idle sessions open (at least
    /// one).
    ///
    /// ```
    /// assert_eq!(memory_session::SessionPool::<()>::new(0).capacity(), 1);
    /// ```
    pub fn new(capacity: usize) -> Self {
        Self {
            open: Mutex::new(LruCache::unbounded()),
            capacity: capacity.max(1),
        }
    }

    /// The session `id`, made by `make` when it is not open, now the most
    /// recently used; opening it may close the least recently used idle
    /// one.
    ///
    /// ```
    /// let pool = memory_session::SessionPool::new(8);
    /// let first = pool.open("s", || vec![1]);
    /// let again = pool.open("s", || vec![2]);
    /// assert!(std::sync::Arc::ptr_eq(&first, &again));
    /// ```
    pub fn open(&self, id: &str, make: impl FnOnce() -> S) -> Arc<AsyncMutex<S>> {
        let mut open = self.lock();
        if let Some(session) = open.get(id) {
            return session.clone();
        }
        if open.len() >= self.capacity {
            close_one_idle(&mut open);
        }
        let session = Arc::new(AsyncMutex::new(make()));
        open.put(id.to_string(), session.clone());
        session
    }

    /// The session `id` when it is open, now the most recently used.
    ///
    /// ```
    /// let pool = memory_session::SessionPool::new(8);
    /// assert!(pool.get("s").is_none());
    /// pool.open("s", || ());
    /// assert!(pool.get("s").is_some());
    /// ```
    pub fn get(&self, id: &str) -> Option<Arc<AsyncMutex<S>>> {
        self.lock().get(id).cloned()
    }

    /// Closes the session `id` (a call holding it keeps it until done).
    ///
    /// ```
    /// let pool = memory_session::SessionPool::new(8);
    /// pool.open("s", || ());
    /// assert!(pool.close("s").is_some() && pool.is_empty());
    /// ```
    pub fn close(&self, id: &str) -> Option<Arc<AsyncMutex<S>>> {
        self.lock().pop(id)
    }

    /// Closes the session `id` when no call holds it; whether it did.
    ///
    /// ```
    /// let pool = memory_session::SessionPool::new(8);
    /// let held = pool.open("s", || ());
    /// assert!(!pool.close_idle("s"));
    /// drop(held);
    /// assert!(pool.close_idle("s") && pool.is_empty());
    /// ```
    pub fn close_idle(&self, id: &str) -> bool {
        let mut open = self.lock();
        let idle = open.peek(id).is_some_and(|s| Arc::strong_count(s) == 1);
        if idle {
            open.pop(id);
        }
        idle
    }

    /// How many sessions are open.
    ///
    /// ```
    /// assert_eq!(memory_session::SessionPool::<()>::new(8).len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session is open.
    ///
    /// ```
    /// assert!(memory_session::SessionPool::<()>::new(8).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many idle sessions the pool keeps open.
    ///
    /// ```
    /// assert_eq!(memory_session::SessionPool::<()>::new(8).capacity(), 8);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Arc<AsyncMutex<S>>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S> Default for SessionPool<S> {
    /// A pool of [`DEFAULT_OPEN_SESSIONS`].
    ///
    /// ```
    /// let pool: memory_session::SessionPool<()> = Default::default();
    /// assert_eq!(pool.capacity(), memory_session::DEFAULT_OPEN_SESSIONS);
    /// ```
    fn default() -> Self {
        Self::new(DEFAULT_OPEN_SESSIONS)
    }
}

impl<S> std::fmt::Debug for SessionPool<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionPool")
            .field("open", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

/// Closes the least recently used session that only the pool holds, if
/// any.
fn close_one_idle<S>(open: &mut LruCache<String, Arc<AsyncMutex<S>>>) {
    let idle = open
        .iter()
        .rev()
        .find(|(_, session)| Arc::strong_count(session) == 1)
        .map(|(id, _)| id.clone());
    if let Some(id) = idle {
        open.pop(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_idle_session_is_closed_first() {
        let pool = SessionPool::new(3);
        for id in ["a", "b", "c"] {
            pool.open(id, || id.to_string());
        }
        pool.get("a");
        pool.open("d", String::new);
        assert!(pool.get("b").is_none());
        for id in ["a", "c", "d"] {
            assert!(pool.get(id).is_some(), "{id}");
        }
    }

    #[test]
    fn held_sessions_are_never_closed_and_the_pool_grows_past_them() {
        let pool = SessionPool::new(2);
        let held: Vec<_> = ["a", "b"].iter().map(|id| pool.open(id, || ())).collect();
        pool.open("c", || ());
        assert_eq!(pool.len(), 3);
        drop(held);
        pool.open("d", || ());
        assert_eq!(pool.len(), 3, "one idle session closed for d");
        assert!(pool.get("a").is_none());
    }
}
