//! The federated MCP endpoint: `POST /mcp` for 2026-07-28 (stateless) clients.
//!
//! Every request carries its own `_meta`, so any instance can answer it: lists come from
//! the federation of the ready servers' catalogs, calls are forwarded as raw JSON with
//! only the name rewritten, and interim progress/log notifications are relayed over an
//! SSE response that ends with the upstream's response. Closing that stream drops the
//! upstream [`Exchange`], which cancels the request upstream.
//!
//! 2025-11-25 (legacy) clients are served on the same endpoint: `initialize` answers with
//! an `Mcp-Session-Id` that is self-contained and sealed (see [`crate::session`]), so any
//! instance sharing [`EndpointConfig::session_key`] can serve the session; later requests
//! reuse the modern handlers. `DELETE` ends a session (revocation is per instance). There
//! is no standalone server stream: `GET /mcp` is always 405, with or without a session.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::StreamExt;
use serde_json::{Map, Value, json};
use switchboard_router::federation::{FederationConfig, federate};
use switchboard_router::{Registry, ServerState};
use switchboard_transport::Exchange;
use switchboard_wire::{
    Era, ErrorObject, Id, MODERN_VERSIONS, Message, error_code, headers, meta, method,
    negotiate_legacy_version,
};

use tokio_util::sync::CancellationToken;

use crate::session::{InFlight, InFlightGuard, Refused, Revocations, Session, SessionKey};

/// Default largest request body.
pub const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// How the endpoint behaves.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Largest request body in bytes; larger ones get 413.
    pub body_limit: usize,
    /// Origins accepted besides localhost, 127.0.0.1 and [::1] (exact `scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// Items per list page.
    pub page_size: usize,
    /// `ttlMs` of list and discover results.
    pub ttl_ms: u64,
    /// Federation of tool and prompt names.
    pub federation: FederationConfig,
    /// Key sealing 2025-11-25 session ids; instances sharing it share sessions.
    pub session_key: SessionKey,
    /// Longest life of a 2025-11-25 session id.
    pub session_max_age: Duration,
    /// Session ids ended (`DELETE`) on this instance.
    pub revocations: Revocations,
    /// Session requests in flight on this instance (for `notifications/cancelled`).
    pub in_flight: InFlight,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            body_limit: DEFAULT_BODY_LIMIT,
            allowed_origins: Vec::new(),
            page_size: 100,
            ttl_ms: 60_000,
            federation: FederationConfig::default(),
            session_key: SessionKey::random(),
            session_max_age: Duration::from_secs(24 * 3600),
            revocations: Revocations::default(),
            in_flight: InFlight::default(),
        }
    }
}

/// Request `_meta` keys that only modern upstreams understand.
const MODERN_REQUEST_META: [&str; 3] = [meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES, meta::CLIENT_INFO];

fn json_response(status: StatusCode, msg: &Message) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], msg.to_bytes()).into_response()
}

fn error_response(status: StatusCode, id: Option<Id>, error: ErrorObject) -> Response {
    json_response(status, &Message::error_response(id, error))
}

fn mib(bytes: usize) -> String {
    let m = bytes as f64 / (1024.0 * 1024.0);
    format!("{m:.1} MiB")
}

/// Whether an `Origin` header value may call the endpoint.
fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Some((_, rest)) = origin.split_once("://") else { return false };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().map(|h| format!("[{h}]")).unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or_default().to_owned()
    };
    matches!(host.to_ascii_lowercase().as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

/// `GET /mcp`: the router offers no standalone server stream, in either era (a
/// 2025-11-25 server may answer 405 here); a valid session changes nothing.
pub async fn not_allowed() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST, DELETE")]).into_response()
}

fn session_header(request_headers: &HeaderMap) -> Option<String> {
    request_headers.get(headers::SESSION_ID).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// Opens a session id; the error says why it was refused.
fn open_session(config: &EndpointConfig, sid: &str) -> Result<Session, &'static str> {
    if config.revocations.is_ended(sid) {
        return Err("it was ended");
    }
    Session::open(sid, &config.session_key, config.session_max_age).map_err(|r| match r {
        Refused::Invalid => "unknown or tampered session id",
        Refused::Expired => "the session expired",
        Refused::Ended => "it was ended",
    })
}

