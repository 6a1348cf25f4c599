//! [`Limits`]: what one principal may ask of the server: requests a
//! minute, sessions, messages in one request.
//!
//! The request rate is a token bucket per principal, in this process (a
//! replica counts its own requests); the sessions are counted in the
//! principal's registry in the store, so every replica agrees.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::{ApiError, Principal};

/// The limits each principal is held to; `None`: no limit.
///
/// ```
/// let limits = memory_serve::Limits { requests_per_minute: Some(60), ..Default::default() };
/// assert!(limits.sessions.is_none());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Requests a principal may send in a minute (bursts up to as many).
    pub requests_per_minute: Option<u32>,
    /// Sessions a principal may hold at once.
    pub sessions: Option<usize>,
    /// Messages one request may send.
    pub messages_per_request: Option<usize>,
}

/// Principals whose buckets are kept before full, idle ones are dropped:
/// a bucket is a few bytes, and a server without keys makes a principal
/// of every credential a client invents.
const KEPT_BUCKETS: usize = 10_000;

/// The request rate of every principal seen.
#[derive(Default)]
pub(crate) struct RateLimiter {
    buckets: Mutex<HashMap<Principal, Bucket>>,
}

/// What a principal may still send, as of `at`.
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    /// Takes one request of `principal`'s allowance, or says how long to
    /// wait for one.
    ///
    /// # Errors
    ///
    /// 429 with `Retry-After` over `per_minute` requests a minute.
    pub(crate) fn take(&self, principal: &Principal, per_minute: u32) -> Result<(), ApiError> {
        let capacity = f64::from(per_minute.max(1));
        let rate = capacity / 60.0;
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= KEPT_BUCKETS {
            let full =
                |b: &Bucket| b.tokens + now.duration_since(b.at).as_secs_f64() * rate >= capacity;
            buckets.retain(|_, b| !full(b));
        }
        let bucket = buckets.entry(principal.clone()).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        bucket.tokens =
            (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let wait = Duration::from_secs_f64((1.0 - bucket.tokens) / rate);
        Err(ApiError::limited(
            format!(
                "over {per_minute} requests a minute for this key (--rate-limit); try again shortly"
            ),
            Some(wait.as_secs().max(1)),
        ))
    }
}

/// 429 for a principal at its limit of sessions.
pub(crate) fn too_many_sessions(limit: usize, ttl: Option<Duration>) -> ApiError {
    ApiError::limited(
        format!(
            "this key holds {limit} sessions, its limit (--max-sessions): delete one (DELETE /v1/memory/sessions/ID){}",
            if ttl.is_some() {
                ", or wait for one to expire"
            } else {
                ""
            }
        ),
        ttl.map(|t| t.as_secs().max(1)),
    )
}

/// 413 for a request over the messages one may send: waiting would not
/// help, so not a 429 a client retries.
pub(crate) fn too_many_messages(sent: usize, limit: usize) -> ApiError {
    ApiError::too_large_by(format!(
        "the request sends {sent} messages, over this server's {limit} (--max-messages)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_gets_its_burst_then_waits_and_others_do_not() {
        let limiter = RateLimiter::default();
        let a = Principal::of_credential(&[0; 32], Some("a"));
        let b = Principal::of_credential(&[0; 32], Some("b"));
        for _ in 0..3 {
            limiter.take(&a, 3).unwrap();
        }
        let e = limiter.take(&a, 3).unwrap_err();
        assert_eq!(e.status(), 429);
        assert!(e.retry_after().unwrap() >= 1);
        limiter.take(&b, 3).unwrap();
    }
}
