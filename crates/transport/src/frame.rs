//! Frame events: every JSON-RPC message crossing a connection, for the live UI.
//!
//! A [`Tap`] is cloned into every connection. Publishing checks the receiver count
//! first, so with no viewer attached the cost is one atomic load and no allocation;
//! slow viewers lose frames (broadcast lag) instead of slowing the data plane.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use switchboard_wire::{Id, Kind, Message};
use tokio::sync::broadcast;

/// Which way a frame travelled, seen from the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Router → peer.
    Out,
    /// Peer → router.
    In,
}

/// One message on one leg.
#[derive(Debug, Clone, Serialize)]
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
    /// Unix time in microseconds.
    pub at_us: i64,
    /// The message text as sent or received.
    pub body: Arc<str>,
}

/// Fan-out of frame events to any number of viewers.
#[derive(Debug, Clone)]
pub struct FrameBus {
    tx: broadcast::Sender<FrameEvent>,
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
        Tap { tx: Some(self.tx.clone()), leg, peer: Arc::from(peer), transport }
    }
}

impl Default for FrameBus {
    fn default() -> Self {
        FrameBus::new(1024)
    }
}

/// The publishing end held by a connection.
#[derive(Debug, Clone)]
pub struct Tap {
    tx: Option<broadcast::Sender<FrameEvent>>,
    leg: &'static str,
    peer: Arc<str>,
    transport: &'static str,
}

impl Tap {
    /// A tap that publishes nowhere.
    pub fn disabled() -> Self {
        Tap { tx: None, leg: "upstream", peer: Arc::from(""), transport: "" }
    }

    /// `true` when at least one viewer is attached.
    #[inline]
    pub fn active(&self) -> bool {
        self.tx.as_ref().is_some_and(|t| t.receiver_count() > 0)
    }

    /// Publishes a frame; `bytes` is the message as it went over the wire.
    #[inline]
    pub fn record(&self, direction: Direction, msg: &Message, bytes: &[u8]) {
        if !self.active() {
            return;
        }
        self.publish(direction, msg, bytes);
    }

    #[cold]
    fn publish(&self, direction: Direction, msg: &Message, bytes: &[u8]) {
        let Some(tx) = &self.tx else { return };
        let at_us = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0);
        let _ = tx.send(FrameEvent {
            leg: self.leg,
            peer: self.peer.clone(),
            transport: self.transport,
            direction,
            size: bytes.len(),
            kind: msg.kind(),
            method: msg.method().map(str::to_owned),
            id: msg.id(),
            at_us,
            body: Arc::from(String::from_utf8_lossy(bytes).as_ref()),
        });
    }
}
