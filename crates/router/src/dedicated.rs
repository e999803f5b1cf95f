//! Connections of their own for calls whose server asks questions.
//!
//! A 2025-11-25 server on stdio or WebSocket asks its client things (elicitation, sampling,
//! roots) as requests on the one stream it shares with every caller; such a request names no
//! call, so it can only be attributed when exactly one call is in flight on that connection
//! (the transport does that). So once a server has been seen asking, or when the caller
//! declares it can answer such questions, a call that would share the connection with another
//! call in flight gets a connection of its own: another child process of the same command, or
//! another socket. Each server has at most [`crate::RegistryConfig::max_call_connections`]
//! of them; a call that finds them all busy waits (bounded) for one to free up, then fails with
//! [`crate::Error::Busy`]. A connection idle for
//! [`crate::RegistryConfig::call_connection_idle`] is closed, and so is one whose process exits.
//!
//! Every call is counted by a [`Lease`] the caller's client holds (see
//! [`McpClient::leased`]): dropping the client ends the call.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use switchboard_transport::stdio::{RestartPolicy, StdioConfig, StdioUpstream};
use switchboard_transport::ws::{WsConfig, WsUpstream};
use switchboard_transport::{ConnectOptions, McpClient, Tap, Upstream, UpstreamEvent};
use switchboard_wire::Era;
use tokio::sync::{Notify, broadcast};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerSpec, TransportSpec};

/// The calls in flight on one server's connections, and its extra connections.
#[derive(Default)]
pub(crate) struct CallConnections {
    state: Mutex<State>,
    /// Woken whenever a call ends or a connection goes away.
    freed: Notify,
    /// The server has asked a client something on one of its connections.
    asked: AtomicBool,
    next_id: AtomicU64,
}

#[derive(Default)]
struct State {
    /// Calls in flight on the shared connection.
    shared: usize,
    /// Connections of their own, busy or idle.
    dedicated: Vec<Dedicated>,
    /// Connections being opened (they count against the limit).
    opening: usize,
}

struct Dedicated {
    id: u64,
    client: Arc<McpClient>,
    busy: bool,
    idle_since: Instant,
}

/// What a call gets.
pub(crate) enum Pick {
    /// This client, counted by this lease.
    Ready(Arc<McpClient>, Lease),
    /// A new connection may be opened; the reservation counts it until then.
    Open(Opening),
    /// Every connection is busy and the limit is reached.
    Full,
}

/// One call in flight; its drop ends it.
pub(crate) struct Lease {
    pool: Arc<CallConnections>,
    /// `None` for the shared connection.
    dedicated: Option<u64>,
}

/// A connection being opened, counted against the limit until dropped.
pub(crate) struct Opening {
    pool: Arc<CallConnections>,
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `true` when `caps` (a caller's client capabilities) say it can answer a server's questions.
pub(crate) fn declares_questions(caps: &Value) -> bool {
    ["elicitation", "sampling", "roots"].iter().any(|k| caps.get(k).is_some_and(|v| !v.is_null()))
}

impl CallConnections {
    /// Whether the server has asked a client something on any of its connections; `shared`
    /// is asked too (the flag is kept once set).
    pub(crate) fn asked(&self, shared: &McpClient) -> bool {
        if !self.asked.load(Ordering::Relaxed) && shared.upstream().asked_client() {
            self.asked.store(true, Ordering::Relaxed);
        }
        self.asked.load(Ordering::Relaxed)
    }

    /// A woken-up signal for [`CallConnections::pick`] returning [`Pick::Full`]; take it before
    /// picking so a connection freed in between is not missed.
    pub(crate) fn freed(&self) -> tokio::sync::futures::Notified<'_> {
        self.freed.notified()
    }

    /// Chooses the connection of a call: the shared one when no other call is in flight there
    /// (or the call may share: `may_ask` false), else an idle connection of its own, else a new
    /// one while fewer than `limit` exist.
    pub(crate) fn pick(self: &Arc<Self>, shared: &Arc<McpClient>, may_ask: bool, limit: usize) -> Pick {
        let mut st = lock(&self.state);
        if st.shared == 0 || !may_ask {
            st.shared += 1;
            return Pick::Ready(shared.clone(), Lease { pool: self.clone(), dedicated: None });
        }
        if let Some(d) = st.dedicated.iter_mut().find(|d| !d.busy) {
            d.busy = true;
            return Pick::Ready(d.client.clone(), Lease { pool: self.clone(), dedicated: Some(d.id) });
        }
        if st.dedicated.len() + st.opening < limit {
            st.opening += 1;
            return Pick::Open(Opening { pool: self.clone() });
        }
        Pick::Full
    }

    /// Adds a connection opened for a call, busy with it.
    pub(crate) fn insert(self: &Arc<Self>, opening: Opening, client: Arc<McpClient>) -> (u64, Lease) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.state).dedicated.push(Dedicated { id, client, busy: true, idle_since: Instant::now() });
        drop(opening);
        (id, Lease { pool: self.clone(), dedicated: Some(id) })
    }

    /// The call's own share of the shared connection, after a connection of its own could not be
    /// opened.
    pub(crate) fn share(self: &Arc<Self>) -> Lease {
        lock(&self.state).shared += 1;
        Lease { pool: self.clone(), dedicated: None }
    }

    /// Forgets connection `id`; `true` if it was there.
    fn remove(&self, id: u64) -> bool {
        let removed = {
            let mut st = lock(&self.state);
            let before = st.dedicated.len();
            st.dedicated.retain(|d| d.id != id);
            st.dedicated.len() != before
        };
        self.freed.notify_waiters();
        removed
    }

    /// Forgets connection `id` if it has been idle for `idle`.
    fn retire_if_idle(&self, id: u64, idle: Duration) -> bool {
        let mut st = lock(&self.state);
        let stale = st.dedicated.iter().any(|d| d.id == id && !d.busy && d.idle_since.elapsed() >= idle);
        if stale {
            st.dedicated.retain(|d| d.id != id);
        }
        stale
    }

    /// Process ids of the connections of their own (stdio), for the process sampler.
    pub(crate) fn pids(&self) -> Vec<u32> {
        lock(&self.state).dedicated.iter().filter_map(|d| d.client.upstream().pid()).collect()
    }

    /// Connections of their own now (busy or idle).
    pub(crate) fn connections(&self) -> usize {
        lock(&self.state).dedicated.len()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        {
            let mut st = lock(&self.pool.state);
            match self.dedicated {
                None => st.shared = st.shared.saturating_sub(1),
                Some(id) => {
                    if let Some(d) = st.dedicated.iter_mut().find(|d| d.id == id) {
                        d.busy = false;
                        d.idle_since = Instant::now();
                    }
                }
            }
        }
        self.pool.freed.notify_waiters();
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        {
            let mut st = lock(&self.pool.state);
            st.opening = st.opening.saturating_sub(1);
        }
        self.pool.freed.notify_waiters();
    }
}

