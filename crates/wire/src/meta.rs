//! `_meta` keys defined by the MCP revisions.
//!
//! 2026-07-28 moves per-connection state of 2025-11-25 (protocol version, client
//! capabilities, client info, log level) into every request's `params._meta`.

/// Request `_meta`: protocol version of this request (required in 2026-07-28).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// Request `_meta`: client capabilities (required in 2026-07-28; `{}` means none).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Request `_meta`: client name and version (should).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Request `_meta`: minimum log level for `notifications/message` on this request.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta`: server name and version.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` on a `subscriptions/listen` stream.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Request `_meta`: progress token (both revisions).
pub const PROGRESS_TOKEN: &str = "progressToken";
/// W3C trace context.
pub const TRACEPARENT: &str = "traceparent";
/// W3C trace state.
pub const TRACESTATE: &str = "tracestate";
/// Switchboard's own `_meta` key on results it degraded by fallback (see the scheduler).
pub const SWITCHBOARD_ROUTE: &str = "dev.switchboard/route";
/// A 2026-07-28 caller's affinity key in request `_meta` (a string; the header
/// [`crate::headers::AFFINITY_KEY`] says the same). 2025-11-25 callers' key is their session.
pub const AFFINITY_KEY: &str = "dev.switchboard/affinityKey";
/// A caller's idempotency key in request `_meta`: the caller promises that repeating the
/// request is safe, so the router may retry it on another upstream after a failure that may
/// have reached the first (the header [`crate::headers::IDEMPOTENCY_KEY`] says the same).
pub const IDEMPOTENCY_KEY: &str = "dev.switchboard/idempotencyKey";
/// Capability labels a call asks of its upstream: `{"core": [...], "optional": [...]}`.
pub const CAPABILITIES: &str = "dev.switchboard/capabilities";
