//! `GET /api/events`: the live event WebSocket.
//!
//! A viewer connects (token in `Authorization` or the subprotocol `bearer.<token>` next to
//! [`EVENTS_PROTOCOL`], which the server selects), optionally with query filters
//! (`kinds=`, `servers=`, `methods=`, comma-separated). It receives:
//!
//! 1. one [`ViewerMessage::Snapshot`] first — servers, recent handshakes, traces, frames (from
//!    the ring), runs, the overview — built *after* subscribing, so no event falls between the
//!    snapshot and the stream;
//! 2. [`ViewerMessage::Events`] batches: at most [`BATCH_MAX`] events, gathered for at most
//!    [`BATCH_WINDOW`] after the first;
//! 3. [`ViewerMessage::Lagged`] when it fell behind: the number of events dropped for it.
//!
//! **Back-pressure.** The viewer's queue is its bus subscription, a bounded broadcast ring:
//! publishing never waits for it. While the socket is slow (or the viewer stops reading) this
//! task waits on the socket, not the bus; the bus overwrites what the viewer has not taken, and
//! when the socket moves again the viewer is told how many it lost. The data plane never sees
//! a viewer.
//!
//! The viewer may replace its filter at any time with
//! `{"type":"filter","kinds":[…],"servers":[…],"methods":[…]}`; filters run here, per viewer.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_router::{Event, EventKind, Filter};
use switchboard_store::{HandshakeRecord, TraceRecord};
use switchboard_transport::FrameEvent;
use tokio::sync::broadcast::error::RecvError;
use ts_rs::TS;

use crate::AdminState;
pub use crate::access::EVENTS_PROTOCOL;
use crate::api::overview::Overview;
use crate::api::servers::ServerView;
use crate::error::AdminError;
use crate::ring::FrameQuery;

/// Most events in one batch.
pub const BATCH_MAX: usize = 512;

/// Frame bytes after which a batch is sent even if [`BATCH_MAX`] is not reached (a WebSocket
/// message stays well under what clients accept).
pub const BATCH_BYTES: usize = 1024 * 1024;

/// How long a batch gathers events after its first.
pub const BATCH_WINDOW: Duration = Duration::from_millis(50);

/// Handshakes, traces, frames and runs a snapshot carries, each at most.
pub const SNAPSHOT_ITEMS: usize = 200;

/// Largest message a viewer may send (filters are small).
pub const MAX_VIEWER_MESSAGE: usize = 64 * 1024;

/// What the server sends a viewer.
#[derive(Debug, Clone, Serialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ViewerMessage {
    /// Current state, once, first.
    Snapshot(Box<Snapshot>),
    /// Events in publication order.
    Events {
        /// The events.
        events: Vec<Arc<Event>>,
    },
    /// The viewer fell behind and `lost` events were dropped for it.
    Lagged {
        /// Dropped since the previous report.
        lost: u64,
        /// Dropped for this viewer since it connected.
        total_lost: u64,
    },
    /// The viewer's new filter is in force: every event after this passed it.
    Filtered {
        /// The filter now applied.
        filter: Filter,
    },
    /// A message from the viewer was refused (the connection stays open).
    Error {
        /// Why.
        error: String,
    },
}

/// The state a new viewer starts from.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Snapshot {
    /// Every server.
    pub servers: Vec<ServerView>,
    /// The newest handshakes, newest first.
    pub handshakes: Vec<HandshakeRecord>,
    /// The newest traces, newest first.
    pub traces: Vec<TraceRecord>,
    /// The newest frames the ring kept that pass the viewer's filter, oldest first.
    pub frames: Vec<FrameEvent>,
    /// The newest stored flow runs, newest first (the store's run rows).
    pub runs: Vec<Value>,
    /// Downstream sessions and callers (`GET /api/sessions`); `null` when the app gave no source.
    pub sessions: Option<Value>,
    /// The overview.
    pub overview: Overview,
}

