//! The registry: one supervised connection per configured server.
//!
//! For each server a task connects (era negotiation, handshake), lists its catalog,
//! and then watches it: periodic refreshes at the configured period, `list_changed`
//! notifications (the legacy notification, or a `subscriptions/listen` stream on
//! 2026-07-28 servers), process restarts (re-handshake), and failures (backoff and
//! reconnect). Every state change carries its reason; every handshake, successful or
//! not, becomes a record in the store and an event on the bus.
//!
//! A state has two explanations: [`ServerView::reason`] is fit for callers (it may go into
//! an error a client receives), [`ServerView::detail`] is the operator's (it adds the
//! server's stderr tail, which can hold secrets, and is what logs, events and the store keep).
//!
//! A list's `ttlMs` says how long it may be cached, not how often to poll (built-in servers
//! answer `ttlMs: 0`): a caller that needs a list younger than that asks for it with
//! [`Registry::refresh_if_stale`], and such requests coalesce into one listing per server.
//! A listing that changes nothing is not an event (and logs at DEBUG).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use switchboard_store::{HandshakeRecord, ServerRecord, Store, ToolSnapshot};
use switchboard_transport::client::ClientError;
use switchboard_transport::http::{HttpConfig, HttpUpstream};
use switchboard_transport::stdio::{StdioConfig, StdioUpstream};
use switchboard_transport::ws::{WsConfig, WsUpstream};
use switchboard_transport::{
    ConnectOptions, Exchange, Handshake, HandshakeFailure, McpClient, Tap, Upstream, UpstreamEvent,
    UpstreamStatus,
};
use switchboard_wire::{Era, ErrorObject, Message, error_code, method};
use tokio::sync::{Notify, OnceCell, broadcast};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::catalog::Catalog;
use crate::config::{MIN_REFRESH, RegistryConfig, ServerSpec, TransportSpec};
use crate::dedicated::{self, CallConnections, Pick, declares_questions};
use crate::events::{Event, EventBus, now_ms};
use crate::schema::{Quarantined, compile_tools};
use crate::{Error, config, stats};

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

/// A read-only view of one server, for the CLI and the UI.
#[derive(Debug, Clone, Serialize)]
pub struct ServerView {
    /// Stable id.
    pub server_id: String,
    /// Name.
    pub name: String,
    /// `stdio`, `http` or `ws`.
    pub transport: &'static str,
    /// Command line or URL.
    pub endpoint: String,
    /// Domain labels.
    pub labels: Vec<String>,
    /// State.
    pub state: ServerState,
    /// Why it is in that state, fit for callers: never the server's stderr.
    pub reason: String,
    /// Operator detail of `reason` (the same plus the last stderr lines of a stdio server),
    /// when there is more to say. Can hold secrets: logs, events, the store and
    /// `switchboard servers` show it; it never goes into an error sent to a caller.
    pub detail: Option<String>,
    /// Since when (unix ms).
    pub since_ms: i64,
    /// Era spoken, once known.
    pub era: Option<Era>,
    /// Negotiated protocol version.
    pub protocol_version: Option<String>,
    /// `serverInfo`.
    pub server_info: Value,
    /// Usable tool names.
    pub tools: Vec<String>,
    /// Tools left out.
    pub quarantined: Vec<Quarantined>,
    /// Number of resources.
    pub resources: usize,
    /// Number of prompts.
    pub prompts: usize,
    /// Connection details (pid, restarts, memory, stderr tail, session): operator detail.
    pub status: UpstreamStatus,
}

struct StateCell {
    state: ServerState,
    /// Caller-facing.
    reason: String,
    /// Operator-facing (may hold stderr).
    detail: Option<String>,
    since_ms: i64,
}

/// One registered server and its live connection.
pub struct ServerEntry {
    /// Its definition.
    pub spec: ServerSpec,
    /// Its stable id.
    pub id: String,
    state: RwLock<StateCell>,
    client: RwLock<Option<Arc<McpClient>>>,
    upstream: RwLock<Option<Arc<dyn Upstream>>>,
    catalog: RwLock<Arc<Catalog>>,
    era: RwLock<Option<Era>>,
    cancel: CancellationToken,
    refresh_now: Notify,
    /// Serialises listings (periodic, `list_changed`, manual, on demand): one in flight.
    listing: tokio::sync::Mutex<()>,
    /// The outcome of the last completed listing.
    listed: Mutex<Listed>,
    /// Extra 2025-11-25 HTTP sessions, one per set of client capabilities (see
    /// [`Registry::client_for`]). The lock is held only to find or insert a slot, never
    /// across a handshake: concurrent callers with the same capabilities share the slot's
    /// one handshake, callers with other capabilities do not wait for it.
    sessions: Mutex<HashMap<String, Arc<SessionSlot>>>,
    /// Calls in flight on a legacy stdio or WebSocket server, and the connections of their own
    /// its questioning calls get (see [`Registry::client_for_call`]).
    calls: Arc<CallConnections>,
}

/// The outcome of a server's last completed listing.
#[derive(Debug, Clone, Default)]
struct Listed {
    /// Bumped by every completed listing, successful or not: a caller that waited for a
    /// listing in flight sees it changed and takes that listing's outcome.
    attempts: u64,
    /// When the catalog was last listed successfully (tokio time).
    at: Option<tokio::time::Instant>,
    /// Why the last listing failed, if it did.
    failure: Option<String>,
}

/// One per-capability session: empty while its handshake runs, then the client (or `None`
/// when the handshake failed, so callers fall back to the shared connection).
type SessionSlot = OnceCell<Option<Arc<McpClient>>>;

