//! Frame events: every JSON-RPC message crossing a connection, for the live UI.
//!
//! A [`Tap`] is cloned into every connection. Publishing asks the sink whether anyone
//! listens first, so with no viewer attached the cost is one atomic load and no allocation;
//! slow viewers lose frames (broadcast lag) instead of slowing the data plane.
//!
//! Where frames go is a [`FrameSink`]: the router's event bus (so frames travel on the one
//! event stream with everything else), or a standalone [`FrameBus`] for tools that have no
//! bus (the `probe` command). A request the gateway forwards runs inside [`correlated`], so
//! the upstream frames it causes carry the same correlation id as the client's frame.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use switchboard_wire::{Id, Kind, Message};
use tokio::sync::broadcast;

/// Which way a frame travelled, seen from the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Router → peer.
    Out,
    /// Peer → router.
    In,
}

/// One message on one leg.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct FrameEvent {
    /// `upstream` or `downstream`.
    pub leg: &'static str,
    /// Server name (upstream leg) or client label (downstream leg).
    pub peer: Arc<str>,
    /// `stdio`, `http` or `ws`.
    pub transport: &'static str,
    /// Direction of travel.
    pub direction: Direction,
    /// Size of the serialised message in bytes.
    pub size: usize,
    /// Request, notification, response or error.
    pub kind: Kind,
    /// Method of a request or notification.
    pub method: Option<String>,
    /// Id of a request or response.
    pub id: Option<Id>,
    /// Ties a client's request to the upstream requests it caused (same value on both legs);
    /// `None` for frames outside any forwarded request (handshakes, list refreshes).
    pub correlation: Option<u64>,
    /// The SSE event id the frame arrived with (Streamable HTTP), for resumption.
    pub sse_id: Option<String>,
    /// The WebSocket frame number on its connection (one message per frame), counted from 1.
    pub ws_frame: Option<u64>,
    /// Unix time in microseconds.
    pub at_us: i64,
    /// The message text as sent or received.
    #[ts(type = "string")]
    pub body: Arc<str>,
}

/// Where a [`Tap`] publishes.
pub trait FrameSink: Send + Sync + std::fmt::Debug {
    /// `true` when somebody would see a frame; must be cheap (one atomic load).
    fn active(&self) -> bool;
    /// Takes one frame; must never block.
    fn publish(&self, frame: FrameEvent);
}

tokio::task_local! {
    static CORRELATION: u64;
}

/// Runs `fut` with `id` as the correlation id of every frame it sends (and of the responses
/// read on its task).
pub async fn correlated<F: std::future::Future>(id: u64, fut: F) -> F::Output {
    CORRELATION.scope(id, fut).await
}

/// The correlation id of the current task, if it runs inside [`correlated`].
pub fn current_correlation() -> Option<u64> {
    CORRELATION.try_with(|c| *c).ok()
}

/// Fan-out of frame events to any number of viewers, for code that has no event bus.
#[derive(Debug, Clone)]
pub struct FrameBus {
    tx: broadcast::Sender<FrameEvent>,
}

impl FrameSink for broadcast::Sender<FrameEvent> {
    fn active(&self) -> bool {
        self.receiver_count() > 0
    }
    fn publish(&self, frame: FrameEvent) {
        let _ = self.send(frame);
    }
}

impl FrameBus {
    /// A bus that buffers up to `capacity` frames per slow viewer.
    pub fn new(capacity: usize) -> Self {
        FrameBus { tx: broadcast::channel(capacity.max(1)).0 }
    }

    /// A new viewer.
    pub fn subscribe(&self) -> broadcast::Receiver<FrameEvent> {
        self.tx.subscribe()
    }

    /// A tap for one connection.
    pub fn tap(&self, leg: &'static str, peer: &str, transport: &'static str) -> Tap {
        Tap::new(Arc::new(self.tx.clone()), leg, peer, transport)
    }
}

impl Default for FrameBus {
    fn default() -> Self {
        FrameBus::new(1024)
    }
}

/// Where a frame sat in its transport's framing, when the transport knows.
#[derive(Debug, Clone, Default)]
pub struct Boundary {
    /// The correlation id, when the frame is read outside the requesting task.
    pub correlation: Option<u64>,
    /// The SSE event id.
    pub sse_id: Option<String>,
    /// The WebSocket frame number.
    pub ws_frame: Option<u64>,
}

/// The publishing end held by a connection.
#[derive(Debug, Clone)]
pub struct Tap {
    tx: Option<Arc<dyn FrameSink>>,
    leg: &'static str,
    peer: Arc<str>,
    transport: &'static str,
}

impl Tap {
    /// A tap for one connection publishing into `sink`.
    pub fn new(sink: Arc<dyn FrameSink>, leg: &'static str, peer: &str, transport: &'static str) -> Self {
        Tap { tx: Some(sink), leg, peer: Arc::from(peer), transport }
    }

    /// A tap that publishes nowhere.
    pub fn disabled() -> Self {
        Tap { tx: None, leg: "upstream", peer: Arc::from(""), transport: "" }
    }

    /// `true` when at least one viewer is attached.
    #[inline]
    pub fn active(&self) -> bool {
        self.tx.as_ref().is_some_and(|t| t.active())
    }

    /// Publishes a frame; `bytes` is the message as it went over the wire.
    #[inline]
    pub fn record(&self, direction: Direction, msg: &Message, bytes: &[u8]) {
        if !self.active() {
            return;
        }
        self.publish(direction, msg, bytes, Boundary::default());
    }

    /// [`Tap::record`] with where the frame sat in its transport's framing.
    #[inline]
    pub fn record_framed(&self, direction: Direction, msg: &Message, bytes: &[u8], at: Boundary) {
        if !self.active() {
            return;
        }
        self.publish(direction, msg, bytes, at);
    }

    #[cold]
    fn publish(&self, direction: Direction, msg: &Message, bytes: &[u8], at: Boundary) {
        let Some(tx) = &self.tx else { return };
        let at_us = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0);
        tx.publish(FrameEvent {
            leg: self.leg,
            peer: self.peer.clone(),
            transport: self.transport,
            direction,
            size: bytes.len(),
            kind: msg.kind(),
            method: msg.method().map(str::to_owned),
            id: msg.id(),
            correlation: at.correlation.or_else(current_correlation),
            sse_id: at.sse_id,
            ws_frame: at.ws_frame,
            at_us,
            body: Arc::from(String::from_utf8_lossy(bytes).as_ref()),
        });
    }
}
