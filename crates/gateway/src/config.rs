//! The gateway's settings: how the endpoint answers ([`EndpointConfig`]) and what the edge adds
//! around it ([`EdgeConfig`]).
//!
//! A leaf module on purpose: the endpoint, the edge and every transport read these types, and
//! none of them may be needed to name them (that is what made `edge → endpoint` and
//! `downstream → edge → endpoint` circles before).

use std::sync::Arc;
use std::time::Duration;

use switchboard_router::Registry;
use switchboard_router::federation::FederationConfig;

use crate::bridge::Bridge;
use crate::notify::{Notifier, Subscriptions};
use crate::session::{InFlight, Revocations, SessionKey};
use crate::sessions::SessionTable;
use crate::traces::TraceSink;
use crate::view::ViewCache;

/// How long a 2025-11-25 client has, by default, to answer a server → client request.
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// Default largest request body (and WebSocket/stdio message).
pub const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// `ttlMs` of a list answered while a configured server is still pending or degraded: its
/// tools are missing, so the client should ask again soon (it also gets `list_changed` when
/// the server becomes ready).
pub const PENDING_TTL_MS: u64 = 1_000;

/// Default deadline of a forwarded request.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Default largest single JSON answer passed on; a larger one is replaced by an error naming
/// the limit.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// How long a list request waits for servers whose cached list is older than their `ttlMs`
/// to be re-listed; past it the list is answered from what is cached.
pub const DEFAULT_STALE_LIST_WAIT: Duration = Duration::from_secs(2);

/// Items per list page unless configured otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// How the endpoint behaves.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Largest request body in bytes; larger ones get 413.
    pub body_limit: usize,
    /// Origins accepted besides localhost, 127.0.0.1 and [::1] (exact `scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// Items per list page.
    pub page_size: usize,
    /// `ttlMs` of list and discover results.
    pub ttl_ms: u64,
    /// Federation of tool and prompt names.
    pub federation: FederationConfig,
    /// Key sealing 2025-11-25 session ids; instances sharing it share sessions.
    pub session_key: SessionKey,
    /// Longest life of a 2025-11-25 session id.
    pub session_max_age: Duration,
    /// Session ids ended (`DELETE`) on this instance.
    pub revocations: Revocations,
    /// Session requests in flight on this instance (for `notifications/cancelled`).
    pub in_flight: InFlight,
    /// Parked calls, expected answers and session log levels on this instance.
    pub bridge: Bridge,
    /// Change notifications for listening clients.
    pub notifier: Notifier,
    /// Resource subscriptions of sessions and listen streams on this instance.
    pub subscriptions: Subscriptions,
    /// Downstream sessions and callers seen by this instance, with their upstream bindings.
    pub sessions: SessionTable,
    /// How long a legacy client may take to answer a server → client request.
    pub answer_timeout: Duration,
    /// The federation of the ready servers, rebuilt when the registry changes.
    pub views: ViewCache,
    /// How long the first requests wait for configured servers still handshaking (the
    /// registry's handshake timeout), so a client listing at once sees their tools.
    pub pending_wait: Duration,
    /// That first wait, shared by the endpoint's requests.
    pub startup: StartupWait,
    /// Longest wait of a list request for stale lists to be re-listed (see
    /// [`DEFAULT_STALE_LIST_WAIT`]).
    pub stale_list_wait: Duration,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            body_limit: DEFAULT_BODY_LIMIT,
            allowed_origins: Vec::new(),
            page_size: DEFAULT_PAGE_SIZE,
            ttl_ms: 60_000,
            federation: FederationConfig::default(),
            session_key: SessionKey::random(),
            session_max_age: Duration::from_secs(24 * 3600),
            revocations: Revocations::default(),
            in_flight: InFlight::default(),
            bridge: Bridge::default(),
            notifier: Notifier::default(),
            subscriptions: Subscriptions::default(),
            sessions: SessionTable::default(),
            answer_timeout: DEFAULT_ANSWER_TIMEOUT,
            views: ViewCache::default(),
            pending_wait: switchboard_router::config::DEFAULT_HANDSHAKE_TIMEOUT,
            startup: StartupWait::default(),
            stale_list_wait: DEFAULT_STALE_LIST_WAIT,
        }
    }
}

/// The endpoint's one wait for the servers configured at start-up: the first requests that
/// need the catalogs wait until no server is pending (bounded); later ones never wait.
#[derive(Clone, Default)]
pub struct StartupWait(Arc<tokio::sync::OnceCell<()>>);

impl std::fmt::Debug for StartupWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StartupWait").field(&self.0.initialized()).finish()
    }
}

impl StartupWait {
    /// Waits (once per endpoint, at most `bound`) until no configured server is pending.
    pub async fn wait(&self, registry: &Registry, bound: Duration) {
        self.0
            .get_or_init(|| async {
                registry.wait_settled(bound).await;
            })
            .await;
    }
}

/// What the edge adds around every request: a deadline for forwarded calls and traces.
#[derive(Debug, Clone)]
pub struct EdgeConfig {
    /// Deadline of a forwarded request.
    pub call_timeout: Duration,
    /// Where trace records go; `None` records nothing.
    pub traces: Option<TraceSink>,
    /// Largest single JSON answer passed on (see [`MAX_ANSWER_BYTES`]).
    pub answer_limit: usize,
}

impl Default for EdgeConfig {
    fn default() -> Self {
        EdgeConfig { call_timeout: DEFAULT_CALL_TIMEOUT, traces: None, answer_limit: MAX_ANSWER_BYTES }
    }
}