fn read<T: Clone>(l: &RwLock<T>) -> T {
    l.read().unwrap_or_else(PoisonError::into_inner).clone()
}

fn write<T>(l: &RwLock<T>, v: T) {
    *l.write().unwrap_or_else(PoisonError::into_inner) = v;
}

impl ServerEntry {
    /// Current state and its caller-facing reason (no stderr; see [`ServerView::reason`]).
    pub fn state(&self) -> (ServerState, String) {
        let s = self.state.read().unwrap_or_else(PoisonError::into_inner);
        (s.state, s.reason.clone())
    }

    /// Operator detail of the current state (see [`ServerView::detail`]): never send it to a
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

    fn listed(&self) -> Listed {
        self.listed.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn view(&self) -> ServerView {
        let s = self.state.read().unwrap_or_else(PoisonError::into_inner);
        let client = read(&self.client);
        let hs = client.as_ref().map(|c| c.handshake());
        let cat = read(&self.catalog);
        ServerView {
            server_id: self.id.clone(),
            name: self.spec.name.clone(),
            transport: self.spec.transport.kind().as_str(),
            endpoint: self.spec.transport.describe(),
            labels: self.spec.labels.clone(),
            state: s.state,
            reason: s.reason.clone(),
            detail: s.detail.clone(),
            since_ms: s.since_ms,
            era: read(&self.era),
            protocol_version: hs.as_ref().map(|h| h.protocol_version.clone()),
            server_info: hs.map(|h| h.server_info).unwrap_or(Value::Null),
            tools: cat.tools.iter().map(|t| t.name.clone()).collect(),
            quarantined: cat.quarantined.clone(),
            resources: cat.resources.len(),
            prompts: cat.prompts.len(),
            status: read(&self.upstream).map(|u| u.status()).unwrap_or_default(),
        }
    }
}

/// Starts built-in servers in-process; the application provides it (the registry does
/// not know which servers are built in).
pub trait BuiltinConnector: Send + Sync {
    /// Connects to the built-in server `server`, or says why not.
    fn connect(&self, server: &str, tap: Tap, cancel: CancellationToken)
    -> Result<Arc<dyn Upstream>, String>;
}

/// Asks a 2025-11-25 server that logs for every level: the endpoint filters log messages
/// per caller (a session's own `logging/setLevel`, a 2026 request's `_meta` logLevel).
async fn open_logging(client: &McpClient) {
    let hs = client.handshake();
    if hs.era == Era::Legacy
        && hs.server_capabilities.get("logging").is_some()
        && let Err(e) = client.request("logging/setLevel", serde_json::json!({"level": "debug"})).await
    {
        tracing::debug!(error = %e, "logging/setLevel refused");
    }
}

/// Most per-capability 2025-11-25 sessions held per server.
pub const MAX_CAPABILITY_SESSIONS: usize = 16;

struct Inner {
    /// Bumped whenever a server is added or removed, changes state or is re-listed.
    version: std::sync::atomic::AtomicU64,
    config: RegistryConfig,
    builtins: RwLock<Option<Arc<dyn BuiltinConnector>>>,
    servers: RwLock<BTreeMap<String, Arc<ServerEntry>>>,
    store: Option<Store>,
    events: EventBus,
    tracker: TaskTracker,
    cancel: CancellationToken,
    changed: Notify,
    /// Names of servers being added (between the name check and the insertion, which awaits
    /// the store); guarded together with the check, so a name is claimed atomically.
    adding: Mutex<HashSet<String>>,
    /// The process sampler's counters.
    sampler: Arc<stats::Counters>,
}

/// A name claimed by an [`Registry::add`] in progress; released when dropped (the add
/// finished, failed or was cancelled).
struct NameReservation<'a> {
    adding: &'a Mutex<HashSet<String>>,
    name: String,
}

impl Drop for NameReservation<'_> {
    fn drop(&mut self) {
        self.adding.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.name);
    }
}

