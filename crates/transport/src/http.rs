//! Streamable HTTP client for both revisions.
//!
//! Every message is its own POST. A request is answered with one JSON body or an SSE
//! stream of related messages ending with the response. 2026-07-28 requests carry the
//! mirrored headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`)
//! and closing the stream cancels them. 2025-11-25 requests carry `Mcp-Session-Id` and
//! the negotiated version; a 404 means the session is gone ([`Error::SessionExpired`],
//! the client re-initialises), an SSE stream cut before its response is resumed with
//! `Last-Event-ID`, and server-initiated messages arrive on a GET stream.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::json;
use switchboard_wire::headers::{self as mcp_headers, HeaderParam};
use switchboard_wire::{Message, method};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::frame::Direction;
use crate::{Error, Exchange, Tap, TransportKind, Upstream, UpstreamEvent, UpstreamStatus};

mod stream;

use self::stream::{get_stream, pump_sse};

/// How to reach a Streamable HTTP server.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// The MCP endpoint URL.
    pub url: String,
    /// Extra headers on every request (e.g. `Authorization`).
    pub headers: BTreeMap<String, String>,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// How long the server may stay silent while the router waits for bytes of a response
    /// (its headers, the next chunk of a body or SSE stream): reset by every byte that
    /// arrives, so a progress notification on a call's stream extends it. The session's GET
    /// stream, idle by nature, is not bound by it. `None`: no limit beyond the caller's.
    pub read_timeout: Option<Duration>,
    /// How long a POST that carries no request (a notification, a response, a
    /// cancellation) may take until the server acknowledges it (`202`). reqwest has no
    /// write-phase timeout, so a request's own upload is bounded by `read_timeout` (the
    /// wait for its answer's first byte) instead. `None`: no limit.
    pub write_timeout: Option<Duration>,
    /// Idle keep-alive connections kept to the server (`None`: reqwest's default, unbounded).
    pub pool_max_idle: Option<usize>,
    /// Largest JSON response body accepted, and largest SSE event (one message) on a
    /// response or GET stream.
    pub max_response_bytes: usize,
}

