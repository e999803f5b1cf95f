//! The federated MCP endpoint at `/mcp`, serving both protocol revisions on one URL.
//!
//! **2026-07-28** requests carry their own `_meta`, so any instance can answer them: lists
//! come from the federation of the ready servers' catalogs; `tools/call`, `prompts/get`,
//! `resources/read` and `completion/complete` are forwarded as raw JSON with only the name
//! rewritten; interim progress/log notifications are relayed over an SSE response that ends
//! with the upstream's response; closing that stream cancels the call upstream.
//! `subscriptions/listen` streams `list_changed` (and `resources/updated` for subscribed
//! URIs) tagged with the subscription id.
//!
//! **2025-11-25** clients get a self-contained, sealed `Mcp-Session-Id` from `initialize`
//! (see [`crate::session`]), so any instance sharing [`EndpointConfig::session_key`] serves
//! the session; `GET` opens the session's notification stream (SSE ids, `Last-Event-ID`
//! replay), `DELETE` ends it.
//!
//! **Bridging** (see [`crate::bridge`]): a legacy upstream's server → client requests become
//! an `InputRequiredResult` with a router-sealed `requestState` for 2026 clients; a modern
//! upstream's `InputRequiredResult` becomes server → client requests on a legacy client's
//! response stream, and the call is retried with the answers.

use std::collections::{BTreeMap, VecDeque};
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
use switchboard_router::federation::FederationConfig;
use switchboard_router::{Registry, RouteError, RouteTable, ServerState, Target};
use switchboard_transport::Exchange;
use switchboard_wire::{
    Era, ErrorObject, Id, LEGACY_VERSIONS, MODERN_VERSIONS, Message, error_code, headers, meta, method,
    negotiate_legacy_version,
};
use tokio_util::sync::CancellationToken;

use crate::bridge::{Bridge, LOG_LEVELS, Parked, STATE_PREFIX, level_rank};
use crate::notify::{Kind, MAX_RESOURCE_SUBSCRIPTIONS, Notifier, Subscriptions, WatchStart};
use crate::session::{InFlight, InFlightGuard, Refused, Revocations, Session, SessionKey};

/// How long a 2025-11-25 client has, by default, to answer a server → client request.
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

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
    /// Parked calls, expected answers and session log levels on this instance.
    pub bridge: Bridge,
    /// Change notifications for listening clients.
    pub notifier: Notifier,
    /// Resource subscriptions of sessions and listen streams on this instance.
    pub subscriptions: Subscriptions,
    /// How long a legacy client may take to answer a server → client request.
    pub answer_timeout: Duration,
    /// The federation of the ready servers, rebuilt when the registry changes.
    pub views: ViewCache,
    /// How long the first requests wait for configured servers still handshaking (the
    /// registry's handshake timeout), so a client listing at once sees their tools.
    pub pending_wait: Duration,
    /// That first wait, shared by the endpoint's requests.
    pub startup: StartupWait,
}

/// `ttlMs` of a list answered while a configured server is still pending or degraded: its
/// tools are missing, so the client should ask again soon (it also gets `list_changed` when
/// the server becomes ready).
pub const PENDING_TTL_MS: u64 = 1_000;

/// The endpoint's one wait for the servers configured at start-up: the first requests that
/// need the catalogs wait until no server is pending (bounded); later ones never wait.
#[derive(Clone, Default)]
pub struct StartupWait(Arc<tokio::sync::OnceCell<()>>);

impl std::fmt::Debug for StartupWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StartupWait").field(&self.0.initialized()).finish()
    }
}

impl StartupWait {
    /// Waits (once per endpoint, at most `bound`) until no configured server is pending.
    pub async fn wait(&self, registry: &Registry, bound: Duration) {
        self.0
            .get_or_init(|| async {
                registry.wait_settled(bound).await;
            })
            .await;
    }
}

/// Whether a server that should be up is not (yet): pending or degraded, not disabled.
fn coming(v: &switchboard_router::ServerView) -> bool {
    matches!(v.state, ServerState::Pending | ServerState::Degraded) && v.reason != "disabled in configuration"
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
            bridge: Bridge::default(),
            notifier: Notifier::default(),
            subscriptions: Subscriptions::default(),
            answer_timeout: DEFAULT_ANSWER_TIMEOUT,
            views: ViewCache::default(),
            pending_wait: switchboard_router::config::DEFAULT_HANDSHAKE_TIMEOUT,
            startup: StartupWait::default(),
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
pub(crate) fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
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
    if let Err(full) = config.revocations.end(&sid, session.created_at_ms.saturating_add(max)) {
        let err = ErrorObject::new(error_code::INTERNAL_ERROR, full.to_string());
        return error_response(StatusCode::SERVICE_UNAVAILABLE, None, err);
    }
    config.bridge.end_session(&sid);
    config.subscriptions.end_session(&sid);
    StatusCode::NO_CONTENT.into_response()
}