/// The registry handle (cheap to clone).
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

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
        let streamed = matches!(entry.spec.transport, TransportSpec::Stdio { .. } | TransportSpec::Ws { .. });
        if !streamed || shared.era() != Era::Legacy {
            return Ok(self.client_for(name, caps).await.unwrap_or(shared));
        }
        let pool = &entry.calls;
        let may_ask = pool.asked(&shared) || declares_questions(caps);
        let config = &self.inner.config;
        let deadline = tokio::time::Instant::now() + config.call_connection_wait;
        loop {
            let freed = pool.freed();
            match pool.pick(&shared, may_ask, config.max_call_connections.max(1)) {
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
                            limit: config.max_call_connections,
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

    /// Changes whenever the set of servers, a server's state or a catalog changes: views
    /// derived from the catalogs (the federation) are valid while it stays the same.
    pub fn version(&self) -> u64 {
        self.inner.version.load(std::sync::atomic::Ordering::Acquire)
    }

    /// An empty registry. `cancel` stops every server task.
    pub fn new(
        config: RegistryConfig,
        store: Option<Store>,
        events: EventBus,
        cancel: CancellationToken,
    ) -> Self {
        let registry = Registry {
            inner: Arc::new(Inner {
                version: std::sync::atomic::AtomicU64::new(0),
                config,
                builtins: RwLock::new(None),
                servers: RwLock::new(BTreeMap::new()),
                store,
                events,
                tracker: TaskTracker::new(),
                cancel,
                changed: Notify::new(),
                adding: Mutex::new(HashSet::new()),
                sampler: Arc::default(),
            }),
        };
        registry.start_sampler();
        registry
    }

    /// Starts the process sampler (see [`crate::stats`]) when a runtime is there to run it; it
    /// stops with the registry's cancellation.
    fn start_sampler(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::debug!("no async runtime: the process sampler does not run");
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let targets = move || weak.upgrade().map(|inner| inner.processes()).unwrap_or_default();
        let inner = &self.inner;
        inner.tracker.spawn(stats::run(
            inner.events.clone(),
            inner.config.stats_interval,
            inner.sampler.clone(),
            targets,
            inner.cancel.clone(),
        ));
    }

    /// What the process sampler has done so far.
    pub fn sampler_counters(&self) -> stats::SamplerCounters {
        self.inner.sampler.snapshot()
    }

    /// Installs the connector for `builtin = "…"` servers (before adding them).
    pub fn set_builtins(&self, connector: Arc<dyn BuiltinConnector>) {
        *self.inner.builtins.write().unwrap_or_else(PoisonError::into_inner) = Some(connector);
    }

    /// The event bus.
    pub fn events(&self) -> &EventBus {
        &self.inner.events
    }

    /// Registers a server and starts connecting to it. Returns its id.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] when a server of that name is registered or being added (the
    /// name is reserved before anything is awaited, so of two concurrent adds of one name
    /// exactly one succeeds), [`Error::Store`] when it cannot be persisted.
    pub async fn add(&self, spec: ServerSpec) -> Result<String, Error> {
        let id = spec.server_id();
        let _reservation = self.inner.reserve_name(&spec)?;
        let mut era_hint = None;
        let reason = if spec.enabled { "registered; connecting" } else { "disabled in configuration" };
        if let Some(store) = &self.inner.store {
            let previous = store.server(&id).await?;
            era_hint = previous.as_ref().and_then(|p| p.era.as_deref()).and_then(parse_era);
            let now = now_ms();
            store
                .upsert_server(&ServerRecord {
                    server_id: id.clone(),
                    name: spec.name.clone(),
                    transport: spec.transport.kind().as_str().to_owned(),
                    config: spec.to_json(),
                    state: ServerState::Pending.as_str().to_owned(),
                    state_reason: Some(reason.to_owned()),
                    era: previous.and_then(|p| p.era),
                    created_at_ms: now,
                    updated_at_ms: now,
                })
                .await?;
        }
        let entry = Arc::new(ServerEntry {
            spec,
            id: id.clone(),
            state: RwLock::new(StateCell {
                state: ServerState::Pending,
                reason: reason.to_owned(),
                detail: None,
                since_ms: now_ms(),
            }),
            client: RwLock::new(None),
            upstream: RwLock::new(None),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            era: RwLock::new(era_hint),
            cancel: self.inner.cancel.child_token(),
            refresh_now: Notify::new(),
            listing: tokio::sync::Mutex::new(()),
            listed: Mutex::new(Listed::default()),
            sessions: Mutex::new(HashMap::new()),
            calls: Arc::default(),
        });
        // Inserted before the reservation is released (on return), so the name is never free in between.
        self.inner.servers.write().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), entry.clone());
        self.inner.version.fetch_add(1, std::sync::atomic::Ordering::Release);
        if entry.spec.enabled {
            self.inner.tracker.spawn(supervise(self.inner.clone(), entry));
        }
        self.inner.changed.notify_waiters();
        Ok(id)
    }

    /// Registers several servers, refusing duplicate names up front.
    pub async fn add_all(&self, specs: Vec<ServerSpec>) -> Result<Vec<String>, Error> {
        config::check_unique(&specs)?;
        let mut ids = Vec::with_capacity(specs.len());
        for s in specs {
            ids.push(self.add(s).await?);
        }
        Ok(ids)
    }

    /// Stops and forgets a server.
    pub async fn remove(&self, id_or_name: &str) -> bool {
        let Some(entry) = self.entry(id_or_name) else { return false };
        entry.cancel.cancel();
        if let Some(u) = read(&entry.upstream) {
            u.close().await;
        }
        self.inner.servers.write().unwrap_or_else(PoisonError::into_inner).remove(&entry.id);
        self.inner.version.fetch_add(1, std::sync::atomic::Ordering::Release);
        if let Some(store) = &self.inner.store
            && let Err(e) = store.remove_server(&entry.id).await
        {
            tracing::warn!(error = %e, "could not remove server from the store");
        }
        self.inner.changed.notify_waiters();
        true
    }

    /// A server by id or name.
    pub fn entry(&self, id_or_name: &str) -> Option<Arc<ServerEntry>> {
        let servers = self.inner.servers.read().unwrap_or_else(PoisonError::into_inner);
        servers
            .get(id_or_name)
            .cloned()
            .or_else(|| servers.values().find(|e| e.spec.name == id_or_name).cloned())
    }

    /// All servers, by name.
    pub fn servers(&self) -> Vec<ServerView> {
        let servers = self.inner.servers.read().unwrap_or_else(PoisonError::into_inner);
        let mut v: Vec<ServerView> = servers.values().map(|e| e.view()).collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Re-lists a server's catalog if its last listing is older than `max_age`, and returns
    /// the catalog.
    ///
    /// A list's `ttlMs` ([`Catalog::ttl`]) says how long it may be cached, not how often to
    /// poll: the registry re-lists on its own only at the configured period and on
    /// `list_changed`. A caller that needs a list no older than its `ttlMs` calls this.
    /// Calls coalesce: at most one listing per server is in flight, and a caller that arrives
    /// while one runs waits for it and takes its outcome instead of starting another.
    ///
    /// # Errors
    /// [`Error::UnknownServer`]; [`Error::NotConnected`] when the server has no live
    /// connection (with its caller-facing state reason); [`Error::Refresh`] when the listing
    /// failed.
    pub async fn refresh_if_stale(&self, id_or_name: &str, max_age: Duration) -> Result<Arc<Catalog>, Error> {
        let entry =
            self.entry(id_or_name).ok_or_else(|| Error::UnknownServer { name: id_or_name.to_owned() })?;
        let seen = entry.listed();
        if seen.at.is_some_and(|at| at.elapsed() <= max_age) {
            return Ok(entry.catalog());
        }
        let _listing = entry.listing.lock().await;
        let now = entry.listed();
        if now.attempts != seen.attempts {
            // A listing finished while this caller waited: it is as fresh as one started now.
            return match now.failure {
                None => Ok(entry.catalog()),
                Some(reason) => Err(Error::Refresh { server: entry.spec.name.clone(), reason }),
            };
        }
        let client = entry.client().ok_or_else(|| {
            let (state, reason) = entry.state();
            Error::NotConnected { server: entry.spec.name.clone(), state: state.as_str(), reason }
        })?;
        match refresh_locked(&self.inner, &entry, &client, "on_demand").await {
            Ok(n) => {
                if entry.state().0 != ServerState::Ready {
                    let q = entry.catalog().quarantined.len();
                    self.inner.set_state(&entry, ServerState::Ready, ready_reason(&client, n, q)).await;
                }
                Ok(entry.catalog())
            }
            Err(e) => Err(Error::Refresh { server: entry.spec.name.clone(), reason: e.to_string() }),
        }
    }

    /// Asks a server to relist its catalog now.
    pub fn refresh(&self, id_or_name: &str) -> bool {
        match self.entry(id_or_name) {
            Some(e) => {
                e.refresh_now.notify_one();
                true
            }
            None => false,
        }
    }

    /// Waits until no enabled server is `pending` (or the timeout passes); returns the views.
    pub async fn wait_settled(&self, timeout: Duration) -> Vec<ServerView> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.inner.changed.notified();
            let views = self.servers();
            let pending = views
                .iter()
                .any(|v| v.state == ServerState::Pending && v.reason != "disabled in configuration");
            if !pending || tokio::time::Instant::now() >= deadline {
                return views;
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }

    /// Waits until `name` reaches `state` (or the timeout passes); returns its view.
    pub async fn wait_for(&self, name: &str, state: ServerState, timeout: Duration) -> Option<ServerView> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.inner.changed.notified();
            let view = self.entry(name).map(|e| e.view());
            if view.as_ref().is_some_and(|v| v.state == state) || tokio::time::Instant::now() >= deadline {
                return view;
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }

    /// Stops every server task and waits (bounded) for them to finish.
    pub async fn shutdown(&self, deadline: Duration) {
        self.inner.cancel.cancel();
        self.inner.tracker.close();
        let entries: Vec<_> =
            self.inner.servers.read().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        for e in entries {
            if let Some(u) = read(&e.upstream) {
                u.close().await;
            }
        }
        let _ = tokio::time::timeout(deadline, self.inner.tracker.wait()).await;
    }
}

