//! The federated MCP endpoint, independent of the transport a message came on.
//!
//! [`Endpoint::handle`] takes one already-parsed client [`Message`] and a [`RequestContext`]
//! (transport, peer, session id, HTTP headers when there are any) and returns a [`Reply`]: one
//! JSON-RPC message, a stream of messages, or nothing. The HTTP handlers ([`crate::http`])
//! turn a reply into a JSON or SSE response; the WebSocket and stdio adapters
//! ([`crate::downstream`]) write its messages as frames or lines. A frame is parsed once,
//! whatever its transport.
//!
//! **2026-07-28** requests carry their own `_meta`, so any instance can answer them: lists
//! come from the federation of the ready servers' catalogs ([`lists`]); `tools/call`,
//! `prompts/get`, `resources/read` and `completion/complete` are forwarded as raw JSON with only
//! the name rewritten ([`forward`], [`call`]); interim progress/log notifications are relayed
//! on a message stream that ends with the upstream's response; dropping that stream cancels
//! the call upstream. `subscriptions/listen` streams `list_changed` (and `resources/updated` for
//! subscribed URIs) tagged with the subscription id ([`listen`]).
//!
//! **2025-11-25** clients get a self-contained, sealed `Mcp-Session-Id` from `initialize`
//! (see [`crate::session`]), so any instance sharing [`EndpointConfig::session_key`] serves
//! the session; [`Endpoint::notifications`] is the session's notification stream (event ids,
//! replay), [`Endpoint::end_session`] ends it. Which revision a message belongs to is decided
//! in [`revision`].
//!
//! **Bridging** (see [`crate::bridge`]): a legacy upstream's server → client requests become
//! an `InputRequiredResult` with a router-sealed `requestState` for 2026 clients; a modern
//! upstream's `InputRequiredResult` becomes server → client requests on a legacy client's
//! response stream, and the call is retried with the answers.
//!
//! What the endpoint decides about a request (the upstream it forwards to, the client and its
//! protocol version, a new session id) is written to [`RequestContext::decided`] as soon as it
//! is known, so the edge ([`crate::edge`]) and the transports read it instead of deriving it
//! again.

mod call;
mod client;
mod forward;
mod handler;
mod listen;
mod lists;
mod plan;
mod revision;
mod watch;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, StatusCode};
use futures::stream::BoxStream;
use serde_json::Value;
use switchboard_router::Registry;
use switchboard_wire::{ErrorObject, Id, Message, error_code};

pub use crate::config::{
    DEFAULT_ANSWER_TIMEOUT, DEFAULT_BODY_LIMIT, DEFAULT_PAGE_SIZE, EndpointConfig, PENDING_TTL_MS,
    StartupWait,
};
pub use crate::view::{View, ViewCache, template_matches};
pub use call::INPUT_KEY_META;

use crate::notify::Kind;
use crate::session::{Refused, Session};

/// The transport a client message came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP (`POST /mcp`).
    Http,
    /// A WebSocket on `GET /mcp`.
    Ws,
    /// Newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
}

impl Transport {
    /// The name used in traces and frame events: `http`, `ws` or `stdio`.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Ws => "ws",
            Transport::Stdio => "stdio",
        }
    }
}

/// What the endpoint decided about one request, as far as it got.
#[derive(Debug, Clone, Default)]
pub struct Decisions {
    /// The upstream server the request was forwarded to.
    pub upstream: Option<String>,
    /// The client's `clientInfo` (from `_meta`, `initialize` or the session).
    pub client_info: Option<Value>,
    /// The protocol version the request speaks.
    pub version: Option<String>,
    /// The session id `initialize` created.
    pub new_session: Option<String>,
    /// The scheduler's decision for the last attempt (a retry elsewhere replaces it).
    pub route: Option<Arc<switchboard_router::schedule::Decision>>,
    /// Attempts made on upstreams that failed before the one that answered.
    pub retries: u32,
}

/// [`Decisions`] shared between the endpoint (which writes them while it works) and the
/// edge/transport (which read them, also while the request still runs). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Decided(Arc<Mutex<Decisions>>);

