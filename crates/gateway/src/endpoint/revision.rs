//! Which protocol revision a client message belongs to, and the 2025-11-25 half of the
//! answer (`initialize`, sessions, the client's answers and cancellations).
//!
//! A modern `_meta` or a non-legacy `MCP-Protocol-Version` means 2026-07-28 (so a modern
//! `initialize` is answered 404 -32601, a modern request without `_meta` -32602); a session id,
//! `initialize`, or a request without either hint means 2025-11-25.

use axum::http::StatusCode;
use serde_json::{Value, json};
use switchboard_wire::{
    ErrorObject, Id, LEGACY_VERSIONS, Message, error_code, meta, method, negotiate_legacy_version,
};
use tokio_util::sync::CancellationToken;

use super::client::{Client, capabilities};
use super::handler::Handler;
use super::{Endpoint, Reply, RequestContext, missing_session, session_not_found};
use crate::session::Session;

/// The revision of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Revision {
    /// 2025-11-25: sessions.
    Legacy,
    /// 2026-07-28: every request carries its own `_meta`.
    Modern,
}

/// Classifies `msg` by its body and the context's session and version.
pub(super) fn classify(msg: &Message, ctx: &RequestContext) -> Revision {
    let header_version = ctx.protocol_version.as_deref();
    let modern_hint =
        msg.protocol_version().is_some() || header_version.is_some_and(|v| !LEGACY_VERSIONS.contains(&v));
    let legacy = ctx.session.is_some()
        || (!modern_hint && (msg.method() == Some(method::INITIALIZE) || msg.is_request()));
    if legacy { Revision::Legacy } else { Revision::Modern }
}

/// Handles one parsed client message by revision.
pub(super) async fn dispatch(endpoint: &Endpoint, msg: Message, ctx: &RequestContext) -> Reply {
    if classify(&msg, ctx) == Revision::Legacy {
        return legacy(endpoint, ctx, msg).await;
    }
    if msg.is_notification() || msg.is_response() {
        return Reply::Accepted;
    }
    let id = msg.id();
    let meta = msg.meta();
    ctx.decided.set_client(
        meta.and_then(|m| m.get(meta::CLIENT_INFO)).cloned(),
        msg.protocol_version().map(str::to_owned),
    );
    let Some(registry) = endpoint.registry.clone() else { return no_registry(id) };
    let client = Client::Modern {
        caps: meta.and_then(|m| m.get(meta::CLIENT_CAPABILITIES)).cloned().unwrap_or_else(|| json!({})),
        log_level: meta.and_then(|m| m.get(meta::LOG_LEVEL)).and_then(Value::as_str).map(str::to_owned),
    };
    endpoint.config.sessions.caller_seen(
        meta.and_then(|m| m.get(meta::CLIENT_INFO)),
        msg.protocol_version(),
        client.caps(),
        ctx.transport.as_str(),
        ctx.peer.as_deref(),
    );
    Handler::new(registry, endpoint.config.clone(), msg, ctx, CancellationToken::new(), None, client)
        .handle_modern(ctx)
        .await
}

fn no_registry(id: Option<Id>) -> Reply {
    Reply::error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        ErrorObject::new(error_code::NO_UPSTREAM, "no registry: this listener routes no servers"),
    )
}

