//! The downstream leg's handshake records: a client's `initialize` (2025-11-25) or
//! `server/discover` (2026-07-28) answered by the router, as a [`HandshakeRecord`] with leg
//! `downstream` and no `server_id` (the router is the server).

use std::time::Instant;

use serde_json::{Value, json};
use switchboard_store::HandshakeRecord;
use switchboard_wire::{Message, meta, method};

use super::trace::ms;
use crate::endpoint::RequestContext;

/// Whether `method` is a handshake of a downstream client.
pub(super) fn is_handshake(method: &str) -> bool {
    method == method::INITIALIZE || method == method::SERVER_DISCOVER
}

/// The record of the handshake `request_params` started and `answer` ended.
pub(super) fn record(
    method: &str,
    request_params: &Value,
    answer: &Message,
    ctx: &RequestContext,
    started: Instant,
) -> HandshakeRecord {
    let result = answer.result().cloned().unwrap_or(Value::Null);
    let field = |v: &Value, k: &str| v.get(k).cloned().unwrap_or_else(|| json!({}));
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let legacy = method == method::INITIALIZE;
    let (offered, chosen, client_caps, client_info, server_info) = if legacy {
        (
            text(&request_params["protocolVersion"]),
            text(&result["protocolVersion"]),
            field(request_params, "capabilities"),
            field(request_params, "clientInfo"),
            field(&result, "serverInfo"),
        )
    } else {
        let meta_of = |v: &Value| v.get("_meta").cloned().unwrap_or(Value::Null);
        let (request_meta, answer_meta) = (meta_of(request_params), meta_of(&result));
        let offered = text(&request_meta[meta::PROTOCOL_VERSION]);
        let supported = result["supportedVersions"].as_array().cloned().unwrap_or_default();
        let chosen = offered.clone().filter(|v| supported.iter().any(|s| s.as_str() == Some(v)));
        (
            offered,
            chosen,
            field(&request_meta, meta::CLIENT_CAPABILITIES),
            field(&request_meta, meta::CLIENT_INFO),
            field(&answer_meta, meta::SERVER_INFO),
        )
    };
    let error = answer.error().map(|e| e.message);
    HandshakeRecord {
        id: None,
        server_id: None,
        leg: "downstream".to_owned(),
        transport: ctx.transport.as_str().to_owned(),
        era: Some(if legacy { "legacy" } else { "modern" }.to_owned()),
        offered_versions: offered.into_iter().collect(),
        chosen_version: if error.is_some() { None } else { chosen },
        client_capabilities: client_caps,
        server_capabilities: field(&result, "capabilities"),
        client_info,
        server_info,
        tool_count: None,
        duration_ms: ms(started.elapsed()),
        error,
        at_ms: switchboard_router::events::now_ms(),
    }
}
