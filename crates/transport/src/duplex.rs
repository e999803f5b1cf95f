//! Request multiplexing over one bidirectional message stream (stdio, WebSocket).
//!
//! Many callers share one pipe, and their ids and progress tokens may collide, so each
//! outgoing request gets an id (and progress token) unique on this connection; replies
//! are mapped back to the caller's originals. Server messages that belong to no request
//! go to the `incoming` broadcast; a `ping` from the server is answered here.
//!
//! One reader task serves every caller on the connection, so it never waits for a caller:
//! each exchange has a bounded buffer ([`EXCHANGE_CAPACITY`]), and an exchange whose caller
//! stops reading until that buffer is full is failed on its own ([`Error::SlowConsumer`]) and
//! cancelled upstream, while every other call goes on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bytes::Bytes;
use serde_json::{Value, json};
use switchboard_wire::{Id, Message, method};
use tokio::sync::{broadcast, mpsc};

use crate::frame::Direction;
use crate::{Error, Exchange, Tap};

/// Messages buffered per request (interim messages and the response) for a caller that has
/// not read them yet; one more fails that request with [`Error::SlowConsumer`].
pub(crate) const EXCHANGE_CAPACITY: usize = 64;

struct Pending {
    original_id: Id,
    tx: mpsc::Sender<Result<Message, Error>>,
    token: Option<(String, Value)>,
    /// Set (once) when the caller fell behind; the exchange reports it instead of waiting.
    failure: Arc<OnceLock<Error>>,
    /// A call a server may ask the client about while it runs (`tools/call`, …).
    call: bool,
}

/// Requests during which a server may ask the client something (elicitation, sampling,
/// roots): a question arriving while exactly one of them is in flight belongs to it.
const CALLS: [&str; 4] =
    [method::TOOLS_CALL, method::PROMPTS_GET, method::RESOURCES_READ, method::COMPLETION_COMPLETE];

#[derive(Default)]
struct Table {
    pending: HashMap<u64, Pending>,
    tokens: HashMap<String, u64>,
}

/// The shared multiplexer; the transport owns the reader and writer tasks.
pub(crate) struct Duplex {
    writer: Mutex<Option<mpsc::Sender<Bytes>>>,
    table: Mutex<Table>,
    next: AtomicU64,
    incoming: broadcast::Sender<Message>,
    tap: Tap,
    /// Why the connection is down, when it is.
    down: Mutex<Option<Error>>,
    /// Set (for good) once the server sent a request of its own other than `ping`
    /// (elicitation, sampling, roots): see [`crate::Upstream::asked_client`].
    asked: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Duplex {
    pub(crate) fn new(tap: Tap) -> Arc<Self> {
        Arc::new(Duplex {
            writer: Mutex::new(None),
            table: Mutex::new(Table::default()),
            next: AtomicU64::new(1),
            incoming: broadcast::channel(256).0,
            tap,
            down: Mutex::new(Some(Error::NotRunning { detail: "not started yet".into() })),
            asked: AtomicBool::new(false),
        })
    }

    pub(crate) fn incoming(&self) -> broadcast::Receiver<Message> {
        self.incoming.subscribe()
    }

    /// Connects a new writer (after a process start or a reconnect).
    pub(crate) fn attach(&self, writer: mpsc::Sender<Bytes>) {
        *lock(&self.writer) = Some(writer);
        *lock(&self.down) = None;
    }

    /// Disconnects the writer and fails every request in flight with `err`.
    pub(crate) fn detach(&self, err: Error) {
        *lock(&self.writer) = None;
        *lock(&self.down) = Some(err.clone());
        let drained: Vec<Pending> = {
            let mut t = lock(&self.table);
            t.tokens.clear();
            t.pending.drain().map(|(_, p)| p).collect()
        };
        for p in drained {
            if p.tx.try_send(Err(err.clone())).is_err() {
                // A full buffer: the exchange reports the failure once its caller reads again.
                let _ = p.failure.set(err.clone());
            }
        }
    }

    /// Whether the server has ever asked the client something.
    pub(crate) fn asked(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    pub(crate) fn is_attached(&self) -> bool {
        lock(&self.writer).is_some()
    }

    fn writer(&self) -> Result<mpsc::Sender<Bytes>, Error> {
        if let Some(w) = lock(&self.writer).clone() {
            return Ok(w);
        }
        Err(lock(&self.down).clone().unwrap_or(Error::Closed))
    }

    async fn write(&self, msg: &Message) -> Result<(), Error> {
        let w = self.writer()?;
        let bytes = Bytes::from(msg.to_bytes());
        self.tap.record(Direction::Out, msg, &bytes);
        w.send(bytes).await.map_err(|_| lock(&self.down).clone().unwrap_or(Error::Closed))
    }

    /// Sends a request and registers its exchange.
    pub(crate) async fn request(self: &Arc<Self>, mut msg: Message) -> Result<Exchange, Error> {
        let original_id = msg.id().ok_or_else(|| Error::Protocol("a request needs an id".into()))?;
        let wire_id = self.next.fetch_add(1, Ordering::Relaxed);
        msg.set_id(&Id::from(wire_id));
        let token = msg.progress_token().cloned().map(|theirs| {
            let ours = format!("sb-{wire_id}");
            msg.meta_mut().insert("progressToken".into(), Value::String(ours.clone()));
            (ours, theirs)
        });
        let (tx, rx) = mpsc::channel(EXCHANGE_CAPACITY);
        let failure = Arc::new(OnceLock::new());
        let call = msg.method().is_some_and(|m| CALLS.contains(&m));
        {
            let mut t = lock(&self.table);
            if let Some((ours, _)) = &token {
                t.tokens.insert(ours.clone(), wire_id);
            }
            let pending =
                Pending { original_id: original_id.clone(), tx, token, failure: failure.clone(), call };
            t.pending.insert(wire_id, pending);
        }
        if let Err(e) = self.write(&msg).await {
            self.forget(wire_id);
            return Err(e);
        }
        let me = Arc::downgrade(self);
        let cancel = Box::new(move || {
            if let Some(d) = me.upgrade()
                && d.forget(wire_id)
            {
                d.cancel_upstream(wire_id, "cancelled by the router's client");
            }
        });
        Ok(Exchange::new(rx, original_id.to_string(), Some(cancel)).with_failure(failure))
    }

    /// Tells the server to stop working on `wire_id` (best effort: never waits).
    fn cancel_upstream(&self, wire_id: u64, reason: &str) {
        let note = Message::notification(
            method::NOTIFICATION_CANCELLED,
            Some(json!({"requestId": wire_id, "reason": reason})),
        );
        if let Ok(w) = self.writer() {
            let bytes = Bytes::from(note.to_bytes());
            self.tap.record(Direction::Out, &note, &bytes);
            let _ = w.try_send(bytes);
        }
    }

    /// Hands `msg` to the caller of `wire_id` without waiting. A caller whose buffer is full
    /// has stopped reading: its request alone is failed and cancelled upstream, so the reader
    /// (and every other caller on this connection) never waits for it.
    fn deliver(
        &self,
        wire_id: u64,
        tx: &mpsc::Sender<Result<Message, Error>>,
        failure: &OnceLock<Error>,
        msg: Message,
    ) {
        match tx.try_send(Ok(msg)) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                let _ = failure.set(Error::SlowConsumer { buffered: EXCHANGE_CAPACITY });
                // Removing the pending entry drops the table's sender, which wakes a caller
                // blocked in `Exchange::next` (it then reports the failure).
                if self.forget(wire_id) {
                    self.cancel_upstream(wire_id, "the router's caller stopped reading the response");
                }
                tracing::warn!(
                    wire_id,
                    buffered = EXCHANGE_CAPACITY,
                    "a caller stopped reading its upstream request; that request was failed and cancelled"
                );
            }
        }
    }

