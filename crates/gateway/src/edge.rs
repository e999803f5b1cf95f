//! The edge of the listener: what every `POST /mcp` passes through around the endpoint.
//!
//! Two concerns live here because both need the same look at the request body and the same
//! watch over the response (including an SSE stream to its end), and the endpoint's
//! internals should not carry either:
//!
//! - **Deadline.** A forwarded request (`tools/call`, `prompts/get`, `resources/read`,
//!   `completion/complete`) gets [`EdgeConfig::call_timeout`]. When it expires the client
//!   receives a JSON-RPC error naming the upstream and the limit (as the JSON answer, or as the
//!   last event of an SSE stream) and the endpoint's future or stream is dropped, which
//!   cancels the request upstream.
//! - **Traces.** Every request yields a [`TraceRecord`] (client, transport, era, method, name,
//!   upstream, latency, outcome) handed to a [`TraceSink`], which publishes it on the event bus
//!   and stores it off the request path.
//!
//! The endpoint tells the edge which upstream it forwarded to through the [`UpstreamChosen`]
//! response extension; the WebSocket and stdio adapters tell it where an in-process request
//! came from through the [`DownstreamOrigin`] request extension.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;
use switchboard_router::{Registry, Target};
use switchboard_store::TraceRecord;
use switchboard_store::traces::outcome;
use switchboard_transport::sse::SseParser;
use switchboard_wire::{ErrorObject, Id, Message, error_code, headers, meta, method};

use crate::endpoint::EndpointConfig;
use crate::session::Session;
use crate::traces::TraceSink;

/// Default deadline of a forwarded request.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Default largest JSON answer the edge reads (to trace it) before passing it on; a larger one
/// is replaced by an error naming the limit.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// Methods the endpoint forwards to an upstream; they get the deadline.
const FORWARDED: [&str; 4] =
    [method::TOOLS_CALL, method::PROMPTS_GET, method::RESOURCES_READ, method::COMPLETION_COMPLETE];

/// JSON-RPC code of a request the client cancelled.
const REQUEST_CANCELLED: i64 = -32800;

/// Response extension set by the endpoint: the upstream server a request was forwarded to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamChosen(
    /// The server's name in the registry.
    pub String,
);

/// Request extension set by the in-process adapters: where the message came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownstreamOrigin {
    /// `ws` or `stdio`.
    pub transport: &'static str,
    /// The client's address, when it has one.
    pub peer: Option<String>,
}

/// How the edge behaves.
#[derive(Debug, Clone)]
pub struct EdgeConfig {
    /// Deadline of a forwarded request.
    pub call_timeout: Duration,
    /// Where trace records go; `None` records nothing.
    pub traces: Option<TraceSink>,
    /// Largest JSON answer passed on (see [`MAX_ANSWER_BYTES`]).
    pub answer_limit: usize,
}

impl Default for EdgeConfig {
    fn default() -> Self {
        EdgeConfig { call_timeout: DEFAULT_CALL_TIMEOUT, traces: None, answer_limit: MAX_ANSWER_BYTES }
    }
}

/// The error replacing an answer larger than `limit` bytes.
fn too_large_error(id: Option<Id>, method: &str, limit: usize) -> Message {
    let mib = limit as f64 / (1024.0 * 1024.0);
    Message::error_response(
        id,
        ErrorObject::new(
            error_code::INTERNAL_ERROR,
            format!(
                "the answer to {method} is larger than the router's limit of {limit} bytes ({mib:.1} MiB)"
            ),
        ),
    )
}

/// State of the edge middleware.
#[derive(Clone)]
pub struct Edge {
    /// Deadline and traces.
    pub config: EdgeConfig,
    /// The registry, to name the upstream of a call that timed out before routing.
    pub registry: Option<Registry>,
    /// The endpoint's settings (the answer window among them).
    pub endpoint: Arc<EndpointConfig>,
}

impl Edge {
    /// The upstream the endpoint would pick for `msg` (used when the deadline expires before the
    /// endpoint answered, so no [`UpstreamChosen`] exists yet).
    fn upstream_for(&self, msg: &Message) -> Option<String> {
        let registry = self.registry.as_ref()?;
        let name = msg.name()?;
        let view = self.endpoint.views.get(registry, &self.endpoint.federation);
        let target = match msg.method()? {
            method::TOOLS_CALL => Target::Tool(name),
            method::PROMPTS_GET => Target::Prompt(name),
            method::RESOURCES_READ => Target::Resource(name),
            _ => return None,
        };
        view.routes.route(target, None).ok().map(|r| r.server)
    }

