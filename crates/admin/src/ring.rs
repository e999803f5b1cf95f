//! The frame ring: the newest frames of both legs, kept in memory for `/api/frames`, its JSON
//! lines export and the event WebSocket's snapshot.
//!
//! **When it records.** Only while at least one event viewer is connected
//! ([`FrameRing::watch`] returns the guard a viewer holds). The bus publishes frames only while
//! somebody subscribes, and a recorder of its own would keep it active — frames built and
//! copied on every call — when nobody looks. While a viewer is connected the bus is active
//! anyway, so the recorder costs one more subscriber then, and nothing otherwise. Frames
//! recorded stay readable after the last viewer leaves (`docs/decisions.md`, "When the frame
//! ring records").
//!
//! **Bounded** both by count and by the bytes of the frames' bodies: the oldest frames go
//! first. The recorder never blocks the bus: if it falls behind, the frames it lost are
//! counted ([`FrameRing::lost`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use switchboard_router::{Event, EventBus, EventKind, Filter};
use switchboard_transport::FrameEvent;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// Frames kept by default.
pub const DEFAULT_FRAMES: usize = 10_000;

/// Body bytes kept by default (all frames together).
pub const DEFAULT_BYTES: usize = 64 * 1024 * 1024;

/// Which frames a reader wants; `None` means any.
#[derive(Debug, Clone, Default)]
pub struct FrameQuery {
    /// `upstream` or `downstream`.
    pub leg: Option<String>,
    /// The peer: the server (upstream leg) or the client label (downstream leg).
    pub server: Option<String>,
    /// The JSON-RPC method.
    pub method: Option<String>,
}

impl FrameQuery {
    /// Whether `frame` passes.
    pub fn matches(&self, frame: &FrameEvent) -> bool {
        self.leg.as_deref().is_none_or(|l| l == frame.leg)
            && self.server.as_deref().is_none_or(|s| s == frame.peer.as_ref())
            && self.method.as_deref().is_none_or(|m| frame.method.as_deref() == Some(m))
    }
}

#[derive(Debug, Default)]
struct Kept {
    frames: VecDeque<Arc<Event>>,
    bytes: usize,
}

#[derive(Debug, Default)]
struct Recording {
    viewers: usize,
    stop: Option<CancellationToken>,
}

#[derive(Debug)]
struct Inner {
    max_frames: usize,
    max_bytes: usize,
    kept: Mutex<Kept>,
    recording: Mutex<Recording>,
    lost: AtomicU64,
}

/// The ring (see the module docs). Cheap to clone.
#[derive(Debug, Clone)]
pub struct FrameRing {
    inner: Arc<Inner>,
}

impl Default for FrameRing {
    fn default() -> Self {
        FrameRing::new(DEFAULT_FRAMES, DEFAULT_BYTES)
    }
}

/// Held by a connected viewer; the ring records while one exists.
#[derive(Debug)]
pub struct Watching {
    ring: FrameRing,
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut r = self.ring.inner.recording.lock().unwrap_or_else(PoisonError::into_inner);
        r.viewers = r.viewers.saturating_sub(1);
        if r.viewers == 0
            && let Some(stop) = r.stop.take()
        {
            stop.cancel();
        }
    }
}

fn frame_of(event: &Event) -> Option<&FrameEvent> {
    match event {
        Event::Frame { frame } => Some(frame),
        _ => None,
    }
}

impl FrameRing {
    /// A ring keeping at most `max_frames` frames and `max_bytes` of their bodies.
    pub fn new(max_frames: usize, max_bytes: usize) -> FrameRing {
        FrameRing {
            inner: Arc::new(Inner {
                max_frames: max_frames.max(1),
                max_bytes: max_bytes.max(1),
                kept: Mutex::default(),
                recording: Mutex::default(),
                lost: AtomicU64::new(0),
            }),
        }
    }

