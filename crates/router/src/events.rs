//! The one event stream: every observable thing the router does, typed, for the control
//! panel, the logs and the tests.
//!
//! One [`EventBus`] is shared by the whole process. Who publishes what (kept true by grep:
//! `publish(Event::` and the sinks below):
//!
//! | event | publisher |
//! | --- | --- |
//! | [`Event::Handshake`] | the registry, for every upstream handshake attempt (`registry/handshake.rs`, `record_handshake`) |
//! | [`Event::ServerState`] | the registry, on every state change (`set_state_detailed`) |
//! | [`Event::Catalog`] | the registry, when a listing differs or on connect (`list_and_publish`) |
//! | [`Event::CatalogChanged`] | the registry, with the item diff, when a listing differs from the previous one (first listing included; never for an unchanged refresh) |
//! | [`Event::Upstream`] | the registry, relaying a stdio child's lifecycle (started, exited, restarting, gave up) |
//! | [`Event::Frame`] | upstream connections through their [`Tap`](switchboard_transport::Tap) (the bus is their [`FrameSink`]); the gateway for client-leg frames |
//! | [`Event::Trace`] | the gateway, when a downstream request finished (`gateway/src/traces.rs`) |
//! | [`Event::FlowProgress`] | the flow engine, through the bus as its [`RunObserver`](switchboard_flow::RunObserver) ([`flow`]); the app hands the bus to its engine |
//! | [`Event::FlowRun`] | the app's diagnosis service (`app/src/diagnosis.rs`), when a run is admitted and once its end is stored |
//! | [`Event::Session`] | the gateway's session table (`gateway/src/sessions.rs`): a 2025-11-25 session opened or ended, a session or 2026-07-28 caller bound to an upstream |
//! | [`Event::ProcessStats`] | the registry's process sampler ([`crate::stats`]), only while somebody subscribes, Linux only |
//! | [`Event::Negotiation`] | the registry, one per step of every upstream handshake attempt (leg `upstream`: `discover`, `fallback`, `initialize`, `failed`), just before its [`Event::Handshake`] (`registry/negotiation.rs`) |
//! | [`Event::Route`] | the scheduler, for every routing decision (`schedule.rs`, `Scheduler::record`) |
//! | [`Event::Notification`] | nobody yet: the gateway's notifier does not publish its fan-out |
//!
//! Three promises, because the data plane publishes here:
//! - **Nobody listening costs one atomic load.** [`EventBus::active`] reads a subscriber count;
//!   [`EventBus::publish_with`] builds the event only when somebody listens.
//! - **Publishing never blocks.** Events go into a bounded broadcast ring.
//! - **A subscriber that falls behind is told how many events it lost** (`RecvError::Lagged`),
//!   and never slows anybody else down.
//!
//! Subscribers may filter by kind, server and method ([`Filter`]); the filter runs on the
//! subscriber's side, so a filtered subscriber's lag count includes events it would have
//! skipped anyway.
//!
//! The UI's TypeScript types are generated from these Rust types (`ui/src/generated/events.ts`,
//! see [`typescript`]); they are never written by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};
use switchboard_store::{HandshakeRecord, TraceRecord};
use switchboard_transport::{FrameEvent, FrameSink, UpstreamEvent};
use tokio::sync::broadcast;
use ts_rs::TS;

use crate::decision::Decision;
use crate::schema::Quarantined;

mod diff;
pub mod flow;
mod subscription;
pub mod typescript;

pub use self::diff::CatalogDiff;
pub use self::subscription::{Filter, FrameSubscription, Subscription};

/// Events kept for a subscriber that falls behind, by default.
pub const DEFAULT_CAPACITY: usize = 4096;

