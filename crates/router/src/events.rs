//! The event bus: every observable change in the registry, for the UI and the logs.
//!
//! Publishing never blocks: events go into a bounded broadcast ring and a viewer that
//! falls behind loses the oldest ones (it learns how many through `Lagged`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use switchboard_store::{HandshakeRecord, TraceRecord};
use switchboard_transport::UpstreamEvent;
use tokio::sync::broadcast;

use crate::schema::Quarantined;

/// One observable change.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A handshake finished or failed.
    Handshake {
        /// Server name (empty for probes).
        server: String,
        /// The record as stored.
        record: Box<HandshakeRecord>,
    },
    /// A server changed state.
    ServerState {
        /// Server id.
        server_id: String,
        /// Server name.
        server: String,
        /// Previous state.
        from: String,
        /// New state.
        to: String,
        /// Why.
        reason: String,
        /// Unix milliseconds.
        at_ms: i64,
    },
    /// A server's catalog was (re)listed.
    Catalog {
        /// Server id.
        server_id: String,
        /// Server name.
        server: String,
        /// Usable tools.
        tools: usize,
        /// Tools left out.
        quarantined: Vec<Quarantined>,
        /// Resources listed.
        resources: usize,
        /// Prompts listed.
        prompts: usize,
        /// What triggered the listing (`connect`, `timer`, `list_changed`).
        trigger: String,
        /// Unix milliseconds.
        at_ms: i64,
    },
    /// The connection underneath a server changed (process start, exit, restart).
    Upstream {
        /// Server id.
        server_id: String,
        /// Server name.
        server: String,
        /// What happened.
        event: UpstreamEvent,
        /// Unix milliseconds.
        at_ms: i64,
    },
    /// A downstream client's request to the federated endpoint finished (published by the app's
    /// listener, which also stores it).
    Trace {
        /// The record as stored.
        record: Box<TraceRecord>,
    },
}

/// Fan-out of [`Event`]s.
#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Arc<Event>>,
    published: Arc<AtomicU64>,
}

impl EventBus {
    /// A bus keeping up to `capacity` events for slow viewers.
    pub fn new(capacity: usize) -> Self {
        EventBus { tx: broadcast::channel(capacity.max(1)).0, published: Arc::new(AtomicU64::new(0)) }
    }

    /// Publishes an event (never blocks).
    pub fn publish(&self, event: Event) {
        self.published.fetch_add(1, Ordering::Relaxed);
        let _ = self.tx.send(Arc::new(event));
    }

    /// A new viewer.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// Events published so far.
    pub fn published(&self) -> u64 {
        self.published.load(Ordering::Relaxed)
    }
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(4096)
    }
}

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