/// Removes `slot` from `entry`'s sessions if it is still the one stored under `key`.
fn forget_slot(entry: &ServerEntry, key: &str, slot: &Arc<SessionSlot>) {
    let mut sessions = entry.sessions.lock().unwrap_or_else(PoisonError::into_inner);
    if sessions.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
        sessions.remove(key);
    }
}

/// Lines of a stderr tail kept in an operator detail.
const DETAIL_STDERR_LINES: usize = 5;

/// `reason` with the last lines of `stderr` appended, for the operator; `None` when the
/// process said nothing.
fn with_stderr(reason: &str, stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let last = &lines[lines.len().saturating_sub(DETAIL_STDERR_LINES)..];
    (!last.is_empty()).then(|| format!("{reason}; stderr: {}", last.join(" | ")))
}

fn parse_era(s: &str) -> Option<Era> {
    match s {
        "modern" => Some(Era::Modern),
        "legacy" => Some(Era::Legacy),
        _ => None,
    }
}

impl Inner {
    /// The running stdio children, by server, for the process sampler.
    fn processes(&self) -> Vec<stats::Target> {
        let servers = self.servers.read().unwrap_or_else(PoisonError::into_inner);
        servers
            .values()
            .flat_map(|e| {
                // The shared connection's child, and those of the calls' own connections.
                let shared = read(&e.upstream).and_then(|u| u.pid());
                shared.into_iter().chain(e.calls.pids()).map(|pid| (Some(e.spec.name.clone()), pid))
            })
            .collect()
    }