/// Server capabilities from the ready upstreams. The router propagates list changes of
/// every kind and takes resource subscriptions for the servers that support them.
fn capabilities(registry: &Registry, view: &View, with_logging: bool) -> Map<String, Value> {
    let catalogs = &view.routes.catalogs;
    let mut capabilities = Map::new();
    if catalogs.values().any(|c| !c.tools.is_empty()) {
        capabilities.insert("tools".into(), json!({"listChanged": true}));
    }
    if catalogs.values().any(|c| !c.resources.is_empty() || !c.resource_templates.is_empty()) {
        let subscribe = catalogs
            .keys()
            .any(|name| upstream_caps(registry, name).pointer("/resources/subscribe") == Some(&json!(true)));
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
fn upstream_caps(registry: &Registry, name: &str) -> Value {
    registry
        .entry(name)
        .and_then(|e| e.client())
        .map(|c| c.handshake().server_capabilities)
        .unwrap_or_default()
}

/// Who is calling, as far as forwarding needs to know.
#[derive(Debug, Clone)]
enum Client {
    /// A 2026-07-28 request: capabilities and log level from its `_meta`.
    Modern { caps: Value, log_level: Option<String> },
    /// A 2025-11-25 session.
    Legacy { sid: String, caps: Value, info: Value, log_level: Option<String> },
}

impl Client {
    fn caps(&self) -> &Value {
        match self {
            Client::Modern { caps, .. } | Client::Legacy { caps, .. } => caps,
        }
    }

    /// The capability a server → client request needs, and whether the client declared it.
    fn allows(&self, request_method: &str) -> bool {
        match capability_of(request_method) {
            Some(cap) => self.caps().get(cap).is_some(),
            None => request_method == method::PING,
        }
    }

    /// Whether a `notifications/message` at `level` reaches this client: a 2026 client gets
    /// logs only when it asked for a level; a legacy session gets all until it sets one.
    fn wants_log(&self, level: &str) -> bool {
        match self {
            Client::Modern { log_level: None, .. } => false,
            Client::Legacy { log_level: None, .. } => true,
            Client::Modern { log_level: Some(min), .. } | Client::Legacy { log_level: Some(min), .. } => {
                level_rank(level) >= level_rank(min)
            }
        }
    }

    fn log_level(&self) -> Option<&str> {
        match self {
            Client::Modern { log_level, .. } | Client::Legacy { log_level, .. } => log_level.as_deref(),
        }
    }
}

/// The client capability a server → client request needs.
fn capability_of(request_method: &str) -> Option<&'static str> {
    match request_method {
        method::SAMPLING_CREATE_MESSAGE => Some("sampling"),
        method::ELICITATION_CREATE => Some("elicitation"),
        method::ROOTS_LIST => Some("roots"),
        _ => None,
    }
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
        if let Some(registry) = &registry {
            config.notifier.ensure_started(registry);
            config.startup.wait(registry, config.pending_wait).await;
        }
        return initialize(registry.as_ref(), &config, &msg);
    }
    let Some(sid) = session_header(request_headers) else { return missing_session(id) };
    let session = match open_session(&config, &sid) {
        Ok(s) => s,
        Err(why) => return session_not_found(id, why),
    };
    if let Some(h) = request_headers.get(headers::PROTOCOL_VERSION)
        && !LEGACY_VERSIONS.iter().any(|v| v.as_bytes() == h.as_bytes())
    {
        let shown = String::from_utf8_lossy(h.as_bytes()).into_owned();
        return error_response(
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
        return StatusCode::ACCEPTED.into_response();
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
    let client = Client::Legacy {
        log_level: config.bridge.level(&sid),
        sid,
        caps: session.capabilities,
        info: session.client_info,
    };
    let handler = Handler {
        registry,
        config,
        msg,
        id,
        cancel,
        guard: Some(guard),
        client,
        forward_headers: Vec::new(),
    };
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

fn initialize(registry: Option<&Registry>, config: &EndpointConfig, msg: &Message) -> Response {
    let params = msg.params().cloned().unwrap_or_default();
    let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let version = negotiate_legacy_version(requested);
    let session = match Session::new(
        version,
        params.get("capabilities").cloned().unwrap_or_else(|| json!({})),
        params.get("clientInfo").cloned().unwrap_or_else(|| json!({})),
    ) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot create a session id");
            let err = ErrorObject::new(error_code::INTERNAL_ERROR, "cannot create a session id");
            return error_response(StatusCode::INTERNAL_SERVER_ERROR, msg.id(), err);
        }
    };
    let sid = session.seal(&config.session_key);
    let caps =
        registry.map(|r| capabilities(r, &config.views.get(r, &config.federation), true)).unwrap_or_default();
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

/// `GET /mcp`: a 2025-11-25 session's notification stream (`list_changed`, and
/// `resources/updated` of its subscriptions), with SSE ids; `Last-Event-ID` replays what
/// this instance still holds. Without a session (2026-07-28 has no GET stream): 405.
pub async fn get(
    registry: Option<Registry>,
    config: Arc<EndpointConfig>,
    request_headers: HeaderMap,
) -> Response {
    let Some(sid) = session_header(&request_headers) else { return not_allowed().await };
    if let Err(why) = open_session(&config, &sid) {
        return session_not_found(None, why);
    }
    if let Some(registry) = &registry {
        config.notifier.ensure_started(registry);
    }
    let last: Option<u64> = request_headers
        .get(headers::LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok());
    let rx = config.notifier.subscribe();
    let (replay, _complete) = last.map(|l| config.notifier.since(l)).unwrap_or_default();
    let mut seen = last.unwrap_or(0);
    let stream_config = config.clone();
    let replay: VecDeque<_> = replay.into();
    let stream = futures::stream::unfold((rx, replay, sid), move |(mut rx, mut replay, sid)| {
        let config = stream_config.clone();
        async move {
            loop {
                let note = match replay.pop_front() {
                    Some(n) => n,
                    None => match rx.recv().await {
                        Ok(n) => n,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    },
                };
                if note.seq <= seen {
                    continue;
                }
                seen = note.seq;
                if config.revocations.is_ended(&sid) {
                    return None;
                }
                if let Kind::Updated(uri) = &note.kind
                    && !config.subscriptions.has(&sid, uri)
                {
                    continue;
                }
                let ev = Event::default()
                    .event("message")
                    .id(note.seq.to_string())
                    .data(note.kind.message().to_json());
                return Some((Ok::<_, Infallible>(ev), (rx, replay, sid)));
            }
        }
    });
    event_stream(stream, true)
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
    // The client's frame on the event stream, and its correlation id on every upstream frame
    // it causes (the forwarding below runs inside `correlated`).
    switchboard_transport::correlated(next_correlation(), async move {
        if let Some(r) = &registry
            && r.events().active()
        {
            let client = msg
                .meta()
                .and_then(|m| m.get(meta::CLIENT_INFO))
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("client");
            switchboard_transport::Tap::new(r.events().frame_sink(), "downstream", client, "http").record(
                switchboard_transport::Direction::In,
                &msg,
                &bytes,
            );
        }
        dispatch(registry, config, request_headers, msg).await
    })
    .await
}

/// A process-unique id tying a client request to the upstream requests it causes.
fn next_correlation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Handles one parsed client message by revision.
async fn dispatch(
    registry: Option<Registry>,
    config: Arc<EndpointConfig>,
    request_headers: HeaderMap,
    msg: Message,
) -> Response {
    // A modern `_meta` or a non-legacy MCP-Protocol-Version header means 2026-07-28 (so a
    // modern `initialize` is answered 404 -32601, a modern request without `_meta` -32602).
    let header_version = request_headers.get(headers::PROTOCOL_VERSION).and_then(|v| v.to_str().ok());
    let modern_hint =
        msg.protocol_version().is_some() || header_version.is_some_and(|v| !LEGACY_VERSIONS.contains(&v));
    let is_legacy = request_headers.contains_key(headers::SESSION_ID)
        || (!modern_hint && (msg.method() == Some(method::INITIALIZE) || msg.is_request()));
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
    let meta = msg.meta();
    let client = Client::Modern {
        caps: meta.and_then(|m| m.get(meta::CLIENT_CAPABILITIES)).cloned().unwrap_or_else(|| json!({})),
        log_level: meta.and_then(|m| m.get(meta::LOG_LEVEL)).and_then(Value::as_str).map(str::to_owned),
    };
    Handler {
        registry,
        config,
        msg,
        id,
        cancel: CancellationToken::new(),
        guard: None,
        client,
        forward_headers: Vec::new(),
    }
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
    client: Client,
    /// Unknown `Mcp-Param-*` headers of a `tools/call`, forwarded upstream as they came.
    forward_headers: Vec<(String, String)>,
}

/// What the endpoint derives from the ready servers' catalogs: valid for one
/// [`Registry::version`], so calls do not re-federate every catalog.
pub struct View {
    version: u64,
    /// Where every name goes: the ready servers' catalogs, their federation under the
    /// endpoint's prefix mode, and what the servers that are down offered (the router's one
    /// routing seam).
    pub routes: Arc<RouteTable>,
    /// Mirrored (`x-mcp-header`) parameters of each exposed tool.
    header_params: std::collections::HashMap<String, Vec<headers::HeaderParam>>,
}

/// The current [`View`], shared by the requests of one endpoint.
#[derive(Clone, Default)]
pub struct ViewCache(Arc<std::sync::RwLock<Option<Arc<View>>>>);

impl std::fmt::Debug for ViewCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ViewCache")
    }
}