/// What a viewer may send.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ViewerCommand {
    /// Replace the viewer's filter (empty lists mean "any").
    Filter {
        /// Event kinds.
        #[serde(default)]
        kinds: BTreeSet<EventKind>,
        /// Server names.
        #[serde(default)]
        servers: BTreeSet<String>,
        /// JSON-RPC methods.
        #[serde(default)]
        methods: BTreeSet<String>,
    },
}

/// The query of `GET /api/events`: comma-separated lists.
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Event `type`s (`frame,trace`).
    #[ts(optional)]
    pub kinds: Option<String>,
    /// Server names.
    #[ts(optional)]
    pub servers: Option<String>,
    /// JSON-RPC methods.
    #[ts(optional)]
    pub methods: Option<String>,
}

fn split(list: &Option<String>) -> BTreeSet<String> {
    list.iter()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl EventsQuery {
    /// The filter it asks for.
    ///
    /// # Errors
    /// [`AdminError::BadRequest`] naming an unknown kind.
    pub fn filter(&self) -> Result<Filter, AdminError> {
        let kinds = split(&self.kinds)
            .into_iter()
            .map(|k| {
                serde_json::from_value::<EventKind>(Value::String(k.clone()))
                    .map_err(|_| AdminError::BadRequest(format!("kinds: {k:?} is not an event kind")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Filter { kinds, servers: split(&self.servers), methods: split(&self.methods) })
    }
}

/// The event route, without the guard.
pub fn routes(state: AdminState) -> Router {
    Router::new().route("/api/events", get(upgrade)).with_state(state)
}

async fn upgrade(
    State(state): State<AdminState>,
    Query(q): Query<EventsQuery>,
    ws: WebSocketUpgrade,
) -> Result<Response, AdminError> {
    let filter = q.filter()?;
    Ok(ws
        .protocols([EVENTS_PROTOCOL])
        .max_message_size(MAX_VIEWER_MESSAGE)
        .on_upgrade(move |socket| viewer(state, socket, filter))
        .into_response())
}

/// The snapshot a viewer with `filter` starts from.
pub async fn snapshot(state: &AdminState, filter: &Filter) -> Snapshot {
    let cfg = state.config();
    let n = SNAPSHOT_ITEMS as u32;
    let handshakes = cfg.store.handshakes(None, n).await.unwrap_or_default();
    let traces = cfg.store.traces(n).await.unwrap_or_default();
    let runs = cfg
        .store
        .runs(n)
        .await
        .unwrap_or_default()
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect();
    let frames = state
        .ring()
        .frames(&FrameQuery::default(), usize::MAX)
        .iter()
        .rev()
        .filter(|e| filter.matches(e))
        .take(SNAPSHOT_ITEMS)
        .filter_map(|e| match e.as_ref() {
            Event::Frame { frame } => Some((**frame).clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Snapshot {
        servers: crate::api::servers::views(state),
        handshakes,
        traces,
        frames,
        runs,
        sessions: cfg.sessions.as_ref().map(|read| read()),
        overview: crate::api::overview::overview(state).await,
    }
}

type Sink = futures::stream::SplitSink<WebSocket, Message>;

async fn send(tx: &mut Sink, msg: &ViewerMessage) -> bool {
    match serde_json::to_string(msg) {
        Ok(text) => tx.send(Message::Text(text.into())).await.is_ok(),
        Err(e) => {
            tracing::warn!(error = %e, "an event viewer message could not be serialised");
            true
        }
    }
}

/// What gathering a batch ended with, besides the batch.
#[derive(Default)]
struct Gathered {
    events: Vec<Arc<Event>>,
    lost: u64,
    closed: bool,
}

/// About how many bytes an event adds to a batch.
fn weight(e: &Event) -> usize {
    match e {
        Event::Frame { frame } => frame.body.len() + 256,
        _ => 256,
    }
}

/// Gathers the events after `first` for at most [`BATCH_WINDOW`] or [`BATCH_MAX`] events.
async fn gather(sub: &mut switchboard_router::Subscription, filter: &Filter, first: Arc<Event>) -> Gathered {
    let mut g = Gathered::default();
    let mut bytes = 0;
    if filter.matches(&first) {
        bytes += weight(&first);
        g.events.push(first);
    }
    let end = tokio::time::Instant::now() + BATCH_WINDOW;
    while g.events.len() < BATCH_MAX && bytes < BATCH_BYTES {
        match tokio::time::timeout_at(end, sub.recv()).await {
            Err(_) => break,
            Ok(Ok(e)) if filter.matches(&e) => {
                bytes += weight(&e);
                g.events.push(e);
            }
            Ok(Ok(_)) => {}
            Ok(Err(RecvError::Lagged(n))) => {
                g.lost = n;
                break;
            }
            Ok(Err(RecvError::Closed)) => {
                g.closed = true;
                break;
            }
        }
    }
    g
}

/// One viewer's connection (see the module docs).
async fn viewer(state: AdminState, socket: WebSocket, mut filter: Filter) {
    let cfg = state.config();
    let _watching = state.ring().watch(&cfg.events);
    // Subscribed before the snapshot is built: nothing falls in between.
    let mut sub = cfg.events.subscribe();
    let shutdown = cfg.shutdown.clone();
    let (mut tx, mut rx) = socket.split();
    let first = ViewerMessage::Snapshot(Box::new(snapshot(&state, &filter).await));
    if !send(&mut tx, &first).await {
        return;
    }
    let mut total_lost = 0u64;
    loop {
        let got = tokio::select! {
            () = shutdown.cancelled() => break,
            msg = rx.next() => {
                match msg {
                    Some(Ok(Message::Text(text))) => {
                        let reply = match serde_json::from_str::<ViewerCommand>(&text) {
                            Ok(ViewerCommand::Filter { kinds, servers, methods }) => {
                                filter = Filter { kinds, servers, methods };
                                Some(ViewerMessage::Filtered { filter: filter.clone() })
                            }
                            Err(e) => Some(ViewerMessage::Error { error: format!("not a viewer command: {e}") }),
                        };
                        if let Some(reply) = reply
                            && !send(&mut tx, &reply).await
                        {
                            break;
                        }
                        continue;
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => continue,
                }
            }
            got = sub.recv() => got,
        };
        let g = match got {
            Ok(first) => gather(&mut sub, &filter, first).await,
            Err(RecvError::Lagged(n)) => Gathered { lost: n, ..Gathered::default() },
            Err(RecvError::Closed) => break,
        };
        let mut out = Vec::with_capacity(2);
        if !g.events.is_empty() {
            out.push(ViewerMessage::Events { events: g.events });
        }
        if g.lost > 0 {
            total_lost += g.lost;
            out.push(ViewerMessage::Lagged { lost: g.lost, total_lost });
        }
        for msg in &out {
            let sent = tokio::select! {
                () = shutdown.cancelled() => false,
                ok = send(&mut tx, msg) => ok,
            };
            if !sent {
                return;
            }
        }
        if g.closed {
            break;
        }
    }
    let _ = tx.send(Message::Close(None)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_filters_parse_and_unknown_kinds_are_named() {
        let q =
            EventsQuery { kinds: Some("frame, trace".into()), servers: Some("a,,b".into()), methods: None };
        let f = q.filter().expect("filter");
        assert_eq!(f.kinds, [EventKind::Frame, EventKind::Trace].into());
        assert_eq!(f.servers, ["a".to_owned(), "b".to_owned()].into());
        assert!(f.methods.is_empty());
        let bad = EventsQuery { kinds: Some("frames".into()), ..EventsQuery::default() };
        assert!(bad.filter().is_err_and(|e| e.to_string().contains("\"frames\"")));
        let cmd: ViewerCommand =
            serde_json::from_str(r#"{"type":"filter","kinds":["trace"]}"#).expect("command");
        assert!(matches!(cmd, ViewerCommand::Filter { kinds, .. } if kinds.len() == 1));
    }
}