/// One observable change.
#[derive(Debug, Clone, Serialize, TS)]
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
    /// One step of a version negotiation (a `server/discover` or `initialize` sent, its answer,
    /// a fallback), so a handshake can be drawn as a sequence.
    Negotiation {
        /// Server name.
        server: String,
        /// `upstream` (router → server) or `downstream` (client → router).
        leg: String,
        /// What happened (`discover`, `initialize`, `fallback`, `answer`, `failed`).
        step: String,
        /// Protocol versions offered at this step.
        offered: Vec<String>,
        /// The version chosen, when this step chose one.
        chosen: Option<String>,
        /// A one-line detail (an error, the reason for a fallback).
        detail: Option<String>,
        /// Unix milliseconds.
        at_ms: i64,
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
    /// A server's catalog differs from its previous listing.
    CatalogChanged {
        /// Server name.
        server: String,
        /// What differs.
        diff: CatalogDiff,
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
    /// One JSON-RPC message on one leg (client ↔ router or router ↔ upstream).
    Frame {
        /// The frame.
        frame: Box<FrameEvent>,
    },
    /// A downstream client's request to the federated endpoint finished.
    Trace {
        /// The record as stored.
        record: Box<TraceRecord>,
    },
    /// The gateway sent a change notification to its downstream listeners.
    Notification {
        /// The notification's method (`notifications/tools/list_changed`, …).
        method: String,
        /// The resource, for `notifications/resources/updated`.
        uri: Option<String>,
        /// Listeners it reached.
        listeners: usize,
        /// Unix milliseconds.
        at_ms: i64,
    },
    /// A node of a flow run started, progressed, is being retried or settled (see [`flow`]).
    FlowProgress {
        /// Run id.
        run_id: String,
        /// Node id.
        node: String,
        /// `running`, `progress`, `retrying`, `succeeded`, `failed`, `skipped`, `cancelled`.
        status: String,
        /// Progress so far, 0..=1, when the tool reported a total.
        progress: Option<f64>,
        /// Time spent on the node so far (all attempts and backoffs), in milliseconds, when the
        /// engine measured it (at `running`, 0, and when the node settled).
        elapsed_ms: Option<u64>,
        /// A line for the operator (the tool called, its progress message, the error).
        message: Option<String>,
        /// Unix milliseconds.
        at_ms: i64,
    },
    /// A flow run was admitted (`running`) or ended (`ok`, `failed`, `cancelled`). The end is
    /// published once the run's record is stored, so reading the run then finds it ended.
    FlowRun {
        /// Run id.
        run_id: String,
        /// The flow's name.
        flow: String,
        /// `running`, `ok`, `failed` or `cancelled`.
        status: String,
        /// Why it failed or was cancelled.
        error: Option<String>,
        /// Unix milliseconds.
        at_ms: i64,
    },
    /// A downstream 2025-11-25 session was opened or ended, or a session or 2026-07-28 caller
    /// was bound to an upstream (the gateway's session table).
    Session {
        /// `opened`, `ended` or `bound`.
        action: String,
        /// `session` (2025-11-25) or `caller` (2026-07-28).
        kind: String,
        /// The session's tag or the caller's key: never a full session id.
        id: String,
        /// The client's `clientInfo` name and version, when known.
        client: Option<String>,
        /// The downstream transport (`http`, `ws`, `stdio`).
        transport: String,
        /// For `bound`: the upstream server.
        server: Option<String>,
        /// For `bound`: the tag of the upstream session, when the upstream holds one.
        upstream_session: Option<String>,
        /// Unix milliseconds.
        at_ms: i64,
    },
    /// A routing decision (see [`crate::schedule`]): candidates, each layer's verdict, scores,
    /// the chosen upstream and why.
    Route {
        /// The decision.
        decision: Box<Decision>,
    },
    /// Periodic figures of one process: the router itself, or a server's stdio child (see
    /// [`crate::stats`]). Published every [`crate::RegistryConfig::stats_interval`], one event
    /// per process, only while somebody subscribes.
    ProcessStats {
        /// The server whose child process this is; `None` for the router process.
        server: Option<String>,
        /// Process id.
        pid: u32,
        /// Resident memory in bytes.
        rss_bytes: u64,
        /// CPU use since the previous sample of this process, in percent of one core (0 on a
        /// process's first sample).
        cpu_percent: f64,
        /// Events subscribers lost since the previous sample, all subscribers together (on the
        /// router's own sample only).
        events_lost: Option<u64>,
        /// Unix milliseconds.
        at_ms: i64,
    },
}

/// The kinds of [`Event`], for filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// [`Event::Handshake`].
    Handshake,
    /// [`Event::Negotiation`].
    Negotiation,
    /// [`Event::ServerState`].
    ServerState,
    /// [`Event::Catalog`].
    Catalog,
    /// [`Event::CatalogChanged`].
    CatalogChanged,
    /// [`Event::Upstream`].
    Upstream,
    /// [`Event::Frame`].
    Frame,
    /// [`Event::Trace`].
    Trace,
    /// [`Event::Notification`].
    Notification,
    /// [`Event::FlowProgress`].
    FlowProgress,
    /// [`Event::FlowRun`].
    FlowRun,
    /// [`Event::Session`].
    Session,
    /// [`Event::ProcessStats`].
    ProcessStats,
    /// [`Event::Route`].
    Route,
}

