//! Handshake records (one per attempt, successful or not: stored and published) and what the
//! registry does right after a handshake: the options it connects with, and asking a legacy
//! server that logs for every level.

use serde_json::Value;
use switchboard_store::HandshakeRecord;
use switchboard_transport::{ConnectOptions, Handshake, HandshakeFailure, McpClient};
use switchboard_wire::Era;

use super::Inner;
use super::entry::{ServerEntry, read};
use super::negotiation;
use crate::events::{Event, now_ms};

/// Asks a 2025-11-25 server that logs for every level: the endpoint filters log messages
/// per caller (a session's own `logging/setLevel`, a 2026 request's `_meta` logLevel).
pub(super) async fn open_logging(client: &McpClient) {
    let hs = client.handshake();
    if hs.era == Era::Legacy
        && hs.server_capabilities.get("logging").is_some()
        && let Err(e) = client.request("logging/setLevel", serde_json::json!({"level": "debug"})).await
    {
        tracing::debug!(error = %e, "logging/setLevel refused");
    }
}

impl Inner {
    /// Stores `record` and publishes it, after one [`Event::Negotiation`] per step of the
    /// handshake (`steps`, as the client wrote them; see `negotiation`).
    pub(super) async fn record_handshake(
        &self,
        entry: &ServerEntry,
        record: HandshakeRecord,
        steps: &[String],
    ) {
        let mut record = record;
        if let Some(store) = &self.store {
            match store.insert_handshake(&record).await {
                Ok(id) => record.id = Some(id),
                Err(e) => tracing::warn!(error = %e, "could not persist handshake"),
            }
        }
        if self.events.active() {
            for event in negotiation::events(&entry.spec.name, steps, &record) {
                self.events.publish(event);
            }
        }
        self.events.publish(Event::Handshake { server: entry.spec.name.clone(), record: Box::new(record) });
    }

    pub(super) fn connect_options(&self, entry: &ServerEntry) -> ConnectOptions {
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