/// The 404 a client answers by initializing a new session.
fn session_not_found(id: Option<Id>, why: &str) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        id,
        ErrorObject::new(error_code::INVALID_REQUEST, format!("Session not found: {why}")),
    )
}

fn missing_session(id: Option<Id>) -> Response {
    error_response(
        StatusCode::BAD_REQUEST,
        id,
        ErrorObject::new(
            error_code::INVALID_REQUEST,
            "Bad Request: Mcp-Session-Id header is required (send initialize first)",
        ),
    )
}

/// `DELETE /mcp`: ends a 2025-11-25 session on this instance.
pub async fn delete(config: Arc<EndpointConfig>, request_headers: HeaderMap) -> Response {
    let Some(sid) = session_header(&request_headers) else { return missing_session(None) };
    let session = match open_session(&config, &sid) {
        Ok(s) => s,
        Err(why) => return session_not_found(None, why),
    };
    let max = u64::try_from(config.session_max_age.as_millis()).unwrap_or(u64::MAX);
    config.revocations.end(&sid, session.created_at_ms.saturating_add(max));
    StatusCode::NO_CONTENT.into_response()
}

/// Server capabilities from the ready upstreams.
fn capabilities(registry: &Registry, with_logging: bool) -> Map<String, Value> {
    let catalogs = ready_catalogs(registry);
    let mut capabilities = Map::new();
    if catalogs.values().any(|c| !c.tools.is_empty()) {
        capabilities.insert("tools".into(), json!({"listChanged": true}));
    }
    if catalogs.values().any(|c| !c.resources.is_empty()) {
        capabilities.insert("resources".into(), json!({}));
    }
    if catalogs.values().any(|c| !c.prompts.is_empty()) {
        capabilities.insert("prompts".into(), json!({}));
    }
    let logging = || {
        catalogs.keys().any(|name| {
            registry
                .entry(name)
                .and_then(|e| e.client())
                .is_some_and(|c| c.handshake().server_capabilities.get("logging").is_some())
        })
    };
    if with_logging && logging() {
        capabilities.insert("logging".into(), json!({}));
    }
    capabilities
}

/// A 2025-11-25 message: `initialize`, or anything carrying a session id.
async fn legacy(
    registry: Option<Registry>,
    config: Arc<EndpointConfig>,
    request_headers: &HeaderMap,
    msg: Message,
) -> Response {
    let id = msg.id();
    if msg.method() == Some(method::INITIALIZE) {
        if !msg.is_request() {
            return error_response(
                StatusCode::BAD_REQUEST,
                None,
                ErrorObject::new(error_code::INVALID_REQUEST, "initialize must be a request"),
            );
        }
        return initialize(registry.as_ref(), &config, &msg);
    }
    let Some(sid) = session_header(request_headers) else { return missing_session(id) };
    let session = match open_session(&config, &sid) {
        Ok(s) => s,
        Err(why) => return session_not_found(id, why),
    };
    if let Some(h) = request_headers.get(headers::PROTOCOL_VERSION)
        && h.as_bytes() != session.version.as_bytes()
    {
        let shown = String::from_utf8_lossy(h.as_bytes()).into_owned();
        return error_response(
            StatusCode::BAD_REQUEST,
            id,
            ErrorObject::new(
                error_code::INVALID_REQUEST,
                format!(
                    "Bad Request: MCP-Protocol-Version {shown:?} does not match the session's version {:?}",
                    session.version
                ),
            ),
        );
    }
    if !msg.is_request() {
        // Cancels the request if it runs on this instance; elsewhere it is ignored.
        if msg.method() == Some(method::NOTIFICATION_CANCELLED)
            && let Some(request_id) = msg.params().and_then(|p| p.get("requestId"))
        {
            config.in_flight.cancel(&sid, request_id);
        }
        return StatusCode::ACCEPTED.into_response();
    }
    let method = msg.method().unwrap_or_default().to_owned();
    let Some(registry) = registry else {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            id,
            ErrorObject::new(error_code::NO_UPSTREAM, "no registry: this listener routes no servers"),
        );
    };
    let (cancel, guard) = config.in_flight.register(&sid, &id.as_ref().map(Id::to_value).unwrap_or_default());
    let handler = Handler { registry, config, msg, id, cancel, guard: Some(guard) };
    match method.as_str() {
        method::PING | method::LOGGING_SET_LEVEL => handler.result(json!({})),
        method::RESOURCES_TEMPLATES_LIST => {
            let items = ready_catalogs(&handler.registry)
                .into_values()
                .flat_map(|c| c.resource_templates.clone())
                .collect();
            handler.page("resourceTemplates", items)
        }
        method::TOOLS_LIST
        | method::PROMPTS_LIST
        | method::RESOURCES_LIST
        | method::TOOLS_CALL
        | method::PROMPTS_GET
        | method::RESOURCES_READ => handler.dispatch(&method).await,
        // Not HTTP 404: to a 2025-11-25 client that means "session gone, re-initialize".
        other => {
            handler.error(StatusCode::OK, error_code::METHOD_NOT_FOUND, format!("Method not found: {other}"))
        }
    }
}

