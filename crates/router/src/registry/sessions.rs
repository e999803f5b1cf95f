//! Which client a caller's request goes through: the shared connection, a 2025-11-25 HTTP
//! session per set of caller capabilities ([`Registry::client_for`]), or, for a call on a legacy
//! stdio or WebSocket server that may ask questions, a connection of its own
//! ([`Registry::client_for_call`], see [`crate::dedicated`]).

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use serde_json::Value;
use switchboard_transport::http::{HttpConfig, HttpUpstream};
use switchboard_transport::{McpClient, Tap, Upstream};
use switchboard_wire::Era;

use super::Registry;
use super::entry::{ServerEntry, ServerState, SessionSlot};
use super::handshake::open_logging;
use crate::Error;
#[cfg(doc)]
use crate::RegistryConfig;
use crate::config::TransportSpec;
use crate::dedicated::{self, Pick, declares_questions};

/// Most per-capability 2025-11-25 sessions held per server.
pub const MAX_CAPABILITY_SESSIONS: usize = 16;

impl Registry {
    /// The client to use for a caller with capabilities `caps`. A 2025-11-25 server learns
    /// a client's capabilities once, at `initialize`, and decides what to ask (or refuse)
    /// from them; so for a legacy HTTP server the router holds one upstream session per
    /// distinct set of caller capabilities (at most [`MAX_CAPABILITY_SESSIONS`]; beyond that,
    /// and for every other server, the shared connection).
    pub async fn client_for(&self, name: &str, caps: &serde_json::Value) -> Option<Arc<McpClient>> {
        let entry = self.entry(name)?;
        let shared = entry.client()?;
        let TransportSpec::Http { url, headers } = &entry.spec.transport else { return Some(shared) };
        if shared.era() != Era::Legacy {
            return Some(shared);
        }
        let key = caps.to_string();
        // A session found disconnected is replaced once; a second one going down at once is
        // not worth another handshake on this call.
        for _ in 0..2 {
            let slot = {
                let mut sessions = entry.sessions.lock().unwrap_or_else(PoisonError::into_inner);
                match sessions.get(&key) {
                    Some(slot) => slot.clone(),
                    None if sessions.len() >= MAX_CAPABILITY_SESSIONS => return Some(shared),
                    None => sessions.entry(key.clone()).or_default().clone(),
                }
            };
            let session = slot
                .get_or_init(|| async {
                    let c = self.capability_session(&entry, url, headers, caps).await;
                    if c.is_none() {
                        // Failed: later callers try again instead of finding the failure.
                        forget_slot(&entry, &key, &slot);
                    }
                    c
                })
                .await;
            match session {
                Some(c) if c.upstream().status().connected => return Some(c.clone()),
                Some(_) => forget_slot(&entry, &key, &slot),
                None => return Some(shared),
            }
        }
        Some(shared)
    }

