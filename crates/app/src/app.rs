//! [`App`]: the whole router built from one [`AppConfig`] — the one entry point every
//! binary, benchmark and test starts Switchboard through.
//!
//! [`App::build`] opens the store, the event bus, the registry with the built-in servers and
//! the configured ones, the blob store, the trace writer, the [`Gateway`] and the HTTP router
//! (behind the bearer token when one is set), with the admin API (`/api`, always behind its
//! own token: [`App::admin_token`], [`App::panel_url`]) and the embedded UI beside it
//! (`switchboard-admin`). Nothing is served until asked: [`App::listen`]
//! binds an HTTP listener (any number of them), [`App::serve_stdio`] serves one MCP client on
//! a pair of pipes. [`App::shutdown`] stops everything in order:
//!
//! 1. the listeners stop accepting (a new connection is refused) and the requests in flight
//!    finish, bounded by the deadline; WebSocket connections close;
//! 2. stdio clients end, then diagnosis runs still going are cancelled and recorded;
//! 3. the registry shuts down (supervised child processes are stopped) — only now, so the
//!    calls drained in step 1 still had their upstreams;
//! 4. the trace writer stores what is queued;
//! 5. the store closes.
//!
//! Why the stages have their own tokens rather than children of [`App::cancel_token`]: a child
//! token fires with its parent, so the registry would stop the moment shutdown is asked for,
//! under the requests still draining. The app's token only *asks*; [`App::shutdown`] does the
//! stopping, stage by stage. Dropping an `App` without `shutdown` cancels every stage at once.
//!
//! # For an embedding shell (the desktop app)
//!
//! ```no_run
//! # async fn shell() -> anyhow::Result<()> {
//! use std::time::Duration;
//! use switchboard_app::app::{App, AppOptions};
//! use switchboard_app::auth::BearerToken;
//!
//! let config = switchboard_app::config::load(None, &[], None)?;
//! // A per-launch token: the shell hands it to its web view, nobody else knows it.
//! let token = BearerToken::new("per-launch-secret");
//! let app = App::build(&config, AppOptions { token, ..AppOptions::default() }).await?;
//! let addr = app.listen("127.0.0.1:0".parse()?).await?; // the port the OS chose
//! println!("MCP endpoint at http://{addr}/mcp");
//! // … on quit (or when `app.cancel_token()` was cancelled elsewhere):
//! app.shutdown(Duration::from_secs(5)).await;
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use switchboard_admin::{AdminState, AdminToken, Listeners};
use switchboard_gateway::registration::Registration;
use switchboard_gateway::{Gateway, GatewayConfig};
use switchboard_router::{EventBus, Registry};
use switchboard_store::{Store, StoreConfig};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard, WaitForCancellationFutureOwned};

use crate::auth::BearerToken;
use crate::blobs::{BlobStore, DEFAULT_MAX_BLOB};
use crate::builtins::{Builtins, BuiltinsConfig};
use crate::config::{AppConfig, RouterSettings};
use crate::diagnosis::{Diagnosis, DiagnosisConfig};
use crate::edge::EdgeConfig;
use crate::endpoint::EndpointConfig;
use crate::http::{HttpState, ListenerConfig};
use crate::reload::{ReloadConfig, ReloadStatus, Reloader};
use crate::traces::{TraceSink, TracesConfig};

/// Time each stage after the drain gets at least, even when the drain used up the deadline:
/// child processes are asked to stop rather than left behind.
pub const CLEANUP_GRACE: Duration = Duration::from_secs(2);

/// Choices about how the app is built that are not the user's configuration.
#[derive(Debug, Clone, Default)]
pub struct AppOptions {
    /// Keep the router's database in memory instead of at `config.db_path` (tests). The blob
    /// directory and the knowledge base file still live beside `config.db_path`.
    pub in_memory_store: bool,
    /// The bearer token every route but `/healthz` requires (HTTP and WebSocket; stdio clients
    /// are the process owner's). `None`: no token.
    pub token: Option<BearerToken>,
    /// Largest blob accepted (`None`: [`DEFAULT_MAX_BLOB`]).
    pub max_blob: Option<u64>,
    /// Events the bus keeps for a slow subscriber (`None`: the bus's default).
    pub event_capacity: Option<usize>,
    /// The token the admin API (`/api`, the control panel) requires. `None`: a per-launch
    /// random one (32 bytes from the OS), which [`App::admin_token`] gives to whoever opens
    /// the panel. `/api` is never open.
    pub admin_token: Option<AdminToken>,
    /// How the diagnosis service is set up (`None`: its defaults).
    pub diagnosis: Option<DiagnosisConfig>,
}

/// Errors of a running app.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// The listener's address could not be bound.
    #[error("binding the listener on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The app was asked to shut down; it serves nothing new.
    #[error("the router is shutting down")]
    ShuttingDown,
}