    /// Removes a pending request; `true` if it was still pending.
    fn forget(&self, wire_id: u64) -> bool {
        let mut t = lock(&self.table);
        match t.pending.remove(&wire_id) {
            Some(p) => {
                if let Some((ours, _)) = p.token {
                    t.tokens.remove(&ours);
                }
                true
            }
            None => false,
        }
    }

    /// Sends a notification or a response.
    pub(crate) async fn send(&self, msg: &Message) -> Result<(), Error> {
        self.write(msg).await
    }

    /// Routes one line/frame read from the peer.
    pub(crate) async fn dispatch(&self, bytes: &[u8]) {
        let msg = match Message::parse(bytes) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, line = %String::from_utf8_lossy(&bytes[..bytes.len().min(200)]), "upstream sent an invalid JSON-RPC message");
                return;
            }
        };
        self.tap.record(Direction::In, &msg, bytes);
        if msg.is_response() {
            let wire_id = msg.id().and_then(|id| match id {
                Id::Number(n) => n.as_u64(),
                Id::String(s) => s.parse().ok(),
            });
            let pending = wire_id.and_then(|w| {
                let mut t = lock(&self.table);
                let p = t.pending.remove(&w)?;
                if let Some((ours, _)) = &p.token {
                    t.tokens.remove(ours);
                }
                Some(p)
            });
            match (wire_id, pending) {
                (Some(wire_id), Some(p)) => {
                    let mut msg = msg;
                    msg.set_id(&p.original_id);
                    self.deliver(wire_id, &p.tx, &p.failure, msg);
                }
                _ => {
                    tracing::debug!(id = ?msg.id(), "response to no pending request (cancelled or unknown)")
                }
            }
            return;
        }
        if msg.is_request() && msg.method() == Some(method::PING) {
            if let Some(id) = msg.id() {
                let _ = self.write(&Message::response(id, json!({}))).await;
            }
            return;
        }
        if msg.is_request() {
            self.asked.store(true, Ordering::Relaxed);
            // A stream carries no request id of its own, so a server → client request is
            // attributed to the call in flight when there is exactly one; otherwise it is
            // nobody's (it goes to `incoming`, where the registry refuses it).
            let only_call = {
                let t = lock(&self.table);
                let mut calls = t.pending.values().filter(|p| p.call);
                match (calls.next(), calls.next()) {
                    (Some(p), None) => Some(p.tx.clone()),
                    _ => None,
                }
            };
            if let Some(tx) = only_call {
                let _ = tx.send(Ok(msg)).await;
                return;
            }
        }
        if msg.method() == Some(method::NOTIFICATION_PROGRESS) {
            let token =
                msg.params().and_then(|p| p.get("progressToken")).and_then(Value::as_str).map(str::to_owned);
            if let Some(token) = token {
                let target = {
                    let t = lock(&self.table);
                    t.tokens.get(&token).and_then(|w| {
                        t.pending.get(w).map(|p| (*w, p.tx.clone(), p.failure.clone(), p.token.clone()))
                    })
                };
                if let Some((wire_id, tx, failure, Some((_, theirs)))) = target {
                    let mut msg = msg;
                    msg.params_mut().insert("progressToken".into(), theirs);
                    self.deliver(wire_id, &tx, &failure, msg);
                    return;
                }
            }
        }
        let _ = self.incoming.send(msg);
    }
}