impl HttpConfig {
    /// Defaults for everything but the URL.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            headers: BTreeMap::new(),
            connect_timeout: Duration::from_secs(5),
            read_timeout: None,
            write_timeout: None,
            pool_max_idle: None,
            max_response_bytes: crate::sse::MAX_EVENT_BYTES,
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Session {
    id: Option<String>,
    version: String,
}

struct Inner {
    client: reqwest::Client,
    /// For the session's GET stream: `client` without the read timeout.
    stream_client: reqwest::Client,
    config: HttpConfig,
    /// `config.url`, parsed once (not on every request).
    url: reqwest::Url,
    tap: Tap,
    session: RwLock<Option<Session>>,
    /// Session id returned with the InitializeResult, promoted on handshake completion.
    offered_session: Mutex<Option<String>>,
    header_params: RwLock<HashMap<String, Vec<HeaderParam>>>,
    incoming: broadcast::Sender<Message>,
    events: broadcast::Sender<UpstreamEvent>,
    last_error: Mutex<Option<String>>,
    shutdown: CancellationToken,
    get_stream: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// The Streamable HTTP upstream.
pub struct HttpUpstream {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HttpUpstream {
    /// Creates the client; no connection is made until the first request.
    pub fn new(config: HttpConfig, tap: Tap, shutdown: CancellationToken) -> Result<Arc<Self>, Error> {
        let builder = || {
            let b = reqwest::Client::builder()
                .tcp_nodelay(true)
                .connect_timeout(config.connect_timeout)
                .pool_idle_timeout(Duration::from_secs(60));
            match config.pool_max_idle {
                Some(n) => b.pool_max_idle_per_host(n),
                None => b,
            }
        };
        let built = |b: reqwest::ClientBuilder| {
            b.build().map_err(|e| Error::Connect { url: config.url.clone(), reason: e.to_string() })
        };
        let stream_client = built(builder())?;
        let client = match config.read_timeout {
            Some(t) => built(builder().read_timeout(t))?,
            None => stream_client.clone(),
        };
        let url = reqwest::Url::parse(&config.url)
            .map_err(|e| Error::Connect { url: config.url.clone(), reason: format!("invalid URL: {e}") })?;
        Ok(Arc::new(HttpUpstream {
            inner: Arc::new(Inner {
                client,
                stream_client,
                url,
                config,
                tap,
                session: RwLock::new(None),
                offered_session: Mutex::new(None),
                header_params: RwLock::new(HashMap::new()),
                incoming: broadcast::channel(256).0,
                events: broadcast::channel(16).0,
                last_error: Mutex::new(None),
                shutdown,
                get_stream: Mutex::new(None),
            }),
        }))
    }
}

impl Inner {
    fn session(&self) -> Option<Session> {
        self.session.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn headers_for(&self, msg: &Message) -> Result<HeaderMap, Error> {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (k, v) in &self.config.headers {
            insert(&mut h, k, v)?;
        }
        if msg.protocol_version().is_some() {
            let params = match msg.name() {
                Some(name) if msg.method() == Some(method::TOOLS_CALL) => self
                    .header_params
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(name)
                    .cloned()
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            for (k, v) in mcp_headers::request_headers(msg, &params) {
                insert(&mut h, &k, &v)?;
            }
        } else if let Some(s) = self.session()
            && msg.method() != Some(method::INITIALIZE)
        {
            if let Some(id) = &s.id {
                insert(&mut h, "Mcp-Session-Id", id)?;
            }
            insert(&mut h, "MCP-Protocol-Version", &s.version)?;
        }
        Ok(h)
    }

    fn connect_err(&self, e: &reqwest::Error) -> Error {
        let reason = if e.is_connect() {
            format!("cannot connect: {}", root_cause(e))
        } else if e.is_timeout() {
            "timed out".to_owned()
        } else {
            root_cause(e)
        };
        let err = Error::Connect { url: self.config.url.clone(), reason };
        *lock(&self.last_error) = Some(err.to_string());
        err
    }

    async fn post(&self, msg: &Message) -> Result<reqwest::Response, Error> {
        self.post_with(msg, &[]).await
    }

    async fn post_with(&self, msg: &Message, extra: &[(String, String)]) -> Result<reqwest::Response, Error> {
        let bytes = msg.to_bytes();
        let mut headers = self.headers_for(msg)?;
        for (k, v) in extra {
            // Only headers this router did not produce itself.
            if !headers.contains_key(k.as_str()) {
                insert(&mut headers, k, v)?;
            }
        }
        self.tap.record(Direction::Out, msg, &bytes);
        let send = self.client.post(self.url.clone()).headers(headers).body(bytes).send();
        let sent = match self.config.write_timeout.filter(|_| !msg.is_request()) {
            Some(limit) => tokio::time::timeout(limit, send).await.map_err(|_| Error::Timeout(limit))?,
            None => send.await,
        };
        let resp = sent.map_err(|e| self.connect_err(&e))?;
        *lock(&self.last_error) = None;
        Ok(resp)
    }

    async fn read_body(&self, resp: reqwest::Response) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.connect_err(&e))?;
            if out.len() + chunk.len() > self.config.max_response_bytes {
                return Err(Error::Protocol(format!(
                    "response body exceeds the limit of {} bytes",
                    self.config.max_response_bytes
                )));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    fn parse_in(&self, bytes: &[u8]) -> Result<Message, Error> {
        let msg = Message::parse(bytes).map_err(|e| Error::Protocol(e.message))?;
        self.tap.record(Direction::In, &msg, bytes);
        Ok(msg)
    }

    /// Opens a GET stream resuming after `last_event_id` (legacy resumption).
    async fn resume(&self, last_event_id: &str) -> Result<reqwest::Response, Error> {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        for (k, v) in &self.config.headers {
            insert(&mut h, k, v)?;
        }
        if let Some(s) = self.session() {
            if let Some(id) = &s.id {
                insert(&mut h, "Mcp-Session-Id", id)?;
            }
            insert(&mut h, "MCP-Protocol-Version", &s.version)?;
        }
        insert(&mut h, "Last-Event-ID", last_event_id)?;
        let resp =
            self.client.get(self.url.clone()).headers(h).send().await.map_err(|e| self.connect_err(&e))?;
        if !resp.status().is_success() {
            return Err(Error::HttpStatus {
                url: self.config.url.clone(),
                status: resp.status().as_u16(),
                body: String::new(),
            });
        }
        Ok(resp)
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

fn insert(h: &mut HeaderMap, k: &str, v: &str) -> Result<(), Error> {
    let name = HeaderName::from_bytes(k.as_bytes())
        .map_err(|_| Error::Protocol(format!("invalid header name {k:?}")))?;
    let value =
        HeaderValue::from_str(v).map_err(|_| Error::Protocol(format!("invalid value for header {k}")))?;
    h.insert(name, value);
    Ok(())
}

fn is_event_stream(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

#[async_trait]
impl Upstream for HttpUpstream {
    fn kind(&self) -> TransportKind {
        TransportKind::Http
    }

    async fn request(&self, msg: Message) -> Result<Exchange, Error> {
        self.request_with_headers(msg, Vec::new()).await
    }

    async fn request_with_headers(
        &self,
        msg: Message,
        extra: Vec<(String, String)>,
    ) -> Result<Exchange, Error> {
        let inner = &self.inner;
        let request_id = msg.id();
        let id_text = request_id.as_ref().map(ToString::to_string).unwrap_or_default();
        let resp = inner.post_with(&msg, &extra).await?;
        let status = resp.status();
        let is_init = msg.method() == Some(method::INITIALIZE);
        if is_init && status.is_success() {
            let sid = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
            *lock(&inner.offered_session) = sid;
        }
        if status == reqwest::StatusCode::NOT_FOUND
            && !is_init
            && msg.protocol_version().is_none()
            && let Some(Session { id: Some(session), .. }) = inner.session()
        {
            return Err(Error::SessionExpired { url: inner.config.url.clone(), session });
        }
        if status == reqwest::StatusCode::ACCEPTED {
            return Err(Error::Protocol(format!(
                "server answered request {id_text} with 202 Accepted and no response"
            )));
        }
        let (tx, rx) = mpsc::channel(64);
        if is_event_stream(&resp) && status.is_success() {
            let task = tokio::spawn(pump_sse(inner.clone(), resp, request_id.clone(), tx));
            let abort = task.abort_handle();
            let legacy_cancel = inner.session().is_some().then(|| (inner.clone(), request_id.clone()));
            let cancel = Box::new(move || {
                abort.abort();
                if let Some((inner, Some(id))) = legacy_cancel {
                    let note = Message::notification(
                        method::NOTIFICATION_CANCELLED,
                        Some(
                            json!({"requestId": id.to_value(), "reason": "cancelled by the router's client"}),
                        ),
                    );
                    if let Ok(handle) = tokio::runtime::Handle::try_current() {
                        handle.spawn(async move {
                            let _ = inner.post(&note).await;
                        });
                    }
                }
            });
            return Ok(Exchange::new(rx, id_text, Some(cancel)));
        }
        let body = inner.read_body(resp).await?;
        match inner.parse_in(&body) {
            // "Overloaded, try later" (HTTP 429/503) is the transport's answer even when the body
            // is a JSON-RPC error: the request did not run, and the router may retry it.
            Ok(m) if m.is_response() && matches!(status.as_u16(), 429 | 503) => Err(Error::HttpStatus {
                url: inner.config.url.clone(),
                status: status.as_u16(),
                body: m.error().map(|e| e.message.clone()).unwrap_or_default(),
            }),
            Ok(m) if m.is_response() => {
                let _ = tx.try_send(Ok(m));
                Ok(Exchange::new(rx, id_text, None))
            }
            Ok(_) | Err(_) if !status.is_success() => Err(Error::HttpStatus {
                url: inner.config.url.clone(),
                status: status.as_u16(),
                body: String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned(),
            }),
            Ok(m) => Err(Error::Protocol(format!("expected a response to {id_text}, got {}", m.kind_name()))),
            Err(e) => Err(e),
        }
    }

    async fn send(&self, msg: Message) -> Result<(), Error> {
        let resp = self.inner.post(&msg).await?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        if status == reqwest::StatusCode::NOT_FOUND
            && let Some(Session { id: Some(session), .. }) = self.inner.session()
        {
            return Err(Error::SessionExpired { url: self.inner.config.url.clone(), session });
        }
        let body = self.inner.read_body(resp).await.unwrap_or_default();
        Err(Error::HttpStatus {
            url: self.inner.config.url.clone(),
            status: status.as_u16(),
            body: String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned(),
        })
    }

    fn incoming(&self) -> broadcast::Receiver<Message> {
        self.inner.incoming.subscribe()
    }

    fn events(&self) -> broadcast::Receiver<UpstreamEvent> {
        self.inner.events.subscribe()
    }

    fn status(&self) -> UpstreamStatus {
        let last_error = lock(&self.inner.last_error).clone();
        UpstreamStatus {
            connected: last_error.is_none(),
            last_error,
            session_id: self.inner.session().and_then(|s| s.id),
            ..Default::default()
        }
    }

    async fn handshake_complete(&self, protocol_version: &str, legacy: bool) {
        if !legacy {
            *self.inner.session.write().unwrap_or_else(PoisonError::into_inner) = None;
            return;
        }
        let id = lock(&self.inner.offered_session).take();
        *self.inner.session.write().unwrap_or_else(PoisonError::into_inner) =
            Some(Session { id, version: protocol_version.to_owned() });
        let task = tokio::spawn(get_stream(self.inner.clone()));
        if let Some(old) = lock(&self.inner.get_stream).replace(task) {
            old.abort();
        }
    }

    fn reset_session(&self) {
        *self.inner.session.write().unwrap_or_else(PoisonError::into_inner) = None;
        if let Some(old) = lock(&self.inner.get_stream).take() {
            old.abort();
        }
    }

    fn set_header_params(&self, tool: &str, params: Vec<HeaderParam>) {
        let mut map = self.inner.header_params.write().unwrap_or_else(PoisonError::into_inner);
        if params.is_empty() {
            map.remove(tool);
        } else {
            map.insert(tool.to_owned(), params);
        }
    }

    async fn close(&self) {
        self.inner.shutdown.cancel();
        if let Some(t) = lock(&self.inner.get_stream).take() {
            t.abort();
        }
        if let Some(Session { id: Some(id), version }) = self.inner.session() {
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                self.inner
                    .client
                    .delete(&self.inner.config.url)
                    .header("Mcp-Session-Id", id)
                    .header("MCP-Protocol-Version", version)
                    .send(),
            )
            .await;
        }
        self.reset_session();
    }
}

/// Kind names for error messages.
trait KindName {
    fn kind_name(&self) -> &'static str;
}

impl KindName for Message {
    fn kind_name(&self) -> &'static str {
        match self.kind() {
            switchboard_wire::Kind::Request => "a request",
            switchboard_wire::Kind::Notification => "a notification",
            switchboard_wire::Kind::Response => "a response",
            switchboard_wire::Kind::Error => "an error",
        }
    }
}
