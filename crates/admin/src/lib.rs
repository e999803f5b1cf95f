//! Switchboard's admin API: the control panel's one way into the router (`docs/admin-api.md`).
//!
//! - [`access`]: the Origin rule and the token, an axum middleware every `/api` route sits
//!   behind (the app may put other `/api` routes behind it too: [`AdminState::router`] takes
//!   them);
//! - [`api`]: the JSON commands, one module per resource (overview, servers, records —
//!   handshakes and traces —, frames, settings);
//! - [`events`]: the event WebSocket `/api/events` (snapshot, batches, lag reports);
//! - [`ring`]: the bounded frame ring that `/api/frames`, its export and snapshots read;
//! - [`ui`]: the built UI, embedded at compile time, served without the token;
//! - [`typescript`]: the UI's types (`ui/src/generated/admin.ts`), generated from these.
//!
//! The boundary: this crate takes handles (registry, store, event bus) and typed settings from
//! the app and never reads files, flags or the environment; the app depends on it, not the
//! other way round.

pub mod access;
pub mod api;
pub mod error;
pub mod events;
pub mod ring;
pub mod typescript;
pub mod ui;

use std::sync::Arc;

use axum::Router;
use serde_json::Value;
use switchboard_router::{EventBus, Registry};
use switchboard_store::Store;
use tokio_util::sync::CancellationToken;

pub use access::{Access, AdminToken, Listeners};
pub use error::AdminError;
pub use ring::FrameRing;

/// Everything the admin API is built from (see [`AdminState::new`]).
#[derive(Clone)]
pub struct AdminConfig {
    /// The registry of upstream servers.
    pub registry: Registry,
    /// The store (handshakes, traces, runs).
    pub store: Store,
    /// The event bus.
    pub events: EventBus,
    /// The effective configuration as JSON (without the servers, which the registry gives);
    /// `/api/settings` redacts secrets in it again before answering.
    pub settings: Value,
    /// The panel's token.
    pub token: AdminToken,
    /// Origins allowed besides the router's own and the desktop shell's.
    pub allowed_origins: Vec<String>,
    /// The bound listeners (the Origin rule and the overview read them).
    pub listeners: Listeners,
    /// Fires when the app shuts down: event viewers are closed.
    pub shutdown: CancellationToken,
    /// The frame ring.
    pub ring: FrameRing,
    /// Where `GET /api/sessions` and the snapshot read the downstream sessions from (the
    /// gateway's table, handed in by the app so this crate needs no gateway); `None`: the
    /// route answers 404 and the snapshot carries `null`.
    pub sessions: Option<SessionsSource>,
}

/// A reader of the downstream sessions table, as JSON (see [`AdminConfig::sessions`]).
pub type SessionsSource = std::sync::Arc<dyn Fn() -> Value + Send + Sync>;

impl std::fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminConfig")
            .field("store", &self.store)
            .field("allowed_origins", &self.allowed_origins)
            .field("listeners", &self.listeners)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) config: AdminConfig,
    pub(crate) access: Access,
    pub(crate) started: std::time::Instant,
}

/// The admin API's shared state. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AdminState {
    pub(crate) inner: Arc<Inner>,
}

impl AdminState {
    /// The state built from `config`.
    pub fn new(config: AdminConfig) -> AdminState {
        let access =
            Access::new(config.token.clone(), config.allowed_origins.clone(), config.listeners.clone());
        AdminState { inner: Arc::new(Inner { config, access, started: std::time::Instant::now() }) }
    }

    /// The guard of `/api` (to put other routes behind it).
    pub fn access(&self) -> &Access {
        &self.inner.access
    }

    /// The panel's token.
    pub fn token(&self) -> &AdminToken {
        self.inner.access.token()
    }

    /// The frame ring.
    pub fn ring(&self) -> &FrameRing {
        &self.inner.config.ring
    }

    pub(crate) fn config(&self) -> &AdminConfig {
        &self.inner.config
    }

    /// The whole admin application: the `/api` routes of this crate merged with `extra`
    /// (other `/api` routes, e.g. the diagnosis routes), all behind the guard ([`access`]),
    /// and the UI ([`ui`]) as the fallback for every other path, without the guard.
    pub fn router(&self, extra: Router) -> Router {
        let api = api::routes(self.clone()).merge(events::routes(self.clone())).merge(extra);
        self.access().layer(api).fallback(ui::serve)
    }
}