/// A 2025-11-25 message: `initialize`, or anything carrying a session id.
async fn legacy(endpoint: &Endpoint, ctx: &RequestContext, msg: Message) -> Reply {
    let config = &endpoint.config;
    let id = msg.id();
    if msg.method() == Some(method::INITIALIZE) {
        if !msg.is_request() {
            return Reply::error(
                StatusCode::BAD_REQUEST,
                None,
                ErrorObject::new(error_code::INVALID_REQUEST, "initialize must be a request"),
            );
        }
        if let Some(registry) = &endpoint.registry {
            config.notifier.ensure_started(registry);
            config.startup.wait(registry, config.pending_wait).await;
        }
        return initialize(endpoint, ctx, &msg);
    }
    let Some(sid) = ctx.session.clone() else { return missing_session(id) };
    let session = match endpoint.open_session(&sid) {
        Ok(s) => s,
        Err(why) => return session_not_found(id, why),
    };
    ctx.decided.set_client(Some(session.client_info.clone()), Some(session.version.clone()));
    config.sessions.session_seen(
        &sid,
        &session.version,
        &session.capabilities,
        &session.client_info,
        i64::try_from(session.created_at_ms).unwrap_or(i64::MAX),
        ctx.transport.as_str(),
        ctx.peer.as_deref(),
        msg.is_request(),
    );
    if let Some(shown) = &ctx.protocol_version
        && !LEGACY_VERSIONS.contains(&shown.as_str())
    {
        return Reply::error(
            StatusCode::BAD_REQUEST,
            id,
            ErrorObject::new(
                error_code::INVALID_REQUEST,
                format!(
                    "Bad Request: MCP-Protocol-Version {shown:?} is not a 2025-11-25-era version (the session speaks {:?})",
                    session.version
                ),
            ),
        );
    }
    if msg.is_response() {
        // The client's answer to a server → client request of a call running here.
        if !config.bridge.answer(&sid, msg) {
            tracing::debug!(session = %sid, "answer to a server request no call on this instance waits for");
        }
        return Reply::Accepted;
    }
    if !msg.is_request() {
        // Cancels the request if it runs on this instance; elsewhere it is ignored.
        if msg.method() == Some(method::NOTIFICATION_CANCELLED)
            && let Some(request_id) = msg.params().and_then(|p| p.get("requestId"))
        {
            config.in_flight.cancel(&sid, request_id);
        }
        return Reply::Accepted;
    }
    let method = msg.method().unwrap_or_default().to_owned();
    let Some(registry) = endpoint.registry.clone() else { return no_registry(id) };
    let (cancel, guard) = config.in_flight.register(&sid, &id.as_ref().map(Id::to_value).unwrap_or_default());
    let client = Client::Legacy {
        log_level: config.bridge.level(&sid),
        sid,
        caps: session.capabilities,
        info: session.client_info,
    };
    let handler = Handler::new(registry, config.clone(), msg, ctx, cancel, Some(guard), client);
    match method.as_str() {
        method::PING => handler.result(json!({})),
        method::LOGGING_SET_LEVEL => handler.set_level(),
        method::RESOURCES_SUBSCRIBE => handler.subscribe(true).await,
        method::RESOURCES_UNSUBSCRIBE => handler.subscribe(false).await,
        method::TOOLS_LIST
        | method::PROMPTS_LIST
        | method::RESOURCES_LIST
        | method::RESOURCES_TEMPLATES_LIST
        | method::TOOLS_CALL
        | method::PROMPTS_GET
        | method::RESOURCES_READ
        | method::COMPLETION_COMPLETE => handler.dispatch(&method).await,
        // Not HTTP 404: to a 2025-11-25 client that means "session gone, re-initialize".
        other => {
            handler.error(StatusCode::OK, error_code::METHOD_NOT_FOUND, format!("Method not found: {other}"))
        }
    }
}

/// `initialize`: a new sealed session (its id goes to [`super::Decisions::new_session`]).
fn initialize(endpoint: &Endpoint, ctx: &RequestContext, msg: &Message) -> Reply {
    let config = &endpoint.config;
    let params = msg.params().cloned().unwrap_or_default();
    let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let version = negotiate_legacy_version(requested);
    let info = params.get("clientInfo").cloned().unwrap_or_else(|| json!({}));
    ctx.decided.set_client(params.get("clientInfo").cloned(), Some(version.to_owned()));
    let session =
        match Session::new(version, params.get("capabilities").cloned().unwrap_or_else(|| json!({})), info) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot create a session id");
                let err = ErrorObject::new(error_code::INTERNAL_ERROR, "cannot create a session id");
                return Reply::error(StatusCode::INTERNAL_SERVER_ERROR, msg.id(), err);
            }
        };
    let sid = session.seal(&config.session_key);
    config.sessions.session_seen(
        &sid,
        &session.version,
        &session.capabilities,
        &session.client_info,
        i64::try_from(session.created_at_ms).unwrap_or(i64::MAX),
        ctx.transport.as_str(),
        ctx.peer.as_deref(),
        true,
    );
    let caps = endpoint
        .registry
        .as_ref()
        .map(|r| capabilities(r, &config.views.get(r, &config.federation), true))
        .unwrap_or_default();
    let result = json!({
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")},
    });
    let Some(id) = msg.id() else { return Reply::Accepted };
    ctx.decided.set_new_session(sid);
    Reply::Message { status: StatusCode::OK, msg: Message::response(id, result) }
}