impl Event {
    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Handshake { .. } => EventKind::Handshake,
            Event::Negotiation { .. } => EventKind::Negotiation,
            Event::ServerState { .. } => EventKind::ServerState,
            Event::Catalog { .. } => EventKind::Catalog,
            Event::CatalogChanged { .. } => EventKind::CatalogChanged,
            Event::Upstream { .. } => EventKind::Upstream,
            Event::Frame { .. } => EventKind::Frame,
            Event::Trace { .. } => EventKind::Trace,
            Event::Notification { .. } => EventKind::Notification,
            Event::FlowProgress { .. } => EventKind::FlowProgress,
            Event::FlowRun { .. } => EventKind::FlowRun,
            Event::Session { .. } => EventKind::Session,
            Event::ProcessStats { .. } => EventKind::ProcessStats,
            Event::Route { .. } => EventKind::Route,
        }
    }

    /// The upstream server the event is about, when it is about one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Event::Handshake { server, .. }
            | Event::Negotiation { server, .. }
            | Event::ServerState { server, .. }
            | Event::Catalog { server, .. }
            | Event::CatalogChanged { server, .. }
            | Event::Upstream { server, .. } => Some(server),
            Event::ProcessStats { server, .. } | Event::Session { server, .. } => server.as_deref(),
            Event::Frame { frame } if frame.leg == "upstream" => Some(&frame.peer),
            Event::Trace { record } => record.upstream.as_deref(),
            Event::Route { decision } => decision.chosen.as_deref(),
            _ => None,
        }
    }

    /// The JSON-RPC method the event is about, when it is about one.
    pub fn method(&self) -> Option<&str> {
        match self {
            Event::Frame { frame } => frame.method.as_deref(),
            Event::Trace { record } => Some(&record.method),
            Event::Notification { method, .. } => Some(method),
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Inner {
    tx: broadcast::Sender<Arc<Event>>,
    /// Live [`Subscription`]s: the one atomic a publisher reads.
    listeners: AtomicUsize,
    /// Events delivered into the ring (only counted while somebody listens).
    published: AtomicU64,
    /// Events subscribers lost by lagging, all together.
    lost: AtomicU64,
}

/// The process's event stream. Cheap to clone; every clone is the same stream.
#[derive(Debug, Clone)]
pub struct EventBus {
    inner: Arc<Inner>,
}

impl EventBus {
    /// A bus keeping up to `capacity` events for slow subscribers.
    pub fn new(capacity: usize) -> Self {
        EventBus {
            inner: Arc::new(Inner {
                tx: broadcast::channel(capacity.max(1)).0,
                listeners: AtomicUsize::new(0),
                published: AtomicU64::new(0),
                lost: AtomicU64::new(0),
            }),
        }
    }

    /// `true` when at least one subscriber exists (one atomic load).
    #[inline]
    pub fn active(&self) -> bool {
        self.inner.listeners.load(Ordering::Relaxed) > 0
    }

    /// Publishes an event; never blocks; a no-op when nobody listens.
    #[inline]
    pub fn publish(&self, event: Event) {
        if self.active() {
            self.deliver(event);
        }
    }

    /// Publishes the event `make` builds, building it only when somebody listens.
    #[inline]
    pub fn publish_with(&self, make: impl FnOnce() -> Event) {
        if self.active() {
            self.deliver(make());
        }
    }

    #[cold]
    fn deliver(&self, event: Event) {
        self.inner.published.fetch_add(1, Ordering::Relaxed);
        let _ = self.inner.tx.send(Arc::new(event));
    }

    /// A subscriber to every event.
    pub fn subscribe(&self) -> Subscription {
        self.subscribe_filtered(Filter::default())
    }

    /// A subscriber to the events `filter` passes.
    pub fn subscribe_filtered(&self, filter: Filter) -> Subscription {
        self.inner.listeners.fetch_add(1, Ordering::Relaxed);
        Subscription { rx: self.inner.tx.subscribe(), filter, bus: self.inner.clone() }
    }

    /// Events delivered to subscribers so far (events published while nobody listened are
    /// not counted: they cost nothing and went nowhere).
    pub fn published(&self) -> u64 {
        self.inner.published.load(Ordering::Relaxed)
    }

    /// Events subscribers have lost by falling behind, all together.
    pub fn lost(&self) -> u64 {
        self.inner.lost.load(Ordering::Relaxed)
    }

    /// Subscribers now.
    pub fn subscribers(&self) -> usize {
        self.inner.listeners.load(Ordering::Relaxed)
    }

    /// A subscriber to frames only, handing out the frames themselves.
    pub fn subscribe_frames(&self) -> FrameSubscription {
        FrameSubscription(
            self.subscribe_filtered(Filter { kinds: [EventKind::Frame].into(), ..Filter::default() }),
        )
    }

    /// This bus as the sink of upstream and downstream frame taps.
    pub fn frame_sink(&self) -> Arc<dyn FrameSink> {
        Arc::new(self.clone())
    }
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(DEFAULT_CAPACITY)
    }
}

impl FrameSink for EventBus {
    fn active(&self) -> bool {
        EventBus::active(self)
    }

    fn publish(&self, frame: FrameEvent) {
        EventBus::publish(self, Event::Frame { frame: Box::new(frame) });
    }
}

/// Unix time in milliseconds: the one clock helper of the workspace.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_transport::{Direction, FrameBus};
    use switchboard_wire::Message;
    use tokio::sync::broadcast::error::RecvError;

    fn state(server: &str) -> Event {
        Event::ServerState {
            server_id: "id".into(),
            server: server.into(),
            from: "pending".into(),
            to: "ready".into(),
            reason: "ok".into(),
            at_ms: 0,
        }
    }

    #[tokio::test]
    async fn nobody_listening_builds_nothing_and_counts_nothing() {
        let bus = EventBus::new(8);
        let mut built = false;
        bus.publish_with(|| {
            built = true;
            state("a")
        });
        assert!(!built, "the event was built with no subscriber");
        assert_eq!(bus.published(), 0);
        let mut sub = bus.subscribe();
        bus.publish_with(|| state("a"));
        assert_eq!(bus.published(), 1);
        assert!(matches!(sub.recv().await.as_deref(), Ok(Event::ServerState { .. })));
        drop(sub);
        assert!(!bus.active());
    }

    #[tokio::test]
    async fn a_slow_subscriber_is_told_how_many_it_lost_and_slows_nobody() {
        let bus = EventBus::new(4);
        let mut slow = bus.subscribe();
        let mut fast = bus.subscribe();
        for i in 0..10 {
            bus.publish(state(&format!("s{i}")));
            // The fast one keeps up; publishing never waited for the slow one.
            assert_eq!(
                fast.recv().await.ok().and_then(|e| e.server().map(str::to_owned)),
                Some(format!("s{i}"))
            );
        }
        assert!(matches!(slow.recv().await, Err(RecvError::Lagged(6))));
        assert_eq!(slow.recv().await.ok().and_then(|e| e.server().map(str::to_owned)).as_deref(), Some("s6"));
        assert_eq!(bus.lost(), 6);
    }

    #[tokio::test]
    async fn filters_by_kind_server_and_method() {
        let bus = EventBus::new(64);
        let mut only_b = bus.subscribe_filtered(Filter {
            servers: ["b".to_owned()].into(),
            kinds: [EventKind::ServerState].into(),
            ..Filter::default()
        });
        let mut calls =
            bus.subscribe_filtered(Filter { methods: ["tools/call".to_owned()].into(), ..Filter::default() });
        let tap = switchboard_transport::Tap::new(bus.frame_sink(), "upstream", "b", "stdio");
        let list = Message::request(1i64, "tools/list", None);
        let call = Message::request(2i64, "tools/call", Some(serde_json::json!({"name": "x"})));
        tap.record(Direction::Out, &list, b"{}");
        tap.record(Direction::Out, &call, b"{}");
        bus.publish(state("a"));
        bus.publish(state("b"));
        let got = only_b.recv().await.expect("event");
        assert_eq!((got.kind(), got.server()), (EventKind::ServerState, Some("b")));
        let got = calls.recv().await.expect("event");
        assert_eq!(got.method(), Some("tools/call"));
        assert!(calls.try_recv().is_err(), "only the call passes the method filter");
    }

    #[tokio::test]
    async fn frames_carry_the_correlation_of_the_request_that_caused_them() {
        let bus = EventBus::new(16);
        let mut sub = bus.subscribe();
        let tap = switchboard_transport::Tap::new(bus.frame_sink(), "upstream", "b", "http");
        let call = Message::request(7i64, "tools/call", None);
        switchboard_transport::correlated(42, async { tap.record(Direction::Out, &call, b"{}") }).await;
        tap.record(Direction::Out, &call, b"{}");
        let Event::Frame { frame } = sub.recv().await.expect("frame").as_ref().clone() else {
            panic!("not a frame")
        };
        assert_eq!(frame.correlation, Some(42));
        let Event::Frame { frame } = sub.recv().await.expect("frame").as_ref().clone() else {
            panic!("not a frame")
        };
        assert_eq!(frame.correlation, None);
        // A standalone FrameBus (the probe command's) still works as a sink.
        let frames = FrameBus::new(4);
        let mut rx = frames.subscribe();
        frames.tap("upstream", "p", "stdio").record(Direction::In, &call, b"{}");
        assert_eq!(rx.recv().await.expect("frame").peer.as_ref(), "p");
    }
}