/// Opens and handshakes another connection to `spec`'s server (a stdio child of the same
/// command, or another WebSocket).
pub(crate) async fn open(
    spec: &ServerSpec,
    tap: Tap,
    mut options: ConnectOptions,
    cancel: CancellationToken,
) -> Result<Arc<McpClient>, String> {
    let up: Arc<dyn Upstream> = match &spec.transport {
        TransportSpec::Stdio { command, args, env, cwd } => {
            let mut cfg = StdioConfig::new(command.clone(), args.clone());
            cfg.env = env.clone();
            cfg.cwd = cwd.clone();
            cfg.name = spec.name.clone();
            // A connection of its own is not restarted: when its process exits it is dropped.
            cfg.restart = RestartPolicy { crash_loop_limit: 1, ..spec.restart.clone() };
            let up = StdioUpstream::spawn(cfg, tap, cancel);
            if let Err(e) = up.wait_started(options.handshake_timeout).await {
                up.close().await;
                return Err(e.to_string());
            }
            up
        }
        TransportSpec::Ws { url } => {
            let mut cfg = WsConfig::new(url.clone());
            spec.limits.apply_ws(&mut cfg);
            WsUpstream::connect(cfg, tap, cancel).await.map_err(|e| e.to_string())?
        }
        _ => return Err("only stdio and WebSocket servers get connections of their own".into()),
    };
    options.era_hint = Some(Era::Legacy);
    match McpClient::connect(up.clone(), options).await {
        Ok(c) if c.era() == Era::Legacy => Ok(Arc::new(c)),
        Ok(_) => {
            up.close().await;
            Err("the server answered in another era".into())
        }
        Err(f) => {
            up.close().await;
            Err(format!("handshake failed: {}", f.reason))
        }
    }
}

/// Looks after connection `id` until it is closed: refuses the server's requests that belong to
/// no call, drops it when its process exits or the connection closes, and closes it once idle for
/// `idle` (or when `cancel` fires).
pub(crate) async fn watch(
    pool: Arc<CallConnections>,
    id: u64,
    client: Arc<McpClient>,
    idle: Duration,
    cancel: CancellationToken,
) {
    let up = client.upstream().clone();
    let mut events = up.events();
    let mut incoming = up.incoming();
    let why = loop {
        tokio::select! {
            () = cancel.cancelled() => break "stopping",
            () = tokio::time::sleep(idle) => if pool.retire_if_idle(id, idle) { break "idle" },
            e = events.recv() => match e {
                Ok(UpstreamEvent::Exited { .. } | UpstreamEvent::GaveUp { .. })
                | Err(broadcast::error::RecvError::Closed) => break "connection ended",
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            },
            m = incoming.recv() => match m {
                Ok(msg) => {
                    if msg.is_request() {
                        pool.asked.store(true, Ordering::Relaxed);
                    }
                    crate::unsolicited::answer(&up, &msg).await;
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break "connection ended",
            },
        }
    };
    pool.remove(id);
    tracing::debug!(id, why, "closing a call's own upstream connection");
    up.close().await;
}
