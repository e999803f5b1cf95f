//! Change notifications for downstream clients: `list_changed` of the federated lists and
//! `resources/updated` of subscribed resources.
//!
//! A watcher follows the registry's events; whenever the ready servers' tools, prompts or
//! resources differ from what it saw last, it publishes the matching `list_changed`. Notes go
//! to every listener: 2026-07-28 clients on their `subscriptions/listen` streams (filtered
//! and tagged with the subscription id) and 2025-11-25 sessions on their `GET` stream, with
//! SSE event ids and a bounded replay buffer for `Last-Event-ID`. Each published note is
//! also an [`Event::Notification`] on the registry's event bus (once the notifier follows a
//! registry), naming how many listeners it reached.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::Value;
use switchboard_router::{Event, EventBus, Registry};
use switchboard_wire::{Message, method};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

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
    /// The bus notes are reported on, once [`Notifier::ensure_started`] ran.
    bus: OnceLock<EventBus>,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            tx: broadcast::channel(1024).0,
            ring: Mutex::new(VecDeque::new()),
            seq: AtomicU64::new(0),
            started: OnceLock::new(),
            bus: OnceLock::new(),
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
    let catalogs = crate::view::ready_catalogs(registry);
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
        let _ = self.inner.bus.set(registry.events().clone());
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

    /// Publishes a change to every listener, and reports it on the event bus.
    pub fn publish(&self, kind: Kind) {
        let seq = self.inner.seq.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(bus) = self.inner.bus.get() {
            bus.publish(Event::Notification {
                method: kind.method().to_owned(),
                uri: match &kind {
                    Kind::Updated(uri) => Some(uri.clone()),
                    _ => None,
                },
                listeners: self.inner.tx.receiver_count(),
                at_ms: switchboard_router::events::now_ms(),
            });
        }
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

/// Most subscribers (2025-11-25 sessions and `subscriptions/listen` streams) that hold
/// resource subscriptions on one instance at once.
pub const MAX_SUBSCRIBERS: usize = 10_000;

/// Most resource URIs one session or listen stream subscribes to (also the longest
/// `resourceSubscriptions` list a listen request may carry).
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 100;

/// Why a subscription was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// [`MAX_SUBSCRIBERS`] sessions or streams hold subscriptions already.
    #[error(
        "too many sessions and listen streams hold resource subscriptions on this router instance (at most {MAX_SUBSCRIBERS}); try again later"
    )]
    TooManySubscribers,
    /// The subscriber holds [`MAX_RESOURCE_SUBSCRIPTIONS`] already.
    #[error("a session or listen stream may subscribe to at most {MAX_RESOURCE_SUBSCRIPTIONS} resources")]
    TooManyResources,
}

/// The watcher of one URI that a subscription asks its caller to start: it follows the
/// upstream's `resources/updated` of that URI until `stop` fires (nobody listens any more).
#[derive(Debug, Clone)]
pub struct WatchStart {
    /// The URI to watch.
    pub uri: String,
    /// Fires when the last subscriber of the URI leaves.
    pub stop: CancellationToken,
    /// Identifies this watcher, for [`Subscriptions::watch_ended`].
    pub generation: u64,
}

#[derive(Default)]
struct SubState {
    /// URIs per subscriber (a session id, or `listen:N`).
    by_subscriber: HashMap<String, Vec<String>>,
    /// The one running watcher per URI.
    watchers: HashMap<String, (u64, CancellationToken)>,
    generation: u64,
}

impl SubState {
    fn anyone(&self, uri: &str) -> bool {
        self.by_subscriber.values().any(|uris| uris.iter().any(|u| u == uri))
    }

    /// Stops the watcher of `uri` when nobody subscribes to it any more.
    fn release(&mut self, uri: &str) {
        if !self.anyone(uri)
            && let Some((_, stop)) = self.watchers.remove(uri)
        {
            stop.cancel();
        }
    }
}

/// Resource subscriptions of the sessions and listen streams on this instance, and the one
/// upstream watcher per subscribed URI: a change reaches the router once, and each
/// subscriber once.
#[derive(Clone, Default)]
pub struct Subscriptions {
    state: Arc<Mutex<SubState>>,
}

