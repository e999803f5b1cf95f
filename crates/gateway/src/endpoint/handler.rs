//! One request being answered: the 2026-07-28 checks (`_meta`, headers, version, log level)
//! and the dispatch by method to [`super::lists`], [`super::listen`] and [`super::forward`].

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Value, json};
use switchboard_router::Registry;
use switchboard_wire::{ErrorObject, Id, MODERN_VERSIONS, Message, error_code, headers, meta, method};
use tokio_util::sync::CancellationToken;

use super::client::Client;
use super::plan::RouteHeaders;
use super::{Decided, Reply, RequestContext};
use crate::bridge::LOG_LEVELS;
use crate::config::EndpointConfig;
use crate::session::InFlightGuard;
use crate::sessions::Downstream;
use crate::view::View;

pub(super) struct Handler {
    pub(super) registry: Registry,
    pub(super) config: Arc<EndpointConfig>,
    pub(super) msg: Message,
    pub(super) id: Option<Id>,
    /// Fires on the client's `notifications/cancelled` (session requests only).
    pub(super) cancel: CancellationToken,
    /// Keeps a session request registered as in flight until its response is sent.
    pub(super) guard: Option<InFlightGuard>,
    pub(super) client: Client,
    /// Unknown `Mcp-Param-*` headers of a `tools/call`, forwarded upstream as they came.
    pub(super) forward_headers: Vec<(String, String)>,
    /// Where the upstream a request goes to is written.
    pub(super) decided: Decided,
    /// The request's correlation id (upstream frames of its stream carry it too).
    pub(super) correlation: u64,
    /// Who sent it, as the session table keys them (for the upstream bindings).
    pub(super) downstream: Downstream,
    /// The affinity and idempotency headers it came with.
    pub(super) route_headers: RouteHeaders,
}