    /// Who sent `msg` and under which protocol version: `_meta` for modern requests, the
    /// params of `initialize`, or the sealed session.
    fn client_of(&self, msg: &Message, request_headers: &HeaderMap) -> (Option<Value>, Option<String>) {
        if let Some(v) = msg.protocol_version() {
            return (msg.meta().and_then(|m| m.get(meta::CLIENT_INFO)).cloned(), Some(v.to_owned()));
        }
        if msg.method() == Some(method::INITIALIZE) {
            let params = msg.params();
            let requested =
                params.and_then(|p| p.get("protocolVersion")).and_then(Value::as_str).unwrap_or_default();
            let info = params.and_then(|p| p.get("clientInfo")).cloned();
            return (info, Some(switchboard_wire::negotiate_legacy_version(requested).to_owned()));
        }
        let session =
            request_headers.get(headers::SESSION_ID).and_then(|v| v.to_str().ok()).and_then(|sid| {
                Session::open(sid, &self.endpoint.session_key, self.endpoint.session_max_age).ok()
            });
        match session {
            Some(s) => (Some(s.client_info), Some(s.version)),
            None => (None, None),
        }
    }
}

/// Reads the body up to `limit` bytes. Returns the bytes when the whole body fit, and a body
/// equivalent to the original (the bytes read, then the rest) either way.
async fn peek(body: Body, limit: usize) -> (Option<Bytes>, Body) {
    let mut stream = body.into_data_stream();
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut size = 0usize;
    loop {
        match stream.next().await {
            None => break,
            Some(Ok(c)) => {
                size = size.saturating_add(c.len());
                chunks.push(c);
                if size > limit {
                    let head = futures::stream::iter(chunks.into_iter().map(Ok::<_, axum::Error>));
                    return (None, Body::from_stream(head.chain(stream)));
                }
            }
            Some(Err(_)) => return (None, Body::empty()),
        }
    }
    let bytes = if chunks.len() == 1 {
        chunks.pop().unwrap_or_default()
    } else {
        let mut all = Vec::with_capacity(size);
        for c in &chunks {
            all.extend_from_slice(c);
        }
        Bytes::from(all)
    };
    (Some(bytes.clone()), Body::from(bytes))
}

/// A trace being built while its request runs. Dropped unfinished (the client went away, or
/// the connection closed before the response), it is recorded as cancelled.
struct Pending {
    sink: TraceSink,
    started: Instant,
    record: Option<TraceRecord>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.end(outcome::CANCELLED, None, None);
    }
}

impl Pending {
    fn record_mut(&mut self) -> Option<&mut TraceRecord> {
        self.record.as_mut()
    }

    fn end(&mut self, outcome: &str, code: Option<i64>, message: Option<String>) {
        let Some(mut record) = self.record.take() else { return };
        record.latency_ms = ms(self.started.elapsed());
        record.outcome = outcome.to_owned();
        record.error_code = code;
        record.error = message;
        self.sink.record(record);
    }

    fn end_error(&mut self, outcome: &str, e: Option<ErrorObject>) {
        match e {
            Some(e) => self.end(outcome, Some(e.code), Some(e.message)),
            None => self.end(outcome, None, None),
        }
    }

    /// Ends the trace from the final JSON-RPC message (or its absence).
    fn end_with(&mut self, answer: Option<Answer>, status: StatusCode) {
        match answer.and_then(|a| a.error) {
            Some(e) if e.code == REQUEST_CANCELLED => self.end_error(outcome::CANCELLED, Some(e)),
            Some(e) if e.code == error_code::UPSTREAM_TIMEOUT => self.end_error(outcome::TIMEOUT, Some(e)),
            Some(e) => self.end_error(outcome::ERROR, Some(e)),
            None if status.is_success() => self.end(outcome::OK, None, None),
            None => self.end(outcome::ERROR, None, Some(format!("HTTP {status}"))),
        }
    }
}

/// What the edge needs of an answer: whether it is a response and its error. Reading it
/// skips `result` without building it, so large results cost a scan, not a copy.
#[derive(serde::Deserialize)]
struct Answer {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

impl Answer {
    fn read(bytes: &[u8]) -> Option<Answer> {
        serde_json::from_slice(bytes).ok()
    }

    fn is_response(&self) -> bool {
        self.method.is_none() && (self.result.is_some() || self.error.is_some())
    }

