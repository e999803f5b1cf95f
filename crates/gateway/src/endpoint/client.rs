//! Who is calling, as far as answering and forwarding need to know, and what the router
//! offers them (its capabilities, from the ready upstreams').

use serde_json::{Map, Value, json};
use switchboard_router::Registry;
use switchboard_wire::method;

use crate::bridge::level_rank;
use crate::view::View;

/// The downstream caller of one request.
#[derive(Debug, Clone)]
pub(super) enum Client {
    /// A 2026-07-28 request: capabilities and log level from its `_meta`.
    Modern { caps: Value, log_level: Option<String> },
    /// A 2025-11-25 session.
    Legacy { sid: String, caps: Value, info: Value, log_level: Option<String> },
}

impl Client {
    pub(super) fn caps(&self) -> &Value {
        match self {
            Client::Modern { caps, .. } | Client::Legacy { caps, .. } => caps,
        }
    }

    /// The capability a server → client request needs, and whether the client declared it.
    pub(super) fn allows(&self, request_method: &str) -> bool {
        match capability_of(request_method) {
            Some(cap) => self.caps().get(cap).is_some(),
            None => request_method == method::PING,
        }
    }

    /// Whether a `notifications/message` at `level` reaches this client: a 2026 client gets
    /// logs only when it asked for a level; a legacy session gets all until it sets one.
    pub(super) fn wants_log(&self, level: &str) -> bool {
        match self {
            Client::Modern { log_level: None, .. } => false,
            Client::Legacy { log_level: None, .. } => true,
            Client::Modern { log_level: Some(min), .. } | Client::Legacy { log_level: Some(min), .. } => {
                level_rank(level) >= level_rank(min)
            }
        }
    }

    pub(super) fn log_level(&self) -> Option<&str> {
        match self {
            Client::Modern { log_level, .. } | Client::Legacy { log_level, .. } => log_level.as_deref(),
        }
    }
}

/// The client capability a server → client request needs.
pub(super) fn capability_of(request_method: &str) -> Option<&'static str> {
    match request_method {
        method::SAMPLING_CREATE_MESSAGE => Some("sampling"),
        method::ELICITATION_CREATE => Some("elicitation"),
        method::ROOTS_LIST => Some("roots"),
        _ => None,
    }
}

/// Server capabilities from the ready upstreams. The router propagates list changes of
/// every kind and takes resource subscriptions for the servers that support them.
pub(super) fn capabilities(registry: &Registry, view: &View, with_logging: bool) -> Map<String, Value> {
    let catalogs = &view.routes.catalogs;
    let mut capabilities = Map::new();
    if catalogs.values().any(|c| !c.tools.is_empty()) {
        capabilities.insert("tools".into(), json!({"listChanged": true}));
    }
    if catalogs.values().any(|c| !c.resources.is_empty() || !c.resource_templates.is_empty()) {
        let subscribe = catalogs.keys().any(|name| supports_subscribe(registry, name));
        capabilities.insert("resources".into(), json!({"listChanged": true, "subscribe": subscribe}));
    }
    if catalogs.values().any(|c| !c.prompts.is_empty()) {
        capabilities.insert("prompts".into(), json!({"listChanged": true}));
    }
    if catalogs.keys().any(|name| upstream_caps(registry, name).get("completions").is_some()) {
        capabilities.insert("completions".into(), json!({}));
    }
    if with_logging && catalogs.keys().any(|name| upstream_caps(registry, name).get("logging").is_some()) {
        capabilities.insert("logging".into(), json!({}));
    }
    capabilities
}

/// The capabilities a server declared in its handshake.
pub(super) fn upstream_caps(registry: &Registry, name: &str) -> Value {
    registry
        .entry(name)
        .and_then(|e| e.client())
        .map(|c| c.handshake().server_capabilities)
        .unwrap_or_default()
}

/// Whether a server takes resource subscriptions.
pub(super) fn supports_subscribe(registry: &Registry, name: &str) -> bool {
    upstream_caps(registry, name).pointer("/resources/subscribe") == Some(&json!(true))
}