/// The tokens of the shutdown stages, in the order [`App::shutdown`] fires them.
#[derive(Debug)]
struct Stages {
    /// Listeners stop accepting and drain; WebSocket connections close.
    listeners: CancellationToken,
    /// Stdio clients end.
    stdio: CancellationToken,
    /// The trace writer stores what is queued and ends.
    traces: CancellationToken,
}

/// The running router (see the module docs).
pub struct App {
    registry: Registry,
    store: Store,
    events: EventBus,
    blobs: BlobStore,
    gateway: Gateway,
    /// Self-registration (`/register`, `/confirm`, `/status`).
    registration: Registration,
    /// The `[router]` settings now (swapped by a reload).
    settings: watch::Sender<Arc<RouterSettings>>,
    /// The outcome of the last config reload.
    reloads: watch::Sender<ReloadStatus>,
    /// The endpoint's settings; its per-instance state (parked calls, subscriptions, change
    /// notes) is shared with the gateway's copy.
    endpoint: Arc<EndpointConfig>,
    router: Router,
    /// The admin API (control panel) state.
    admin: AdminState,
    /// The diagnosis service (runs started by the panel and by `diagnose`).
    diagnosis: Diagnosis,
    /// Bound listeners, for the admin API's Origin rule and overview.
    bound: Listeners,
    federation: switchboard_router::federation::FederationConfig,
    limits: ListenerConfig,
    traces: TraceSink,
    trace_writer: JoinHandle<()>,
    /// Fires when shutdown is asked for; see the module docs for why nothing hangs off it.
    cancel: CancellationToken,
    stages: Stages,
    /// Listener tasks, each ending once it has drained.
    listeners: Mutex<Vec<JoinHandle<()>>>,
    /// Stdio client tasks.
    stdio: Mutex<Vec<JoinHandle<()>>>,
    /// Cancels every stage (and the registry) when the app is dropped without `shutdown`.
    _root: DropGuard,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("store", &self.store)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Builds the router from `config`: store, event bus, registry with the built-in servers
    /// (and the configured ones, connecting in the background), blob store, trace writer,
    /// gateway and HTTP router. Flow runs a crash left running are marked interrupted.
    ///
    /// # Errors
    /// A store that cannot be opened (locked, foreign, corrupt), a knowledge base or image
    /// allowlist the built-in servers refuse, an unreadable session key file, a blob directory
    /// that cannot be created, a duplicate server.
    pub async fn build(config: &AppConfig, options: AppOptions) -> anyhow::Result<App> {
        let root = CancellationToken::new();
        let store = if options.in_memory_store {
            Store::open_in_memory().await?
        } else {
            Store::open(&StoreConfig { path: config.db_path.clone(), ..StoreConfig::default() }).await?
        };
        let events = options.event_capacity.map(EventBus::new).unwrap_or_default();
        let registry =
            Registry::new(config.registry.clone(), Some(store.clone()), events.clone(), root.child_token());
        registry.scheduler().set_config(config.router.scheduler.clone());
        let builtins = Builtins::new(&BuiltinsConfig {
            knowledge_db: Some(crate::builtins::knowledge_db_beside(&config.db_path)),
            blob_dir: Some(crate::builtins::blob_dir_beside(&config.db_path)),
            image_allow: config.image_allow.clone(),
            ..Default::default()
        })
        .await?;
        registry.set_builtins(Arc::new(builtins));
        let blobs = BlobStore::open(
            crate::builtins::blob_dir_beside(&config.db_path),
            options.max_blob.unwrap_or(DEFAULT_MAX_BLOB),
        )?;
        let endpoint = EndpointConfig {
            session_key: crate::session::SessionKey::configured_or_random(
                config.endpoint.session_key_file.as_deref(),
            )?,
            federation: config.endpoint.federation.clone(),
            allowed_origins: config.endpoint.allowed_origins.clone(),
            body_limit: config.endpoint.body_limit,
            answer_timeout: config.endpoint.answer_timeout,
            pending_wait: config.registry.handshake_timeout,
            page_size: config.endpoint.page_size,
            ..Default::default()
        };
        // Runs a crash left "running" are failed, not forever in progress.
        store.interrupt_running_runs(crate::now_ms()).await?;
        registry.add_all(config.servers.clone()).await?;

        let stages =
            Stages { listeners: root.child_token(), stdio: root.child_token(), traces: root.child_token() };
        let (traces, trace_writer) = TraceSink::spawn(
            Some(store.clone()),
            Some(events.clone()),
            &TracesConfig { keep: config.traces_kept, ..Default::default() },
            stages.traces.clone(),
        );
        let edge = EdgeConfig {
            call_timeout: config.call_timeout,
            traces: Some(traces.clone()),
            answer_limit: config.endpoint.answer_limit,
        };
        let gateway = Gateway::new(
            Some(registry.clone()),
            GatewayConfig { endpoint: endpoint.clone(), edge },
            stages.listeners.clone(),
        );
        let endpoint = Arc::new(endpoint);
        let state = HttpState { blobs: blobs.clone(), endpoint: endpoint.clone() };
        let admin_token = match options.admin_token {
            Some(t) => t,
            None => AdminToken::random()?,
        };
        let bound = Listeners::default();
        let admin = crate::panel::admin_state(
            config,
            crate::panel::PanelHandles {
                registry: registry.clone(),
                store: store.clone(),
                events: events.clone(),
                listeners: bound.clone(),
                shutdown: stages.listeners.clone(),
                sessions: Some({
                    let gateway = gateway.clone();
                    Arc::new(move || serde_json::to_value(gateway.sessions()).unwrap_or_default())
                }),
            },
            admin_token,
        );
        let invoker = crate::invoker::RegistryInvoker::with_federation(
            registry.clone(),
            config.endpoint.federation.clone(),
        );
        let diagnosis = Diagnosis::new(
            invoker,
            store.clone(),
            events.clone(),
            blobs.clone(),
            options.diagnosis.clone().unwrap_or_default(),
        );
        // More `/api` routes (the diagnosis routes) join the admin API here, behind its guard.
        let extra_api = crate::diagnosis::routes::routes(diagnosis.clone());
        // Self-registration sits beside `/mcp` behind the same token, checked by its own guard
        // so refusals come in the protocol's error shape.
        let registration = Registration::new(
            registry.clone(),
            config.router.registration.clone(),
            config.router.registration_paths.clone(),
            options.token.clone(),
        );
        let router = crate::http::with_token(crate::http::router_with(state, &gateway), options.token)
            .merge(registration.router())
            .merge(admin.router(extra_api));
        Ok(App {
            registry,
            store,
            events,
            blobs,
            gateway,
            registration,
            settings: watch::Sender::new(Arc::new(config.router.clone())),
            reloads: watch::Sender::new(ReloadStatus::default()),
            endpoint,
            router,
            admin,
            diagnosis,
            bound,
            federation: config.endpoint.federation.clone(),
            limits: config.endpoint.listener,
            traces,
            trace_writer,
            cancel: CancellationToken::new(),
            stages,
            listeners: Mutex::new(Vec::new()),
            stdio: Mutex::new(Vec::new()),
            _root: root.drop_guard(),
        })
    }