impl std::fmt::Debug for Subscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriptions").field("watched", &self.watched()).finish()
    }
}

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, SubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Subscribes `subscriber` to `uri`. `Some` when the URI has no watcher yet: the caller
    /// starts it (and reports [`Subscriptions::watch_ended`] if it cannot run).
    pub fn add(&self, subscriber: &str, uri: &str) -> Result<Option<WatchStart>, SubscribeError> {
        let mut s = self.lock();
        let known = s.by_subscriber.contains_key(subscriber);
        if !known && s.by_subscriber.len() >= MAX_SUBSCRIBERS {
            return Err(SubscribeError::TooManySubscribers);
        }
        let uris = s.by_subscriber.entry(subscriber.to_owned()).or_default();
        if !uris.iter().any(|u| u == uri) {
            if uris.len() >= MAX_RESOURCE_SUBSCRIPTIONS {
                if uris.is_empty() {
                    s.by_subscriber.remove(subscriber);
                }
                return Err(SubscribeError::TooManyResources);
            }
            uris.push(uri.to_owned());
        }
        if s.watchers.contains_key(uri) {
            return Ok(None);
        }
        s.generation += 1;
        let generation = s.generation;
        let stop = CancellationToken::new();
        s.watchers.insert(uri.to_owned(), (generation, stop.clone()));
        Ok(Some(WatchStart { uri: uri.to_owned(), stop, generation }))
    }

    /// Removes a subscription; `true` when it existed. The URI's watcher stops when this was
    /// its last subscriber.
    pub fn remove(&self, subscriber: &str, uri: &str) -> bool {
        let mut s = self.lock();
        let Some(uris) = s.by_subscriber.get_mut(subscriber) else { return false };
        let before = uris.len();
        uris.retain(|u| u != uri);
        let removed = before != uris.len();
        if uris.is_empty() {
            s.by_subscriber.remove(subscriber);
        }
        s.release(uri);
        removed
    }

    /// Whether `subscriber` subscribed to `uri`.
    pub fn has(&self, subscriber: &str, uri: &str) -> bool {
        self.lock().by_subscriber.get(subscriber).is_some_and(|uris| uris.iter().any(|u| u == uri))
    }

    /// Whether anyone subscribed to `uri`.
    pub fn anyone(&self, uri: &str) -> bool {
        self.lock().anyone(uri)
    }

    /// Forgets a subscriber (its session ended or its stream closed), stopping the watchers
    /// nobody else needs.
    pub fn end_session(&self, subscriber: &str) {
        let mut s = self.lock();
        let Some(uris) = s.by_subscriber.remove(subscriber) else { return };
        for uri in uris {
            s.release(&uri);
        }
    }

    /// A watcher ended on its own (the upstream refused or closed): the next subscription
    /// of its URI starts a new one.
    pub fn watch_ended(&self, uri: &str, generation: u64) {
        let mut s = self.lock();
        if s.watchers.get(uri).is_some_and(|(g, _)| *g == generation) {
            s.watchers.remove(uri);
        }
    }

    /// The URIs watched now.
    pub fn watched(&self) -> Vec<String> {
        let mut v: Vec<String> = self.lock().watchers.keys().cloned().collect();
        v.sort();
        v
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
        let watch = s.add("a", "test://x").unwrap().expect("the first subscriber starts the watcher");
        assert!(s.add("a", "test://x").unwrap().is_none());
        assert!(s.add("b", "test://x").unwrap().is_none(), "one watcher per URI");
        assert!(s.has("a", "test://x"));
        assert!(!s.has("c", "test://x"));
        assert!(s.anyone("test://x"));
        assert!(s.remove("a", "test://x"));
        assert!(!watch.stop.is_cancelled(), "b still listens");
        s.end_session("b");
        assert!(!s.anyone("test://x"));
        assert!(watch.stop.is_cancelled(), "nobody listens: the watcher ends");
        assert!(s.watched().is_empty());
    }

    #[test]
    fn subscriptions_are_bounded() {
        let s = Subscriptions::default();
        for i in 0..MAX_RESOURCE_SUBSCRIPTIONS {
            s.add("a", &format!("test://{i}")).unwrap();
        }
        assert!(matches!(s.add("a", "test://one-more"), Err(SubscribeError::TooManyResources)));
        assert!(s.add("a", "test://0").is_ok(), "an existing subscription is no new one");
        for i in 1..MAX_SUBSCRIBERS {
            s.add(&format!("s{i}"), "test://0").unwrap();
        }
        assert!(matches!(s.add("late", "test://0"), Err(SubscribeError::TooManySubscribers)));
        s.end_session("s1");
        assert!(s.add("late", "test://0").is_ok(), "a freed place can be taken");
    }

    #[test]
    fn a_failed_watcher_is_replaced_by_the_next_subscription() {
        let s = Subscriptions::default();
        let w = s.add("a", "test://x").unwrap().unwrap();
        s.watch_ended("test://x", w.generation);
        assert!(s.add("b", "test://x").unwrap().is_some());
    }
}
