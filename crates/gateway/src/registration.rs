//! Self-registration: MCP servers that announce themselves to the router instead of being
//! configured (`docs/registration.md` is the protocol). `POST /register` makes the router
//! connect to the server's URL (only when the allowlist, [`allow`], permits it), handshake,
//! and verify the claimed MCP capabilities against what the server advertises; the server is
//! then in the registry but held (`pending`, not routable) until `POST /confirm`. `POST
//! /status` carries its load reports to the scheduler; `DELETE /register/{server_id}` drains
//! and removes it.
//!
//! It lives in the gateway beside `/mcp` because it is part of the router's HTTP face and
//! shares its token; it reaches the registry only through its public handle (add held,
//! confirm, report load, drain, remove), so the data plane knows nothing of it. Every table
//! fed from outside is bounded: the request body, the metadata, and the number of
//! self-registered servers.

pub mod allow;
mod handlers;
pub mod wire;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use switchboard_router::Registry;
use switchboard_router::labels::KnownLabels;

pub use self::allow::Allowlist;
pub use self::wire::RegistrationError;
use crate::auth::BearerToken;

/// The MCP revisions a router speaks by default.
pub const DEFAULT_MCP_VERSIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// The encodings the router speaks, in its order of preference.
pub const ENCODINGS: [&str; 2] = ["json", "sse"];
/// Default path of `POST /register` (and the prefix of `DELETE /register/{server_id}`).
pub const DEFAULT_REGISTRATION_PATH: &str = "/register";
/// Default path of `POST /confirm`.
pub const DEFAULT_CONFIRM_PATH: &str = "/confirm";
/// Default path of `POST /status`.
pub const DEFAULT_STATUS_PATH: &str = "/status";
/// Default limit of self-registered servers.
pub const DEFAULT_MAX_SERVERS: usize = 64;
/// Default limit of a registration's `metadata`, serialised.
pub const DEFAULT_MAX_METADATA_BYTES: usize = 4096;
/// Default limit of a request body.
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;
/// Default time a registration waits for the server's handshake.
pub const DEFAULT_CONNECT_WAIT: Duration = Duration::from_secs(10);
/// Default time a deregistration waits for the calls in flight.
pub const DEFAULT_DRAIN_WAIT: Duration = Duration::from_secs(30);

/// Where the protocol's routes are mounted (fixed once the listener is built).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationPaths {
    /// `POST` registers; `DELETE {registration}/{server_id}` deregisters.
    pub registration: String,
    /// `POST` confirms.
    pub confirm: String,
    /// `POST` reports load.
    pub status: String,
}

impl Default for RegistrationPaths {
    fn default() -> Self {
        RegistrationPaths {
            registration: DEFAULT_REGISTRATION_PATH.into(),
            confirm: DEFAULT_CONFIRM_PATH.into(),
            status: DEFAULT_STATUS_PATH.into(),
        }
    }
}

/// How registrations are judged (swappable at run time: [`Registration::set_config`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RegistrationConfig {
    /// This router's id, answered to every registration.
    pub router_id: String,
    /// The MCP revisions accepted.
    pub mcp_versions: Vec<String>,
    /// Which URLs the router connects to.
    pub allow: Allowlist,
    /// The capability labels a server may claim.
    pub labels: KnownLabels,
    /// How often registered servers should report their load.
    pub load_sampling_interval: Duration,
    /// Limit of self-registered servers at once.
    pub max_servers: usize,
    /// Limit of a registration's `metadata`, serialised.
    pub max_metadata_bytes: usize,
    /// How long a registration waits for the server's handshake.
    pub connect_wait: Duration,
    /// How long a deregistration waits for calls in flight before cancelling them.
    pub drain_wait: Duration,
}

impl Default for RegistrationConfig {
    fn default() -> Self {
        RegistrationConfig {
            router_id: "switchboard".into(),
            mcp_versions: DEFAULT_MCP_VERSIONS.iter().map(|s| (*s).to_owned()).collect(),
            allow: Allowlist::default(),
            labels: KnownLabels::default(),
            load_sampling_interval: switchboard_router::schedule::config::DEFAULT_LOAD_SAMPLING_INTERVAL,
            max_servers: DEFAULT_MAX_SERVERS,
            max_metadata_bytes: DEFAULT_MAX_METADATA_BYTES,
            connect_wait: DEFAULT_CONNECT_WAIT,
            drain_wait: DEFAULT_DRAIN_WAIT,
        }
    }
}

/// Where one registration is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `/register` is connecting to it.
    Connecting,
    /// Verified, waiting for `/confirm`.
    Held,
    /// Confirmed: routable while healthy.
    Confirmed,
}

/// One self-registered server.
#[derive(Debug, Clone)]
struct Registered {
    phase: Phase,
    /// The verified capabilities.
    capabilities: Vec<String>,
    /// The encodings both sides speak.
    encodings: Vec<String>,
}

struct Shared {
    registry: Registry,
    config: RwLock<Arc<RegistrationConfig>>,
    paths: RegistrationPaths,
    /// Self-registered servers, by server_id (at most `max_servers`).
    servers: Mutex<BTreeMap<String, Registered>>,
    token: Option<BearerToken>,
    body_limit: usize,
}

/// The registration service (cheap to clone).
#[derive(Clone)]
pub struct Registration {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("paths", &self.shared.paths).finish_non_exhaustive()
    }
}

impl Registration {
    /// The service over `registry`; when `token` is set every route requires it.
    pub fn new(
        registry: Registry,
        config: RegistrationConfig,
        paths: RegistrationPaths,
        token: Option<BearerToken>,
    ) -> Registration {
        Registration {
            shared: Arc::new(Shared {
                registry,
                config: RwLock::new(Arc::new(config)),
                paths,
                servers: Mutex::new(BTreeMap::new()),
                token,
                body_limit: DEFAULT_BODY_LIMIT,
            }),
        }
    }

    /// The settings now.
    pub fn config(&self) -> Arc<RegistrationConfig> {
        self.shared.config.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Swaps the settings (a configuration reload); registrations in progress keep the ones
    /// they started with.
    pub fn set_config(&self, config: RegistrationConfig) {
        *self.shared.config.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(config);
    }

    /// The server_ids registered now (connecting, held or confirmed).
    pub fn registered(&self) -> Vec<String> {
        self.shared.lock().keys().cloned().collect()
    }

    /// The protocol's routes, behind the token when one is set.
    pub fn router(&self) -> Router {
        let p = &self.shared.paths;
        let deregister = format!("{}/{{server_id}}", p.registration.trim_end_matches('/'));
        let router = Router::new()
            .route(&p.registration, post(handlers::register))
            .route(&p.confirm, post(handlers::confirm))
            .route(&p.status, post(handlers::status))
            .route(&deregister, delete(handlers::deregister))
            .layer(DefaultBodyLimit::max(self.shared.body_limit))
            .with_state(self.clone());
        match &self.shared.token {
            Some(token) => router.layer(axum::middleware::from_fn_with_state(token.clone(), guard)),
            None => router,
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Registered>> {
        self.servers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The token check, answering in the protocol's error shape.
async fn guard(State(token): State<BearerToken>, req: Request, next: Next) -> Response {
    match crate::auth::refusal(&token, req.headers()) {
        Some((challenge, message)) => RegistrationError::Unauthorized(challenge, message).into_response(),
        None => next.run(req).await,
    }
}
