//! The MCP client side of an upstream: handshake, era negotiation and typed helpers.
//!
//! Negotiation follows the spec's fallback rules: try the modern era first
//! (`server/discover`); a result, or a modern error such as -32022, means a 2026-07-28
//! server; any other answer (-32601, a non-modern HTTP error, a timeout) means fall
//! back to `initialize`. The era found is returned so the caller can cache it per server
//! and try it first next time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};
use switchboard_wire::{
    Era, ErrorObject, LEGACY_VERSIONS, MODERN_VERSIONS, Message, error_code, meta, method,
};

use crate::{Error, Exchange, Upstream};

/// What the router says about itself in handshakes.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectOptions {
    /// `clientInfo` / `io.modelcontextprotocol/clientInfo`.
    pub client_info: Value,
    /// Capabilities the router declares as a client.
    pub client_capabilities: Value,
    /// Era to try first (the cached result of an earlier negotiation).
    pub era_hint: Option<Era>,
    /// Limit for each handshake step.
    pub handshake_timeout: Duration,
    /// Limit for ordinary requests made through [`McpClient::request`].
    pub request_timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            client_info: json!({"name": "switchboard", "version": env!("CARGO_PKG_VERSION")}),
            client_capabilities: json!({}),
            era_hint: None,
            handshake_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// A completed handshake.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Handshake {
    /// The era spoken.
    pub era: Era,
    /// The protocol version chosen.
    pub protocol_version: String,
    /// The versions the router offered, in the order tried.
    pub offered_versions: Vec<String>,
    /// The server's versions, when it listed them (`server/discover`).
    pub server_versions: Vec<String>,
    /// Server capabilities.
    pub server_capabilities: Value,
    /// `serverInfo`.
    pub server_info: Value,
    /// Client capabilities the router declared.
    pub client_capabilities: Value,
    /// `clientInfo` the router sent.
    pub client_info: Value,
    /// Server instructions, if any.
    pub instructions: Option<String>,
    /// `ttlMs` of a discover result.
    pub ttl_ms: Option<u64>,
    /// Wall time of the whole negotiation.
    pub duration: Duration,
    /// What happened at each step ("server/discover → -32601 Method not found; fell back").
    pub steps: Vec<String>,
}

/// A failed handshake, with everything known about it.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("handshake failed: {reason}")]
pub struct HandshakeFailure {
    /// One-line reason.
    pub reason: String,
    /// The era of the last attempt.
    pub era: Option<Era>,
    /// Versions offered.
    pub offered_versions: Vec<String>,
    /// Wall time spent.
    pub duration: Duration,
    /// What happened at each step.
    pub steps: Vec<String>,
}

/// Why a request through [`McpClient`] failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("{method}: server returned error {error}")]
    Rpc {
        /// The method called.
        method: String,
        /// The error object.
        error: Box<ErrorObject>,
    },
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] Error),
    /// A re-handshake after an expired session failed.
    #[error(transparent)]
    Handshake(Box<HandshakeFailure>),
    /// The server's answer had the wrong shape.
    #[error("{0}")]
    Invalid(String),
}

/// The items of a fully paged list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListAll {
    /// All items across pages, in server order.
    pub items: Vec<Value>,
    /// Smallest `ttlMs` seen on the pages.
    pub ttl_ms: Option<u64>,
    /// Pages fetched.
    pub pages: usize,
}

/// Upper bound on pages in one list, against servers whose cursors never end.
const MAX_PAGES: usize = 10_000;

/// A connected, handshaken upstream.
pub struct McpClient {
    upstream: Arc<dyn Upstream>,
    options: ConnectOptions,
    handshake: RwLock<Handshake>,
    next_id: AtomicU64,
    /// Held for as long as this client lives (see [`McpClient::leased`]).
    _lease: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient").field("handshake", &self.handshake()).finish()
    }
}

impl McpClient {
    /// Negotiates the era and performs the handshake.
    pub async fn connect(
        upstream: Arc<dyn Upstream>,
        options: ConnectOptions,
    ) -> Result<McpClient, HandshakeFailure> {
        let next_id = AtomicU64::new(1);
        let hs = negotiate(upstream.as_ref(), &options, &next_id).await?;
        Ok(McpClient { upstream, options, handshake: RwLock::new(hs), next_id, _lease: None })
    }

