//! [`AppState`]: what every handler of the server shares.

use crate::sessions::Sessions;
use crate::{Metrics, ServeConfig};

/// What every handler shares.
pub(crate) struct AppState {
    /// What the server runs with.
    pub(crate) config: ServeConfig,
    /// Every session of the server.
    pub(crate) sessions: Sessions,
    /// The client that calls the upstream.
    pub(crate) http: reqwest::Client,
    /// What `GET /metrics` shows.
    pub(crate) metrics: Metrics,
    /// Each principal's request rate.
    pub(crate) rate: crate::limits::RateLimiter,
}
