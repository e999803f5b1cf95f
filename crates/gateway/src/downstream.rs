//! Downstream clients that do not speak HTTP: WebSocket ([`ws`]) and stdio ([`stdio`]).
//!
//! Both are message streams, so both go through one [`Adapter`]: each incoming frame is parsed
//! once and handed to the edge ([`Edge::serve`]) with a [`RequestContext`] naming the
//! transport and peer — the same call the HTTP handler makes, so MCP semantics, deadlines and
//! traces are the same on every transport. The reply's messages are written back as frames in
//! the order they come (a stream's progress, logs and server → client requests as they
//! happen).
//!
//! Per connection the adapter keeps what an HTTP client would: the 2025-11-25 session that
//! `initialize` opened (passed as the context's session on later messages, and ended when the
//! connection closes) and that session's notification stream, written to the connection too.
//! Requests run concurrently (a slow call does not hold up a ping), bounded by
//! [`MAX_IN_FLIGHT`]. `notifications/cancelled` stops the named request here (dropping its
//! reply cancels it upstream) and is also handed to the endpoint.
//!
//! Every frame is published on the downstream leg of the event bus ([`DownstreamTap`]): the
//! client's as it is read, the router's as it is written, with the frame's number on a
//! WebSocket.

pub mod stdio;
pub mod ws;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::{Stream, StreamExt};
use switchboard_wire::{ErrorObject, Id, Message, error_code, method};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::edge::Edge;
use crate::endpoint::{Reply, RequestContext, Transport};
use crate::frames::DownstreamTap;

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

/// One incoming frame: its text and, on a WebSocket, its number on the socket (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The frame's text (one JSON-RPC message).
    pub text: String,
    /// Its number among the frames the client sent on a WebSocket.
    pub number: Option<u64>,
}

/// One message to write, and who publishes it once written.
#[derive(Debug)]
pub struct Out {
    /// The message.
    pub msg: Message,
    /// The request's downstream tap (with its correlation id), when somebody watches.
    pub tap: Option<DownstreamTap>,
}

