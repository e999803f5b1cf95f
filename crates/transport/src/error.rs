//! Transport errors.
//!
//! These are failures to exchange messages at all (a dead child, a refused connection,
//! an HTTP status without a JSON-RPC body). A JSON-RPC error *response* from a server is
//! not an [`Error`]: it is data, delivered as a message.

use std::time::Duration;

/// Why a message could not be exchanged with an upstream.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The child process could not be started.
    #[error("failed to spawn `{command}`: {reason}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        reason: String,
    },
    /// The child process is not running (between restarts, or given up).
    #[error("server process is not running: {detail}")]
    NotRunning {
        /// Why (last exit status, or "gave up after …"); never the stderr tail.
        detail: String,
    },
    /// The child process exited while a request was in flight.
    ///
    /// The message leaves the stderr tail out: errors reach callers, and a server's stderr
    /// can hold secrets. The tail stays in the field, for the operator.
    #[error("server process exited ({status})")]
    Exited {
        /// Exit status as text.
        status: String,
        /// The last lines the process wrote to stderr (operator detail: not in the message).
        stderr_tail: String,
    },
    /// A network connection could not be made or broke.
    #[error("connection to {url} failed: {reason}")]
    Connect {
        /// The peer.
        url: String,
        /// The underlying error.
        reason: String,
    },
    /// The server answered with an HTTP status and no JSON-RPC message.
    #[error("HTTP {status} from {url}{}", body_suffix(.body))]
    HttpStatus {
        /// The peer.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the body, for the error message.
        body: String,
    },
    /// A 2025-11-25 session ended on the server side (HTTP 404): re-initialise.
    #[error("session {session} at {url} is no longer known to the server (HTTP 404)")]
    SessionExpired {
        /// The peer.
        url: String,
        /// The session id that expired.
        session: String,
    },
    /// The server sent something that is not valid MCP.
    #[error("invalid message from server: {0}")]
    Protocol(String),
    /// The response stream ended before the response arrived.
    #[error("stream closed before the response to request {id} arrived")]
    StreamClosed {
        /// The request id.
        id: String,
    },
    /// The caller stopped reading this request's messages until its buffer was full. Only
    /// this request fails (and is cancelled upstream); the connection and other calls go on.
    #[error(
        "the caller fell behind: {buffered} messages of this request were waiting unread, so it was cancelled"
    )]
    SlowConsumer {
        /// How many messages were buffered.
        buffered: usize,
    },
    /// No answer in time.
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The upstream was shut down.
    #[error("transport closed")]
    Closed,
}

fn body_suffix(body: &str) -> String {
    if body.trim().is_empty() { String::new() } else { format!(": {}", body.trim()) }
}

impl Error {
    /// `true` when the request certainly did not reach the server's handler: no connection
    /// could be made, the process is not running, the session had expired, or the server
    /// refused the request up front (HTTP 429 or 503). Retrying such a request elsewhere is safe
    /// whatever the tool does; after any other failure it may have run.
    pub fn not_delivered(&self) -> bool {
        match self {
            Error::Spawn { .. } | Error::NotRunning { .. } | Error::SessionExpired { .. } => true,
            Error::Connect { reason, .. } => reason.starts_with("cannot connect"),
            Error::HttpStatus { status, .. } => matches!(status, 429 | 503),
            _ => false,
        }
    }

    /// `true` when the server said it is overloaded or unavailable for now (HTTP 429 or 503):
    /// worth a retry after a backoff.
    pub fn overloaded(&self) -> bool {
        matches!(self, Error::HttpStatus { status: 429 | 503, .. })
    }

    /// `true` when the peer itself is gone (as opposed to a slow or confused peer), so
    /// an era fallback or a retry on the same connection is pointless.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Error::Spawn { .. }
                | Error::NotRunning { .. }
                | Error::Exited { .. }
                | Error::Connect { .. }
                | Error::Closed
        )
    }
}
