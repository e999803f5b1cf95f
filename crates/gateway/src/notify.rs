//! Change notifications for downstream clients: `list_changed` of the federated lists and
//! `resources/updated` of subscribed resources.
//!
//! A watcher follows the registry's events; whenever the ready servers' tools, prompts or
//! resources differ from what it saw last, it publishes the matching `list_changed`. Notes go
//! to every listener: 2026-07-28 clients on their `subscriptions/listen` streams (filtered
//! and tagged with the subscription id) and 2025-11-25 sessions on their `GET` stream, with
//! SSE event ids and a bounded replay buffer for `Last-Event-ID`.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::Value;
use switchboard_router::{Event, Registry};
use switchboard_wire::{Message, method};
use tokio::sync::broadcast;

/// What a note is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// The federated tool list changed.
    Tools,
    /// The federated prompt list changed.
    Prompts,
    /// The federated resource list changed.
    Resources,
    /// A resource changed.
    Updated(String),
}

impl Kind {
    /// The notification's method.
    pub fn method(&self) -> &'static str {
        match self {
            Kind::Tools => method::NOTIFICATION_TOOLS_LIST_CHANGED,
            Kind::Prompts => method::NOTIFICATION_PROMPTS_LIST_CHANGED,
            Kind::Resources => method::NOTIFICATION_RESOURCES_LIST_CHANGED,
            Kind::Updated(_) => method::NOTIFICATION_RESOURCES_UPDATED,
        }
    }

    /// The notification, untagged.
    pub fn message(&self) -> Message {
        match self {
            Kind::Updated(uri) => {
                Message::notification(self.method(), Some(serde_json::json!({ "uri": uri })))
            }
            _ => Message::notification(self.method(), Some(serde_json::json!({}))),
        }
    }
}

/// One published change.
#[derive(Debug, Clone)]
pub struct Note {
    /// Increasing on this instance; the SSE event id of legacy GET streams.
    pub seq: u64,
    /// What changed.
    pub kind: Kind,
}

/// Notes kept for `Last-Event-ID` resumption.
const REPLAY: usize = 256;

/// The per-instance change feed.
#[derive(Clone, Default)]
pub struct Notifier {
    inner: Arc<Inner>,
}

struct Inner {
    tx: broadcast::Sender<Arc<Note>>,
    ring: Mutex<VecDeque<Arc<Note>>>,
    seq: AtomicU64,
    started: OnceLock<()>,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            tx: broadcast::channel(1024).0,
            ring: Mutex::new(VecDeque::new()),
            seq: AtomicU64::new(0),
            started: OnceLock::new(),
        }
    }
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier").field("seq", &self.inner.seq.load(Ordering::Relaxed)).finish()
    }
}

/// A signature per kind of the ready servers' lists.
fn signatures(registry: &Registry) -> [u64; 3] {
    let mut sigs = [0u64; 3];
    let catalogs = crate::endpoint::ready_catalogs(registry);
    for (i, sig) in sigs.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for (name, c) in &catalogs {
            name.hash(&mut h);
            let items: Vec<&Value> = match i {
                0 => c.tools.iter().map(|t| &t.raw).collect(),
                1 => c.prompts.iter().collect(),
                _ => c.resources.iter().chain(c.resource_templates.iter()).collect(),
            };
            for item in items {
                item.to_string().hash(&mut h);
            }
        }
        *sig = h.finish();
    }
    sigs
}