impl Handler {
    pub(super) fn new(
        registry: Registry,
        config: Arc<EndpointConfig>,
        msg: Message,
        ctx: &RequestContext,
        cancel: CancellationToken,
        guard: Option<InFlightGuard>,
        client: Client,
    ) -> Handler {
        let downstream = match &client {
            Client::Legacy { sid, .. } => Downstream::session(sid),
            Client::Modern { .. } => Downstream::caller(
                ctx.decided.get().client_info.as_ref(),
                ctx.transport.as_str(),
                ctx.peer.as_deref(),
            ),
        };
        let text = |name: &str| {
            ctx.headers.as_ref().and_then(|h| h.get(name)).and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        let route_headers = RouteHeaders {
            affinity: text(headers::AFFINITY_KEY),
            idempotency: text(headers::IDEMPOTENCY_KEY),
        };
        Handler {
            route_headers,
            registry,
            config,
            id: msg.id(),
            msg,
            cancel,
            guard,
            client,
            forward_headers: Vec::new(),
            decided: ctx.decided.clone(),
            correlation: ctx.correlation,
            downstream,
        }
    }

    pub(super) fn view(&self) -> Arc<View> {
        self.config.views.get(&self.registry, &self.config.federation)
    }

    pub(super) fn error(&self, status: StatusCode, code: i64, message: impl Into<String>) -> Reply {
        Reply::error(status, self.id.clone(), ErrorObject::new(code, message))
    }

    pub(super) fn result(&self, result: Value) -> Reply {
        Reply::result(self.id.clone(), result)
    }

    pub(super) fn param_str(&self, key: &str) -> Option<String> {
        self.msg.params().and_then(|p| p.get(key)).and_then(Value::as_str).map(str::to_owned)
    }

    pub(super) fn upstream_failed(&self, server: &str, reason: impl std::fmt::Display) -> Reply {
        self.error(
            StatusCode::OK,
            error_code::UPSTREAM_FAILED,
            format!("upstream server {server:?} failed: {reason}"),
        )
    }

    /// A 2026-07-28 request: `_meta` and (over HTTP) its headers are checked, then it is
    /// dispatched.
    pub(super) async fn handle_modern(mut self, ctx: &RequestContext) -> Reply {
        let method = self.msg.method().unwrap_or_default().to_owned();
        // `_meta` first: a request without it is -32602 whatever its headers say.
        let meta = self.msg.meta();
        for (key, what) in [
            (meta::PROTOCOL_VERSION, "the protocol version"),
            (meta::CLIENT_CAPABILITIES, "the client capabilities ({} for none)"),
        ] {
            if meta.is_none_or(|m| !m.contains_key(key)) {
                return self.error(
                    StatusCode::BAD_REQUEST,
                    error_code::INVALID_PARAMS,
                    format!("params._meta must carry {key} ({what})"),
                );
            }
        }
        // A name that is no string cannot be routed (nor mirrored in `Mcp-Name`): say so first.
        if matches!(method.as_str(), method::TOOLS_CALL | method::PROMPTS_GET)
            && let Some(name) = self.msg.params().and_then(|p| p.get("name")).filter(|n| !n.is_string())
        {
            return self.error(
                StatusCode::BAD_REQUEST,
                error_code::INVALID_PARAMS,
                format!("params.name must be a string, not {}", switchboard_wire::message::json_type(name)),
            );
        }
        // Headers mirror the body over HTTP only; other transports have none to check.
        if let Some(request_headers) = &ctx.headers {
            let get = |name: &str| request_headers.get(name).and_then(|v| v.to_str().ok());
            // Mirrored parameters of the called tool, when it is known.
            let view = self.view();
            let header_params: &[headers::HeaderParam] = if method == method::TOOLS_CALL {
                self.msg.name().map(|n| view.header_params(n)).unwrap_or_default()
            } else {
                &[]
            };
            if let Err(e) = headers::validate_request_headers(get, &self.msg, header_params) {
                return Reply::error(StatusCode::BAD_REQUEST, self.id.clone(), e);
            }
            // `Mcp-Param-*` headers the tool does not declare are the client's business with the
            // server: an intermediary forwards them unchanged.
            if method == method::TOOLS_CALL {
                self.forward_headers = request_headers
                    .iter()
                    .filter_map(|(k, v)| {
                        let suffix = k.as_str().strip_prefix(headers::PARAM_PREFIX)?;
                        let declared = header_params.iter().any(|p| p.header.eq_ignore_ascii_case(suffix));
                        (!declared).then(|| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))?
                    })
                    .collect();
            }
        }
        let requested = self.msg.protocol_version().unwrap_or_default().to_owned();
        if !MODERN_VERSIONS.contains(&requested.as_str()) {
            return Reply::error(
                StatusCode::BAD_REQUEST,
                self.id.clone(),
                ErrorObject::new(
                    error_code::UNSUPPORTED_PROTOCOL_VERSION,
                    format!("unsupported protocol version {requested:?}"),
                )
                .with_data(json!({"supported": MODERN_VERSIONS, "requested": requested})),
            );
        }
        if let Some(level) = self.client.log_level()
            && !LOG_LEVELS.contains(&level)
        {
            return self.error(
                StatusCode::BAD_REQUEST,
                error_code::INVALID_PARAMS,
                format!("unknown log level {level:?} in params._meta (one of {})", LOG_LEVELS.join(", ")),
            );
        }
        self.dispatch(&method).await
    }

    /// Answers a request whose headers and `_meta` were checked (or that belongs to a session).
    pub(super) async fn dispatch(self, method: &str) -> Reply {
        // Changes are followed from the first request on, so a server that becomes ready
        // later is announced (`list_changed`) to the clients listening by then.
        self.config.notifier.ensure_started(&self.registry);
        if method != method::SUBSCRIPTIONS_LISTEN {
            self.config.startup.wait(&self.registry, self.config.pending_wait).await;
        }
        match method {
            method::SERVER_DISCOVER => self.discover(),
            method::TOOLS_LIST => self.list_federated(true).await,
            method::PROMPTS_LIST => self.list_federated(false).await,
            method::RESOURCES_LIST => self.list_resources().await,
            method::RESOURCES_TEMPLATES_LIST => self.list_templates().await,
            method::TOOLS_CALL | method::PROMPTS_GET => self.call(method).await,
            method::RESOURCES_READ => self.read_resource().await,
            method::COMPLETION_COMPLETE => self.complete().await,
            method::SUBSCRIPTIONS_LISTEN => self.listen(),
            other => self.error(
                StatusCode::NOT_FOUND,
                error_code::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            ),
        }
    }
}
