//! Downstream clients that do not speak HTTP: WebSocket ([`ws`]) and stdio ([`stdio`]).
//!
//! Both are message streams, so both go through one [`Adapter`] that turns each incoming
//! JSON-RPC message into a request to the listener's own axum [`Router`] — in-process, with
//! `tower::ServiceExt::oneshot`, no socket — carrying the headers a conforming HTTP client
//! would send, and writes the answer back as messages, in the order they arrive. There is
//! exactly one code path for MCP semantics (the HTTP endpoint), and traces, deadlines and
//! the endpoint's checks apply to every transport alike.
//!
//! Per connection the adapter keeps what an HTTP client would: for 2026-07-28 messages the
//! headers come from the body (`MCP-Protocol-Version` from `_meta`, `Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*` from the tool's schema); for a 2025-11-25 client it remembers
//! the `Mcp-Session-Id` that `initialize` returned and attaches it (and the version) to later
//! messages, and ends the session (`DELETE`) when the connection closes. Requests run
//! concurrently (a slow call does not hold up a ping); an SSE answer is relayed event by
//! event, so progress, logs and server→client requests reach the client as they happen, and
//! the client's answers to those requests are POSTed back like any other message.
//! `notifications/cancelled` stops the named request here (its upstream request is cancelled
//! when the in-process response is dropped) and is also POSTed on.

pub mod stdio;
pub mod ws;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Response, header};
use futures::{Stream, StreamExt};
use serde_json::Value;
use switchboard_router::Registry;
use switchboard_transport::sse::SseParser;
use switchboard_wire::{ErrorObject, Id, Message, error_code, headers, method};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::edge::DownstreamOrigin;
use crate::endpoint::EndpointConfig;

/// Largest JSON answer relayed as one frame (the edge's default limit); a larger one is
/// replaced by an error frame.
pub const MAX_ANSWER_BYTES: usize = crate::edge::MAX_ANSWER_BYTES;

/// Requests one WebSocket or stdio connection may have in flight at once (each is a task);
/// more are answered with an error. Responses and notifications always pass, so a client can
/// still answer the questions its calls are waiting on.
pub const MAX_IN_FLIGHT: usize = 1024;

/// Why an incoming frame could not be read as a message; answered with an error frame, the
/// connection keeps serving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Longer than the endpoint's body limit.
    TooLarge(usize),
    /// Not UTF-8 text.
    NotText,
}

/// Adapts message streams to the listener's router. Cheap to clone.
#[derive(Clone)]
pub struct Adapter {
    app: Router,
    registry: Option<Registry>,
    /// The endpoint behind `app`, whose cached federation names the tools' mirrored parameters.
    endpoint: Arc<EndpointConfig>,
    /// Largest message accepted (the endpoint's body limit).
    pub max_message: usize,
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapter").field("max_message", &self.max_message).finish_non_exhaustive()
    }
}

