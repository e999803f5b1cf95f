//! The control panel's side of the composition: the admin API's state built from the app's
//! handles and configuration ([`admin_state`]), and the effective settings it shows
//! ([`settings_json`]). The admin crate itself (`switchboard-admin`) knows nothing of files
//! or flags; this module hands it what it needs.

use serde_json::{Value, json};
use switchboard_admin::{AdminConfig, AdminState, AdminToken, FrameRing, Listeners, SessionsSource};
use switchboard_router::{EventBus, Registry};
use switchboard_store::Store;
use tokio_util::sync::CancellationToken;

use crate::config::AppConfig;

/// The effective configuration, as `/api/settings` shows it (the admin API redacts secrets
/// again; the servers come from the registry).
pub fn settings_json(config: &AppConfig) -> Value {
    let r = &config.registry;
    let e = &config.endpoint;
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    json!({
        "source": config.source,
        "embedded_default": config.embedded_default,
        "warnings": config.warnings,
        "store": {"path": config.db_path.display().to_string()},
        "router": {
            "refresh_interval_ms": ms(r.refresh_interval),
            "handshake_timeout_ms": ms(r.handshake_timeout),
            "request_timeout_ms": ms(r.request_timeout),
            "stats_interval_ms": ms(r.stats_interval),
            "max_call_connections": r.max_call_connections,
            "call_connection_idle_ms": ms(r.call_connection_idle),
            "call_connection_wait_ms": ms(r.call_connection_wait),
        },
        "endpoint": {
            "listen": e.listen.map(|a| a.to_string()),
            "prefix": format!("{:?}", e.federation.mode),
            "separator": e.federation.separator,
            "allowed_origins": e.allowed_origins,
            "body_limit": e.body_limit,
            "session_key_file": e.session_key_file.as_ref().map(|p| p.display().to_string()),
            "answer_timeout_ms": ms(e.answer_timeout),
            "header_read_timeout_ms": ms(e.listener.header_read_timeout),
            "idle_timeout_ms": ms(e.listener.idle_timeout),
            "max_connections": e.listener.max_connections,
            "page_size": e.page_size,
            "answer_limit_bytes": e.answer_limit,
            "call_timeout_ms": ms(config.call_timeout),
            "traces_kept": config.traces_kept,
            "token_env": config.token_env,
        },
        "vision": {"image_allow": config.image_allow},
    })
}

/// The handles the admin API is built from.
pub struct PanelHandles {
    /// The registry.
    pub registry: Registry,
    /// The store.
    pub store: Store,
    /// The event bus.
    pub events: EventBus,
    /// Bound listeners, filled in by [`crate::App::listen`].
    pub listeners: Listeners,
    /// Fires when the listeners drain: event viewers close.
    pub shutdown: CancellationToken,
    /// The gateway's sessions table, as JSON.
    pub sessions: Option<SessionsSource>,
}

/// The admin API's state for `config`, requiring `token`.
pub fn admin_state(config: &AppConfig, handles: PanelHandles, token: AdminToken) -> AdminState {
    AdminState::new(AdminConfig {
        registry: handles.registry,
        store: handles.store,
        events: handles.events,
        settings: settings_json(config),
        token,
        allowed_origins: config.endpoint.allowed_origins.clone(),
        listeners: handles.listeners,
        shutdown: handles.shutdown,
        ring: FrameRing::default(),
        sessions: handles.sessions,
    })
}