    /// The flow engine's way to the registry: tools named as the endpoint names them (the
    /// configured prefix mode and separator), routed through the one routing seam.
    pub fn invoker(&self) -> crate::invoker::RegistryInvoker {
        crate::invoker::RegistryInvoker::with_federation(self.registry.clone(), self.federation.clone())
    }

    /// The full HTTP application (`/healthz`, blobs and `/mcp` behind the bearer token when one
    /// is set; `/api` behind the admin token, always; the UI's files open): for tests that call
    /// it without a socket, or another server.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// The admin API's token: the panel's URL carries it ([`App::panel_url`]). Never log it.
    pub fn admin_token(&self) -> &AdminToken {
        self.admin.token()
    }

    /// The diagnosis service: runs of the default flow on uploaded images, for the panel's
    /// `/api/runs` and the `diagnose` command.
    pub fn diagnosis(&self) -> &Diagnosis {
        &self.diagnosis
    }

    /// The admin API (control panel) state: its guard, the frame ring.
    pub fn admin(&self) -> &AdminState {
        &self.admin
    }

    /// The control panel's URL on the listener at `addr`, the token in the fragment (which a
    /// browser never sends to a server): `http://ADDR/#token=TOKEN`.
    pub fn panel_url(&self, addr: SocketAddr) -> String {
        format!("http://{addr}/#token={}", self.admin.token().secret())
    }

    /// The registry of upstream servers.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The store (server records, traces, flow runs).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The event bus everything publishes on.
    pub fn events(&self) -> &EventBus {
        &self.events
    }

    /// The blob store.
    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// The MCP endpoint.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    /// Self-registration: the servers registered, and its settings (swapped on reload).
    pub fn registration(&self) -> &Registration {
        &self.registration
    }

    /// The `[router]` settings (registration, labels, the scheduler's [`SchedulerConfig`](
    /// switchboard_router::SchedulerConfig)); a config reload swaps them, the receiver sees
    /// each new value whole.
    pub fn router_settings(&self) -> watch::Receiver<Arc<RouterSettings>> {
        self.settings.subscribe()
    }

    /// The outcome of config reloads (see [`App::watch_config`]).
    pub fn reloads(&self) -> watch::Receiver<ReloadStatus> {
        self.reloads.subscribe()
    }

