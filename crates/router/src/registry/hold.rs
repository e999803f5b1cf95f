//! Servers held back until confirmed: a self-registered server is connected, handshaken and
//! listed like any other, but it is not routable (`pending`, "registered, waiting for
//! /confirm") until whoever registered it confirms. The supervisor needs no special case: a
//! held server's "ready" is recorded here instead of becoming its state, and
//! [`Registry::confirm`] applies it.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::entry::{ServerEntry, ServerState};
use super::{Inner, Registry};
use crate::Error;
use crate::config::ServerSpec;

/// The reason of a held server that connected and listed its catalog.
pub const HELD_REASON: &str = "registered, waiting for /confirm";

/// The reason of a server that was just added and is connecting.
pub(super) const CONNECTING_REASON: &str = "registered; connecting";

/// Whether a server is held back, and the reason it would be ready with.
#[derive(Debug, Default)]
pub(super) struct Hold {
    pub(super) held: bool,
    /// Set while the supervisor considers the server ready.
    pub(super) ready: Option<String>,
}

/// How the first connection of a held server went (see [`Registry::wait_held`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldOutcome {
    /// Handshaken and listed; waiting for [`Registry::confirm`].
    Connected,
    /// The connection or handshake failed; the operator's detail may hold more (never send
    /// it to a caller).
    Failed {
        /// The caller-facing reason.
        reason: String,
    },
    /// Nothing decisive happened within the wait.
    TimedOut,
    /// The server was removed meanwhile.
    Gone,
}

impl ServerEntry {
    /// What a state change becomes for a held server: "ready" is kept aside and the server
    /// stays `pending`.
    pub(super) fn hold_back(&self, to: ServerState, reason: String) -> (ServerState, String) {
        let mut hold = self.hold.lock().unwrap_or_else(PoisonError::into_inner);
        if !hold.held {
            return (to, reason);
        }
        if to == ServerState::Ready {
            hold.ready = Some(reason);
            (ServerState::Pending, HELD_REASON.to_owned())
        } else {
            hold.ready = None;
            (to, reason)
        }
    }

    /// Whether the server is held back until confirmed.
    pub fn held(&self) -> bool {
        self.hold.lock().unwrap_or_else(PoisonError::into_inner).held
    }

    fn held_ready(&self) -> bool {
        self.hold.lock().unwrap_or_else(PoisonError::into_inner).ready.is_some()
    }
}

impl Registry {
    /// Like [`Registry::add`], but the server is held back (`pending`, not routable) once
    /// connected, until [`Registry::confirm`].
    ///
    /// # Errors
    /// As [`Registry::add`].
    pub async fn add_held(&self, spec: ServerSpec) -> Result<String, Error> {
        self.add_with(spec, true).await
    }

    /// Waits (at most `timeout`) for a held server's first connection: connected and listed,
    /// or failed (the first failed attempt decides: a registration answers at once rather
    /// than after the reconnect backoff).
    pub async fn wait_held(&self, name: &str, timeout: Duration) -> HeldOutcome {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.inner.changed.notified();
            let Some(entry) = self.entry(name) else { return HeldOutcome::Gone };
            if entry.held_ready() {
                return HeldOutcome::Connected;
            }
            let (state, reason) = entry.state();
            if state != ServerState::Pending || reason != CONNECTING_REASON {
                return HeldOutcome::Failed { reason };
            }
            if tokio::time::Instant::now() >= deadline {
                return HeldOutcome::TimedOut;
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }

    /// Releases a held server: if it is connected it becomes `ready` (routable) now, else it
    /// becomes ready when it connects. Returns its state, or `None` when no such server.
    pub async fn confirm(&self, name: &str) -> Option<ServerState> {
        let entry = self.entry(name)?;
        let ready = {
            let mut hold = entry.hold.lock().unwrap_or_else(PoisonError::into_inner);
            hold.held = false;
            hold.ready.take()
        };
        if let Some(reason) = ready {
            self.inner.set_state(&entry, ServerState::Ready, reason).await;
        }
        Some(entry.state().0)
    }
}

impl Inner {
    /// Marks a new entry held (before its supervisor starts).
    pub(super) fn hold(entry: &Arc<ServerEntry>) {
        entry.hold.lock().unwrap_or_else(PoisonError::into_inner).held = true;
    }
}