/// Serves message-stream connections through the edge. Cheap to clone.
#[derive(Clone)]
pub struct Adapter {
    edge: Edge,
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
    /// The 2025-11-25 session (id, negotiated version), once `initialize` answered.
    session: Mutex<Option<(String, String)>>,
    /// Requests in flight, by the JSON of their id, so `notifications/cancelled` can stop them.
    in_flight: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// The session's notification stream.
    notifications: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Conn {
    fn session(&self) -> Option<(String, String)> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The error frame for a message that could not be served.
fn error_out(id: Option<Id>, code: i64, message: impl Into<String>) -> Out {
    Out { msg: Message::error_response(id, ErrorObject::new(code, message)), tap: None }
}

impl Adapter {
    /// An adapter in front of `edge`.
    pub fn new(edge: Edge) -> Adapter {
        let max_message = edge.endpoint().config().body_limit;
        Adapter { edge, max_message }
    }

    /// Serves one connection: reads `incoming` until it ends or `cancel` fires, writes every
    /// answer to `out`. With `drain`, requests still running when the input ends are awaited
    /// (stdio: a client may write its requests and close its end); otherwise they are dropped,
    /// which cancels them upstream (a closed WebSocket has nobody to answer). The 2025-11-25
    /// session, if any, is ended last.
    pub async fn serve<S>(
        &self,
        transport: Transport,
        peer: Option<String>,
        mut incoming: S,
        out: mpsc::Sender<Out>,
        drain: bool,
        cancel: CancellationToken,
    ) where
        S: Stream<Item = Result<Frame, FrameError>> + Unpin,
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
                    let _ = out.send(error_out(None, error_code::INVALID_REQUEST, text)).await;
                }
                Some(Err(FrameError::NotText)) => {
                    let text = "parse error: frame is not UTF-8 text";
                    let _ = out.send(error_out(None, error_code::PARSE_ERROR, text)).await;
                }
                Some(Ok(frame)) => {
                    self.dispatch(transport, &peer, &conn, frame, &out, &mut tasks).await;
                }
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
            let _ = self.edge.endpoint().end_session(Some(&sid));
        }
    }

    async fn dispatch(
        &self,
        transport: Transport,
        peer: &Option<String>,
        conn: &Arc<Conn>,
        frame: Frame,
        out: &mpsc::Sender<Out>,
        tasks: &mut JoinSet<()>,
    ) {
        let msg = match Message::parse(frame.text.as_bytes()) {
            Ok(m) => m,
            Err(e) => {
                let _ = out.send(Out { msg: e.to_response(), tap: None }).await;
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
            let _ = out.send(error_out(msg.id(), error_code::INTERNAL_ERROR, text)).await;
            return;
        }
        let mut ctx = RequestContext::new(transport, peer.clone());
        if let Some((sid, version)) = conn.session() {
            ctx.session = Some(sid);
            ctx.protocol_version = Some(version);
        }
        let registry = self.edge.endpoint().registry();
        let tap = DownstreamTap::new(registry, transport, Some(&msg), Some(ctx.correlation));
        if let Some(tap) = &tap {
            tap.incoming(&msg, frame.text.as_bytes(), frame.number);
        }
        let key = msg.is_request().then(|| msg.id().map(|i| i.to_value().to_string())).flatten();
        let initialize = msg.method() == Some(method::INITIALIZE);
        let (adapter, out, conn2, key2) = (self.clone(), out.clone(), conn.clone(), key.clone());
        let handle = tasks.spawn(async move {
            let reply = adapter.edge.serve(msg, &ctx).await;
            let decided = ctx.decided.get();
            if initialize && let Some(sid) = decided.new_session {
                let version = decided.version.unwrap_or_default();
                *conn2.session.lock().unwrap_or_else(PoisonError::into_inner) = Some((sid, version));
            }
            write(reply, &out, tap).await;
            if initialize && conn2.session().is_some() {
                adapter.follow_notifications(transport, &conn2, &out);
            }
            if let Some(k) = key2 {
                conn2.in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&k);
            }
        });
        if let Some(k) = key {
            conn.in_flight.lock().unwrap_or_else(PoisonError::into_inner).insert(k, handle);
        }
    }

    /// Like an HTTP client's `GET`, writes the session's notification stream (list_changed,
    /// resources/updated) to this connection too.
    fn follow_notifications(&self, transport: Transport, conn: &Arc<Conn>, out: &mpsc::Sender<Out>) {
        let Some((sid, _)) = conn.session() else { return };
        let endpoint = self.edge.endpoint();
        let Ok(stream) = endpoint.notifications(&sid, None) else { return };
        let tap = DownstreamTap::new(endpoint.registry(), transport, None, None);
        let out = out.clone();
        let task = tokio::spawn(async move {
            let mut messages = stream.messages;
            while let Some(o) = messages.next().await {
                if out.send(Out { msg: o.msg, tap: tap.clone() }).await.is_err() {
                    return;
                }
            }
        });
        *conn.notifications.lock().unwrap_or_else(PoisonError::into_inner) = Some(task.abort_handle());
    }
}

/// Writes a reply's messages, in order; nothing for an accepted notification or response.
async fn write(reply: Reply, out: &mpsc::Sender<Out>, tap: Option<DownstreamTap>) {
    match reply {
        Reply::Accepted | Reply::NoContent => {}
        Reply::Message { msg, .. } => {
            let _ = out.send(Out { msg, tap }).await;
        }
        Reply::Stream(stream) => {
            let mut messages = stream.messages;
            while let Some(o) = messages.next().await {
                if out.send(Out { msg: o.msg, tap: tap.clone() }).await.is_err() {
                    return;
                }
            }
        }
    }
}