/// What a connection remembers between messages.
#[derive(Default)]
struct Conn {
    /// The 2025-11-25 session (`Mcp-Session-Id`, negotiated version), once `initialize` answered.
    session: Mutex<Option<(String, String)>>,
    /// Requests in flight, by the JSON of their id, so `notifications/cancelled` can stop them.
    in_flight: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// The session's notification stream (the `GET /mcp` an HTTP client would open).
    notifications: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Conn {
    fn session(&self) -> Option<(String, String)> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The error frame for a request whose answer could not be produced.
fn error_frame(id: Option<Id>, code: i64, message: impl Into<String>) -> String {
    Message::error_response(id, ErrorObject::new(code, message)).to_json()
}

/// One JSON text per frame/line: compact, no raw newlines.
fn compact(text: &str) -> Option<String> {
    if !text.contains('\n') {
        return Some(text.to_owned());
    }
    serde_json::from_str::<Value>(text).ok().map(|v| v.to_string())
}

impl Adapter {
    /// An adapter in front of `app` (the listener's router without its outer auth layer).
    /// With a registry, `Mcp-Param-*` headers are derived from the called tool's schema.
    pub fn new(
        app: Router,
        registry: Option<Registry>,
        endpoint: Arc<EndpointConfig>,
        max_message: usize,
    ) -> Adapter {
        Adapter { app, registry, endpoint, max_message }
    }

    /// Serves one connection: reads `incoming` until it ends or `cancel` fires, writes every
    /// answer to `out`. With `drain`, requests still running when the input ends are awaited
    /// (stdio: a client may write its requests and close its end); otherwise they are dropped,
    /// which cancels them upstream (a closed WebSocket has nobody to answer). The 2025-11-25
    /// session, if any, is ended last.
    pub async fn serve<S>(
        &self,
        origin: DownstreamOrigin,
        mut incoming: S,
        out: mpsc::Sender<String>,
        drain: bool,
        cancel: CancellationToken,
    ) where
        S: Stream<Item = Result<String, FrameError>> + Unpin,
    {
        let conn = Arc::new(Conn::default());
        let mut tasks = JoinSet::new();
        loop {
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                item = incoming.next() => item,
            };
            match item {
                None => break,
                Some(Err(FrameError::TooLarge(n))) => {
                    let text =
                        format!("message of {n}+ bytes exceeds the limit of {} bytes", self.max_message);
                    let _ = out.send(error_frame(None, error_code::INVALID_REQUEST, text)).await;
                }
                Some(Err(FrameError::NotText)) => {
                    let _ = out
                        .send(error_frame(
                            None,
                            error_code::PARSE_ERROR,
                            "parse error: frame is not UTF-8 text",
                        ))
                        .await;
                }
                Some(Ok(text)) => self.dispatch(&origin, &conn, text, &out, &mut tasks).await,
            }
            while tasks.try_join_next().is_some() {}
        }
        let drained = drain
            && tokio::select! {
                () = cancel.cancelled() => false,
                () = async { while tasks.join_next().await.is_some() {} } => true,
            };
        if !drained {
            tasks.shutdown().await;
        }
        if let Some(stream) = conn.notifications.lock().unwrap_or_else(PoisonError::into_inner).take() {
            stream.abort();
        }
        if let Some((sid, _)) = conn.session() {
            let req = Request::builder()
                .method(Method::DELETE)
                .uri("/mcp")
                .header(headers::SESSION_ID, sid)
                .extension(origin.clone())
                .body(Body::empty());
            if let Ok(req) = req {
                let _ = self.app.clone().oneshot(req).await;
            }
        }
    }

    async fn dispatch(
        &self,
        origin: &DownstreamOrigin,
        conn: &Arc<Conn>,
        text: String,
        out: &mpsc::Sender<String>,
        tasks: &mut JoinSet<()>,
    ) {
        let msg = match Message::parse(text.as_bytes()) {
            Ok(m) => m,
            Err(e) => {
                let _ = out.send(e.to_response().to_json()).await;
                return;
            }
        };
        if msg.method() == Some(method::NOTIFICATION_CANCELLED)
            && let Some(rid) = msg.params().and_then(|p| p.get("requestId"))
            && let Some(task) =
                conn.in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&rid.to_string())
        {
            task.abort();
        }
        if msg.is_request() && tasks.len() >= MAX_IN_FLIGHT {
            let text = format!(
                "too many requests in flight on this connection ({MAX_IN_FLIGHT}); wait for answers before sending more"
            );
            let _ = out.send(error_frame(msg.id(), error_code::INTERNAL_ERROR, text)).await;
            return;
        }
        let req = self.request(origin, conn, &msg, text);
        let key = msg.is_request().then(|| msg.id().map(|i| i.to_value().to_string())).flatten();
        let initialize = msg.method() == Some(method::INITIALIZE);
        let id = msg.id();
        let (app, out2, conn2, key2) = (self.app.clone(), out.clone(), conn.clone(), key.clone());
        let (app2, origin2) = (self.app.clone(), origin.clone());
        let handle = tasks.spawn(async move {
            let resp = match app.oneshot(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            if initialize {
                remember_session(&conn2, &resp);
            }
            relay(resp, id, &out2, initialize.then_some(&conn2)).await;
            if initialize && let Some((sid, version)) = conn2.session() {
                // Like an HTTP client, open the session's notification stream (list_changed,
                // resources/updated): its events are written to this connection too.
                let get = Request::builder()
                    .method(Method::GET)
                    .uri("/mcp")
                    .header(headers::SESSION_ID, sid)
                    .header(headers::PROTOCOL_VERSION, version)
                    .header(header::ACCEPT, "text/event-stream")
                    .extension(origin2)
                    .body(Body::empty());
                if let Ok(get) = get {
                    let (app, out3) = (app2, out2.clone());
                    let task = tokio::spawn(async move {
                        if let Ok(resp) = app.oneshot(get).await
                            && resp.status().is_success()
                        {
                            relay(resp, None, &out3, None).await;
                        }
                    });
                    *conn2.notifications.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(task.abort_handle());
                }
            }
            if let Some(k) = key2 {
                conn2.in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&k);
            }
        });
        if let Some(k) = key {
            conn.in_flight.lock().unwrap_or_else(PoisonError::into_inner).insert(k, handle);
        }
    }