fn initialize(registry: Option<&Registry>, config: &EndpointConfig, msg: &Message) -> Response {
    let params = msg.params().cloned().unwrap_or_default();
    let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let version = negotiate_legacy_version(requested);
    let session = Session::new(
        version,
        params.get("capabilities").cloned().unwrap_or_else(|| json!({})),
        params.get("clientInfo").cloned().unwrap_or_else(|| json!({})),
    );
    let sid = session.seal(&config.session_key);
    let caps = registry.map(|r| capabilities(r, true)).unwrap_or_default();
    let result = json!({
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")},
    });
    let Some(id) = msg.id() else { return StatusCode::ACCEPTED.into_response() };
    let mut resp = json_response(StatusCode::OK, &Message::response(id, result));
    if let Ok(v) = HeaderValue::from_str(&sid) {
        resp.headers_mut().insert(headers::SESSION_ID, v);
    }
    resp
}

/// `POST /mcp`.
pub async fn post(
    registry: Option<Registry>,
    config: Arc<EndpointConfig>,
    request_headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(origin) = request_headers.get(header::ORIGIN) {
        let ok = origin.to_str().map(|o| origin_allowed(o, &config.allowed_origins)).unwrap_or(false);
        if !ok {
            let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            return error_response(
                StatusCode::FORBIDDEN,
                None,
                ErrorObject::new(error_code::INVALID_REQUEST, format!("Origin {shown:?} is not allowed")),
            );
        }
    }
    let limit = config.body_limit;
    let declared = request_headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            ErrorObject::new(
                error_code::PAYLOAD_TOO_LARGE,
                format!("request body exceeds the limit of {limit} bytes ({})", mib(limit)),
            )
            .with_data(json!({"limitBytes": limit})),
        )
    };
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    let mut over = declared.is_some_and(|d| d > limit as u64);
    // Read up to the limit; past it, keep draining (bounded) so the client sees the 413
    // instead of a reset connection.
    let drain_cap = limit.saturating_mul(16);
    let mut seen = 0usize;
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else { break };
        seen = seen.saturating_add(chunk.len());
        if seen > limit {
            over = true;
        }
        if over {
            bytes.clear();
            if seen > drain_cap {
                break;
            }
            continue;
        }
        bytes.extend_from_slice(&chunk);
    }
    if over {
        return too_large();
    }
    let msg = match Message::parse(&bytes) {
        Ok(m) => m,
        Err(e) => return json_response(StatusCode::BAD_REQUEST, &e.to_response()),
    };
    let is_legacy = msg.method() == Some(method::INITIALIZE)
        || request_headers.contains_key(headers::SESSION_ID)
        || (msg.is_request() && msg.protocol_version().is_none());
    if is_legacy {
        return legacy(registry, config, &request_headers, msg).await;
    }
    if msg.is_notification() || msg.is_response() {
        return StatusCode::ACCEPTED.into_response();
    }
    let id = msg.id();
    let Some(registry) = registry else {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            id,
            ErrorObject::new(error_code::NO_UPSTREAM, "no registry: this listener routes no servers"),
        );
    };
    Handler { registry, config, msg, id, cancel: CancellationToken::new(), guard: None }
        .handle(&request_headers)
        .await
}

struct Handler {
    registry: Registry,
    config: Arc<EndpointConfig>,
    msg: Message,
    id: Option<Id>,
    /// Fires on the client's `notifications/cancelled` (session requests only).
    cancel: CancellationToken,
    /// Keeps a session request registered as in flight until its response is sent.
    guard: Option<InFlightGuard>,
}