impl View {
    /// The mirrored (`x-mcp-header`) parameters of the exposed tool `name`.
    pub fn header_params(&self, name: &str) -> &[headers::HeaderParam] {
        self.header_params.get(name).map(Vec::as_slice).unwrap_or_default()
    }
}

impl ViewCache {
    /// The view of `registry` now, rebuilt if the registry changed since the last one.
    pub fn get(&self, registry: &Registry, federation: &FederationConfig) -> Arc<View> {
        let version = registry.version();
        if let Some(v) = self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref()
            && v.version == version
        {
            return v.clone();
        }
        let routes = Arc::new(RouteTable::build(registry, federation));
        let header_params = routes
            .federation
            .tools
            .iter()
            .filter_map(|t| {
                let params = t.raw.get("inputSchema").and_then(|s| headers::header_params(s).ok())?;
                (!params.is_empty()).then(|| (t.name.clone(), params))
            })
            .collect();
        let view = Arc::new(View { version, routes, header_params });
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(view.clone());
        view
    }
}

/// The ready servers' catalogs, by name.
pub(crate) fn ready_catalogs(
    registry: &Registry,
) -> BTreeMap<String, Arc<switchboard_router::catalog::Catalog>> {
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

pub use switchboard_router::route::template_matches;

/// The ready server offering resource `uri`: one listing it, else one whose template matches.
pub(crate) fn resource_server(view: &View, uri: &str) -> Option<String> {
    view.routes.route(Target::Resource(uri), None).ok().map(|r| r.server)
}

impl Handler {
    fn view(&self) -> Arc<View> {
        self.config.views.get(&self.registry, &self.config.federation)
    }

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
        // Mirrored parameters of the called tool, when it is known.
        let view = self.view();
        let header_params: &[headers::HeaderParam] = if method == method::TOOLS_CALL {
            self.msg.name().and_then(|n| view.header_params.get(n)).map(Vec::as_slice).unwrap_or_default()
        } else {
            &[]
        };
        if let Err(e) = headers::validate_request_headers(get, &self.msg, header_params) {
            return error_response(StatusCode::BAD_REQUEST, self.id.clone(), e);
        }
        // `Mcp-Param-*` headers the tool does not declare are the client's business with the
        // server: an intermediary forwards them unchanged.
        let forward_headers: Vec<(String, String)> = if method == method::TOOLS_CALL {
            request_headers
                .iter()
                .filter_map(|(k, v)| {
                    let suffix = k.as_str().strip_prefix(headers::PARAM_PREFIX)?;
                    let declared = header_params.iter().any(|p| p.header.eq_ignore_ascii_case(suffix));
                    (!declared).then(|| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))?
                })
                .collect()
        } else {
            Vec::new()
        };
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
        if let Some(level) = self.client.log_level()
            && !LOG_LEVELS.contains(&level)
        {
            return self.error(
                StatusCode::BAD_REQUEST,
                error_code::INVALID_PARAMS,
                format!("unknown log level {level:?} in params._meta (one of {})", LOG_LEVELS.join(", ")),
            );
        }
        let mut this = self;
        this.forward_headers = forward_headers;
        this.dispatch(&method).await
    }

    /// Answers a request whose headers and `_meta` were checked (or that belongs to a session).
    async fn dispatch(self, method: &str) -> Response {
        // Changes are followed from the first request on, so a server that becomes ready
        // later is announced (`list_changed`) to the clients listening by then.
        self.config.notifier.ensure_started(&self.registry);
        if method != method::SUBSCRIPTIONS_LISTEN {
            self.config.startup.wait(&self.registry, self.config.pending_wait).await;
        }
        match method {
            method::SERVER_DISCOVER => self.discover(),
            method::TOOLS_LIST => self.list_federated(true),
            method::PROMPTS_LIST => self.list_federated(false),
            method::RESOURCES_LIST => self.list_resources(),
            method::RESOURCES_TEMPLATES_LIST => {
                let items = self
                    .view()
                    .routes
                    .catalogs
                    .values()
                    .flat_map(|c| c.resource_templates.iter().cloned())
                    .collect();
                self.page("resourceTemplates", items)
            }
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

    /// `ttlMs` of federated results: the endpoint's own, or less when an upstream asked for
    /// less (a merged list is only as fresh as its most volatile part).
    fn ttl_ms(&self) -> u64 {
        let upstream = self
            .view()
            .routes
            .catalogs
            .values()
            .filter_map(|c| c.ttl)
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
            .min();
        let ttl = upstream.map_or(self.config.ttl_ms, |u| u.min(self.config.ttl_ms));
        if self.registry.servers().iter().any(coming) { ttl.min(PENDING_TTL_MS) } else { ttl }
    }

    fn discover(&self) -> Response {
        let capabilities = capabilities(&self.registry, &self.view(), false);
        self.result(json!({
            "resultType": "complete",
            "supportedVersions": MODERN_VERSIONS,
            "capabilities": capabilities,
            "_meta": {meta::SERVER_INFO: {"name": "switchboard", "version": env!("CARGO_PKG_VERSION")}},
            "ttlMs": self.ttl_ms(),
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
        result.insert("ttlMs".into(), json!(self.ttl_ms()));
        result.insert("cacheScope".into(), json!("public"));
        self.result(Value::Object(result))
    }

    fn list_federated(&self, tools: bool) -> Response {
        let view = self.view();
        let list = if tools { &view.routes.federation.tools } else { &view.routes.federation.prompts };
        self.page(if tools { "tools" } else { "prompts" }, list.iter().map(|e| e.raw.clone()).collect())
    }

    fn list_resources(&self) -> Response {
        let items = self.view().routes.catalogs.values().flat_map(|c| c.resources.iter().cloned()).collect();
        self.page("resources", items)
    }

    fn upstream_failed(&self, server: &str, reason: impl std::fmt::Display) -> Response {
        self.error(
            StatusCode::OK,
            error_code::UPSTREAM_FAILED,
            format!("upstream server {server:?} failed: {reason}"),
        )
    }

    /// `logging/setLevel` of a legacy session: remembered on this instance and applied to
    /// the log notifications relayed to it (and sent upstream as `_meta` logLevel).
    fn set_level(&self) -> Response {
        let Client::Legacy { sid, .. } = &self.client else {
            return self.error(
                StatusCode::NOT_FOUND,
                error_code::METHOD_NOT_FOUND,
                "Method not found: logging/setLevel",
            );
        };
        match self.param_str("level") {
            Some(level) if LOG_LEVELS.contains(&level.as_str()) => {
                match self.config.bridge.set_level(sid, &level, self.config.session_max_age) {
                    Ok(()) => self.result(json!({})),
                    Err(full) => self.error(StatusCode::OK, error_code::INTERNAL_ERROR, full.to_string()),
                }
            }
            other => self.error(
                StatusCode::OK,
                error_code::INVALID_PARAMS,
                format!("invalid log level {other:?}: one of {}", LOG_LEVELS.join(", ")),
            ),
        }
    }

    /// `resources/subscribe` / `resources/unsubscribe` of a legacy session.
    async fn subscribe(self, on: bool) -> Response {
        let Client::Legacy { sid, .. } = &self.client else {
            return self.error(StatusCode::NOT_FOUND, error_code::METHOD_NOT_FOUND, "Method not found");
        };
        let Some(uri) = self.param_str("uri") else {
            return self.error(StatusCode::OK, error_code::INVALID_PARAMS, "params.uri is required");
        };
        let Some(server) = resource_server(&self.view(), &uri) else {
            return self.error(
                StatusCode::OK,
                error_code::INVALID_PARAMS,
                format!("Resource not found: {uri}"),
            );
        };
        if upstream_caps(&self.registry, &server).pointer("/resources/subscribe") != Some(&json!(true)) {
            return self.error(
                StatusCode::OK,
                error_code::METHOD_NOT_FOUND,
                format!("server {server:?} offering {uri} does not support resource subscriptions"),
            );
        }
        self.config.notifier.ensure_started(&self.registry);
        if !on {
            self.config.subscriptions.remove(sid, &uri);
            return self.result(json!({}));
        }
        match self.config.subscriptions.add(sid, &uri) {
            Err(e) => return self.error(StatusCode::OK, error_code::INVALID_PARAMS, e.to_string()),
            Ok(None) => {}
            Ok(Some(watch)) => {
                if let Err(e) = watch_resource(&self.registry, &self.config, &server, watch).await {
                    self.config.subscriptions.remove(sid, &uri);
                    return self.upstream_failed(&server, e);
                }
            }
        }
        self.result(json!({}))
    }

    /// `subscriptions/listen`: an SSE stream that starts with the acknowledgement and
    /// carries the accepted kinds of change, tagged with the subscription id (the listen
    /// request's id); it lasts until the client closes it.
    fn listen(self) -> Response {
        let Some(id) = self.id.clone() else { return StatusCode::ACCEPTED.into_response() };
        let filter =
            self.msg.params().and_then(|p| p.get("notifications")).cloned().unwrap_or_else(|| json!({}));
        let Some(filter) = filter.as_object() else {
            return self.error(
                StatusCode::OK,
                error_code::INVALID_PARAMS,
                "params.notifications must be an object",
            );
        };
        self.config.notifier.ensure_started(&self.registry);
        let mut accepted = Map::new();
        let mut kinds = Vec::new();
        for (key, kind) in [
            ("toolsListChanged", Kind::Tools),
            ("promptsListChanged", Kind::Prompts),
            ("resourcesListChanged", Kind::Resources),
        ] {
            if filter.get(key) == Some(&json!(true)) {
                accepted.insert(key.into(), json!(true));
                kinds.push(kind);
            }
        }
        let listener = format!("listen:{}", self.config.bridge.next_id());
        let mut uris = Vec::new();
        if let Some(requested) = filter.get("resourceSubscriptions").and_then(Value::as_array) {
            if requested.len() > MAX_RESOURCE_SUBSCRIPTIONS {
                return self.error(
                    StatusCode::OK,
                    error_code::INVALID_PARAMS,
                    format!(
                        "params.notifications.resourceSubscriptions lists {} URIs; at most {MAX_RESOURCE_SUBSCRIPTIONS} are accepted",
                        requested.len()
                    ),
                );
            }
            for uri in requested.iter().filter_map(Value::as_str) {
                let Some(server) = resource_server(&self.view(), uri) else { continue };
                if upstream_caps(&self.registry, &server).pointer("/resources/subscribe")
                    != Some(&json!(true))
                {
                    continue;
                }
                match self.config.subscriptions.add(&listener, uri) {
                    Err(e) => {
                        self.config.subscriptions.end_session(&listener);
                        return self.error(StatusCode::OK, error_code::INVALID_PARAMS, e.to_string());
                    }
                    Ok(watch) => {
                        if let Some(watch) = watch {
                            let (registry, config) = (self.registry.clone(), self.config.clone());
                            tokio::spawn(async move {
                                let _ = watch_resource(&registry, &config, &server, watch).await;
                            });
                        }
                        uris.push(uri.to_owned());
                    }
                }
            }
            accepted.insert("resourceSubscriptions".into(), json!(uris));
        }
        let sub_id = id.to_value();
        let tag = move |mut m: Message| {
            m.meta_mut().insert(meta::SUBSCRIPTION_ID.into(), sub_id.clone());
            m
        };
        let mut ack = Message::notification(
            method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
            Some(json!({"notifications": accepted})),
        );
        ack = tag(ack);
        let rx = self.config.notifier.subscribe();
        struct Listening {
            rx: tokio::sync::broadcast::Receiver<Arc<crate::notify::Note>>,
            ack: Option<Message>,
            kinds: Vec<Kind>,
            listener: String,
            subscriptions: Subscriptions,
        }
        impl Drop for Listening {
            fn drop(&mut self) {
                self.subscriptions.end_session(&self.listener);
            }
        }
        let state = Listening {
            rx,
            ack: Some(ack),
            kinds,
            listener,
            subscriptions: self.config.subscriptions.clone(),
        };
        let stream = futures::stream::unfold(state, move |mut s| {
            let tag = tag.clone();
            async move {
                if let Some(ack) = s.ack.take() {
                    return Some((event(&ack), s));
                }
                loop {
                    let note = match s.rx.recv().await {
                        Ok(n) => n,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    };
                    let wanted = match &note.kind {
                        Kind::Updated(uri) => s.subscriptions.has(&s.listener, uri),
                        k => s.kinds.contains(k),
                    };
                    if wanted {
                        return Some((event(&tag(note.kind.message())), s));
                    }
                }
            }
        });
        event_stream(stream, true)
    }

    async fn call(self, method: &str) -> Response {
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
                return error_response(
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

    async fn read_resource(self) -> Response {
        let Some(uri) = self.param_str("uri") else {
            return self.error(StatusCode::OK, error_code::INVALID_PARAMS, "resources/read needs params.uri");
        };
        let Some(server) = resource_server(&self.view(), &uri) else {
            return error_response(
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
    async fn complete(self) -> Response {
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
                match resource_server(&self.view(), uri) {
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

    /// Forwards a request to `server`, and tells the listener's edge (traces, deadline)
    /// which upstream the request went to.
    async fn forward(self, server: &str, method: &str, params: Map<String, Value>) -> Response {
        let mut resp = self.forward_to(server, method, params).await;
        resp.extensions_mut().insert(crate::edge::UpstreamChosen(server.to_owned()));
        resp
    }

    /// Forwards a request to `server` and answers with JSON, or with an SSE stream when
    /// anything comes before the response.
    async fn forward_to(self, server: &str, method: &str, params: Map<String, Value>) -> Response {
        let Some(client) = self.registry.client_for(server, self.client.caps()).await else {
            return self.upstream_failed(server, "not connected");
        };
        let Some(id) = self.id.clone() else { return StatusCode::ACCEPTED.into_response() };
        let mut call = Call {
            config: self.config.clone(),
            client: self.client.clone(),
            upstream: client,
            server: server.to_owned(),
            method: method.to_owned(),
            params,
            exchange: None,
            outbox: VecDeque::new(),
            waiting: Vec::new(),
            retry_state: None,
            done: false,
            id: id.clone(),
            cancel: self.cancel.clone(),
            rounds: 0,
            minted: Vec::new(),
            used_inputs: Vec::new(),
            asked: Vec::new(),
            session_expired: false,
            incoming: None,
            logs_on_incoming: false,
            forward_headers: self.forward_headers,
            _guard: self.guard,
        };
        // A retry carrying a state the router sealed resumes a parked call.
        let ours = call
            .params
            .get("requestState")
            .and_then(Value::as_str)
            .filter(|s| s.starts_with(STATE_PREFIX))
            .map(str::to_owned);
        if let Some(state) = ours {
            if let Err(resp) = call.resume(&state) {
                return *resp;
            }
        } else if let Err(e) = call.start(None).await {
            if !call.session_expired {
                return error_response(StatusCode::OK, Some(id), e);
            }
            // The server ended the upstream session kept for this caller's capabilities (an
            // idle session expired): open a new one and try once more.
            self.registry.forget_session(server, call.client.caps()).await;
            let Some(fresh) = self.registry.client_for(server, call.client.caps()).await else {
                return error_response(StatusCode::OK, Some(id), e);
            };
            call.upstream = fresh;
            if let Err(e) = call.start(None).await {
                return error_response(StatusCode::OK, Some(id), e);
            }
        }
        let Some(first) = call.next().await else { return StatusCode::ACCEPTED.into_response() };
        if first.is_response() {
            let status = match (&call.client, first.error()) {
                (Client::Modern { .. }, Some(e))
                    if e.code == error_code::MISSING_REQUIRED_CLIENT_CAPABILITY =>
                {
                    StatusCode::BAD_REQUEST
                }
                _ => StatusCode::OK,
            };
            return json_response(status, &first);
        }
        sse(first, call)
    }
}

/// Starts the one watcher of `watch.uri` on `server` (see [`Subscriptions`]): a legacy
/// upstream is sent `resources/subscribe` once and its `resources/updated` notifications are
/// followed; a modern one is asked through a `subscriptions/listen` stream of its own. Each
/// change is published once. When the last subscriber leaves (`watch.stop`), a legacy
/// upstream is sent `resources/unsubscribe` and a modern stream is closed. Returns once the
/// upstream accepted the subscription.
async fn watch_resource(
    registry: &Registry,
    config: &Arc<EndpointConfig>,
    server: &str,
    watch: WatchStart,
) -> Result<(), String> {
    let subscriptions = config.subscriptions.clone();
    let WatchStart { uri, stop, generation } = watch;
    let ended = |why: &str| {
        tracing::debug!(%uri, server, why, "resource watcher ended");
        subscriptions.watch_ended(&uri, generation);
    };
    let Some(client) = registry.entry(server).and_then(|e| e.client()) else {
        ended("server not connected");
        return Err("not connected".into());
    };
    let notifier = config.notifier.clone();
    let is_update = |m: &Message, uri: &str| {
        m.method() == Some(method::NOTIFICATION_RESOURCES_UPDATED)
            && m.params().and_then(|p| p.get("uri")).and_then(Value::as_str) == Some(uri)
    };
    if client.era() == Era::Legacy {
        let mut incoming = client.upstream().incoming();
        if let Err(e) = client.request(method::RESOURCES_SUBSCRIBE, json!({"uri": uri})).await {
            tracing::warn!(%uri, error = %e, "upstream refused resources/subscribe");
            ended("subscribe refused");
            return Err(format!("resources/subscribe refused: {e}"));
        }
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => {
                        if let Err(e) = client.request(method::RESOURCES_UNSUBSCRIBE, json!({"uri": uri})).await {
                            tracing::debug!(%uri, error = %e, "resources/unsubscribe failed");
                        }
                        return;
                    }
                    m = incoming.recv() => match m {
                        Ok(m) if is_update(&m, &uri) => notifier.publish(Kind::Updated(uri.clone())),
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            subscriptions.watch_ended(&uri, generation);
                            return;
                        }
                    },
                }
            }
        });
    } else {
        let params = json!({"notifications": {"resourceSubscriptions": [uri]}});
        let mut exchange = match client.start(method::SUBSCRIPTIONS_LISTEN, params).await {
            Ok(ex) => ex,
            Err(e) => {
                ended("listen refused");
                return Err(format!("subscriptions/listen failed: {e}"));
            }
        };
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    // Dropping the exchange closes the stream upstream.
                    () = stop.cancelled() => return,
                    m = exchange.next() => match m {
                        Some(Ok(m)) if is_update(&m, &uri) => notifier.publish(Kind::Updated(uri.clone())),
                        Some(Ok(m)) if !m.is_response() => {}
                        _ => {
                            subscriptions.watch_ended(&uri, generation);
                            return;
                        }
                    },
                }
            }
        });
    }
    Ok(())
}

/// One forwarded request: its upstream exchange and everything the downstream is sent.
struct Call {
    config: Arc<EndpointConfig>,
    client: Client,
    upstream: Arc<switchboard_transport::McpClient>,
    server: String,
    method: String,
    /// The request's params as the client sent them (name rewritten).
    params: Map<String, Value>,
    exchange: Option<Exchange>,
    /// Messages to send the client before reading further.
    outbox: VecDeque<Message>,
    /// Answers a legacy client owes for a modern upstream's input requests.
    waiting: Vec<(String, Value, tokio::sync::oneshot::Receiver<Message>)>,
    /// The upstream's `requestState` to echo on the retry.
    retry_state: Option<Value>,
    done: bool,
    id: Id,
    cancel: CancellationToken,
    rounds: usize,
    /// Ids of server → client requests sent to a legacy client (forgotten on drop).
    minted: Vec<Value>,
    /// Keys of the request's own `inputResponses` already handed to a legacy upstream.
    used_inputs: Vec<String>,
    /// Input keys asked of a 2026 client in earlier rounds of this bridged call (restored
    /// from the parked call): never reused, never answered up front.
    asked: Vec<String>,
    /// The last start failed because the server no longer knew the upstream session.
    session_expired: bool,
    /// A legacy upstream's messages outside any request (its log messages during the call).
    incoming: Option<tokio::sync::broadcast::Receiver<Message>>,
    /// Whether this call's upstream sent it log messages on the GET stream.
    logs_on_incoming: bool,
    /// Unknown `Mcp-Param-*` headers to forward.
    forward_headers: Vec<(String, String)>,
    _guard: Option<InFlightGuard>,
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Client::Legacy { sid, .. } = &self.client {
            for id in &self.minted {
                self.config.bridge.forget_answer(sid, id);
            }
        }
    }
}

/// Most MRTR rounds one bridged call may take.
const MAX_ROUNDS: usize = 16;

/// Most input keys one bridged call may ask a 2026 client for, over all its rounds.
const MAX_INPUTS_PER_CALL: usize = 1024;

/// How long to wait for further server → client requests after the first, so requests a
/// legacy upstream sends together reach a 2026 client in one `InputRequiredResult`.
const GATHER: Duration = Duration::from_millis(40);

impl Call {
    /// What a sealed `requestState` of this call is bound to (computed when needed only).
    fn binding(&self) -> String {
        crate::bridge::binding(&self.method, &self.params)
    }

    fn legacy_upstream(&self) -> bool {
        self.upstream.era() == Era::Legacy
    }

    /// The params sent upstream, adapted to its era.
    fn upstream_params(&self, input_responses: Option<Map<String, Value>>) -> Map<String, Value> {
        let mut params = self.params.clone();
        if self.legacy_upstream() {
            // A 2025-11-25 server knows none of these.
            params.remove("inputResponses");
            params.remove("requestState");
            if let Some(Value::Object(m)) = params.get_mut("_meta") {
                for k in MODERN_REQUEST_META {
                    m.remove(k);
                }
                m.remove(meta::LOG_LEVEL);
            }
        } else if let Client::Legacy { caps, info, log_level, .. } = &self.client {
            let m = params.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(m) = m {
                m.insert(meta::CLIENT_CAPABILITIES.into(), caps.clone());
                if info.as_object().is_some_and(|i| !i.is_empty()) {
                    m.insert(meta::CLIENT_INFO.into(), info.clone());
                }
                if let Some(level) = log_level {
                    m.insert(meta::LOG_LEVEL.into(), json!(level));
                }
            }
        }
        if let Some(responses) = input_responses {
            params.insert("inputResponses".into(), Value::Object(responses));
            match self.retry_state.clone() {
                Some(state) => params.insert("requestState".into(), state),
                None => params.remove("requestState"),
            };
        }
        params
    }

    /// Sends the request (or its retry with the client's answers) upstream.
    async fn start(&mut self, input_responses: Option<Map<String, Value>>) -> Result<(), ErrorObject> {
        let params = self.upstream_params(input_responses);
        if self.legacy_upstream() && self.incoming.is_none() {
            // A 2025-11-25 server may send its log messages on the session's GET stream
            // rather than the call's; those arriving during the call are relayed to it.
            self.incoming = Some(self.upstream.upstream().incoming());
        }
        let extra = self.forward_headers.clone();
        match self.upstream.start_with_headers(&self.method, Value::Object(params), extra).await {
            Ok(ex) => {
                self.exchange = Some(ex);
                Ok(())
            }
            Err(e) => {
                self.session_expired = matches!(e, switchboard_transport::Error::SessionExpired { .. });
                Err(self.failed(e))
            }
        }
    }

    fn failed(&self, reason: impl std::fmt::Display) -> ErrorObject {
        ErrorObject::new(
            error_code::UPSTREAM_FAILED,
            format!("upstream server {:?} failed: {reason}", self.server),
        )
    }

    fn finish(&mut self, mut m: Message) -> Option<Message> {
        m.set_id(&self.id);
        if matches!(self.client, Client::Modern { .. })
            && let Some(Value::Object(result)) = m.result_mut()
        {
            // A 2025-11-25 upstream's result, as a 2026-07-28 client must see it.
            result.entry("resultType").or_insert_with(|| json!("complete"));
            if self.method == method::RESOURCES_READ {
                result.entry("ttlMs").or_insert_with(|| json!(0));
                result.entry("cacheScope").or_insert_with(|| json!("private"));
            }
        }
        self.done = true;
        self.exchange = None;
        Some(m)
    }

    fn finish_error(&mut self, e: ErrorObject) -> Option<Message> {
        let m = Message::error_response(Some(self.id.clone()), e);
        self.finish(m)
    }

    /// Resumes a parked call with the client's `inputResponses`.
    fn resume(&mut self, state: &str) -> Result<(), Box<Response>> {
        let refuse = |id: &Id, message: String| {
            error_response(
                StatusCode::OK,
                Some(id.clone()),
                ErrorObject::new(error_code::INVALID_PARAMS, message),
            )
        };
        let parked = match self.config.bridge.resume(&self.config.session_key, state, &self.binding()) {
            Ok(p) => p,
            Err(e) => return Err(Box::new(refuse(&self.id, e.to_string()))),
        };
        let responses = match self.params.get("inputResponses") {
            Some(Value::Object(m)) => m.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(_) => {
                return Err(Box::new(refuse(&self.id, "params.inputResponses must be an object".into())));
            }
        };
        let Parked { exchange, server, inputs, binding, log_level, asked, .. } = parked;
        // The answers of this retry belong to the parked questions only: a later question of
        // the upstream gets none of them, and no key asked before is asked again.
        self.used_inputs = responses.keys().cloned().collect();
        self.asked = asked.clone();
        let mut missing = Vec::new();
        for (key, upstream_id, request) in inputs {
            match responses.get(&key) {
                Some(answer @ Value::Object(_)) => {
                    let Some(uid) = Id::from_value(&upstream_id) else { continue };
                    let upstream = self.upstream.upstream().clone();
                    let reply = Message::response(uid, answer.clone());
                    tokio::spawn(async move {
                        if let Err(e) = upstream.send(reply).await {
                            tracing::warn!(error = %e, "could not deliver an input response upstream");
                        }
                    });
                }
                _ => missing.push((key, upstream_id, request)),
            }
        }
        if !missing.is_empty() {
            // Ask again for what is still missing; the call stays parked.
            let requests: Map<String, Value> =
                missing.iter().map(|(k, _, r)| (k.clone(), r.clone())).collect();
            let state = match self.config.bridge.park(&self.config.session_key, {
                let mut p = Parked::new(exchange, server, missing, binding, log_level);
                p.asked = asked;
                p
            }) {
                Ok(s) => s,
                Err(e) => {
                    let err = ErrorObject::new(error_code::INTERNAL_ERROR, e.to_string());
                    self.outbox.push_back(Message::error_response(Some(self.id.clone()), err));
                    self.done = true;
                    return Ok(());
                }
            };
            let result =
                json!({"resultType": "input_required", "inputRequests": requests, "requestState": state});
            self.outbox.push_back(Message::response(self.id.clone(), result));
            self.done = true;
            return Ok(());
        }
        self.exchange = Some(exchange);
        Ok(())
    }

    /// The next message for the client; the response comes last, then `None`.
    async fn next(&mut self) -> Option<Message> {
        loop {
            if let Some(m) = self.outbox.pop_front() {
                return Some(m);
            }
            if self.done {
                return None;
            }
            if !self.waiting.is_empty() {
                if let Err(e) = self.collect_answers().await {
                    return self.finish_error(e);
                }
                continue;
            }
            let exchange = self.exchange.as_mut()?;
            let incoming = &mut self.incoming;
            let next = tokio::select! {
                biased;
                () = self.cancel.cancelled() => {
                    return self.finish_error(ErrorObject::new(REQUEST_CANCELLED, "Request cancelled"));
                }
                next = exchange.next() => next,
                m = async {
                    match incoming.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => {
                    match m {
                        Ok(m) if m.method() == Some(method::NOTIFICATION_MESSAGE) && self.wants(&m) => {
                            self.logs_on_incoming = true;
                            return Some(m);
                        }
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => self.incoming = None,
                    }
                    continue;
                }
            };
            match next {
                Some(Ok(m)) if m.is_response() => {
                    self.drain_incoming_logs().await;
                    if let Some(out) = self.on_response(m).await {
                        self.outbox.push_back(out);
                    }
                }
                Some(Ok(m)) if relayable(&m) => {
                    if self.wants(&m) {
                        return Some(m);
                    }
                }
                Some(Ok(m)) if m.is_request() => {
                    if let Some(out) = self.on_server_request(m).await {
                        return Some(out);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    let e = self.failed(e);
                    return self.finish_error(e);
                }
                None => {
                    let e = self.failed("stream ended without a response");
                    return self.finish_error(e);
                }
            }
        }
    }

    /// Before the response: log messages of the call that a legacy upstream sent on its GET
    /// stream may still be on their way; those already here are relayed, and when this call
    /// has seen such messages, stragglers get a few milliseconds.
    async fn drain_incoming_logs(&mut self) {
        let Some(mut rx) = self.incoming.take() else { return };
        let grace = if self.logs_on_incoming { Duration::from_millis(15) } else { Duration::ZERO };
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let m = match rx.try_recv() {
                Ok(m) => m,
                Err(tokio::sync::broadcast::error::TryRecvError::Empty) if !grace.is_zero() => {
                    match tokio::time::timeout_at(deadline, rx.recv()).await {
                        Ok(Ok(m)) => m,
                        _ => break,
                    }
                }
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => continue,
                Err(_) => break,
            };
            if m.method() == Some(method::NOTIFICATION_MESSAGE) && self.wants(&m) {
                self.outbox.push_back(m);
            }
        }
        self.incoming = Some(rx);
    }

    /// Whether a relayed notification reaches the client (log levels).
    fn wants(&self, m: &Message) -> bool {
        if m.method() != Some(method::NOTIFICATION_MESSAGE) {
            return true;
        }
        let level = m.params().and_then(|p| p.get("level")).and_then(Value::as_str).unwrap_or("info");
        self.client.wants_log(level)
    }

    /// The upstream answered. A modern upstream's `input_required` for a legacy client is
    /// asked of the client as server → client requests; anything else is the response.
    async fn on_response(&mut self, m: Message) -> Option<Message> {
        let input_required =
            m.result().and_then(|r| r.get("resultType")).and_then(Value::as_str) == Some("input_required");
        let Client::Legacy { sid, .. } = &self.client else { return self.finish(m) };
        if !input_required {
            return self.finish(m);
        }
        if self.rounds >= MAX_ROUNDS {
            let e = ErrorObject::new(
                error_code::INTERNAL_ERROR,
                format!("upstream {:?} asked for input more than {MAX_ROUNDS} times", self.server),
            );
            return self.finish_error(e);
        }
        self.rounds += 1;
        let sid = sid.clone();
        let result = m.result().cloned().unwrap_or_default();
        self.retry_state = result.get("requestState").cloned();
        let requests = result.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
        for (key, request) in requests {
            let req_method = request.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
            if !self.client.allows(&req_method) {
                let cap = capability_of(&req_method).unwrap_or("unknown");
                let e = ErrorObject::new(
                    error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!("upstream {:?} needs {req_method}, but the session did not declare the {cap} capability", self.server),
                )
                .with_data(json!({"requiredCapabilities": {cap: {}}}));
                return self.finish_error(e);
            }
            let id = self.config.bridge.mint_request_id();
            let rx = self.config.bridge.expect_answer(&sid, &id);
            self.minted.push(id.clone());
            let params = request.get("params").cloned();
            if let Some(rid) = Id::from_value(&id) {
                self.outbox.push_back(Message::request(rid, &req_method, params));
            }
            self.waiting.push((key, id, rx));
        }
        self.exchange = None;
        None
    }

    /// Waits for the legacy client's answers, then retries upstream with them.
    async fn collect_answers(&mut self) -> Result<(), ErrorObject> {
        let waiting = std::mem::take(&mut self.waiting);
        let mut responses = Map::new();
        let deadline = tokio::time::sleep(self.config.answer_timeout);
        tokio::pin!(deadline);
        for (key, id, rx) in waiting {
            let answer = tokio::select! {
                () = self.cancel.cancelled() => return Err(ErrorObject::new(REQUEST_CANCELLED, "Request cancelled")),
                () = &mut deadline => {
                    return Err(ErrorObject::new(
                        error_code::INTERNAL_ERROR,
                        format!("the client did not answer request {id} within {} s", self.config.answer_timeout.as_secs()),
                    ));
                }
                a = rx => a,
            };
            let Ok(answer) = answer else {
                return Err(ErrorObject::new(
                    error_code::INTERNAL_ERROR,
                    format!("request {id} was abandoned"),
                ));
            };
            if let Some(e) = answer.error() {
                return Err(ErrorObject::new(
                    e.code,
                    format!("the client refused request {id} for upstream {:?}: {}", self.server, e.message),
                ));
            }
            responses.insert(key, answer.result().cloned().unwrap_or_else(|| json!({})));
        }
        self.start(Some(responses)).await
    }

    /// A legacy upstream asks the client something during the call.
    async fn on_server_request(&mut self, m: Message) -> Option<Message> {
        let upstream = self.upstream.upstream().clone();
        let req_method = m.method().unwrap_or_default().to_owned();
        let upstream_id = m.id()?;
        if req_method == method::PING {
            let _ = upstream.send(Message::response(upstream_id, json!({}))).await;
            return None;
        }
        match self.client.clone() {
            Client::Legacy { sid, .. } => {
                if !self.client.allows(&req_method) {
                    refuse_upstream(&upstream, upstream_id, &req_method).await;
                    return None;
                }
                // Relay with an id of ours; the answer comes back as a POST.
                let id = self.config.bridge.mint_request_id();
                let rx = self.config.bridge.expect_answer(&sid, &id);
                self.minted.push(id.clone());
                let timeout = self.config.answer_timeout;
                tokio::spawn(async move {
                    let reply = match tokio::time::timeout(timeout, rx).await {
                        Ok(Ok(answer)) => match answer.error() {
                            Some(e) => Message::error_response(Some(upstream_id), e),
                            None => Message::response(
                                upstream_id,
                                answer.result().cloned().unwrap_or_else(|| json!({})),
                            ),
                        },
                        _ => Message::error_response(
                            Some(upstream_id),
                            ErrorObject::new(error_code::INTERNAL_ERROR, "the client did not answer"),
                        ),
                    };
                    let _ = upstream.send(reply).await;
                });
                let mut out = m;
                if let Some(rid) = Id::from_value(&id) {
                    out.set_id(&rid);
                }
                Some(out)
            }
            Client::Modern { .. } => self.bridge_to_input_required(m).await,
        }
    }

    /// Gathers the legacy upstream's requests, parks the call and answers the 2026 client
    /// with an `InputRequiredResult` whose `requestState` the router sealed.
    async fn bridge_to_input_required(&mut self, first: Message) -> Option<Message> {
        let upstream = self.upstream.upstream().clone();
        let mut asked = vec![first];
        while let Some(exchange) = self.exchange.as_mut() {
            match tokio::time::timeout(GATHER, exchange.next()).await {
                Err(_) => break,
                Ok(Some(Ok(m))) if m.is_request() => asked.push(m),
                Ok(Some(Ok(m))) if m.is_response() => {
                    // Answered without waiting for its questions: that is the response.
                    for q in asked {
                        if let Some(qid) = q.id() {
                            refuse_upstream(&upstream, qid, q.method().unwrap_or_default()).await;
                        }
                    }
                    return self.finish(m);
                }
                Ok(Some(Ok(m))) => {
                    if relayable(&m) && self.wants(&m) {
                        self.outbox.push_back(m);
                    }
                }
                Ok(Some(Err(e))) => {
                    let e = self.failed(e);
                    return self.finish_error(e);
                }
                Ok(None) => break,
            }
        }
        let mut inputs = Vec::new();
        let mut requests = Map::new();
        let mut unmet = Map::new();
        for q in asked {
            let req_method = q.method().unwrap_or_default().to_owned();
            let Some(qid) = q.id() else { continue };
            if req_method == method::PING {
                let _ = upstream.send(Message::response(qid, json!({}))).await;
                continue;
            }
            if !self.client.allows(&req_method) {
                if let Some(cap) = capability_of(&req_method) {
                    unmet.insert(cap.into(), json!({}));
                }
                refuse_upstream(&upstream, qid, &req_method).await;
                continue;
            }
            let mut params = q.params().cloned().unwrap_or_default();
            // Keys are unique within the call across rounds: a hint already used (this round or
            // an earlier one) or a made-up key gets the next free number.
            let taken = |k: &str| {
                requests.contains_key(k)
                    || self.asked.iter().any(|a| a == k)
                    || self.used_inputs.iter().any(|a| a == k)
            };
            let hint = input_key_hint(&mut params).filter(|k| !taken(k));
            let key = hint.unwrap_or_else(|| {
                let stem = req_method.replace('/', "_");
                (1usize..).map(|n| format!("{stem}_{n}")).find(|k| !taken(k)).unwrap_or(stem)
            });
            // Answered up front (a client may send inputResponses without a requestState):
            // hand the answer over instead of asking.
            if !self.used_inputs.contains(&key)
                && let Some(answer @ Value::Object(_)) =
                    self.params.get("inputResponses").and_then(|r| r.get(&key)).cloned()
            {
                self.used_inputs.push(key);
                let _ = upstream.send(Message::response(qid, answer)).await;
                continue;
            }
            let request = json!({"method": req_method, "params": params});
            requests.insert(key.clone(), request.clone());
            inputs.push((key, qid.to_value(), request));
        }
        if inputs.is_empty() && unmet.is_empty() {
            // Everything was answered from the request's own inputResponses.
            return None;
        }
        if inputs.is_empty() {
            let e = ErrorObject::new(
                error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("upstream {:?} needs client capabilities the request did not declare", self.server),
            )
            .with_data(json!({"requiredCapabilities": unmet}));
            return self.finish_error(e);
        }
        let mut asked = std::mem::take(&mut self.asked);
        for key in self.used_inputs.iter().chain(inputs.iter().map(|(k, _, _)| k)) {
            if !asked.contains(key) {
                asked.push(key.clone());
            }
        }
        if asked.len() > MAX_INPUTS_PER_CALL {
            let e = self.failed(format!("it asked for more than {MAX_INPUTS_PER_CALL} inputs in one call"));
            return self.finish_error(e);
        }
        let Some(exchange) = self.exchange.take() else {
            let e = self.failed("the call ended while asking for input");
            return self.finish_error(e);
        };
        let mut parked = Parked::new(
            exchange,
            self.server.clone(),
            inputs,
            self.binding(),
            self.client.log_level().map(str::to_owned),
        );
        parked.asked = asked;
        let parked = self.config.bridge.park(&self.config.session_key, parked);
        let state = match parked {
            Ok(s) => s,
            Err(e) => return self.finish_error(ErrorObject::new(error_code::INTERNAL_ERROR, e.to_string())),
        };
        let result =
            json!({"resultType": "input_required", "inputRequests": requests, "requestState": state});
        let m = Message::response(self.id.clone(), result);
        self.done = true;
        // Notifications gathered meanwhile go first.
        self.outbox.push_back(m);
        self.outbox.pop_front()
    }
}

/// `_meta` key by which a 2025-11-25 server may name the input a request of its asks for;
/// the router then uses that name as the `inputRequests` key when it bridges the request to
/// a 2026-07-28 client (otherwise it makes one up from the method).
pub const INPUT_KEY_META: &str = "dev.switchboard/inputKey";

/// Takes a valid input key hint out of a server request's params.
fn input_key_hint(params: &mut Map<String, Value>) -> Option<String> {
    let Some(Value::Object(m)) = params.get_mut("_meta") else { return None };
    let hint = m.remove(INPUT_KEY_META)?;
    if m.is_empty() {
        params.remove("_meta");
    }
    let key = hint.as_str()?;
    let ok = !key.is_empty()
        && key.len() <= 64
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    ok.then(|| key.to_owned())
}

/// Tells a legacy upstream the client cannot answer its request.
async fn refuse_upstream(upstream: &Arc<dyn switchboard_transport::Upstream>, id: Id, req_method: &str) {
    let cap = capability_of(req_method).unwrap_or("that");
    let e = ErrorObject::new(
        error_code::METHOD_NOT_FOUND,
        format!("the client did not declare the {cap} capability ({req_method})"),
    );
    let _ = upstream.send(Message::error_response(Some(id), e)).await;
}

fn relayable(m: &Message) -> bool {
    m.is_notification()
        && matches!(m.method(), Some(method::NOTIFICATION_PROGRESS) | Some(method::NOTIFICATION_MESSAGE))
}

fn event(m: &Message) -> Result<Event, Infallible> {
    Ok(Event::default().event("message").data(m.to_json()))
}

/// JSON-RPC code for a request the client cancelled.
const REQUEST_CANCELLED: i64 = -32800;

/// An SSE response relaying the call's messages and ending with its response. Dropping the
/// stream (the client went away) drops the call and its exchange, which cancels upstream.
fn sse(first: Message, call: Call) -> Response {
    let stream = futures::stream::unfold((Some(first), call), |(first, mut call)| async move {
        if let Some(m) = first {
            return Some((event(&m), (None, call)));
        }
        let m = call.next().await?;
        Some((event(&m), (None, call)))
    });
    event_stream(stream, false)
}

/// An SSE response (unbuffered by proxies); long-lived notification streams get keep-alive
/// comments, a call's stream ends with its response and needs none.
fn event_stream<S>(stream: S, long_lived: bool) -> Response
where
    S: futures::Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let mut resp = if long_lived {
        Sse::new(stream).keep_alive(axum::response::sse::KeepAlive::default()).into_response()
    } else {
        Sse::new(stream).into_response()
    };
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
