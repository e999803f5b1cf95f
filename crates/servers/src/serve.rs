//! Running a built-in server on a transport: stdio, Streamable HTTP, WebSocket, or an in-memory pipe.
//!
//! These helpers take any rmcp [`ServerHandler`] (the vision, knowledge and reasoning servers alike), so the
//! `switchboard server vision|knowledge|reasoning --stdio|--http ADDR|--ws ADDR` command and the router's
//! in-process mode only pick a handler and call one function. Shutdown is passed in as a [`CancellationToken`];
//! network servers return a [`Serving`] handle with the bound URL and the task to await.
//!
//! - **stdio**: newline-delimited JSON-RPC on stdin/stdout, one client per process ([`serve_stdio`]).
//! - **Streamable HTTP** at [`MCP_PATH`] ([`serve_http`]): rmcp's service with sessions for 2025-era clients and
//!   stateless handling of 2026-07-28 requests; when bound to loopback, `Host` and `Origin` are restricted to
//!   loopback names (DNS-rebinding protection).
//! - **WebSocket** at [`MCP_PATH`] ([`serve_ws`]): neither MCP revision defines one; this follows the de-facto
//!   convention: subprotocol [`WS_SUBPROTOCOL`], one JSON-RPC message per text frame, one MCP session per
//!   connection.
//! - **In memory** ([`builtin_in_memory`]): the server runs on a task at one end of a `tokio::io::duplex` pipe and
//!   the caller gets the other end, which speaks newline-delimited JSON-RPC exactly like a stdio child.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{
        State,
        ws::{Message, WebSocket, WebSocketUpgrade},
    },
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
};
use futures::{
    SinkExt as _, StreamExt as _,
    stream::{SplitSink, SplitStream},
};
use rmcp::{
    RoleServer, ServerHandler, ServiceExt as _,
    model::{ClientJsonRpcMessage, ErrorData, RequestId, ServerJsonRpcMessage},
    transport::{
        Transport,
        streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        },
    },
};
use serde_json::Value;
use tokio::{io::DuplexStream, net::TcpListener, sync::Mutex, task::JoinHandle};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::error::{Error, Result};

/// Path of the MCP endpoint for HTTP and WebSocket.
pub const MCP_PATH: &str = "/mcp";

/// The WebSocket subprotocol negotiated.
pub const WS_SUBPROTOCOL: &str = "mcp";

/// Largest WebSocket text frame accepted: big enough for a base64 image under the vision server's default
/// 64 MiB limit (4/3 expansion plus JSON).
pub const MAX_WS_MESSAGE_BYTES: usize = 96 * 1024 * 1024;

/// Largest HTTP request body accepted, for the same reason.
pub const MAX_HTTP_BODY_BYTES: usize = 96 * 1024 * 1024;

/// Buffer of each direction of the in-memory pipe.
pub const IN_MEMORY_BUFFER_BYTES: usize = 1024 * 1024;

/// How long a network server waits for open connections after cancellation before it stops waiting.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(5);

/// Host names (and origins) a loopback-bound server accepts.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// A network server that is bound and serving.
#[derive(Debug)]
pub struct Serving {
    url: String,
    local_addr: SocketAddr,
    task: JoinHandle<Result<()>>,
}

impl Serving {
    /// The endpoint URL, e.g. `http://127.0.0.1:8931/mcp` or `ws://127.0.0.1:8932/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound socket address (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Waits until the server has stopped (after its cancellation token is cancelled and connections drained).
    ///
    /// # Errors
    /// [`Error::Serve`] when the listener failed; [`Error::Internal`] when the task panicked.
    pub async fn wait(self) -> Result<()> {
        self.task.await.map_err(|e| Error::Internal { context: "serving", message: e.to_string() })?
    }
}

/// Serves `handler` on this process's stdin/stdout until stdin closes or `cancel` is cancelled.
///
/// Nothing but protocol messages may be written to stdout while this runs (log to stderr).
///
/// # Errors
/// [`Error::Session`] when the MCP session fails to start or ends with an error.
pub async fn serve_stdio<H: ServerHandler>(handler: H, cancel: CancellationToken) -> Result<()> {
    let transport = (tokio::io::stdin(), tokio::io::stdout());
    run_session(handler, transport, cancel, "stdio").await
}