/// The ready servers' catalogs, by name.
fn ready_catalogs(registry: &Registry) -> BTreeMap<String, Arc<switchboard_router::catalog::Catalog>> {
    registry
        .servers()
        .into_iter()
        .filter(|v| v.state == ServerState::Ready)
        .filter_map(|v| registry.entry(&v.name).map(|e| (v.name, e.catalog())))
        .collect()
}

fn encode_cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(offset.to_string())
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let raw = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    std::str::from_utf8(&raw).ok()?.parse().ok()
}

impl Handler {
    fn error(&self, status: StatusCode, code: i64, message: impl Into<String>) -> Response {
        error_response(status, self.id.clone(), ErrorObject::new(code, message))
    }

    fn result(&self, result: Value) -> Response {
        match &self.id {
            Some(id) => json_response(StatusCode::OK, &Message::response(id.clone(), result)),
            None => StatusCode::ACCEPTED.into_response(),
        }
    }

    fn param_str(&self, key: &str) -> Option<String> {
        self.msg.params().and_then(|p| p.get(key)).and_then(Value::as_str).map(str::to_owned)
    }

    async fn handle(self, request_headers: &HeaderMap) -> Response {
        let get = |name: &str| request_headers.get(name).and_then(|v| v.to_str().ok());
        let method = self.msg.method().unwrap_or_default().to_owned();
        // Mirrored parameters of the called tool, when it is known.
        let header_params = if method == method::TOOLS_CALL {
            let fed = federate(&ready_catalogs(&self.registry), &self.config.federation);
            self.msg
                .name()
                .and_then(|n| fed.tool(n))
                .and_then(|t| t.raw.get("inputSchema"))
                .and_then(|s| headers::header_params(s).ok())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        if let Err(e) = headers::validate_request_headers(get, &self.msg, &header_params) {
            return error_response(StatusCode::BAD_REQUEST, self.id.clone(), e);
        }
        let requested = self.msg.protocol_version().unwrap_or_default().to_owned();
        if !MODERN_VERSIONS.contains(&requested.as_str()) {
            return error_response(
                StatusCode::BAD_REQUEST,
                self.id.clone(),
                ErrorObject::new(
                    error_code::UNSUPPORTED_PROTOCOL_VERSION,
                    format!("unsupported protocol version {requested:?}"),
                )
                .with_data(json!({"supported": MODERN_VERSIONS, "requested": requested})),
            );
        }
        if self.msg.meta().is_none_or(|m| !m.contains_key(meta::CLIENT_CAPABILITIES)) {
            return self.error(
                StatusCode::BAD_REQUEST,
                error_code::INVALID_PARAMS,
                format!("params._meta must carry {} ({{}} for none)", meta::CLIENT_CAPABILITIES),
            );
        }
        self.dispatch(&method).await
    }

    /// Answers a request whose headers and `_meta` were checked (or that belongs to a session).
    async fn dispatch(mut self, method: &str) -> Response {
        match method {
            method::SERVER_DISCOVER => self.discover(),
            method::TOOLS_LIST => self.list_federated(true),
            method::PROMPTS_LIST => self.list_federated(false),
            method::RESOURCES_LIST => self.list_resources(),
            method::TOOLS_CALL | method::PROMPTS_GET => self.call(method).await,
            method::RESOURCES_READ => self.read_resource().await,
            other => self.error(
                StatusCode::NOT_FOUND,
                error_code::METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            ),
        }
    }

    fn discover(&self) -> Response {
        let capabilities = capabilities(&self.registry, false);
        self.result(json!({
            "resultType": "complete",
            "supportedVersions": MODERN_VERSIONS,
            "capabilities": capabilities,
            "_meta": {meta::SERVER_INFO: {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")}},
            "ttlMs": self.config.ttl_ms,
            "cacheScope": "public",
        }))
    }

    fn page(&self, key: &str, items: Vec<Value>) -> Response {
        let offset = match self.param_str("cursor") {
            None => 0,
            Some(c) => match decode_cursor(&c).filter(|o| *o <= items.len()) {
                Some(o) => o,
                None => {
                    return self.error(
                        StatusCode::OK,
                        error_code::INVALID_PARAMS,
                        format!("invalid cursor {c:?}"),
                    );
                }
            },
        };
        let size = self.config.page_size.max(1);
        let end = offset.saturating_add(size).min(items.len());
        let page: Vec<Value> = items.get(offset..end).map(<[Value]>::to_vec).unwrap_or_default();
        let mut result = Map::new();
        result.insert("resultType".into(), json!("complete"));
        result.insert(key.into(), Value::Array(page));
        if end < items.len() {
            result.insert("nextCursor".into(), json!(encode_cursor(end)));
        }
        result.insert("ttlMs".into(), json!(self.config.ttl_ms));
        result.insert("cacheScope".into(), json!("public"));
        self.result(Value::Object(result))
    }

    fn list_federated(&self, tools: bool) -> Response {
        let fed = federate(&ready_catalogs(&self.registry), &self.config.federation);
        let (key, list) = if tools { ("tools", fed.tools) } else { ("prompts", fed.prompts) };
        self.page(key, list.into_iter().map(|e| e.raw).collect())
    }

    fn list_resources(&self) -> Response {
        let items = ready_catalogs(&self.registry).into_values().flat_map(|c| c.resources.clone()).collect();
        self.page("resources", items)
    }

    fn upstream_failed(&self, server: &str, reason: impl std::fmt::Display) -> Response {
        self.error(
            StatusCode::OK,
            error_code::UPSTREAM_FAILED,
            format!("upstream server {server:?} failed: {reason}"),
        )
    }

    async fn call(&mut self, method: &str) -> Response {
        let name = self.msg.name().unwrap_or_default().to_owned();
        let catalogs = ready_catalogs(&self.registry);
        let fed = federate(&catalogs, &self.config.federation);
        let (kind, found) = if method == method::TOOLS_CALL {
            ("tool", fed.tool(&name))
        } else {
            ("prompt", fed.prompt(&name))
        };
        let Some(exposed) = found else {
            return self.error(
                StatusCode::OK,
                error_code::INVALID_PARAMS,
                format!("unknown {kind} {name:?}"),
            );
        };
        if method == method::TOOLS_CALL {
            let args =
                self.msg.params().and_then(|p| p.get("arguments")).cloned().unwrap_or_else(|| json!({}));
            if let Some(tool) = catalogs.get(&exposed.server).and_then(|c| c.tool(&exposed.upstream_name))
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
        params.insert("name".into(), json!(exposed.upstream_name));
        self.forward(&exposed.server.clone(), method, params).await
    }

    async fn read_resource(&mut self) -> Response {
        let Some(uri) = self.param_str("uri") else {
            return self.error(StatusCode::OK, error_code::INVALID_PARAMS, "resources/read needs params.uri");
        };
        let server = ready_catalogs(&self.registry).into_iter().find_map(|(s, c)| {
            c.resources
                .iter()
                .any(|r| r.get("uri").and_then(Value::as_str) == Some(uri.as_str()))
                .then_some(s)
        });
        let Some(server) = server else {
            return self.error(
                StatusCode::OK,
                error_code::INVALID_PARAMS,
                format!("Resource not found: {uri}"),
            );
        };
        let params = self.msg.params().cloned().unwrap_or_default();
        self.forward(&server, method::RESOURCES_READ, params).await
    }

    async fn forward(&mut self, server: &str, method: &str, mut params: Map<String, Value>) -> Response {
        let Some(client) = self.registry.entry(server).and_then(|e| e.client()) else {
            return self.upstream_failed(server, "not connected");
        };
        if client.era() == Era::Legacy
            && let Some(Value::Object(m)) = params.get_mut("_meta")
        {
            for k in MODERN_REQUEST_META {
                m.remove(k);
            }
        }
        let mut exchange = match client.start(method, Value::Object(params)).await {
            Ok(ex) => ex,
            Err(e) => return self.upstream_failed(server, e),
        };
        let Some(id) = self.id.clone() else { return StatusCode::ACCEPTED.into_response() };
        // A 2026-07-28 client of a legacy upstream gets the fields its revision requires.
        let bridge = (client.era() == Era::Legacy
            && self.msg.protocol_version().is_some_and(|v| MODERN_VERSIONS.contains(&v)))
        .then(|| method.to_owned());
        // Wait for the first relayable message: a response answers with plain JSON.
        let first = loop {
            let next = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return cancelled(id),
                next = exchange.next() => next,
            };
            match next {
                Some(Ok(m)) if m.is_response() => {
                    let mut m = m;
                    m.set_id(&id);
                    if let Some(method) = &bridge {
                        complete_legacy_result(&mut m, method);
                    }
                    return json_response(StatusCode::OK, &m);
                }
                Some(Ok(m)) if relayable(&m) => break m,
                Some(Ok(_)) => continue,
                Some(Err(e)) => return self.upstream_failed(server, e),
                None => return self.upstream_failed(server, "stream ended without a response"),
            }
        };
        sse(first, exchange, id, server.to_owned(), self.cancel.clone(), self.guard.take(), bridge)
    }
}

/// Adds what a 2026-07-28 result must carry to a legacy upstream's result: `resultType`
/// (absent means `complete` before 2026-07-28) and, on `resources/read`, caching hints that
/// forbid caching (a legacy server says nothing about freshness). Errors pass unchanged.
fn complete_legacy_result(m: &mut Message, method: &str) {
    let Some(Value::Object(result)) = m.result_mut() else { return };
    if !result.contains_key("resultType") {
        result.insert("resultType".into(), json!("complete"));
    }
    if method == method::RESOURCES_READ {
        if !result.contains_key("ttlMs") {
            result.insert("ttlMs".into(), json!(0));
        }
        if !result.contains_key("cacheScope") {
            result.insert("cacheScope".into(), json!("private"));
        }
    }
}

fn relayable(m: &Message) -> bool {
    m.is_notification()
        && matches!(m.method(), Some(method::NOTIFICATION_PROGRESS) | Some(method::NOTIFICATION_MESSAGE))
}

fn event(m: &Message) -> Result<Event, Infallible> {
    Ok(Event::default().event("message").data(m.to_json()))
}

/// The answer to a request the client cancelled (dropping the exchange cancels upstream).
fn cancelled(id: Id) -> Response {
    error_response(StatusCode::OK, Some(id), ErrorObject::new(REQUEST_CANCELLED, "Request cancelled"))
}

/// JSON-RPC code for a request the client cancelled.
const REQUEST_CANCELLED: i64 = -32800;

struct Relay {
    cancel: CancellationToken,
    _guard: Option<InFlightGuard>,
    first: Option<Message>,
    exchange: Exchange,
    id: Id,
    server: String,
    done: bool,
    /// The method, when the response comes from a legacy upstream to a 2026-07-28 client.
    bridge: Option<String>,
}

/// An SSE response relaying interim notifications and ending with the response. Dropping
/// the stream (the client went away) drops the exchange, which cancels upstream.
fn sse(
    first: Message,
    exchange: Exchange,
    id: Id,
    server: String,
    cancel: CancellationToken,
    guard: Option<InFlightGuard>,
    bridge: Option<String>,
) -> Response {
    let relay =
        Relay { cancel, _guard: guard, first: Some(first), exchange, id, server, done: false, bridge };
    let stream = futures::stream::unfold(relay, |mut r| async move {
        if let Some(m) = r.first.take() {
            return Some((event(&m), r));
        }
        if r.done {
            return None;
        }
        loop {
            let next = tokio::select! {
                biased;
                () = r.cancel.cancelled() => return None,
                next = r.exchange.next() => next,
            };
            match next {
                Some(Ok(mut m)) if m.is_response() => {
                    m.set_id(&r.id);
                    if let Some(method) = &r.bridge {
                        complete_legacy_result(&mut m, method);
                    }
                    r.done = true;
                    return Some((event(&m), r));
                }
                Some(Ok(m)) if relayable(&m) => return Some((event(&m), r)),
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    r.done = true;
                    let err = Message::error_response(
                        Some(r.id.clone()),
                        ErrorObject::new(
                            error_code::UPSTREAM_FAILED,
                            format!("upstream server {:?} failed: {e}", r.server),
                        ),
                    );
                    return Some((event(&err), r));
                }
                None => return None,
            }
        }
    });
    let mut resp = Sse::new(stream).into_response();
    resp.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert!(origin_allowed("http://localhost:3000", &[]));
        assert!(origin_allowed("http://127.0.0.1", &[]));
        assert!(origin_allowed("http://[::1]:8080", &[]));
        assert!(!origin_allowed("http://evil.example", &[]));
        assert!(!origin_allowed("http://localhost.evil.example", &[]));
        assert!(origin_allowed("https://app.example", &["https://app.example".to_owned()]));
    }

    #[test]
    fn cursors_round_trip() {
        assert_eq!(decode_cursor(&encode_cursor(42)), Some(42));
        assert_eq!(decode_cursor("!!"), None);
    }
}