    /// This client's connection and handshake, holding `lease` until the returned client is
    /// dropped: the registry hands one to each call on a connection it counts calls on, and
    /// the lease's `Drop` is the call's end. Its request ids start anew; the transports this
    /// is used on (stdio, WebSocket) give every request an id unique on the connection anyway.
    pub fn leased(&self, lease: Box<dyn std::any::Any + Send + Sync>) -> McpClient {
        McpClient {
            upstream: self.upstream.clone(),
            options: self.options.clone(),
            handshake: RwLock::new(self.handshake()),
            next_id: AtomicU64::new(self.next_id.load(Ordering::Relaxed)),
            _lease: Some(lease),
        }
    }

    /// The current handshake.
    pub fn handshake(&self) -> Handshake {
        self.handshake.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The era spoken.
    pub fn era(&self) -> Era {
        self.handshake.read().unwrap_or_else(PoisonError::into_inner).era
    }

    /// The transport underneath.
    pub fn upstream(&self) -> &Arc<dyn Upstream> {
        &self.upstream
    }

    /// Redoes the handshake (after a restart or an expired session), trying the current
    /// era first.
    pub async fn rehandshake(&self) -> Result<Handshake, HandshakeFailure> {
        self.upstream.reset_session();
        let mut opts = self.options.clone();
        opts.era_hint = Some(self.era());
        let hs = negotiate(self.upstream.as_ref(), &opts, &self.next_id).await?;
        *self.handshake.write().unwrap_or_else(PoisonError::into_inner) = hs.clone();
        Ok(hs)
    }

    /// Builds a request of the current era: modern requests get the `_meta` fields.
    pub fn build_request(&self, method: &str, params: Value) -> Message {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Borrowed, not cloned: this runs on every forwarded call.
        let hs = self.handshake.read().unwrap_or_else(PoisonError::into_inner);
        build(id, method, params, hs.era, &hs.protocol_version, &self.options)
    }

    /// Sends a request and waits for its result (interim messages are dropped);
    /// re-initialises once when a legacy session expired.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let mut retried = false;
        loop {
            let msg = self.build_request(method, params.clone());
            let outcome = match self.upstream.request(msg).await {
                Ok(ex) => match tokio::time::timeout(self.options.request_timeout, ex.response()).await {
                    Ok(r) => r,
                    Err(_) => Err(Error::Timeout(self.options.request_timeout)),
                },
                Err(e) => Err(e),
            };
            match outcome {
                Ok(resp) => return result_of(resp, method),
                Err(Error::SessionExpired { .. }) if !retried => {
                    retried = true;
                    self.rehandshake().await.map_err(|f| ClientError::Handshake(Box::new(f)))?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Sends a request and returns its exchange (for streaming callers).
    pub async fn start(&self, method: &str, params: Value) -> Result<Exchange, Error> {
        self.upstream.request(self.build_request(method, params)).await
    }

    /// [`McpClient::start`] with extra HTTP headers (see [`Upstream::request_with_headers`]).
    pub async fn start_with_headers(
        &self,
        method: &str,
        params: Value,
        headers: Vec<(String, String)>,
    ) -> Result<Exchange, Error> {
        if headers.is_empty() {
            return self.start(method, params).await;
        }
        self.upstream.request_with_headers(self.build_request(method, params), headers).await
    }

    /// Fetches every page of a list method (`tools/list`, `resources/list`, …) and
    /// returns the items under `key`. A repeated cursor is an error, not a loop.
    pub async fn list_all(&self, method: &str, key: &str) -> Result<ListAll, ClientError> {
        let mut out = ListAll::default();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let result = self.request(method, params).await?;
            out.pages += 1;
            let items = result
                .get(key)
                .and_then(Value::as_array)
                .ok_or_else(|| ClientError::Invalid(format!("{method} result has no \"{key}\" array")))?;
            out.items.extend(items.iter().cloned());
            if let Some(ttl) = result.get("ttlMs").and_then(Value::as_u64) {
                out.ttl_ms = Some(out.ttl_ms.map_or(ttl, |t| t.min(ttl)));
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => {
                    if !seen.insert(c.to_owned()) {
                        return Err(ClientError::Invalid(format!(
                            "{method} returned cursor {c:?} twice (pagination loop)"
                        )));
                    }
                    if out.pages >= MAX_PAGES {
                        return Err(ClientError::Invalid(format!(
                            "{method} returned more than {MAX_PAGES} pages"
                        )));
                    }
                    cursor = Some(c.to_owned());
                }
                _ => return Ok(out),
            }
        }
    }

    /// Ends the connection.
    pub async fn close(&self) {
        self.upstream.close().await;
    }
}

fn build(id: u64, method: &str, params: Value, era: Era, version: &str, opts: &ConnectOptions) -> Message {
    let mut params = match params {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if era == Era::Modern {
        let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = meta {
            m.entry(meta::PROTOCOL_VERSION).or_insert_with(|| Value::String(version.to_owned()));
            m.entry(meta::CLIENT_CAPABILITIES).or_insert_with(|| opts.client_capabilities.clone());
            m.entry(meta::CLIENT_INFO).or_insert_with(|| opts.client_info.clone());
        }
    }
    Message::request(id, method, Some(Value::Object(params)))
}

fn result_of(resp: Message, method: &str) -> Result<Value, ClientError> {
    if let Some(err) = resp.error() {
        return Err(ClientError::Rpc { method: method.to_owned(), error: Box::new(err) });
    }
    resp.result().cloned().ok_or_else(|| ClientError::Invalid(format!("{method}: response has no result")))
}

enum Attempt {
    Done(Box<Handshake>),
    FallBack(String),
    Fail(String),
}

async fn negotiate(
    up: &dyn Upstream,
    opts: &ConnectOptions,
    ids: &AtomicU64,
) -> Result<Handshake, HandshakeFailure> {
    let started = Instant::now();
    let order = match opts.era_hint {
        Some(Era::Legacy) => [Era::Legacy, Era::Modern],
        _ => [Era::Modern, Era::Legacy],
    };
    let mut steps = Vec::new();
    let mut offered = Vec::new();
    let mut last_era = None;
    for era in order {
        last_era = Some(era);
        let attempt = match era {
            Era::Modern => {
                offered.extend(MODERN_VERSIONS.iter().map(|v| v.to_string()));
                try_modern(up, opts, ids, started).await
            }
            Era::Legacy => {
                offered.push(LEGACY_VERSIONS[0].to_owned());
                try_legacy(up, opts, ids, started).await
            }
        };
        match attempt {
            Attempt::Done(mut hs) => {
                steps.append(&mut hs.steps);
                hs.steps = steps;
                hs.offered_versions = offered;
                hs.duration = started.elapsed();
                return Ok(*hs);
            }
            Attempt::FallBack(why) => steps.push(why),
            Attempt::Fail(why) => {
                steps.push(why.clone());
                return Err(HandshakeFailure {
                    reason: why,
                    era: Some(era),
                    offered_versions: offered,
                    duration: started.elapsed(),
                    steps,
                });
            }
        }
    }
    Err(HandshakeFailure {
        reason: format!("server speaks neither 2026-07-28 nor 2025-11-25 ({})", steps.join("; ")),
        era: last_era,
        offered_versions: offered,
        duration: started.elapsed(),
        steps,
    })
}

async fn roundtrip(up: &dyn Upstream, msg: Message, timeout: Duration) -> Result<Message, Error> {
    let ex = up.request(msg).await?;
    match tokio::time::timeout(timeout, ex.response()).await {
        Ok(r) => r,
        Err(_) => Err(Error::Timeout(timeout)),
    }
}

async fn try_modern(up: &dyn Upstream, opts: &ConnectOptions, ids: &AtomicU64, started: Instant) -> Attempt {
    let mut version = MODERN_VERSIONS[0].to_owned();
    for _ in 0..2 {
        let id = ids.fetch_add(1, Ordering::Relaxed);
        let msg = build(id, method::SERVER_DISCOVER, json!({}), Era::Modern, &version, opts);
        let resp = match roundtrip(up, msg, opts.handshake_timeout).await {
            Ok(r) => r,
            Err(e) if e.is_fatal() => return Attempt::Fail(format!("server/discover: {e}")),
            Err(e) => return Attempt::FallBack(format!("server/discover: {e}; falling back to initialize")),
        };
        if let Some(err) = resp.error() {
            if err.code == error_code::UNSUPPORTED_PROTOCOL_VERSION {
                let supported: Vec<String> = err
                    .data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default();
                // Retry with a version both sides support — possibly the same one, once: a
                // server may reject the first request for reasons of its own.
                match supported.iter().find(|v| MODERN_VERSIONS.contains(&v.as_str())) {
                    Some(v) => {
                        version = v.clone();
                        continue;
                    }
                    None => {
                        return Attempt::Fail(format!(
                            "server/discover: server supports {supported:?}, the router supports {MODERN_VERSIONS:?} (-32022)"
                        ));
                    }
                }
            }
            if error_code::is_modern_error(err.code) {
                return Attempt::Fail(format!("server/discover rejected: {err}"));
            }
            return Attempt::FallBack(format!("server/discover → {err}; falling back to initialize"));
        }
        let Some(result) = resp.result() else {
            return Attempt::Fail("server/discover: empty response".into());
        };
        // A DiscoverResult must list its versions; a peer that answers anything with an
        // empty result (some legacy servers and mocks do) is not a modern server.
        let Some(listed) = result.get("supportedVersions").and_then(Value::as_array) else {
            return Attempt::FallBack(
                "server/discover answered without supportedVersions (not a 2026-07-28 server); falling back to initialize"
                    .into(),
            );
        };
        let server_versions: Vec<String> =
            listed.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect();
        if !server_versions.iter().any(|v| v == &version) {
            let common = server_versions.iter().find(|v| MODERN_VERSIONS.contains(&v.as_str()));
            match common {
                Some(v) => version = v.clone(),
                None if server_versions.iter().any(|v| LEGACY_VERSIONS.contains(&v.as_str())) => {
                    return Attempt::FallBack(format!(
                        "server/discover lists only {server_versions:?}; falling back to initialize"
                    ));
                }
                None => {
                    return Attempt::Fail(format!(
                        "no common protocol version: server supports {server_versions:?}, the router {MODERN_VERSIONS:?}"
                    ));
                }
            }
        }
        let server_info = result
            .get("_meta")
            .and_then(|m| m.get(meta::SERVER_INFO))
            .or_else(|| result.get("serverInfo"))
            .cloned()
            .unwrap_or(Value::Null);
        up.handshake_complete(&version, false).await;
        return Attempt::Done(Box::new(Handshake {
            era: Era::Modern,
            protocol_version: version.clone(),
            offered_versions: Vec::new(),
            server_versions,
            server_capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
            server_info,
            client_capabilities: opts.client_capabilities.clone(),
            client_info: opts.client_info.clone(),
            instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
            ttl_ms: result.get("ttlMs").and_then(Value::as_u64),
            duration: started.elapsed(),
            steps: vec![format!("server/discover → {version}")],
        }));
    }
    Attempt::Fail("server/discover: version negotiation did not converge".into())
}

async fn try_legacy(up: &dyn Upstream, opts: &ConnectOptions, ids: &AtomicU64, started: Instant) -> Attempt {
    let id = ids.fetch_add(1, Ordering::Relaxed);
    let msg = Message::request(
        id,
        method::INITIALIZE,
        Some(json!({
            "protocolVersion": LEGACY_VERSIONS[0],
            "capabilities": opts.client_capabilities,
            "clientInfo": opts.client_info,
        })),
    );
    let resp = match roundtrip(up, msg, opts.handshake_timeout).await {
        Ok(r) => r,
        Err(e) => return Attempt::Fail(format!("initialize: {e}")),
    };
    if let Some(err) = resp.error() {
        return Attempt::Fail(format!("initialize rejected: {err}"));
    }
    let Some(result) = resp.result() else {
        return Attempt::Fail("initialize: empty response".into());
    };
    let Some(version) = result.get("protocolVersion").and_then(Value::as_str) else {
        return Attempt::Fail("initialize result has no protocolVersion".into());
    };
    if !LEGACY_VERSIONS.contains(&version) {
        return Attempt::Fail(format!(
            "server chose protocol version {version:?}, which the router does not support (it offered {})",
            LEGACY_VERSIONS[0]
        ));
    }
    up.handshake_complete(version, true).await;
    if let Err(e) = up.send(Message::notification(method::NOTIFICATION_INITIALIZED, None)).await {
        return Attempt::Fail(format!("notifications/initialized: {e}"));
    }
    Attempt::Done(Box::new(Handshake {
        era: Era::Legacy,
        protocol_version: version.to_owned(),
        offered_versions: Vec::new(),
        server_versions: Vec::new(),
        server_capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
        client_capabilities: opts.client_capabilities.clone(),
        client_info: opts.client_info.clone(),
        instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
        ttl_ms: None,
        duration: started.elapsed(),
        steps: vec![format!("initialize → {version}")],
    }))
}