async fn run_session<H, T, E, A>(
    handler: H,
    transport: T,
    cancel: CancellationToken,
    name: &'static str,
) -> Result<()>
where
    H: ServerHandler,
    T: rmcp::transport::IntoTransport<RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let running = match handler.serve_with_ct(transport, cancel).await {
        Ok(running) => running,
        Err(
            rmcp::service::ServerInitializeError::ConnectionClosed(_)
            | rmcp::service::ServerInitializeError::Cancelled,
        ) => {
            return Ok(());
        }
        Err(e) => return Err(Error::Session { transport: name, message: e.to_string() }),
    };
    let reason =
        running.waiting().await.map_err(|e| Error::Session { transport: name, message: e.to_string() })?;
    tracing::debug!(?reason, transport = name, "mcp session ended");
    Ok(())
}

/// Runs `handler` in-process on a `tokio::io::duplex` pipe and returns the client end.
///
/// The returned [`DuplexStream`] is `AsyncRead + AsyncWrite`: write newline-delimited JSON-RPC requests to it and
/// read newline-delimited responses and notifications from it, exactly as with a stdio child process (so the
/// router's stdio framing works unchanged; an rmcp client can also `().serve(stream)` on it). The session ends when
/// the client end is dropped or `cancel` is cancelled; the returned task then completes (await it to observe
/// errors, or drop it to detach).
pub fn builtin_in_memory<H: ServerHandler>(
    handler: H,
    cancel: CancellationToken,
) -> (DuplexStream, JoinHandle<Result<()>>) {
    let (server_io, client_io) = tokio::io::duplex(IN_MEMORY_BUFFER_BYTES);
    let task = tokio::spawn(async move { run_session(handler, server_io, cancel, "memory").await });
    (client_io, task)
}

async fn bind(addr: SocketAddr, transport: &'static str) -> Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await.map_err(|source| Error::Serve {
        transport,
        addr: addr.to_string(),
        source,
    })?;
    let local =
        listener.local_addr().map_err(|source| Error::Serve { transport, addr: addr.to_string(), source })?;
    Ok((listener, local))
}

fn spawn_axum(
    listener: TcpListener,
    local: SocketAddr,
    app: Router,
    cancel: CancellationToken,
    transport: &'static str,
    tasks: TaskTracker,
) -> JoinHandle<Result<()>> {
    tokio::spawn(async move {
        let serving = axum::serve(listener, app).with_graceful_shutdown(cancel.clone().cancelled_owned());
        let serving = async move {
            serving.await.map_err(|source| Error::Serve { transport, addr: local.to_string(), source })
        };
        tokio::pin!(serving);
        let result = tokio::select! {
            result = &mut serving => result,
            () = cancel.cancelled() => match tokio::time::timeout(DRAIN_DEADLINE, &mut serving).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::warn!(%local, "connections still open after the drain deadline; closing");
                    Ok(())
                }
            },
        };
        tasks.close();
        if tokio::time::timeout(DRAIN_DEADLINE, tasks.wait()).await.is_err() {
            tracing::warn!(%local, "sessions still running after the drain deadline");
        }
        result
    })
}

/// Serves `handler` over Streamable HTTP at `http://ADDR/mcp` until `cancel` is cancelled.
///
/// Each MCP session gets a clone of `handler`. Bind port 0 to let the OS choose; [`Serving::url`] has the result.
///
/// # Errors
/// [`Error::Serve`] when the address cannot be bound.
pub async fn serve_http<H>(handler: H, addr: SocketAddr, cancel: CancellationToken) -> Result<Serving>
where
    H: ServerHandler + Clone,
{
    let (listener, local) = bind(addr, "http").await?;
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel.child_token())
        .with_max_request_body_bytes(MAX_HTTP_BODY_BYTES);
    config = if local.ip().is_loopback() {
        config.with_allowed_hosts(LOOPBACK_HOSTS).with_allowed_origins([
            "http://localhost:*",
            "http://127.0.0.1:*",
            "http://[::1]:*",
        ])
    } else {
        // Bound to a routable address on purpose: accept the names clients use to reach it.
        config.disable_allowed_hosts()
    };
    let service: StreamableHttpService<H, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(handler.clone()), Arc::default(), config);
    let app = Router::new().route_service(MCP_PATH, service);
    let task = spawn_axum(listener, local, app, cancel, "http", TaskTracker::new());
    Ok(Serving { url: format!("http://{local}{MCP_PATH}"), local_addr: local, task })
}