impl Notifier {
    /// Starts following `registry` (once per notifier).
    pub fn ensure_started(&self, registry: &Registry) {
        if self.inner.started.set(()).is_err() {
            return;
        }
        let me = self.clone();
        let registry = registry.clone();
        let mut rx = registry.events().subscribe();
        tokio::spawn(async move {
            let mut last = signatures(&registry);
            loop {
                match rx.recv().await {
                    Ok(e) => {
                        if !matches!(e.as_ref(), Event::Catalog { .. } | Event::ServerState { .. }) {
                            continue;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
                let now = signatures(&registry);
                for (i, kind) in [Kind::Tools, Kind::Prompts, Kind::Resources].into_iter().enumerate() {
                    if now.get(i) != last.get(i) {
                        me.publish(kind);
                    }
                }
                last = now;
            }
        });
    }

    /// Publishes a change to every listener.
    pub fn publish(&self, kind: Kind) {
        let seq = self.inner.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let note = Arc::new(Note { seq, kind });
        {
            let mut ring = self.inner.ring.lock().unwrap_or_else(PoisonError::into_inner);
            if ring.len() >= REPLAY {
                ring.pop_front();
            }
            ring.push_back(note.clone());
        }
        let _ = self.inner.tx.send(note);
    }

    /// A receiver of notes published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Note>> {
        self.inner.tx.subscribe()
    }

    /// Notes after `seq` still in the replay buffer, and whether all of them were.
    pub fn since(&self, seq: u64) -> (Vec<Arc<Note>>, bool) {
        let ring = self.inner.ring.lock().unwrap_or_else(PoisonError::into_inner);
        let complete = ring.front().is_none_or(|n| n.seq <= seq.saturating_add(1));
        (ring.iter().filter(|n| n.seq > seq).cloned().collect(), complete)
    }
}

/// Resource URIs each legacy session subscribed to on this instance.
#[derive(Debug, Clone, Default)]
pub struct Subscriptions {
    by_session: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

impl Subscriptions {
    /// Adds a subscription; `true` when it is new.
    pub fn add(&self, sid: &str, uri: &str) -> bool {
        let mut m = self.by_session.lock().unwrap_or_else(PoisonError::into_inner);
        let uris = m.entry(sid.to_owned()).or_default();
        if uris.iter().any(|u| u == uri) {
            return false;
        }
        uris.push(uri.to_owned());
        true
    }

    /// Removes a subscription; `true` when it existed.
    pub fn remove(&self, sid: &str, uri: &str) -> bool {
        let mut m = self.by_session.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(uris) = m.get_mut(sid) else { return false };
        let before = uris.len();
        uris.retain(|u| u != uri);
        before != uris.len()
    }

    /// Whether the session subscribed to `uri`.
    pub fn has(&self, sid: &str, uri: &str) -> bool {
        let m = self.by_session.lock().unwrap_or_else(PoisonError::into_inner);
        m.get(sid).is_some_and(|uris| uris.iter().any(|u| u == uri))
    }

    /// Whether any session subscribed to `uri`.
    pub fn anyone(&self, uri: &str) -> bool {
        let m = self.by_session.lock().unwrap_or_else(PoisonError::into_inner);
        m.values().any(|uris| uris.iter().any(|u| u == uri))
    }

    /// Forgets a session.
    pub fn end_session(&self, sid: &str) {
        self.by_session.lock().unwrap_or_else(PoisonError::into_inner).remove(sid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_buffer_is_bounded_and_ordered() {
        let n = Notifier::default();
        for _ in 0..(REPLAY + 10) {
            n.publish(Kind::Tools);
        }
        let (notes, complete) = n.since(0);
        assert_eq!(notes.len(), REPLAY);
        assert!(!complete, "the first notes fell out of the buffer");
        let (notes, complete) = n.since(260);
        assert!(complete);
        assert_eq!(notes.first().map(|n| n.seq), Some(261));
    }

    #[test]
    fn subscriptions_per_session() {
        let s = Subscriptions::default();
        assert!(s.add("a", "test://x"));
        assert!(!s.add("a", "test://x"));
        assert!(s.has("a", "test://x"));
        assert!(!s.has("b", "test://x"));
        assert!(s.anyone("test://x"));
        assert!(s.remove("a", "test://x"));
        assert!(!s.anyone("test://x"));
    }
}