impl Decided {
    /// A copy of what is decided so far.
    pub fn get(&self) -> Decisions {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn update(&self, f: impl FnOnce(&mut Decisions)) {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner));
    }

    pub(crate) fn set_upstream(&self, server: &str) {
        self.update(|d| d.upstream = Some(server.to_owned()));
    }

    pub(crate) fn set_route(&self, decision: &Arc<switchboard_router::schedule::Decision>, retries: u32) {
        self.update(|d| {
            d.upstream = decision.chosen.clone();
            d.route = Some(decision.clone());
            d.retries = retries;
        });
    }

    pub(crate) fn set_client(&self, info: Option<Value>, version: Option<String>) {
        self.update(|d| {
            d.client_info = info;
            d.version = version;
        });
    }

    pub(crate) fn set_new_session(&self, sid: String) {
        self.update(|d| d.new_session = Some(sid));
    }
}

/// What the transport knows of a message besides its body.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// Where the message came from.
    pub transport: Transport,
    /// The client's address, when it has one.
    pub peer: Option<String>,
    /// The 2025-11-25 session the message belongs to (`Mcp-Session-Id`, or the one a
    /// WebSocket/stdio connection's `initialize` opened).
    pub session: Option<String>,
    /// The `MCP-Protocol-Version` the message came with (header, or the connection's
    /// session version).
    pub protocol_version: Option<String>,
    /// The HTTP request headers; `None` on transports without headers, where the 2026-07-28
    /// header checks (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) do not apply.
    pub headers: Option<HeaderMap>,
    /// Written by the endpoint as it decides (see [`Decisions`]).
    pub decided: Decided,
    /// Ties the client's frames to the upstream frames they cause.
    pub correlation: u64,
}

impl RequestContext {
    /// A context for a message on `transport`, with a fresh correlation id.
    pub fn new(transport: Transport, peer: Option<String>) -> RequestContext {
        RequestContext {
            transport,
            peer,
            session: None,
            protocol_version: None,
            headers: None,
            decided: Decided::default(),
            correlation: next_correlation(),
        }
    }

    /// Reads the session and protocol version out of HTTP headers, and keeps them.
    pub fn with_headers(mut self, headers: HeaderMap) -> RequestContext {
        let text = |name: &str| headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        self.session = text(switchboard_wire::headers::SESSION_ID);
        self.protocol_version = text(switchboard_wire::headers::PROTOCOL_VERSION);
        self.headers = Some(headers);
        self
    }
}

/// A process-unique id tying a client request to the upstream requests it causes.
fn next_correlation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One message of a [`Reply::Stream`].
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The message.
    pub msg: Message,
    /// Its event id on a resumable stream (a session's notifications).
    pub event_id: Option<u64>,
}

impl From<Message> for Outgoing {
    fn from(msg: Message) -> Self {
        Outgoing { msg, event_id: None }
    }
}

/// Messages sent as they come. A call's stream ends with its response; dropping it cancels the
/// call upstream.
pub struct Outbound {
    /// The messages.
    pub messages: BoxStream<'static, Outgoing>,
    /// A notification stream that lasts until the client leaves (HTTP adds keep-alives).
    pub long_lived: bool,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound").field("long_lived", &self.long_lived).finish_non_exhaustive()
    }
}

/// The endpoint's answer to one client message.
#[derive(Debug)]
pub enum Reply {
    /// Nothing to send back (HTTP 202): a notification, or the client's own response.
    Accepted,
    /// Done, nothing to send back (HTTP 204): a session was ended.
    NoContent,
    /// One JSON-RPC message; `status` is what it means in HTTP.
    Message {
        /// HTTP status (200, or the 4xx/5xx the spec gives the error).
        status: StatusCode,
        /// The message.
        msg: Message,
    },
    /// Messages as they come (HTTP: an SSE response).
    Stream(Outbound),
}

impl Reply {
    /// A JSON-RPC error for request `id`.
    pub fn error(status: StatusCode, id: Option<Id>, error: ErrorObject) -> Reply {
        Reply::Message { status, msg: Message::error_response(id, error) }
    }

    /// The result of request `id` (nothing for a notification).
    fn result(id: Option<Id>, result: Value) -> Reply {
        match id {
            Some(id) => Reply::Message { status: StatusCode::OK, msg: Message::response(id, result) },
            None => Reply::Accepted,
        }
    }
}

