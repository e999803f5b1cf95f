//! One registered server: its definition, its live connection, its state with both
//! explanations (caller-facing reason, operator detail), its last catalog and the outcome of
//! its last listing; and the state changes, which log, publish and persist.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use switchboard_transport::{McpClient, Upstream};
use switchboard_wire::Era;
use tokio::sync::{Notify, OnceCell};
use tokio_util::sync::CancellationToken;

use super::Inner;
#[cfg(doc)]
use super::Registry;
use crate::catalog::Catalog;
use crate::config::ServerSpec;
use crate::dedicated::CallConnections;
use crate::events::{Event, now_ms};

pub use crate::state::ServerState;

pub(super) struct StateCell {
    pub(super) state: ServerState,
    /// Caller-facing.
    pub(super) reason: String,
    /// Operator-facing (may hold stderr).
    pub(super) detail: Option<String>,
    pub(super) since_ms: i64,
}

/// One registered server and its live connection.
pub struct ServerEntry {
    /// Its definition.
    pub spec: ServerSpec,
    /// Its stable id.
    pub id: String,
    pub(super) state: RwLock<StateCell>,
    pub(super) client: RwLock<Option<Arc<McpClient>>>,
    pub(super) upstream: RwLock<Option<Arc<dyn Upstream>>>,
    pub(super) catalog: RwLock<Arc<Catalog>>,
    pub(super) era: RwLock<Option<Era>>,
    pub(super) cancel: CancellationToken,
    pub(super) refresh_now: Notify,
    /// Asks the supervisor for a health probe now (a forwarded call failed).
    pub(super) probe_now: Notify,
    /// Serialises listings (periodic, `list_changed`, manual, on demand): one in flight.
    pub(super) listing: tokio::sync::Mutex<()>,
    /// The outcome of the last completed listing.
    pub(super) listed: Mutex<Listed>,
    /// Extra 2025-11-25 HTTP sessions, one per set of client capabilities (see
    /// [`Registry::client_for`]). The lock is held only to find or insert a slot, never
    /// across a handshake: concurrent callers with the same capabilities share the slot's
    /// one handshake, callers with other capabilities do not wait for it.
    pub(super) sessions: Mutex<HashMap<String, Arc<SessionSlot>>>,
    /// Calls in flight on a legacy stdio or WebSocket server, and the connections of their own
    /// its questioning calls get (see [`Registry::client_for_call`]).
    pub(super) calls: Arc<CallConnections>,
    /// Calls in flight, latency, status reports, draining (what the scheduler scores).
    pub(super) load: Arc<super::Load>,
    /// Whether it is held back until confirmed (self-registration).
    pub(super) hold: Mutex<super::hold::Hold>,
}

/// The outcome of a server's last completed listing.
#[derive(Debug, Clone, Default)]
pub(super) struct Listed {
    /// Bumped by every completed listing, successful or not: a caller that waited for a
    /// listing in flight sees it changed and takes that listing's outcome.
    pub(super) attempts: u64,
    /// When the catalog was last listed successfully (tokio time).
    pub(super) at: Option<tokio::time::Instant>,
    /// Why the last listing failed, if it did.
    pub(super) failure: Option<String>,
}

/// One per-capability session: empty while its handshake runs, then the client (or `None`
/// when the handshake failed, so callers fall back to the shared connection).
pub(super) type SessionSlot = OnceCell<Option<Arc<McpClient>>>;

pub(super) fn read<T: Clone>(l: &RwLock<T>) -> T {
    l.read().unwrap_or_else(PoisonError::into_inner).clone()
}

pub(super) fn write<T>(l: &RwLock<T>, v: T) {
    *l.write().unwrap_or_else(PoisonError::into_inner) = v;
}

impl ServerEntry {
    /// Current state and its caller-facing reason (no stderr; see [`ServerView::reason`](super::ServerView::reason)).
    pub fn state(&self) -> (ServerState, String) {
        let s = self.state.read().unwrap_or_else(PoisonError::into_inner);
        (s.state, s.reason.clone())
    }

    /// Operator detail of the current state (see [`ServerView::detail`](super::ServerView::detail)): never send it to a
    /// caller.
    pub fn detail(&self) -> Option<String> {
        self.state.read().unwrap_or_else(PoisonError::into_inner).detail.clone()
    }

    /// The handshaken client, when connected.
    pub fn client(&self) -> Option<Arc<McpClient>> {
        read(&self.client)
    }

    /// The last catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        read(&self.catalog)
    }

    /// Its live load.
    pub fn load(&self) -> &Arc<super::Load> {
        &self.load
    }

    pub(super) fn listed(&self) -> Listed {
        self.listed.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Inner {
    pub(super) async fn set_state(&self, entry: &ServerEntry, to: ServerState, reason: impl Into<String>) {
        self.set_state_detailed(entry, to, reason.into(), None).await;
    }

    /// Changes a server's state. `reason` is caller-facing; `detail` (with stderr) is the
    /// operator's: the log line, the event and the stored state carry it.
    pub(super) async fn set_state_detailed(
        &self,
        entry: &ServerEntry,
        to: ServerState,
        reason: String,
        detail: Option<String>,
    ) {
        let (to, reason) = entry.hold_back(to, reason);
        let from = {
            let mut s = entry.state.write().unwrap_or_else(PoisonError::into_inner);
            if s.state == to && s.reason == reason && s.detail == detail {
                return;
            }
            let from = s.state;
            s.state = to;
            s.reason = reason.clone();
            s.detail = detail.clone();
            s.since_ms = now_ms();
            from
        };
        let operator = detail.unwrap_or(reason);
        if to == ServerState::Ready {
            // What replica detection compares, remembered now: a replica that goes down before
            // any call was routed still belongs to its group.
            if let Some(hs) = entry.client().map(|c| c.handshake()) {
                let sig = crate::schedule::groups::signature(
                    &hs.server_info,
                    Some(&hs.protocol_version),
                    &entry.catalog(),
                );
                self.scheduler.remember_signature(&entry.spec.name, sig);
            }
        }
        self.version.fetch_add(1, std::sync::atomic::Ordering::Release);
        tracing::info!(server = %entry.spec.name, from = from.as_str(), to = to.as_str(), reason = %operator, "server state");
        self.events.publish(Event::ServerState {
            server_id: entry.id.clone(),
            server: entry.spec.name.clone(),
            from: from.as_str().to_owned(),
            to: to.as_str().to_owned(),
            reason: operator.clone(),
            at_ms: now_ms(),
        });
        if let Some(store) = &self.store
            && let Err(e) = store.set_server_state(&entry.id, to.as_str(), Some(&operator), now_ms()).await
        {
            tracing::warn!(error = %e, "could not persist server state");
        }
        self.changed.notify_waiters();
    }
}