    /// Claims `spec`'s name for an add in progress, or says who has it.
    fn reserve_name(&self, spec: &ServerSpec) -> Result<NameReservation<'_>, Error> {
        let mut adding = self.adding.lock().unwrap_or_else(PoisonError::into_inner);
        let existing = {
            let servers = self.servers.read().unwrap_or_else(PoisonError::into_inner);
            servers.values().find(|e| e.spec.name == spec.name).map(|e| e.spec.source.clone())
        };
        if existing.is_some() || adding.contains(&spec.name) {
            return Err(Error::AlreadyExists {
                name: spec.name.clone(),
                existing: existing.unwrap_or_else(|| "an add still in progress".to_owned()),
            });
        }
        adding.insert(spec.name.clone());
        Ok(NameReservation { adding: &self.adding, name: spec.name.clone() })
    }

    async fn set_state(&self, entry: &ServerEntry, to: ServerState, reason: impl Into<String>) {
        self.set_state_detailed(entry, to, reason.into(), None).await;
    }

    /// Changes a server's state. `reason` is caller-facing; `detail` (with stderr) is the
    /// operator's: the log line, the event and the stored state carry it.
    async fn set_state_detailed(
        &self,
        entry: &ServerEntry,
        to: ServerState,
        reason: String,
        detail: Option<String>,
    ) {
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

    async fn record_handshake(&self, entry: &ServerEntry, record: HandshakeRecord) {
        let mut record = record;
        if let Some(store) = &self.store {
            match store.insert_handshake(&record).await {
                Ok(id) => record.id = Some(id),
                Err(e) => tracing::warn!(error = %e, "could not persist handshake"),
            }
        }
        self.events.publish(Event::Handshake { server: entry.spec.name.clone(), record: Box::new(record) });
    }

    fn connect_options(&self, entry: &ServerEntry) -> ConnectOptions {
        ConnectOptions {
            era_hint: read(&entry.era),
            handshake_timeout: self.config.handshake_timeout,
            request_timeout: self.config.request_timeout,
            // The router relays what upstreams ask during a call to the calling client (or
            // turns it into an input request for a 2026 client), so it declares all of it;
            // a client lacking a capability gets the request refused on its behalf.
            client_capabilities: serde_json::json!({
                "sampling": {},
                "elicitation": {"form": {}, "url": {}},
                "roots": {},
            }),
            ..Default::default()
        }
    }
}

/// Builds the handshake record of a success.
pub fn success_record(
    server_id: Option<String>,
    transport: &str,
    hs: &Handshake,
    tool_count: Option<i64>,
) -> HandshakeRecord {
    HandshakeRecord {
        id: None,
        server_id,
        leg: "upstream".into(),
        transport: transport.into(),
        era: Some(hs.era.as_str().into()),
        offered_versions: hs.offered_versions.clone(),
        chosen_version: Some(hs.protocol_version.clone()),
        client_capabilities: hs.client_capabilities.clone(),
        server_capabilities: hs.server_capabilities.clone(),
        client_info: hs.client_info.clone(),
        server_info: hs.server_info.clone(),
        tool_count,
        duration_ms: hs.duration.as_secs_f64() * 1000.0,
        error: None,
        at_ms: now_ms(),
    }
}

/// Builds the handshake record of a failure.
pub fn failure_record(
    server_id: Option<String>,
    transport: &str,
    f: &HandshakeFailure,
    options: &ConnectOptions,
) -> HandshakeRecord {
    HandshakeRecord {
        id: None,
        server_id,
        leg: "upstream".into(),
        transport: transport.into(),
        era: f.era.map(|e| e.as_str().into()),
        offered_versions: f.offered_versions.clone(),
        chosen_version: None,
        client_capabilities: options.client_capabilities.clone(),
        server_capabilities: Value::Null,
        client_info: options.client_info.clone(),
        server_info: Value::Null,
        tool_count: None,
        duration_ms: f.duration.as_secs_f64() * 1000.0,
        error: Some(f.reason.clone()),
        at_ms: now_ms(),
    }
}

/// Lists tools (and resources, templates, prompts where advertised) and compiles them.
pub async fn list_catalog(client: &McpClient) -> Result<Catalog, ClientError> {
    let caps = client.handshake().server_capabilities;
    let has = |k: &str| caps.get(k).is_some_and(|v| !v.is_null());
    let mut ttl: Option<u64> = None;
    let mut min_ttl = |t: Option<u64>| {
        if let Some(t) = t {
            ttl = Some(ttl.map_or(t, |x| x.min(t)));
        }
    };
    let (tools, quarantined) = if has("tools") {
        let l = client.list_all(method::TOOLS_LIST, "tools").await?;
        min_ttl(l.ttl_ms);
        compile_tools(&l.items)
    } else {
        (Vec::new(), Vec::new())
    };
    let optional = |r: Result<switchboard_transport::client::ListAll, ClientError>| match r {
        Ok(l) => Ok(Some(l)),
        Err(ClientError::Rpc { error, .. }) if error.code == error_code::METHOD_NOT_FOUND => Ok(None),
        Err(e) => Err(e),
    };
    let mut resources = Vec::new();
    let mut resource_templates = Vec::new();
    if has("resources") {
        if let Some(l) = optional(client.list_all(method::RESOURCES_LIST, "resources").await)? {
            min_ttl(l.ttl_ms);
            resources = l.items;
        }
        if let Some(l) =
            optional(client.list_all(method::RESOURCES_TEMPLATES_LIST, "resourceTemplates").await)?
        {
            min_ttl(l.ttl_ms);
            resource_templates = l.items;
        }
    }
    let mut prompts = Vec::new();
    if has("prompts")
        && let Some(l) = optional(client.list_all(method::PROMPTS_LIST, "prompts").await)?
    {
        min_ttl(l.ttl_ms);
        prompts = l.items;
    }
    for t in &tools {
        client.upstream().set_header_params(&t.name, t.header_params.clone());
    }
    Ok(Catalog {
        tools,
        quarantined,
        resources,
        resource_templates,
        prompts,
        ttl: ttl.map(Duration::from_millis),
        fetched_at_ms: now_ms(),
    })
}

