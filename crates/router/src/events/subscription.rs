//! Subscribers: a [`Filter`] says which events one wants, a [`Subscription`] receives them (and
//! counts what it lost by falling behind), a [`FrameSubscription`] hands out frames only.
//!
//! The filter runs on the subscriber's side, so publishing stays one atomic load when nobody
//! listens and never depends on who does.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};
use switchboard_transport::FrameEvent;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use ts_rs::TS;

#[cfg(doc)]
use super::EventBus;
use super::{Event, EventKind, Inner};

/// Which events a subscriber wants. Empty sets mean "any".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
pub struct Filter {
    /// Event kinds.
    pub kinds: BTreeSet<EventKind>,
    /// Upstream server names; events about no server pass only when this is empty.
    pub servers: BTreeSet<String>,
    /// JSON-RPC methods; events about no method pass only when this is empty.
    pub methods: BTreeSet<String>,
}

impl Filter {
    /// Whether `event` passes.
    pub fn matches(&self, event: &Event) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&event.kind()))
            && (self.servers.is_empty() || event.server().is_some_and(|s| self.servers.contains(s)))
            && (self.methods.is_empty() || event.method().is_some_and(|m| self.methods.contains(m)))
    }
}

/// One subscriber. Dropping it unsubscribes.
#[derive(Debug)]
pub struct Subscription {
    pub(super) rx: broadcast::Receiver<Arc<Event>>,
    pub(super) filter: Filter,
    pub(super) bus: Arc<Inner>,
}

impl Subscription {
    /// The next event that passes the filter. `Err(RecvError::Lagged(n))` says `n` events were
    /// lost because this subscriber fell behind (it then continues with the oldest kept one);
    /// `Err(RecvError::Closed)` says the bus is gone.
    pub async fn recv(&mut self) -> Result<Arc<Event>, RecvError> {
        loop {
            match self.rx.recv().await {
                Ok(e) if self.filter.matches(&e) => return Ok(e),
                Ok(_) => continue,
                Err(RecvError::Lagged(n)) => {
                    self.bus.lost.fetch_add(n, Ordering::Relaxed);
                    return Err(RecvError::Lagged(n));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The next passing event already queued, without waiting (`Err(TryRecvError::Empty)` when
    /// none is). Lag is reported like [`Subscription::recv`] does.
    pub fn try_recv(&mut self) -> Result<Arc<Event>, broadcast::error::TryRecvError> {
        use broadcast::error::TryRecvError;
        loop {
            match self.rx.try_recv() {
                Ok(e) if self.filter.matches(&e) => return Ok(e),
                Ok(_) => continue,
                Err(TryRecvError::Lagged(n)) => {
                    self.bus.lost.fetch_add(n, Ordering::Relaxed);
                    return Err(TryRecvError::Lagged(n));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// This subscriber's filter.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.bus.listeners.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A [`Subscription`] to frames only (see [`EventBus::subscribe_frames`]).
#[derive(Debug)]
pub struct FrameSubscription(pub(super) Subscription);

impl FrameSubscription {
    /// The next frame; errors as [`Subscription::recv`].
    pub async fn recv(&mut self) -> Result<FrameEvent, RecvError> {
        loop {
            if let Event::Frame { frame } = self.0.recv().await?.as_ref() {
                return Ok((**frame).clone());
            }
        }
    }
}
