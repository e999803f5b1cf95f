//! Requests answered by one upstream: `tools/call` and `prompts/get` (routed by name),
//! `resources/read` (by URI) and `completion/complete` (by its `ref`). The route is written
//! to the request's [`super::Decided`] before anything is sent upstream; the exchange itself is
//! a [`Call`].

use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use switchboard_router::{Route, RouteError, Target};
use switchboard_wire::{ErrorObject, Message, error_code, method};

use super::call::{Call, Failure};
use super::client::Client;
use super::handler::Handler;
use super::plan::{self, Plan};
use super::{Outbound, Outgoing, Reply};
use crate::bridge::STATE_PREFIX;
use crate::session::InFlightGuard;

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
        let plan = match Plan::of(&self.msg, &self.client, &self.route_headers) {
            Ok(p) => p,
            Err(e) => return self.error(StatusCode::OK, error_code::INVALID_PARAMS, e),
        };
        let view = self.view();
        let target = if tools { Target::Tool(&name) } else { Target::Prompt(&name) };
        let route = match view.routes.route_with(target, &plan.ask(&[], 0)) {
            Ok(route) => route,
            Err(e) => return self.route_error(kind, &name, e),
        };
        let catalogs = &view.routes.catalogs;
        let tool = catalogs.get(&route.server).and_then(|c| c.tool(&route.upstream_name));
        if method == method::TOOLS_CALL {
            let args =
                self.msg.params().and_then(|p| p.get("arguments")).cloned().unwrap_or_else(|| json!({}));
            if let Some(tool) = tool
                && let Err(e) = tool.validate_arguments(&args)
            {
                return self.error(
                    StatusCode::OK,
                    error_code::INVALID_PARAMS,
                    format!("invalid arguments for tool {name:?}: {e}"),
                );
            }
        }
        // A prompt is read-only by nature; a tool says so in its annotations.
        let repeatable = !tools || plan::repeatable(tool.map(|t| &t.raw)) || plan.idempotency_key.is_some();
        let params = self.msg.params().cloned().unwrap_or_default();
        let target = if tools { Target::Tool(&name) } else { Target::Prompt(&name) };
        self.scheduled(target, &plan, route, method, params, repeatable).await
    }

    /// A route that failed to resolve, as the caller sees it.
    fn route_error(&self, kind: &str, name: &str, e: RouteError) -> Reply {
        match e {
            RouteError::Unavailable { server, state, reason, .. } => Reply::error(
                StatusCode::OK,
                self.id.clone(),
                ErrorObject::new(
                    error_code::NO_UPSTREAM,
                    format!(
                        "{kind} {name:?} is served by {server:?}, which is unavailable ({state}): {reason}"
                    ),
                )
                .with_data(json!({"server": server, "state": state, "reason": reason})),
            ),
            RouteError::NoCandidate { group, why, decision } => {
                // The refusal is a decision too: the trace keeps it.
                if let Some(d) = self.registry.scheduler().decision(&decision) {
                    self.decided.set_route(&d, 0);
                }
                Reply::error(
                    StatusCode::OK,
                    self.id.clone(),
                    ErrorObject::new(error_code::NO_UPSTREAM, why)
                        .with_data(json!({"group": group, "decision": decision})),
                )
            }
            e => self.error(StatusCode::OK, error_code::INVALID_PARAMS, e.to_string()),
        }
    }

    pub(super) async fn read_resource(self) -> Reply {
        let Some(uri) = self.param_str("uri") else {
            return self.error(StatusCode::OK, error_code::INVALID_PARAMS, "resources/read needs params.uri");
        };
        let plan = match Plan::of(&self.msg, &self.client, &self.route_headers) {
            Ok(p) => p,
            Err(e) => return self.error(StatusCode::OK, error_code::INVALID_PARAMS, e),
        };
        let route = match self.view().routes.route_with(Target::Resource(&uri), &plan.ask(&[], 0)) {
            Ok(r) => r,
            Err(e @ (RouteError::Unavailable { .. } | RouteError::NoCandidate { .. })) => {
                return self.route_error("resource", &uri, e);
            }
            Err(_) => {
                return Reply::error(
                    StatusCode::OK,
                    self.id.clone(),
                    ErrorObject::new(error_code::INVALID_PARAMS, format!("Resource not found: {uri}"))
                        .with_data(json!({"uri": uri})),
                );
            }
        };
        let params = self.msg.params().cloned().unwrap_or_default();
        // Reading a resource is read-only: it may be retried elsewhere.
        self.scheduled(Target::Resource(&uri), &plan, route, method::RESOURCES_READ, params, true).await
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

    /// Forwards a request to `server` (no scheduling: `completion/complete` follows its `ref`).
    async fn forward(mut self, server: &str, method: &str, params: Map<String, Value>) -> Reply {
        self.decided.set_upstream(server);
        let guard = self.guard.take();
        match self.attempt(server, method, params, guard, None).await {
            Attempt::Done(reply, _) | Attempt::Failed { reply, .. } => reply,
        }
    }

    /// Forwards a scheduled request, and when the upstream fails, tries again where that is
    /// safe: elsewhere in the group (or on the same upstream when nobody else can serve it)
    /// after a failure that cannot have run the request, up to [`MAX_RECONNECTS`] times;
    /// after an overloaded/unavailable answer with exponential backoff, up to
    /// [`MAX_BACKOFFS`] times; after a failure that may have run it, only when the request is
    /// `repeatable` (a read-only or idempotent tool, a prompt, a resource, or an idempotency
    /// key). Every attempt is a decision of its own; the last one goes with the trace.
    async fn scheduled(
        mut self,
        target: Target<'_>,
        plan: &Plan,
        mut route: Route,
        method: &str,
        mut params: Map<String, Value>,
        repeatable: bool,
    ) -> Reply {
        let scheduler = self.registry.scheduler().clone();
        let mut guard = self.guard.take();
        let mut exclude: Vec<String> = Vec::new();
        let (mut retries, mut backoffs) = (0u32, 0u32);
        loop {
            self.decided.set_route(&route.decision, retries);
            if method != method::RESOURCES_READ {
                params.insert("name".into(), json!(route.upstream_name));
            }
            let d = &route.decision;
            let meta = d.degraded.then(|| {
                json!({"degraded": true, "dropped": d.dropped, "upstream": route.server, "decision": d.id, "reason": d.reason})
            });
            let (reply, failure) =
                match self.attempt(&route.server, method, params.clone(), guard.take(), meta).await {
                    Attempt::Done(reply, ok) => {
                        scheduler.outcome(&route.decision, ok);
                        return reply;
                    }
                    Attempt::Failed { reply, failure, guard: g } => {
                        scheduler.outcome(&route.decision, false);
                        guard = g;
                        (reply, failure)
                    }
                };
            let budget = match failure {
                Failure::Refused => backoffs < MAX_BACKOFFS,
                _ => retries - backoffs < MAX_RECONNECTS,
            };
            if (failure.may_have_run() && !repeatable) || !budget || self.cancel.is_cancelled() {
                return reply;
            }
            retries += 1;
            if failure == Failure::Refused {
                backoffs += 1;
                tokio::time::sleep(BACKOFF * 2u32.pow(backoffs - 1)).await;
            }
            exclude.push(route.server.clone());
            let view = self.view();
            route = match view.routes.route_with(target, &plan.ask(&exclude, retries)) {
                Ok(r) => r,
                // Nobody else: the same upstream again, for a failure that cannot have run it.
                Err(_) if !failure.may_have_run() => {
                    exclude.pop();
                    if failure != Failure::Refused {
                        tokio::time::sleep(BACKOFF).await;
                    }
                    match self.view().routes.route_with(target, &plan.ask(&exclude, retries)) {
                        Ok(r) => r,
                        Err(_) => return reply,
                    }
                }
                Err(_) => return reply,
            };
        }
    }

    /// One attempt on `server`: its response, or a stream when anything comes before the
    /// response, or how it failed before anything reached the client.
    async fn attempt(
        &self,
        server: &str,
        method: &str,
        params: Map<String, Value>,
        guard: Option<InFlightGuard>,
        route_meta: Option<Value>,
    ) -> Attempt {
        // A call of its own on a legacy stdio/WebSocket server that asks questions, so a
        // question reaches the call that caused it (see `Registry::client_for_call`).
        let upstream = match self.registry.client_for_call(server, self.client.caps()).await {
            Ok(c) => c,
            Err(
                switchboard_router::Error::NotConnected { .. }
                | switchboard_router::Error::UnknownServer { .. },
            ) => {
                let reply = self.upstream_failed(server, "not connected");
                return Attempt::Failed { reply, failure: Failure::NotDelivered, guard };
            }
            Err(e) => {
                let reply = self.upstream_failed(server, e);
                return Attempt::Failed { reply, failure: Failure::NotDelivered, guard };
            }
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
        let Some(id) = self.id.clone() else { return Attempt::Done(Reply::Accepted, true) };
        let mut call = Call::new(
            self.config.clone(),
            self.client.clone(),
            upstream,
            server,
            method,
            params,
            id.clone(),
            self.cancel.clone(),
            self.forward_headers.clone(),
            guard,
        );
        if let Some(meta) = route_meta {
            call.mark_route(meta);
        }
        if let Some(entry) = self.registry.entry(server) {
            call.track(entry.load().begin());
        }
        // A retry carrying a state the router sealed resumes a parked call.
        let ours = call
            .params()
            .get("requestState")
            .and_then(Value::as_str)
            .filter(|s| s.starts_with(STATE_PREFIX))
            .map(str::to_owned);
        if let Some(state) = ours {
            if let Err(e) = call.resume(&state) {
                return Attempt::Done(Reply::error(StatusCode::OK, Some(id), e), true);
            }
        } else if let Err(e) = call.start(None).await {
            if !call.session_expired() {
                return self.failed(server, &mut call, Reply::error(StatusCode::OK, Some(id), e));
            }
            // The server ended the upstream session kept for this caller's capabilities (an
            // idle session expired): open a new one and try once more.
            self.registry.forget_session(server, self.client.caps()).await;
            let Some(fresh) = self.registry.client_for(server, self.client.caps()).await else {
                return self.failed(server, &mut call, Reply::error(StatusCode::OK, Some(id), e));
            };
            call.reconnect(fresh);
            if let Err(e) = call.start(None).await {
                return self.failed(server, &mut call, Reply::error(StatusCode::OK, Some(id), e));
            }
        }
        let Some(first) = call.next().await else { return Attempt::Done(Reply::Accepted, true) };
        if first.is_response() {
            if call.failure().is_some() {
                return self.failed(server, &mut call, Reply::Message { status: StatusCode::OK, msg: first });
            }
            let ok = first.error().is_none_or(|e| e.code != error_code::INTERNAL_ERROR);
            let status = match (&self.client, first.error()) {
                (Client::Modern { .. }, Some(e))
                    if e.code == error_code::MISSING_REQUIRED_CLIENT_CAPABILITY =>
                {
                    StatusCode::BAD_REQUEST
                }
                _ => StatusCode::OK,
            };
            return Attempt::Done(Reply::Message { status, msg: first }, ok);
        }
        Attempt::Done(Reply::Stream(stream(first, call, self.correlation)), true)
    }

    /// An attempt whose upstream exchange failed. Passive health: a transport failure (not an
    /// overloaded answer) makes the router probe the server now (see `Registry::call_failed`).
    fn failed(&self, server: &str, call: &mut Call, reply: Reply) -> Attempt {
        let failure = call.failure().unwrap_or(Failure::MayHaveRun);
        if failure != Failure::Refused {
            self.registry.call_failed(server);
        }
        Attempt::Failed { reply, failure, guard: call.take_guard() }
    }
}

/// Retries after failures that cannot have run the request (or may have, when repeating it is
/// safe), per request.
const MAX_RECONNECTS: u32 = 3;
/// Retries after overloaded/unavailable answers, per request.
const MAX_BACKOFFS: u32 = 2;
/// The first backoff (doubling).
const BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// How one attempt ended.
enum Attempt {
    /// Answered (or streaming); whether the answer counts as a success for affinity.
    Done(Reply, bool),
    /// The upstream exchange failed before anything reached the client.
    Failed {
        /// The error the client gets if nothing else is tried.
        reply: Reply,
        /// How it failed.
        failure: Failure,
        /// The session's in-flight guard, for the next attempt.
        guard: Option<InFlightGuard>,
    },
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