    /// Watches the config file `config.path` until shutdown and applies its changes (see
    /// [`crate::reload`]); `current` is the configuration the app was built from.
    pub fn watch_config(&self, config: ReloadConfig, current: AppConfig) {
        let reloader = Reloader {
            registry: self.registry.clone(),
            registration: self.registration.clone(),
            settings: self.settings.clone(),
            status: self.reloads.clone(),
            current,
            baseline: crate::reload::fingerprint(&config.path),
            config,
        };
        let task = tokio::spawn(reloader.run(self.stages.listeners.child_token()));
        lock(&self.listeners).push(task);
    }

    /// The endpoint's settings and its live per-instance state: calls parked for a client's
    /// answers, resource subscriptions, change notes (for tests and status views).
    pub fn endpoint(&self) -> &EndpointConfig {
        &self.endpoint
    }

    /// Where requests hand their traces.
    pub fn traces(&self) -> &TraceSink {
        &self.traces
    }

    /// The app's token: cancelling it asks for shutdown (a signal handler, the end of a stdio
    /// client, a window closing). Whoever owns the `App` then awaits [`App::shutdown`].
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Resolves once shutdown was asked for through [`App::cancel_token`].
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Binds `addr` (port 0 picks one) and serves the HTTP application there with the
    /// configured connection limits until shutdown; returns the bound address.
    ///
    /// # Errors
    /// [`AppError::Bind`] when the address cannot be bound, [`AppError::ShuttingDown`] once
    /// shutdown was asked for.
    pub async fn listen(&self, addr: SocketAddr) -> Result<SocketAddr, AppError> {
        if self.cancel.is_cancelled() {
            return Err(AppError::ShuttingDown);
        }
        let bind = |source| AppError::Bind { addr, source };
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(bind)?;
        let bound = listener.local_addr().map_err(bind)?;
        let (router, limits, stop) = (self.router.clone(), self.limits, self.stages.listeners.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = crate::http::serve_with(listener, router, limits, stop).await {
                tracing::error!(error = %e, "HTTP listener failed");
            }
        });
        lock(&self.listeners).push(task);
        self.bound.add(bound);
        tracing::info!(%bound, "MCP endpoint listening");
        Ok(bound)
    }

    /// Serves one MCP client on `input`/`output` (newline-delimited JSON-RPC) until the input
    /// ends or shutdown reaches the stdio stage. The returned future resolves when this client
    /// has ended; `serve` uses it to shut down when stdin closes.
    pub fn serve_stdio<R, W>(&self, input: R, output: W) -> WaitForCancellationFutureOwned
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let ended = CancellationToken::new();
        let done = ended.clone();
        let gateway = self.gateway.clone();
        let stop = self.stages.stdio.child_token();
        let task = tokio::spawn(async move {
            gateway.serve_stdio(input, output, stop).await;
            done.cancel();
        });
        lock(&self.stdio).push(task);
        ended.cancelled_owned()
    }

    /// Stops the app in order (see the module docs): the listeners stop accepting and drain
    /// the requests in flight for at most `deadline`, stdio clients end, the registry stops
    /// its servers, the trace writer flushes, the store closes. Stages after the drain get
    /// what is left of `deadline`, but at least [`CLEANUP_GRACE`] each.
    pub async fn shutdown(self, deadline: Duration) {
        let end = Instant::now() + deadline;
        let left = move || end.saturating_duration_since(Instant::now());
        self.cancel.cancel();
        tracing::debug!("shutdown: draining the listeners");
        self.stages.listeners.cancel();
        let listeners = std::mem::take(&mut *lock(&self.listeners));
        join_or_abort(listeners, end).await;
        tracing::debug!("shutdown: ending stdio clients");
        self.stages.stdio.cancel();
        let stdio = std::mem::take(&mut *lock(&self.stdio));
        join_or_abort(stdio, end.max(Instant::now() + CLEANUP_GRACE)).await;
        tracing::debug!("shutdown: cancelling diagnosis runs");
        self.diagnosis.shutdown(left().max(CLEANUP_GRACE)).await;
        tracing::debug!("shutdown: stopping the upstream servers");
        self.registry.shutdown(left().max(CLEANUP_GRACE)).await;
        tracing::debug!("shutdown: flushing traces");
        self.stages.traces.cancel();
        drop(self.traces);
        drop(self.router);
        drop(self.admin);
        drop(self.gateway);
        let _ = tokio::time::timeout(left().max(CLEANUP_GRACE), self.trace_writer).await;
        self.store.close().await;
        tracing::debug!("shutdown: done");
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits for `tasks` until `end`; aborts the ones still running then.
async fn join_or_abort(tasks: Vec<JoinHandle<()>>, end: Instant) {
    for mut task in tasks {
        if tokio::time::timeout_at(end, &mut task).await.is_err() {
            tracing::warn!("shutdown deadline passed with work still in flight; abandoning it");
            task.abort();
        }
    }
}