    /// The HTTP request a conforming client would send for `msg`.
    fn request(&self, origin: &DownstreamOrigin, conn: &Conn, msg: &Message, text: String) -> Request<Body> {
        let mut req = Request::new(Body::from(text));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = axum::http::Uri::from_static("/mcp");
        req.extensions_mut().insert(origin.clone());
        let h = req.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        // Like an HTTP client: once in a 2025-11-25 session, every message carries it.
        if let Some((sid, version)) = conn.session() {
            if let (Ok(sid), Ok(version)) = (HeaderValue::try_from(sid), HeaderValue::try_from(version)) {
                h.insert(headers::SESSION_ID, sid);
                h.insert(headers::PROTOCOL_VERSION, version);
            }
        } else if msg.protocol_version().is_some() {
            let params =
                if msg.method() == Some(method::TOOLS_CALL) { self.header_params(msg) } else { vec![] };
            for (name, value) in headers::request_headers(msg, &params) {
                if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
                    h.insert(n, v);
                }
            }
        }
        req
    }

    /// The `x-mcp-header` parameters of the tool a `tools/call` names.
    fn header_params(&self, msg: &Message) -> Vec<headers::HeaderParam> {
        let (Some(registry), Some(name)) = (&self.registry, msg.name()) else { return vec![] };
        self.endpoint.views.get(registry, &self.endpoint.federation).header_params(name).to_vec()
    }
}

/// Keeps the session id `initialize` returned (with the version its result names).
fn remember_session(conn: &Conn, resp: &Response<Body>) {
    if let Some(sid) = resp.headers().get(headers::SESSION_ID).and_then(|v| v.to_str().ok()) {
        let mut s = conn.session.lock().unwrap_or_else(PoisonError::into_inner);
        *s = Some((sid.to_owned(), String::new()));
    }
}

/// Writes an answer back: a JSON body as one message, an SSE body event by event, nothing
/// for 202. An HTTP failure without a JSON-RPC body becomes an error for the request.
async fn relay(resp: Response<Body>, id: Option<Id>, out: &mpsc::Sender<String>, init: Option<&Arc<Conn>>) {
    let status = resp.status();
    let sse = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let body = resp.into_body();
    if sse {
        let mut stream = body.into_data_stream();
        let mut parser = SseParser::default();
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { break };
            let Ok(events) = parser.feed(&chunk) else { break };
            for event in events {
                if let Some(text) = compact(&event.data)
                    && out.send(text).await.is_err()
                {
                    return;
                }
            }
        }
        return;
    }
    let bytes = match axum::body::to_bytes(body, MAX_ANSWER_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            let text = format!("the answer is larger than the router's limit of {MAX_ANSWER_BYTES} bytes");
            let _ = out.send(error_frame(id, error_code::INTERNAL_ERROR, text)).await;
            return;
        }
    };
    if bytes.is_empty() {
        if !status.is_success()
            && let Some(id) = id
        {
            let _ =
                out.send(error_frame(Some(id), error_code::INTERNAL_ERROR, format!("HTTP {status}"))).await;
        }
        return;
    }
    let text = String::from_utf8_lossy(&bytes);
    let parsed = serde_json::from_str::<Value>(&text).ok().filter(|v| v.get("jsonrpc").is_some());
    match parsed {
        Some(v) => {
            if let Some(conn) = init
                && let Some(version) = v.pointer("/result/protocolVersion").and_then(Value::as_str)
            {
                let mut s = conn.session.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some((_, ver)) = s.as_mut() {
                    *ver = version.to_owned();
                }
            }
            let _ = out.send(v.to_string()).await;
        }
        None => {
            let shown: String = text.chars().take(200).collect();
            let _ = out
                .send(error_frame(id, error_code::INTERNAL_ERROR, format!("HTTP {status}: {shown}")))
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_removes_newlines() {
        assert_eq!(compact("{\n\"a\": 1\n}").as_deref(), Some("{\"a\":1}"));
        assert_eq!(compact("{\"a\":1}").as_deref(), Some("{\"a\":1}"));
    }
}