/// The endpoint: the registry it federates and its settings. Cheap to clone.
#[derive(Clone)]
pub struct Endpoint {
    registry: Option<Registry>,
    config: Arc<EndpointConfig>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("registry", &self.registry.is_some()).finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint over `registry` (`None`: no upstreams, for tests).
    pub fn new(registry: Option<Registry>, config: Arc<EndpointConfig>) -> Endpoint {
        Endpoint { registry, config }
    }

    /// The endpoint's settings.
    pub fn config(&self) -> &Arc<EndpointConfig> {
        &self.config
    }

    /// The registry, when there is one.
    pub fn registry(&self) -> Option<&Registry> {
        self.registry.as_ref()
    }

    /// Answers one client message (what `POST /mcp` carries, or one WebSocket frame / stdio
    /// line). Upstream frames it causes carry `ctx.correlation`.
    pub async fn handle(&self, msg: Message, ctx: &RequestContext) -> Reply {
        switchboard_transport::correlated(ctx.correlation, revision::dispatch(self, msg, ctx)).await
    }

    /// Opens a session id; the error says why it was refused.
    fn open_session(&self, sid: &str) -> Result<Session, &'static str> {
        if self.config.revocations.is_ended(sid) {
            return Err("it was ended");
        }
        Session::open(sid, &self.config.session_key, self.config.session_max_age).map_err(|r| match r {
            Refused::Invalid => "unknown or tampered session id",
            Refused::Expired => "the session expired",
            Refused::Ended => "it was ended",
        })
    }

    /// Ends a 2025-11-25 session on this instance (`DELETE /mcp`, or a WebSocket/stdio
    /// connection that closed).
    pub fn end_session(&self, sid: Option<&str>) -> Reply {
        let Some(sid) = sid else { return missing_session(None) };
        let session = match self.open_session(sid) {
            Ok(s) => s,
            Err(why) => return session_not_found(None, why),
        };
        let max = u64::try_from(self.config.session_max_age.as_millis()).unwrap_or(u64::MAX);
        if let Err(full) = self.config.revocations.end(sid, session.created_at_ms.saturating_add(max)) {
            let err = ErrorObject::new(error_code::INTERNAL_ERROR, full.to_string());
            return Reply::error(StatusCode::SERVICE_UNAVAILABLE, None, err);
        }
        self.config.bridge.end_session(sid);
        self.config.subscriptions.end_session(sid);
        self.config.sessions.session_ended(sid);
        Reply::NoContent
    }

    /// A 2025-11-25 session's notification stream (`list_changed`, and `resources/updated` of
    /// its subscriptions), with event ids; `last` (`Last-Event-ID`) replays what this instance
    /// still holds. `Err` is the answer when the session is refused.
    pub fn notifications(&self, sid: &str, last: Option<u64>) -> Result<Outbound, Reply> {
        if let Err(why) = self.open_session(sid) {
            return Err(session_not_found(None, why));
        }
        if let Some(registry) = &self.registry {
            self.config.notifier.ensure_started(registry);
        }
        let config = self.config.clone();
        let rx = config.notifier.subscribe();
        let (replay, _complete) = last.map(|l| config.notifier.since(l)).unwrap_or_default();
        let replay: VecDeque<_> = replay.into();
        let seen = last.unwrap_or(0);
        let sid = sid.to_owned();
        let stream = futures::stream::unfold((rx, replay, seen), move |(mut rx, mut replay, mut seen)| {
            let (config, sid) = (config.clone(), sid.clone());
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
                    let out = Outgoing { msg: note.kind.message(), event_id: Some(note.seq) };
                    return Some((out, (rx, replay, seen)));
                }
            }
        });
        Ok(Outbound { messages: Box::pin(stream), long_lived: true })
    }
}

/// The 404 a client answers by initializing a new session.
fn session_not_found(id: Option<Id>, why: &str) -> Reply {
    Reply::error(
        StatusCode::NOT_FOUND,
        id,
        ErrorObject::new(error_code::INVALID_REQUEST, format!("Session not found: {why}")),
    )
}

fn missing_session(id: Option<Id>) -> Reply {
    Reply::error(
        StatusCode::BAD_REQUEST,
        id,
        ErrorObject::new(
            error_code::INVALID_REQUEST,
            "Bad Request: Mcp-Session-Id header is required (send initialize first)",
        ),
    )
}