/// Serves `handler` over WebSocket at `ws://ADDR/mcp` (subprotocol `mcp`, one JSON-RPC message per text frame)
/// until `cancel` is cancelled. Each connection is one MCP session with a clone of `handler`.
///
/// # Errors
/// [`Error::Serve`] when the address cannot be bound.
pub async fn serve_ws<H>(handler: H, addr: SocketAddr, cancel: CancellationToken) -> Result<Serving>
where
    H: ServerHandler + Clone,
{
    let (listener, local) = bind(addr, "ws").await?;
    let tasks = TaskTracker::new();
    let state =
        WsState { handler, cancel: cancel.clone(), tasks: tasks.clone(), loopback: local.ip().is_loopback() };
    let app = Router::new().route(MCP_PATH, get(upgrade::<H>)).with_state(state);
    let task = spawn_axum(listener, local, app, cancel, "ws", tasks);
    Ok(Serving { url: format!("ws://{local}{MCP_PATH}"), local_addr: local, task })
}

#[derive(Clone)]
struct WsState<H> {
    handler: H,
    cancel: CancellationToken,
    tasks: TaskTracker,
    loopback: bool,
}

fn loopback_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(axum::http::header::ORIGIN) else {
        return true;
    };
    let Some(uri) = origin.to_str().ok().and_then(|o| o.parse::<axum::http::Uri>().ok()) else {
        return false;
    };
    let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    matches!(uri.scheme_str(), Some("http" | "https"))
        && LOOPBACK_HOSTS.iter().any(|h| host.eq_ignore_ascii_case(h))
}

async fn upgrade<H: ServerHandler + Clone>(
    State(state): State<WsState<H>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    if state.loopback && !loopback_origin(&headers) {
        return (StatusCode::FORBIDDEN, "Forbidden: Origin header is not allowed").into_response();
    }
    upgrade.protocols([WS_SUBPROTOCOL]).max_message_size(MAX_WS_MESSAGE_BYTES).on_upgrade(move |socket| {
        let tasks = state.tasks.clone();
        tasks.track_future(async move {
            let transport = WsTransport::new(socket);
            if let Err(e) = run_session(state.handler, transport, state.cancel.child_token(), "ws").await {
                tracing::debug!(error = %e, "websocket session ended with an error");
            }
        })
    })
}

/// Why a WebSocket frame could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WsError {
    /// The message could not be serialised.
    #[error("cannot serialise a message: {0}")]
    Encode(#[from] serde_json::Error),
    /// The socket failed.
    #[error("websocket error: {0}")]
    Socket(#[from] axum::Error),
}

/// An rmcp server transport over one upgraded WebSocket.
struct WsTransport {
    sink: Arc<Mutex<SplitSink<WebSocket, Message>>>,
    stream: SplitStream<WebSocket>,
}

impl WsTransport {
    fn new(socket: WebSocket) -> Self {
        let (sink, stream) = socket.split();
        Self { sink: Arc::new(Mutex::new(sink)), stream }
    }

    async fn reply_error(&self, id: Option<RequestId>, error: ErrorData) -> Result<(), WsError> {
        let text = serde_json::to_string(&ServerJsonRpcMessage::error(error, id))?;
        self.sink.lock().await.send(Message::Text(text.into())).await?;
        Ok(())
    }
}

impl Transport<RoleServer> for WsTransport {
    type Error = WsError;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = std::result::Result<(), Self::Error>> + Send + 'static {
        let sink = self.sink.clone();
        async move {
            let text = serde_json::to_string(&item)?;
            sink.lock().await.send(Message::Text(text.into())).await?;
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let text = match self.stream.next().await? {
                Ok(Message::Text(text)) => text,
                Ok(Message::Binary(_)) => {
                    tracing::debug!("ignoring a binary frame: MCP messages travel as text frames");
                    continue;
                }
                Ok(Message::Ping(_) | Message::Pong(_)) => continue,
                Ok(Message::Close(_)) => return None,
                Err(error) => {
                    tracing::debug!(%error, "websocket read failed");
                    return None;
                }
            };
            let value = match serde_json::from_str::<Value>(text.as_str()) {
                Ok(value) => value,
                Err(error) => {
                    let reply = ErrorData::parse_error(format!("Parse error: {error}"), None);
                    if self.reply_error(None, reply).await.is_err() {
                        return None;
                    }
                    continue;
                }
            };
            let id = value.get("id").cloned().and_then(|id| serde_json::from_value::<RequestId>(id).ok());
            match serde_json::from_value::<ClientJsonRpcMessage>(value) {
                Ok(message) => return Some(message),
                Err(error) => {
                    let reply = ErrorData::invalid_request(format!("Invalid Request: {error}"), None);
                    if self.reply_error(id, reply).await.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> std::result::Result<(), Self::Error> {
        self.sink.lock().await.close().await?;
        Ok(())
    }
}