/// Lists a server's catalog, after any listing already in flight.
async fn refresh(
    inner: &Inner,
    entry: &ServerEntry,
    client: &McpClient,
    trigger: &str,
) -> Result<usize, ClientError> {
    let _listing = entry.listing.lock().await;
    refresh_locked(inner, entry, client, trigger).await
}

/// Lists a server's catalog; the caller holds `entry.listing`. Records the outcome.
async fn refresh_locked(
    inner: &Inner,
    entry: &ServerEntry,
    client: &McpClient,
    trigger: &str,
) -> Result<usize, ClientError> {
    let outcome = list_and_publish(inner, entry, client, trigger).await;
    let mut listed = entry.listed.lock().unwrap_or_else(PoisonError::into_inner);
    listed.attempts += 1;
    match &outcome {
        Ok(_) => {
            listed.at = Some(tokio::time::Instant::now());
            listed.failure = None;
        }
        Err(e) => listed.failure = Some(e.to_string()),
    }
    outcome
}

/// `true` when two catalogs offer the same lists (the fetch time and `ttlMs` aside).
fn same_lists(a: &Catalog, b: &Catalog) -> bool {
    a.tools.len() == b.tools.len()
        && a.tools.iter().zip(&b.tools).all(|(x, y)| x.raw == y.raw)
        && a.quarantined == b.quarantined
        && a.resources == b.resources
        && a.resource_templates == b.resource_templates
        && a.prompts == b.prompts
}

/// Lists a server's catalog and, when it changed (or on connect), bumps the registry version,
/// publishes it (a `Catalog` event, and a `CatalogChanged` with the diff when an item differs)
/// and then stores a snapshot: the events never wait for the disk.
async fn list_and_publish(
    inner: &Inner,
    entry: &ServerEntry,
    client: &McpClient,
    trigger: &str,
) -> Result<usize, ClientError> {
    let catalog = list_catalog(client).await?;
    let previous = entry.catalog();
    if trigger != "connect" && same_lists(&previous, &catalog) {
        // Nothing a caller could notice: keep the newer fetch time and ttl, say nothing above DEBUG.
        let count = catalog.tools.len();
        tracing::debug!(server = %entry.spec.name, %trigger, tools = count, "catalog unchanged");
        write(&entry.catalog, Arc::new(catalog));
        return Ok(count);
    }
    for q in &catalog.quarantined {
        tracing::warn!(server = %entry.spec.name, tool = %q.name, error = %q.error, "tool quarantined: its schema does not compile");
    }
    let count = catalog.tools.len();
    // Stored before the events, so a listener reading the registry sees the new catalog.
    let catalog = Arc::new(catalog);
    write(&entry.catalog, catalog.clone());
    inner.version.fetch_add(1, std::sync::atomic::Ordering::Release);
    inner.events.publish(Event::Catalog {
        server_id: entry.id.clone(),
        server: entry.spec.name.clone(),
        tools: count,
        quarantined: catalog.quarantined.clone(),
        resources: catalog.resources.len(),
        prompts: catalog.prompts.len(),
        trigger: trigger.to_owned(),
        at_ms: catalog.fetched_at_ms,
    });
    // Computed only when somebody listens (a reconnect to the same catalog, or a mere
    // reordering, differs in nothing and publishes nothing).
    if inner.events.active() {
        let diff = previous.diff(&catalog);
        if !diff.is_empty() {
            tracing::debug!(server = %entry.spec.name, %trigger, ?diff, "catalog changed");
            inner.events.publish(Event::CatalogChanged {
                server: entry.spec.name.clone(),
                diff,
                at_ms: catalog.fetched_at_ms,
            });
        }
    }
    if let Some(store) = &inner.store {
        let snap = ToolSnapshot {
            id: None,
            server_id: entry.id.clone(),
            taken_at_ms: catalog.fetched_at_ms,
            tools: Value::Array(catalog.raw_tools()),
            quarantined: serde_json::to_value(&catalog.quarantined).unwrap_or(Value::Null),
            resources: Value::Array(catalog.resources.clone()),
            prompts: Value::Array(catalog.prompts.clone()),
        };
        if let Err(e) = store.save_tool_snapshot(&snap).await {
            tracing::warn!(error = %e, "could not persist tool snapshot");
        }
    }
    Ok(count)
}

fn ready_reason(client: &McpClient, tools: usize, quarantined: usize) -> String {
    let hs = client.handshake();
    let q = if quarantined > 0 { format!(", {quarantined} quarantined") } else { String::new() };
    format!(
        "{} {} ({}), {tools} tools{q}",
        hs.era,
        hs.protocol_version,
        if hs.era == Era::Modern { "server/discover" } else { "initialize" }
    )
}

/// Opens a `subscriptions/listen` stream on a modern server that announces list changes.
async fn open_listen(client: &McpClient) -> Option<Exchange> {
    let hs = client.handshake();
    if hs.era != Era::Modern {
        return None;
    }
    let caps = &hs.server_capabilities;
    let flag =
        |k: &str| caps.get(k).and_then(|c| c.get("listChanged")).and_then(Value::as_bool).unwrap_or(false);
    let (t, r, p) = (flag("tools"), flag("resources"), flag("prompts"));
    if !(t || r || p) {
        return None;
    }
    let params =
        json!({"notifications": {"toolsListChanged": t, "resourcesListChanged": r, "promptsListChanged": p}});
    client.start(method::SUBSCRIPTIONS_LISTEN, params).await.ok()
}

/// What a watched connection asks the supervisor to do next.
enum Next {
    Reconnect(String),
    Stop,
}