    /// The client for one call of a caller with capabilities `caps`: hold it for the call's
    /// duration and drop it at the end (the call is counted until then).
    ///
    /// For a legacy stdio or WebSocket server, a question the server asks during a call (an
    /// elicitation, sampling or roots request) names no call, so it can only reach the right
    /// caller when it is the only call in flight on its connection. Once the server has been
    /// seen asking, or when the caller declares it can answer, a call that would share the
    /// connection with another call in flight gets a connection of its own (see
    /// [`crate::dedicated`]). Every other server gets what [`Registry::client_for`] gives.
    ///
    /// # Errors
    /// [`Error::UnknownServer`]; [`Error::NotConnected`] (with the caller-facing reason);
    /// [`Error::Busy`] when the server's connections of their own are all busy and none freed
    /// up within [`RegistryConfig::call_connection_wait`].
    pub async fn client_for_call(&self, name: &str, caps: &Value) -> Result<Arc<McpClient>, Error> {
        let entry = self.entry(name).ok_or_else(|| Error::UnknownServer { name: name.to_owned() })?;
        let shared = entry.client().ok_or_else(|| {
            let (state, reason) = entry.state();
            Error::NotConnected { server: entry.spec.name.clone(), state: state.as_str(), reason }
        })?;
        // An open circuit breaker (see the `health` module): nothing is routed to it.
        if let (state @ ServerState::Unavailable, reason) = entry.state() {
            return Err(Error::NotConnected {
                server: entry.spec.name.clone(),
                state: state.as_str(),
                reason,
            });
        }
        let streamed = matches!(entry.spec.transport, TransportSpec::Stdio { .. } | TransportSpec::Ws { .. });
        if !streamed || shared.era() != Era::Legacy {
            return Ok(self.client_for(name, caps).await.unwrap_or(shared));
        }
        let pool = &entry.calls;
        let may_ask = pool.asked(&shared) || declares_questions(caps);
        let config = &self.inner.config;
        // `[servers.X] pool` overrides `[router] max_call_connections` for this server.
        let limit = entry.spec.limits.pool.unwrap_or(config.max_call_connections).max(1);
        let deadline = tokio::time::Instant::now() + config.call_connection_wait;
        loop {
            let freed = pool.freed();
            match pool.pick(&shared, may_ask, limit) {
                Pick::Ready(client, lease) => return Ok(Arc::new(client.leased(Box::new(lease)))),
                Pick::Open(opening) => {
                    let kind = entry.spec.transport.kind().as_str();
                    let tap = Tap::new(self.inner.events.frame_sink(), "upstream", &entry.spec.name, kind);
                    let options = self.inner.connect_options(&entry);
                    let cancel = entry.cancel.child_token();
                    return match dedicated::open(&entry.spec, tap, options, cancel.clone()).await {
                        Ok(client) => {
                            let (id, lease) = pool.insert(opening, client.clone());
                            let idle = config.call_connection_idle;
                            self.inner.tracker.spawn(dedicated::watch(
                                pool.clone(),
                                id,
                                client.clone(),
                                idle,
                                cancel,
                            ));
                            tracing::debug!(server = %entry.spec.name, id, "a call got an upstream connection of its own");
                            Ok(Arc::new(client.leased(Box::new(lease))))
                        }
                        Err(reason) => {
                            // Sharing beats failing: the call works, only a question it causes
                            // while another call runs cannot reach it.
                            tracing::warn!(server = %entry.spec.name, %reason, "could not open a connection of its own for a call; it shares the server's connection");
                            drop(opening);
                            Ok(Arc::new(shared.leased(Box::new(pool.share()))))
                        }
                    };
                }
                Pick::Full => {
                    if tokio::time::timeout_at(deadline, freed).await.is_err() {
                        return Err(Error::Busy {
                            server: entry.spec.name.clone(),
                            limit,
                            waited_ms: config.call_connection_wait.as_millis() as u64,
                        });
                    }
                }
            }
        }
    }

    /// Connections of their own `name`'s calls hold now (see [`Registry::client_for_call`]).
    pub fn call_connections(&self, name: &str) -> usize {
        self.entry(name).map_or(0, |e| e.calls.connections())
    }

    /// Opens a 2025-11-25 HTTP session that declares `caps` (see [`Registry::client_for`]).
    async fn capability_session(
        &self,
        entry: &ServerEntry,
        url: &str,
        headers: &BTreeMap<String, String>,
        caps: &Value,
    ) -> Option<Arc<McpClient>> {
        let mut cfg = HttpConfig::new(url.to_owned());
        cfg.headers = headers.clone();
        entry.spec.limits.apply_http(&mut cfg);
        let tap = Tap::new(self.inner.events.frame_sink(), "upstream", &entry.spec.name, "http");
        let up = HttpUpstream::new(cfg, tap, entry.cancel.child_token()).ok()?;
        let mut options = self.inner.connect_options(entry);
        options.client_capabilities = caps.clone();
        options.era_hint = Some(Era::Legacy);
        match McpClient::connect(up as Arc<dyn Upstream>, options).await {
            Ok(c) if c.era() == Era::Legacy => {
                let c = Arc::new(c);
                open_logging(&c).await;
                Some(c)
            }
            Ok(_) | Err(_) => None,
        }
    }

    /// Forgets the extra 2025-11-25 session [`Registry::client_for`] holds on `name` for
    /// `caps` (the server ended it: HTTP 404), so the next `client_for` opens a new one.
    pub async fn forget_session(&self, name: &str, caps: &serde_json::Value) {
        if let Some(entry) = self.entry(name) {
            entry.sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(&caps.to_string());
        }
    }
}

/// Removes `slot` from `entry`'s sessions if it is still the one stored under `key`.
fn forget_slot(entry: &ServerEntry, key: &str, slot: &Arc<SessionSlot>) {
    let mut sessions = entry.sessions.lock().unwrap_or_else(PoisonError::into_inner);
    if sessions.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
        sessions.remove(key);
    }
}
