//! The one interface every upstream transport implements.

use async_trait::async_trait;
use serde::Serialize;
use switchboard_wire::Message;
use tokio::sync::broadcast;

use crate::{Error, Exchange};

/// Which transport an upstream uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// JSON-RPC over WebSocket text frames (subprotocol `mcp`).
    Ws,
    /// A built-in server in the same process, over a newline-delimited pipe.
    InProcess,
}

impl TransportKind {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Http => "http",
            TransportKind::Ws => "ws",
            TransportKind::InProcess => "in-process",
        }
    }
}

/// Lifecycle events of the connection underneath an upstream.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum UpstreamEvent {
    /// A process was started or a connection made; any handshake must be redone.
    Started {
        /// Process id (stdio).
        pid: Option<u32>,
        /// Increases with every restart.
        generation: u64,
    },
    /// The process exited or the connection dropped.
    ///
    /// `stderr_tail` is operator detail (logs, events, `switchboard servers`): it can hold
    /// secrets and never belongs in an error sent to a caller.
    Exited {
        /// Exit status or close reason.
        status: String,
        /// How long it ran, in milliseconds.
        uptime_ms: u64,
        /// Last stderr lines (stdio).
        stderr_tail: String,
    },
    /// A restart is scheduled.
    Restarting {
        /// 1 for the first restart after a clean run, then increasing.
        attempt: u32,
        /// Backoff before the restart, in milliseconds.
        delay_ms: u64,
    },
    /// The supervisor stopped restarting (crash loop); the upstream is unusable.
    GaveUp {
        /// Human-readable reason, fit for callers (no stderr).
        reason: String,
        /// The last stderr lines (operator detail: can hold secrets, never sent to callers).
        stderr_tail: String,
    },
}

/// A snapshot of the connection underneath an upstream, for `switchboard servers` and the UI.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UpstreamStatus {
    /// `true` when messages can be sent now.
    pub connected: bool,
    /// Child process id (stdio).
    pub pid: Option<u32>,
    /// Restarts so far (stdio).
    pub restarts: u32,
    /// Resident memory of the child in bytes (stdio, Linux).
    pub memory_bytes: Option<u64>,
    /// Last stderr lines (stdio). Operator detail: can hold secrets, never sent to callers.
    pub stderr_tail: Vec<String>,
    /// Why the upstream is not connected, if it is not (no stderr: see `stderr_tail`).
    pub last_error: Option<String>,
    /// 2025-11-25 HTTP session id, when one is held.
    pub session_id: Option<String>,
}

/// A connection to one MCP server, whatever the transport.
#[async_trait]
pub trait Upstream: Send + Sync + 'static {
    /// The transport in use.
    fn kind(&self) -> TransportKind;

    /// Sends a request. The returned [`Exchange`] yields the messages that relate to it
    /// and then its response; the request id seen by the caller is preserved.
    async fn request(&self, msg: Message) -> Result<Exchange, Error>;

    /// Sends a request with extra HTTP headers (a client's `Mcp-Param-*` headers the router
    /// does not know, which an intermediary forwards). Transports without headers ignore
    /// them.
    async fn request_with_headers(
        &self,
        msg: Message,
        _headers: Vec<(String, String)>,
    ) -> Result<Exchange, Error> {
        self.request(msg).await
    }

    /// Sends a notification, or a response to a server → client request.
    async fn send(&self, msg: Message) -> Result<(), Error>;

    /// Server messages that belong to no request in flight: `list_changed`,
    /// `resources/updated`, server → client requests over stdio and WebSocket, the
    /// legacy HTTP GET stream.
    fn incoming(&self) -> broadcast::Receiver<Message>;

    /// Lifecycle events (restarts, exits).
    fn events(&self) -> broadcast::Receiver<UpstreamEvent>;

    /// Current connection status.
    fn status(&self) -> UpstreamStatus;

    /// The child process's id, when this upstream is a running process (stdio). Cheap: unlike
    /// [`Upstream::status`] it reads nothing from the system.
    fn pid(&self) -> Option<u32> {
        None
    }

    /// `true` once the server has sent a request of its own (elicitation, sampling, roots) on
    /// this connection's shared stream (stdio, WebSocket). Such a question can only be
    /// attributed to a call when it is the one call in flight, so the registry gives the calls
    /// of such a server connections of their own.
    fn asked_client(&self) -> bool {
        false
    }

    /// Called by the client after a successful handshake, with the negotiated protocol
    /// version; legacy HTTP uses it to send later requests with the session headers and
    /// to open the GET stream.
    async fn handshake_complete(&self, _protocol_version: &str, _legacy: bool) {}

    /// Forgets any session state (before a re-handshake).
    fn reset_session(&self) {}

    /// Tells the transport which tool arguments to mirror into `Mcp-Param-*` headers.
    fn set_header_params(&self, _tool: &str, _params: Vec<switchboard_wire::headers::HeaderParam>) {}

    /// Shuts the connection down (kills the child, ends the session).
    async fn close(&self);
}
