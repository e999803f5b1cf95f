//! Requests answered by one upstream: `tools/call` and `prompts/get` (routed by name),
//! `resources/read` (by URI) and `completion/complete` (by its `ref`). The route is written
//! to the request's [`super::Decided`] before anything is sent upstream; the exchange itself is
//! a [`Call`].

use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use switchboard_router::{RouteError, Target};
use switchboard_wire::{ErrorObject, Message, error_code, method};

use super::call::Call;
use super::client::Client;
use super::handler::Handler;
use super::{Outbound, Outgoing, Reply};
use crate::bridge::STATE_PREFIX;

impl Handler {
    pub(super) async fn call(self, method: &str) -> Reply {
        let tools = method == method::TOOLS_CALL;
        let kind = if tools { "tool" } else { "prompt" };
        let name = match self.msg.params().and_then(|p| p.get("name")) {
            Some(Value::String(n)) => n.clone(),
            None => {
                return self.error(
                    StatusCode::OK,
                    error_code::INVALID_PARAMS,
                    format!(
                        "params.name is required: the name of the {kind} to {}",
                        if tools { "call" } else { "get" }
                    ),
                );
            }
            Some(other) => {
                return self.error(
                    StatusCode::OK,
                    error_code::INVALID_PARAMS,
                    format!(
                        "params.name must be a string (the {kind}'s name), not {}",
                        switchboard_wire::message::json_type(other)
                    ),
                );
            }
        };
        let view = self.view();
        let target = if tools { Target::Tool(&name) } else { Target::Prompt(&name) };
        let route = match view.routes.route(target, None) {
            Ok(route) => route,
            Err(RouteError::Unavailable { server, state, reason, .. }) => {
                return Reply::error(
                    StatusCode::OK,
                    self.id.clone(),
                    ErrorObject::new(
                        error_code::NO_UPSTREAM,
                        format!("{kind} {name:?} is served by {server:?}, which is unavailable ({state}): {reason}"),
                    )
                    .with_data(json!({"server": server, "state": state, "reason": reason})),
                );
            }
            Err(e) => return self.error(StatusCode::OK, error_code::INVALID_PARAMS, e.to_string()),
        };
        let catalogs = &view.routes.catalogs;
        if method == method::TOOLS_CALL {
            let args =
                self.msg.params().and_then(|p| p.get("arguments")).cloned().unwrap_or_else(|| json!({}));
            if let Some(tool) = catalogs.get(&route.server).and_then(|c| c.tool(&route.upstream_name))
                && let Err(e) = tool.validate_arguments(&args)
            {
                return self.error(
                    StatusCode::OK,
                    error_code::INVALID_PARAMS,
                    format!("invalid arguments for tool {name:?}: {e}"),
                );
            }
        }
        let mut params = self.msg.params().cloned().unwrap_or_default();
        params.insert("name".into(), json!(route.upstream_name));
        self.forward(&route.server, method, params).await
    }

    pub(super) async fn read_resource(self) -> Reply {
        let Some(uri) = self.param_str("uri") else {
            return self.error(StatusCode::OK, error_code::INVALID_PARAMS, "resources/read needs params.uri");
        };
        let Some(server) = self.view().resource_server(&uri) else {
            return Reply::error(
                StatusCode::OK,
                self.id.clone(),
                ErrorObject::new(error_code::INVALID_PARAMS, format!("Resource not found: {uri}"))
                    .with_data(json!({"uri": uri})),
            );
        };
        let params = self.msg.params().cloned().unwrap_or_default();
        self.forward(&server, method::RESOURCES_READ, params).await
    }

    /// `completion/complete`: routed by its `ref` (a prompt's exposed name, or a resource
    /// template / resource URI).
    pub(super) async fn complete(self) -> Reply {
        let mut params = self.msg.params().cloned().unwrap_or_default();
        let Some(reference) = params.get("ref").and_then(Value::as_object).cloned() else {
            return self.error(
                StatusCode::OK,
                error_code::INVALID_PARAMS,
                "completion/complete needs params.ref",
            );
        };
        let kind = reference.get("type").and_then(Value::as_str).unwrap_or_default();
        let server = match kind {
            "ref/prompt" => {
                let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
                let view = self.view();
                let Some(exposed) = view.routes.federation.prompt(name) else {
                    return self.error(
                        StatusCode::OK,
                        error_code::INVALID_PARAMS,
                        format!("unknown prompt {name:?}"),
                    );
                };
                let mut r = reference.clone();
                r.insert("name".into(), json!(exposed.upstream_name));
                params.insert("ref".into(), Value::Object(r));
                exposed.server.clone()
            }
            "ref/resource" => {
                let uri = reference.get("uri").and_then(Value::as_str).unwrap_or_default();
                match self.view().resource_server(uri) {
                    Some(s) => s,
                    None => {
                        return self.error(
                            StatusCode::OK,
                            error_code::INVALID_PARAMS,
                            format!("Resource not found: {uri}"),
                        );
                    }
                }
            }
            other => {
                return self.error(
                    StatusCode::OK,
                    error_code::INVALID_PARAMS,
                    format!("params.ref.type must be ref/prompt or ref/resource, not {other:?}"),
                );
            }
        };
        self.forward(&server, method::COMPLETION_COMPLETE, params).await
    }

