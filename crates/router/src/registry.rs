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
//!
//! The parts: `entry` (one server and its state changes), `view` (what the CLI and the UI
//! see of it), `supervise` (connect, watch, reconnect), `listing` (catalogs and their
//! events), `load` (calls in flight, latency, status reports, draining), `handshake` (the records of every attempt), `hold` (self-registered servers kept from
//! routing until confirmed), `health` (probes and the circuit breaker), `negotiation` (an event per step of
//! each) and `sessions` (which connection a
//! caller's request goes through).

mod entry;
mod handshake;
mod health;
mod hold;
mod listing;
mod load;
mod negotiation;
mod sessions;
mod supervise;
mod view;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use switchboard_store::{ServerRecord, Store};
use switchboard_transport::{Tap, Upstream};
use switchboard_wire::Era;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::entry::{Listed, StateCell, read};
pub use self::entry::{ServerEntry, ServerState};
pub use self::handshake::{failure_record, success_record};
pub use self::hold::{HELD_REASON, HeldOutcome};
pub use self::listing::list_catalog;
pub use self::sessions::MAX_CAPABILITY_SESSIONS;
pub use self::view::ServerView;
use crate::catalog::Catalog;
use crate::config::{RegistryConfig, ServerSpec};
use crate::events::{EventBus, now_ms};
pub use crate::load::{InFlight, Load, LoadReport};
use crate::schedule::{Scheduler, SchedulerConfig};
use crate::{Error, config, stats};

/// Starts built-in servers in-process; the application provides it (the registry does
/// not know which servers are built in).
pub trait BuiltinConnector: Send + Sync {
    /// Connects to the built-in server `server`, or says why not.
    fn connect(&self, server: &str, tap: Tap, cancel: CancellationToken)
    -> Result<Arc<dyn Upstream>, String>;
}

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
    /// The scheduler's live state (bindings, decisions), shared by every route table.
    scheduler: Arc<Scheduler>,
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
                tracker: TaskTracker::new(),
                cancel,
                changed: Notify::new(),
                adding: Mutex::new(HashSet::new()),
                sampler: Arc::default(),
                scheduler: Arc::new(Scheduler::new(SchedulerConfig::default(), events.clone())),
                events,
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

    /// The scheduler (replica groups, affinity bindings, the decisions it made).
    pub fn scheduler(&self) -> &Arc<Scheduler> {
        &self.inner.scheduler
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
        self.add_with(spec, false).await
    }

    async fn add_with(&self, spec: ServerSpec, held: bool) -> Result<String, Error> {
        let id = spec.server_id();
        let _reservation = self.inner.reserve_name(&spec)?;
        let mut era_hint = None;
        let reason = if spec.enabled { hold::CONNECTING_REASON } else { "disabled in configuration" };
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
            probe_now: Notify::new(),
            listing: tokio::sync::Mutex::new(()),
            listed: Mutex::new(Listed::default()),
            sessions: Mutex::new(HashMap::new()),
            calls: Arc::default(),
            load: Arc::default(),
            hold: Mutex::default(),
        });
        if held {
            Inner::hold(&entry);
        }
        // Inserted before the reservation is released (on return), so the name is never free in between.
        self.inner.servers.write().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), entry.clone());
        self.inner.version.fetch_add(1, std::sync::atomic::Ordering::Release);
        if entry.spec.enabled {
            self.inner.tracker.spawn(supervise::supervise(self.inner.clone(), entry));
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

    /// Waits until no enabled server is `pending` (or the timeout passes); returns the views.
    pub async fn wait_settled(&self, timeout: Duration) -> Vec<ServerView> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.inner.changed.notified();
            let views = self.servers();
            let pending = views.iter().any(|v| {
                v.state == ServerState::Pending
                    && v.reason != "disabled in configuration"
                    && v.reason != HELD_REASON
            });
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
}