    /// A viewer connected: recording runs (a recorder task subscribed to `bus`'s frames) until
    /// the last guard is dropped.
    pub fn watch(&self, bus: &EventBus) -> Watching {
        let mut r = self.inner.recording.lock().unwrap_or_else(PoisonError::into_inner);
        r.viewers += 1;
        if r.stop.is_none() {
            let stop = CancellationToken::new();
            let sub =
                bus.subscribe_filtered(Filter { kinds: [EventKind::Frame].into(), ..Filter::default() });
            tokio::spawn(record(self.clone(), sub, stop.clone()));
            r.stop = Some(stop);
        }
        Watching { ring: self.clone() }
    }

    /// Whether it records now.
    pub fn recording(&self) -> bool {
        self.inner.recording.lock().unwrap_or_else(PoisonError::into_inner).stop.is_some()
    }

    /// Keeps `event` (a frame), dropping the oldest ones over the bounds.
    pub fn push(&self, event: Arc<Event>) {
        let Some(frame) = frame_of(&event) else { return };
        let size = frame.body.len();
        let mut kept = self.inner.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.bytes += size;
        kept.frames.push_back(event);
        while kept.frames.len() > self.inner.max_frames
            || (kept.bytes > self.inner.max_bytes && kept.frames.len() > 1)
        {
            if let Some(old) = kept.frames.pop_front() {
                kept.bytes -= frame_of(&old).map_or(0, |f| f.body.len());
            }
        }
    }

    /// The newest `limit` frames passing `query`, oldest first.
    pub fn frames(&self, query: &FrameQuery, limit: usize) -> Vec<Arc<Event>> {
        let kept = self.inner.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<Arc<Event>> = kept
            .frames
            .iter()
            .rev()
            .filter(|e| frame_of(e).is_some_and(|f| query.matches(f)))
            .take(limit)
            .cloned()
            .collect();
        out.reverse();
        out
    }

    /// Frames kept now.
    pub fn len(&self) -> usize {
        self.inner.kept.lock().unwrap_or_else(PoisonError::into_inner).frames.len()
    }

    /// `true` when no frame is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frames the recorder lost by falling behind the bus.
    pub fn lost(&self) -> u64 {
        self.inner.lost.load(Ordering::Relaxed)
    }
}

async fn record(ring: FrameRing, mut sub: switchboard_router::Subscription, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            got = sub.recv() => match got {
                Ok(event) => ring.push(event),
                Err(RecvError::Lagged(n)) => { ring.inner.lost.fetch_add(n, Ordering::Relaxed); }
                Err(RecvError::Closed) => return,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_transport::{Direction, Tap};
    use switchboard_wire::Message;

    #[tokio::test]
    async fn records_only_while_watched_and_keeps_the_newest_within_bounds() {
        let bus = EventBus::new(64);
        let ring = FrameRing::new(3, 1 << 20);
        let tap = Tap::new(bus.frame_sink(), "upstream", "a", "stdio");
        let msg = |i: i64| Message::request(i, "tools/call", None);
        tap.record(Direction::Out, &msg(1), b"{}");
        assert!(!bus.active(), "the ring alone keeps the bus idle");
        let watching = ring.watch(&bus);
        assert!(bus.active() && ring.recording());
        for i in 2..=6 {
            tap.record(Direction::Out, &msg(i), b"{}");
        }
        let ids = || -> Vec<serde_json::Value> {
            ring.frames(&FrameQuery::default(), 10)
                .iter()
                .filter_map(|e| serde_json::to_value(frame_of(e)?.id.as_ref()?).ok())
                .collect()
        };
        while ids().last() != Some(&serde_json::json!(6)) {
            tokio::task::yield_now().await;
        }
        assert_eq!(ids(), [4, 5, 6].map(|i| serde_json::json!(i)));
        drop(watching);
        tokio::task::yield_now().await;
        assert!(!ring.recording());
        assert_eq!(ring.len(), 3, "what was recorded stays readable");
        let other = FrameQuery { server: Some("b".into()), ..FrameQuery::default() };
        assert!(ring.frames(&other, 10).is_empty());
    }
}