    /// A server → client request the endpoint relays to a 2025-11-25 client (its id minted
    /// by the bridge): the turn goes to the client.
    fn is_question(&self) -> bool {
        self.method.is_some()
            && self
                .id
                .as_ref()
                .and_then(Value::as_str)
                .is_some_and(|id| id.starts_with(crate::bridge::MINTED_ID_PREFIX))
    }
}

fn timeout_error(id: Option<Id>, upstream: Option<&str>, method: &str, limit: Duration) -> Message {
    let who = match upstream {
        Some(u) => format!("upstream server {u:?}"),
        None => "the upstream".to_owned(),
    };
    let secs = limit.as_secs_f64();
    Message::error_response(
        id,
        ErrorObject::new(
            error_code::UPSTREAM_TIMEOUT,
            format!(
                "{who} did not answer {method} within {secs} s (the router's per-request timeout); \
                 the request was cancelled upstream"
            ),
        )
        .with_data(serde_json::json!({"upstream": upstream, "timeoutMs": limit.as_millis() as u64})),
    )
}

fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The middleware: deadline and trace for `POST /mcp`; everything else passes untouched.
pub async fn observe(State(edge): State<Arc<Edge>>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST || req.uri().path() != "/mcp" {
        return next.run(req).await;
    }
    let started = Instant::now();
    let at_ms = switchboard_router::events::now_ms();
    let (parts, body) = req.into_parts();
    let (bytes, body) = peek(body, edge.endpoint.body_limit).await;
    let msg = bytes.as_deref().and_then(|b| Message::parse(b).ok());
    // Notifications and the client's responses are not traced (they are not requests).
    if msg.as_ref().is_some_and(|m| !m.is_request()) {
        return next.run(Request::from_parts(parts, body)).await;
    }
    let method = msg.as_ref().and_then(Message::method).unwrap_or("(invalid)").to_owned();
    let pending = edge.config.traces.clone().map(|sink| {
        let origin = parts.extensions.get::<DownstreamOrigin>();
        let peer = origin.and_then(|o| o.peer.clone()).or_else(|| {
            parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(a)| a.to_string())
        });
        let (info, era) = msg.as_ref().map(|m| edge.client_of(m, &parts.headers)).unwrap_or_default();
        let info_str =
            |k: &str| info.as_ref().and_then(|i| i.get(k)).and_then(Value::as_str).map(str::to_owned);
        Pending {
            sink,
            started,
            record: Some(TraceRecord {
                id: None,
                at_ms,
                transport: origin.map_or("http", |o| o.transport).to_owned(),
                peer,
                client_name: info_str("name"),
                client_version: info_str("version"),
                era,
                method: method.clone(),
                name: msg.as_ref().and_then(Message::name).map(str::to_owned),
                upstream: None,
                latency_ms: 0.0,
                first_byte_ms: None,
                streamed: false,
                http_status: None,
                outcome: String::new(),
                error_code: None,
                error: None,
            }),
        }
    });
    let id = msg.as_ref().and_then(Message::id);
    let limit = edge.config.call_timeout;
    let deadline = msg
        .as_ref()
        .filter(|_| FORWARDED.contains(&method.as_str()))
        .map(|_| tokio::time::Instant::now() + limit);
    let run = next.run(Request::from_parts(parts, body));
    let resp = match deadline {
        None => run.await,
        Some(d) => match tokio::time::timeout_at(d, run).await {
            Ok(r) => r,
            Err(_) => {
                // Dropping the endpoint's future dropped its upstream exchange: cancelled upstream.
                let upstream = msg.as_ref().and_then(|m| edge.upstream_for(m));
                let err = timeout_error(id, upstream.as_deref(), &method, limit);
                if let Some(mut p) = pending
                    && let Some(r) = p.record_mut()
                {
                    r.upstream = upstream;
                    r.http_status = Some(200);
                    r.first_byte_ms = Some(ms(started.elapsed()));
                    p.end_error(outcome::TIMEOUT, err.error());
                }
                return (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], err.to_bytes())
                    .into_response();
            }
        },
    };
    let status = resp.status();
    let upstream = resp.extensions().get::<UpstreamChosen>().map(|u| u.0.clone());
    let mut pending = pending;
    if let Some(r) = pending.as_mut().and_then(Pending::record_mut) {
        r.upstream = upstream.clone();
        r.http_status = Some(i64::from(status.as_u16()));
        r.first_byte_ms = Some(ms(started.elapsed()));
    }
    if is_sse(resp.headers()) {
        let (parts, body) = resp.into_parts();
        let tail = Tail {
            inner: body.into_data_stream(),
            pending: pending.map(|mut p| {
                if let Some(r) = p.record_mut() {
                    r.streamed = true;
                }
                p
            }),
            deadline,
            limit,
            answer_timeout: edge.endpoint.answer_timeout,
            id,
            upstream,
            method,
            status,
            sse: SseParser::default(),
            done: false,
        };
        return Response::from_parts(parts, Body::from_stream(tail.into_stream()));
    }
    let (parts, body) = resp.into_parts();
    let bytes = match axum::body::to_bytes(body, edge.config.answer_limit).await {
        Ok(b) => b,
        Err(_) => {
            let err = too_large_error(id, &method, edge.config.answer_limit);
            if let Some(mut p) = pending {
                p.end_error(outcome::ERROR, err.error());
            }
            return (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], err.to_bytes())
                .into_response();
        }
    };
    if let Some(mut p) = pending {
        p.end_with(Answer::read(&bytes), status);
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Watches an SSE response: finds the final response for the trace, and ends the stream with
/// a timeout error when the deadline passes first. Dropped before the final response (the
/// client went away), its pending trace records a cancellation.
struct Tail {
    inner: axum::body::BodyDataStream,
    pending: Option<Pending>,
    deadline: Option<tokio::time::Instant>,
    limit: Duration,
    /// How long the client may take to answer a question (the endpoint's configured window).
    answer_timeout: Duration,
    id: Option<Id>,
    upstream: Option<String>,
    method: String,
    status: StatusCode,
    sse: SseParser,
    done: bool,
}

impl Tail {
    /// Reads the chunk's complete events: the first JSON-RPC response among them ends the
    /// trace; a question to the client moves the deadline out by the client's answer window
    /// (a human may be answering), after which the upstream gets its full limit again.
    fn scan(&mut self, chunk: &[u8]) {
        if self.pending.is_none() && self.deadline.is_none() {
            return;
        }
        let Ok(events) = self.sse.feed(chunk) else { return };
        for event in events {
            let Some(a) = Answer::read(event.data.as_bytes()) else { continue };
            if a.is_question() && self.deadline.is_some() {
                self.deadline = Some(tokio::time::Instant::now() + self.answer_timeout + self.limit);
            }
            if a.is_response()
                && let Some(mut p) = self.pending.take()
            {
                p.end_with(Some(a), self.status);
            }
        }
    }

    fn into_stream(self) -> impl futures::Stream<Item = Result<Bytes, axum::Error>> + Send + 'static {
        futures::stream::unfold(self, |mut t| async move {
            if t.done {
                return None;
            }
            let next = match t.deadline {
                Some(d) => tokio::select! {
                    biased;
                    c = t.inner.next() => Some(c),
                    () = tokio::time::sleep_until(d) => None,
                },
                None => Some(t.inner.next().await),
            };
            match next {
                Some(Some(Ok(chunk))) => {
                    t.scan(&chunk);
                    Some((Ok(chunk), t))
                }
                Some(Some(Err(e))) => {
                    t.done = true;
                    Some((Err(e), t))
                }
                Some(None) => None,
                None => {
                    // Deadline: answer with the timeout error; dropping `inner` cancels upstream.
                    t.done = true;
                    let err = timeout_error(t.id.clone(), t.upstream.as_deref(), &t.method, t.limit);
                    if let Some(mut p) = t.pending.take() {
                        p.end_error(outcome::TIMEOUT, err.error());
                    }
                    t.inner = Body::empty().into_data_stream();
                    let event = format!("event: message\ndata: {}\n\n", err.to_json());
                    Some((Ok(Bytes::from(event)), t))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::post;
    use serde_json::json;
    use tower::ServiceExt;

    /// After the upstream asks the client a question, the deadline moves out by the endpoint's
    /// configured answer window (not a built-in constant), plus the upstream's own limit.
    #[tokio::test(start_paused = true)]
    async fn a_question_extends_the_deadline_by_the_configured_answer_window() {
        let endpoint = EndpointConfig { answer_timeout: Duration::from_secs(7), ..Default::default() };
        let config = EdgeConfig { call_timeout: Duration::from_secs(2), ..Default::default() };
        let edge = Arc::new(Edge { config, registry: None, endpoint: Arc::new(endpoint) });
        let ask = json!({"jsonrpc": "2.0", "id": "sb-1", "method": "elicitation/create", "params": {}});
        let question = format!("event: message\ndata: {ask}\n\n");
        let app = Router::new()
            .route(
                "/mcp",
                post(move || {
                    let question = question.clone();
                    async move {
                        // The question, then an upstream that never answers.
                        let events = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from(question))])
                            .chain(futures::stream::pending());
                        ([(header::CONTENT_TYPE, "text/event-stream")], Body::from_stream(events))
                    }
                }),
            )
            .layer(axum::middleware::from_fn_with_state(edge, observe));
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}});
        let req = axum::http::Request::post("/mcp")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(call.to_string()))
            .unwrap();
        let started = tokio::time::Instant::now();
        let resp = app.oneshot(req).await.unwrap();
        let text = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        let waited = started.elapsed();
        let text = String::from_utf8_lossy(&text);
        assert!(text.contains("elicitation/create") && text.contains("-32053"), "{text}");
        assert!(
            waited >= Duration::from_secs(9) && waited < Duration::from_secs(10),
            "the deadline is the answer window (7 s) plus the call limit (2 s), not {waited:?}"
        );
    }
}
