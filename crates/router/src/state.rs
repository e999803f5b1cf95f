//! [`ServerState`]: the health of a server as the router sees it (a leaf: the registry sets it,
//! the scheduler reads it).

use serde::Serialize;

/// Health of a server, as the router sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerState {
    /// Registered, not (yet) connected.
    Pending,
    /// Handshaken and listed; routable.
    Ready,
    /// Was ready; now restarting, reconnecting or failing refreshes.
    Degraded,
    /// Repeated failures or a crash loop; not routable until it recovers.
    Unavailable,
}

impl ServerState {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Pending => "pending",
            ServerState::Ready => "ready",
            ServerState::Degraded => "degraded",
            ServerState::Unavailable => "unavailable",
        }
    }
}