    /// Forwards a request to `server` and answers with its response, or with a stream when
    /// anything comes before the response.
    async fn forward(self, server: &str, method: &str, params: Map<String, Value>) -> Reply {
        self.decided.set_upstream(server);
        // A call of its own on a legacy stdio/WebSocket server that asks questions, so a
        // question reaches the call that caused it (see `Registry::client_for_call`).
        let upstream = match self.registry.client_for_call(server, self.client.caps()).await {
            Ok(c) => c,
            Err(
                switchboard_router::Error::NotConnected { .. }
                | switchboard_router::Error::UnknownServer { .. },
            ) => {
                return self.upstream_failed(server, "not connected");
            }
            Err(e) => return self.upstream_failed(server, e),
        };
        let up = upstream.upstream();
        let upstream_session = match up.kind() {
            switchboard_transport::TransportKind::Http => up.status().session_id,
            _ => None,
        };
        self.config.sessions.bound(
            &self.downstream,
            server,
            upstream_session.as_deref(),
            self.client.caps(),
            up.kind().as_str(),
        );
        let Some(id) = self.id.clone() else { return Reply::Accepted };
        let correlation = self.correlation;
        let mut call = Call::new(
            self.config.clone(),
            self.client.clone(),
            upstream,
            server,
            method,
            params,
            id.clone(),
            self.cancel.clone(),
            self.forward_headers,
            self.guard,
        );
        // A retry carrying a state the router sealed resumes a parked call.
        let ours = call
            .params()
            .get("requestState")
            .and_then(Value::as_str)
            .filter(|s| s.starts_with(STATE_PREFIX))
            .map(str::to_owned);
        if let Some(state) = ours {
            if let Err(e) = call.resume(&state) {
                return Reply::error(StatusCode::OK, Some(id), e);
            }
        } else if let Err(e) = call.start(None).await {
            if !call.session_expired() {
                // Passive health: the router probes the server now (see `Registry::call_failed`).
                self.registry.call_failed(server);
                return Reply::error(StatusCode::OK, Some(id), e);
            }
            // The server ended the upstream session kept for this caller's capabilities (an
            // idle session expired): open a new one and try once more.
            self.registry.forget_session(server, self.client.caps()).await;
            let Some(fresh) = self.registry.client_for(server, self.client.caps()).await else {
                return Reply::error(StatusCode::OK, Some(id), e);
            };
            call.reconnect(fresh);
            if let Err(e) = call.start(None).await {
                return Reply::error(StatusCode::OK, Some(id), e);
            }
        }
        let Some(first) = call.next().await else { return Reply::Accepted };
        if first.is_response() {
            let status = match (&self.client, first.error()) {
                (Client::Modern { .. }, Some(e))
                    if e.code == error_code::MISSING_REQUIRED_CLIENT_CAPABILITY =>
                {
                    StatusCode::BAD_REQUEST
                }
                _ => StatusCode::OK,
            };
            return Reply::Message { status, msg: first };
        }
        Reply::Stream(stream(first, call, correlation))
    }
}

/// The call's messages after `first`, ending with its response. Each step runs under the
/// request's correlation id (a retry upstream is tied to the client request too). Dropping the
/// stream (the client went away) drops the call and its exchange, which cancels upstream.
fn stream(first: Message, call: Call, correlation: u64) -> Outbound {
    let messages = futures::stream::unfold((Some(first), call), move |(first, mut call)| async move {
        if let Some(m) = first {
            return Some((Outgoing::from(m), (None, call)));
        }
        let m = switchboard_transport::correlated(correlation, call.next()).await?;
        Some((Outgoing::from(m), (None, call)))
    });
    Outbound { messages: Box::pin(messages), long_lived: false }
}