async fn supervise(inner: Arc<Inner>, entry: Arc<ServerEntry>) {
    let kind = entry.spec.transport.kind();
    let tap = Tap::new(inner.events.frame_sink(), "upstream", &entry.spec.name, kind.as_str());
    let stdio = match &entry.spec.transport {
        TransportSpec::Stdio { command, args, env, cwd } => {
            let mut cfg = StdioConfig::new(command.clone(), args.clone());
            cfg.env = env.clone();
            cfg.cwd = cwd.clone();
            cfg.restart = entry.spec.restart.clone();
            cfg.name = entry.spec.name.clone();
            let up = StdioUpstream::spawn(cfg, tap.clone(), entry.cancel.child_token());
            // Process lifecycle events go to the bus as they happen.
            let mut ev = up.events();
            let (bus, id, name, cancel) =
                (inner.events.clone(), entry.id.clone(), entry.spec.name.clone(), entry.cancel.clone());
            inner.tracker.spawn(async move {
                loop {
                    tokio::select! {
                        e = ev.recv() => match e {
                            Ok(event) => bus.publish(Event::Upstream { server_id: id.clone(), server: name.clone(), event, at_ms: now_ms() }),
                            Err(broadcast::error::RecvError::Lagged(_)) => {}
                            Err(broadcast::error::RecvError::Closed) => return,
                        },
                        _ = cancel.cancelled() => return,
                    }
                }
            });
            write(&entry.upstream, Some(up.clone() as Arc<dyn Upstream>));
            Some(up)
        }
        _ => None,
    };
    let mut failures = 0u32;
    let mut ever_ready = false;
    loop {
        if entry.cancel.is_cancelled() {
            break;
        }
        let upstream: Result<Arc<dyn Upstream>, String> = match (&entry.spec.transport, &stdio) {
            (TransportSpec::Stdio { .. }, Some(s)) => {
                match s.wait_started(inner.config.handshake_timeout).await {
                    Ok(()) => Ok(s.clone() as Arc<dyn Upstream>),
                    Err(switchboard_transport::Error::NotRunning { detail })
                        if s.status().last_error.as_deref() == Some(detail.as_str())
                            && !s.status().connected =>
                    {
                        // The supervisor gave up (crash loop): nothing to retry until removed.
                        let operator = with_stderr(&detail, &s.status().stderr_tail.join("\n"));
                        inner.set_state_detailed(&entry, ServerState::Unavailable, detail, operator).await;
                        entry.cancel.cancelled().await;
                        break;
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            (TransportSpec::Http { url, headers }, _) => {
                let mut cfg = HttpConfig::new(url.clone());
                cfg.headers = headers.clone();
                HttpUpstream::new(cfg, tap.clone(), entry.cancel.child_token())
                    .map(|u| u as Arc<dyn Upstream>)
                    .map_err(|e| e.to_string())
            }
            (TransportSpec::Ws { url }, _) => {
                WsUpstream::connect(WsConfig::new(url.clone()), tap.clone(), entry.cancel.child_token())
                    .await
                    .map(|u| u as Arc<dyn Upstream>)
                    .map_err(|e| e.to_string())
            }
            (TransportSpec::Builtin { server }, _) => match read(&inner.builtins) {
                Some(c) => c.connect(server, tap.clone(), entry.cancel.child_token()),
                None => Err(format!("no built-in server named {server:?} is available in this process")),
            },
            (TransportSpec::Stdio { .. }, None) => Err("internal: stdio upstream missing".into()),
        };
        let outcome = match upstream {
            Err(reason) => {
                let options = inner.connect_options(&entry);
                let f = HandshakeFailure {
                    reason: reason.clone(),
                    era: None,
                    offered_versions: Vec::new(),
                    duration: Duration::ZERO,
                    steps: vec![reason.clone()],
                };
                inner
                    .record_handshake(
                        &entry,
                        failure_record(Some(entry.id.clone()), kind.as_str(), &f, &options),
                    )
                    .await;
                Next::Reconnect(reason)
            }
            Ok(up) => {
                write(&entry.upstream, Some(up.clone()));
                connect_and_watch(&inner, &entry, up, &mut ever_ready, &mut failures).await
            }
        };
        match outcome {
            Next::Stop => break,
            // Stopping (shutdown or removal) closes the connection under a running refresh or
            // watch: that is not the server failing, so nothing is recorded.
            Next::Reconnect(_) if entry.cancel.is_cancelled() => break,
            Next::Reconnect(reason) => {
                write(&entry.client, None);
                failures += 1;
                let state = if failures >= inner.config.unavailable_after {
                    ServerState::Unavailable
                } else if ever_ready {
                    ServerState::Degraded
                } else {
                    ServerState::Pending
                };
                let delay = inner
                    .config
                    .reconnect_backoff
                    .saturating_mul(2u32.saturating_pow(failures.saturating_sub(1).min(16)))
                    .min(Duration::from_secs(30));
                inner
                    .set_state(
                        &entry,
                        state,
                        format!("{reason} (attempt {failures}; retrying in {} ms)", delay.as_millis()),
                    )
                    .await;
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = entry.cancel.cancelled() => break,
                }
            }
        }
    }
    if let Some(u) = read(&entry.upstream) {
        u.close().await;
    }
}

async fn connect_and_watch(
    inner: &Arc<Inner>,
    entry: &Arc<ServerEntry>,
    up: Arc<dyn Upstream>,
    ever_ready: &mut bool,
    failures: &mut u32,
) -> Next {
    let kind = up.kind().as_str();
    let mut events = up.events();
    let mut incoming = up.incoming();
    let options = inner.connect_options(entry);
    let client = match McpClient::connect(up.clone(), options.clone()).await {
        Ok(c) => Arc::new(c),
        Err(f) => {
            inner.record_handshake(entry, failure_record(Some(entry.id.clone()), kind, &f, &options)).await;
            if up.kind() != switchboard_transport::TransportKind::Stdio {
                up.close().await;
            }
            return Next::Reconnect(format!("handshake failed: {}", f.reason));
        }
    };
    let hs = client.handshake();
    write(&entry.era, Some(hs.era));
    open_logging(&client).await;
    if let Some(store) = &inner.store
        && let Err(e) = store.set_server_era(&entry.id, hs.era.as_str()).await
    {
        tracing::warn!(error = %e, "could not persist era");
    }
    write(&entry.client, Some(client.clone()));
    let listed = refresh(inner, entry, &client, "connect").await;
    inner
        .record_handshake(
            entry,
            success_record(Some(entry.id.clone()), kind, &hs, listed.as_ref().ok().map(|n| *n as i64)),
        )
        .await;
    match &listed {
        Ok(n) => {
            *failures = 0;
            *ever_ready = true;
            let q = entry.catalog().quarantined.len();
            inner.set_state(entry, ServerState::Ready, ready_reason(&client, *n, q)).await;
        }
        Err(e) => {
            inner
                .set_state(entry, ServerState::Degraded, format!("handshake ok but listing failed: {e}"))
                .await;
        }
    }
    let mut listen = open_listen(&client).await;
    loop {
        // `ttlMs` is how long a list may be cached, not a polling period (see the module docs).
        let period = entry.spec.refresh_interval.unwrap_or(inner.config.refresh_interval).max(MIN_REFRESH);
        let mut trigger: Option<&str> = None;
        tokio::select! {
            _ = entry.cancel.cancelled() => return Next::Stop,
            _ = tokio::time::sleep(period) => trigger = Some("timer"),
            _ = entry.refresh_now.notified() => trigger = Some("manual"),
            m = incoming.recv() => match m {
                Ok(msg) => {
                    if handle_server_message(&up, &msg).await {
                        trigger = Some("list_changed");
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => trigger = Some("list_changed"),
                Err(broadcast::error::RecvError::Closed) => return Next::Reconnect("connection closed".into()),
            },
            m = next_listen(&mut listen) => match m {
                Some(msg) if msg.method().is_some_and(method::is_list_changed) => trigger = Some("list_changed"),
                Some(_) => {}
                None => listen = None,
            },
            e = events.recv() => match e {
                Ok(UpstreamEvent::Exited { status, stderr_tail, .. }) => {
                    // Callers see the exit status; the operator also sees what the process said.
                    let why = format!("process exited ({status}); restarting");
                    let operator = with_stderr(&why, &stderr_tail);
                    write(&entry.client, None);
                    inner.set_state_detailed(entry, ServerState::Degraded, why.clone(), operator).await;
                    if up.kind() != switchboard_transport::TransportKind::Stdio {
                        return Next::Reconnect(why);
                    }
                }
                Ok(UpstreamEvent::Started { .. }) => {
                    // A restarted process needs a new handshake.
                    return Next::Reconnect("process restarted".into());
                }
                Ok(UpstreamEvent::GaveUp { reason, stderr_tail }) => {
                    write(&entry.client, None);
                    let operator = with_stderr(&reason, &stderr_tail);
                    inner.set_state_detailed(entry, ServerState::Unavailable, reason, operator).await;
                    entry.cancel.cancelled().await;
                    return Next::Stop;
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return Next::Reconnect("connection closed".into()),
            },
        }
        if let Some(trigger) = trigger {
            match refresh(inner, entry, &client, trigger).await {
                Ok(n) => {
                    let (state, _) = entry.state();
                    if state != ServerState::Ready || trigger != "timer" {
                        let q = entry.catalog().quarantined.len();
                        inner.set_state(entry, ServerState::Ready, ready_reason(&client, n, q)).await;
                    }
                    if trigger == "list_changed" && listen.is_none() {
                        listen = open_listen(&client).await;
                    }
                }
                Err(ClientError::Transport(e)) if e.is_fatal() => {
                    return Next::Reconnect(format!("refresh failed: {e}"));
                }
                Err(ClientError::Handshake(f)) => {
                    return Next::Reconnect(format!("session lost and re-initialize failed: {}", f.reason));
                }
                Err(e) => {
                    inner
                        .set_state(entry, ServerState::Degraded, format!("refresh ({trigger}) failed: {e}"))
                        .await
                }
            }
        }
    }
}

async fn next_listen(listen: &mut Option<Exchange>) -> Option<Message> {
    match listen {
        Some(ex) => match ex.next().await {
            Some(Ok(m)) if !m.is_response() => Some(m),
            _ => None,
        },
        None => std::future::pending().await,
    }
}

/// Handles a server message that belongs to no request. Returns `true` for a
/// `list_changed` notification. Server → client requests are refused: the registry's
/// own connection declares no client capabilities.
pub(crate) async fn handle_server_message(up: &Arc<dyn Upstream>, msg: &Message) -> bool {
    if msg.is_request() {
        if let Some(id) = msg.id() {
            let m = msg.method().unwrap_or_default();
            let err = ErrorObject::new(
                error_code::METHOD_NOT_FOUND,
                format!(
                    "{m} is not available on switchboard's registry connection (no client capability declared)"
                ),
            );
            let _ = up.send(Message::error_response(Some(id), err)).await;
        }
        return false;
    }
    msg.method().is_some_and(method::is_list_changed)
}
