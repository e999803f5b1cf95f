//! Per-instance state for bridging the two MCP revisions through the endpoint.
//!
//! * **Legacy upstream, 2026-07-28 client.** A 2025-11-25 server asks the client things
//!   (`elicitation/create`, `sampling/createMessage`, `roots/list`) in the middle of a call. A
//!   2026 client cannot receive requests, so the router answers the call with an
//!   `InputRequiredResult`, parks the upstream call (its [`Exchange`] stays open) and hands
//!   the client a `requestState` it sealed itself: HMAC under the session key, a short
//!   expiry, bound to the method, name and arguments of the original request, single use.
//!   The retry carrying that state resumes the parked call with the client's answers.
//! * **2025-11-25 client.** Server → client requests reach it on the response stream of its
//!   call with router-minted ids; its answers arrive as separate POSTs and are matched here
//!   ([`Bridge::answer`]). A modern upstream's `InputRequiredResult` is turned into such
//!   requests and retried with the answers.
//! * The log level a 2025-11-25 session set with `logging/setLevel`.
//!
//! All of this lives on the instance holding the call (the stream is here anyway); a retry
//! or answer reaching another instance is refused with a clear error.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use switchboard_transport::Exchange;
use switchboard_wire::Message;
use tokio::sync::oneshot;

use crate::session::SessionKey;

/// Prefix of the ids of server → client requests the router sends a 2025-11-25 client.
pub const MINTED_ID_PREFIX: &str = "sb-";

/// Prefix of a `requestState` the router sealed (anything else belongs to an upstream).
pub const STATE_PREFIX: &str = "sbrs1.";

/// Most calls parked at once on one instance (each holds an upstream request open).
pub const MAX_PARKED: usize = 10_000;

/// Most 2025-11-25 sessions whose `logging/setLevel` one instance remembers at once.
pub const MAX_SESSION_LEVELS: usize = 100_000;

/// [`Bridge::set_level`] found [`MAX_SESSION_LEVELS`] live sessions with a level already.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "too many sessions have set a log level on this router instance ({0}); the level was not \
     changed (try again later)"
)]
pub struct LevelsFull(pub usize);

/// How long a parked call waits for the client's retry.
pub const PARK_TTL: Duration = Duration::from_secs(300);

/// Log levels of RFC 5424, least severe first (`logging/setLevel`, `_meta` logLevel).
pub const LOG_LEVELS: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// Rank of a log level; unknown levels rank as `debug`.
pub fn level_rank(level: &str) -> usize {
    LOG_LEVELS.iter().position(|l| *l == level).unwrap_or(0)
}

/// An upstream call waiting for the client's answers.
pub struct Parked {
    /// The upstream call.
    pub exchange: Exchange,
    /// Server it runs on.
    pub server: String,
    /// Input key → (the upstream's request id, the input request shown to the client).
    pub inputs: Vec<(String, Value, Value)>,
    /// Binding of the original request.
    pub binding: String,
    /// Log level of the original request, applied to the resumed stream.
    pub log_level: Option<String>,
    /// Every input key this call has asked for so far, in all rounds: a later question
    /// never reuses one, so an answer only ever reaches the question it answers.
    pub asked: Vec<String>,
    expires: Instant,
}

impl Parked {
    /// A parked call expiring after [`PARK_TTL`].
    pub fn new(
        exchange: Exchange,
        server: String,
        inputs: Vec<(String, Value, Value)>,
        binding: String,
        log_level: Option<String>,
    ) -> Self {
        let asked = inputs.iter().map(|(key, _, _)| key.clone()).collect();
        Parked { exchange, server, inputs, binding, log_level, asked, expires: Instant::now() + PARK_TTL }
    }
}

#[derive(Serialize, Deserialize)]
struct Sealed {
    /// Park id.
    p: u64,
    /// Binding of the original request.
    b: String,
    /// Expiry, epoch milliseconds.
    e: u64,
}

/// Why a router-sealed `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Malformed or tampered.
    #[error("invalid requestState: integrity check failed")]
    Invalid,
    /// Past its expiry.
    #[error("requestState expired; call again without it")]
    Expired,
    /// Sealed for another request.
    #[error("requestState belongs to a different request (method, name or arguments differ)")]
    Mismatch,
    /// Already used, or the call is not parked on this instance.
    #[error("requestState was already used or its call is no longer waiting; call again without it")]
    Spent,
    /// The instance holds [`MAX_PARKED`] calls already.
    #[error("too many calls are waiting for input on this router instance ({MAX_PARKED}); try again later")]
    Full,
}

fn now_ms() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis())
        .unwrap_or(u64::MAX)
}

/// JSON with object keys sorted, so a binding does not depend on the client's key order.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(x) = m.get(k) {
                    canonical(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// What a sealed state is bound to: method, name or uri, and the arguments.
pub fn binding(method: &str, params: &Map<String, Value>) -> String {
    let mut s = String::new();
    s.push_str(method);
    s.push('\n');
    for key in ["name", "uri"] {
        if let Some(v) = params.get(key) {
            canonical(v, &mut s);
        }
        s.push('\n');
    }
    if let Some(args) = params.get("arguments") {
        canonical(args, &mut s);
    }
    URL_SAFE_NO_PAD.encode(Sha256::digest(s.as_bytes()))
}

/// The per-instance bridging state.
#[derive(Clone, Default)]
pub struct Bridge {
    inner: Arc<Inner>,
}

struct Inner {
    next: AtomicU64,
    parked: Mutex<HashMap<u64, Parked>>,
    answers: Mutex<HashMap<(String, String), oneshot::Sender<Message>>>,
    /// Level and expiry (epoch ms) by session tag.
    levels: Mutex<HashMap<String, (String, u64)>>,
    /// Most entries in `levels` (normally [`MAX_SESSION_LEVELS`]).
    max_levels: usize,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            next: AtomicU64::default(),
            parked: Mutex::default(),
            answers: Mutex::default(),
            levels: Mutex::default(),
            max_levels: MAX_SESSION_LEVELS,
        }
    }
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Bridge {
    /// A fresh number, unique on this instance.
    pub fn next_id(&self) -> u64 {
        self.inner.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// A fresh id for a server → client request sent to a 2025-11-25 client.
    pub fn mint_request_id(&self) -> Value {
        Value::String(format!("{MINTED_ID_PREFIX}{}", self.next_id()))
    }

    /// Parks `call` and returns the sealed `requestState` that resumes it; refused (and the
    /// call dropped, which cancels it upstream) when [`MAX_PARKED`] calls wait already.
    pub fn park(&self, key: &SessionKey, call: Parked) -> Result<String, StateError> {
        let id = self.next_id();
        let sealed = Sealed {
            p: id,
            b: call.binding.clone(),
            e: now_ms().saturating_add(u64::try_from(PARK_TTL.as_millis()).unwrap_or(u64::MAX)),
        };
        let mut parked = lock(&self.inner.parked);
        let now = Instant::now();
        // Expired calls are dropped here, which cancels them upstream.
        parked.retain(|_, p| p.expires > now);
        if parked.len() >= MAX_PARKED {
            return Err(StateError::Full);
        }
        parked.insert(id, call);
        drop(parked);
        // And at their expiry, if no retry took them and no later park swept them.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let inner = Arc::downgrade(&self.inner);
            rt.spawn(async move {
                tokio::time::sleep(PARK_TTL).await;
                if let Some(inner) = inner.upgrade() {
                    lock(&inner.parked).remove(&id);
                }
            });
        }
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&sealed).unwrap_or_default());
        let signed = format!("{STATE_PREFIX}{body}");
        let tag = key.sign(&signed);
        Ok(format!("{signed}.{tag}"))
    }

    /// Opens a router-sealed state and takes its parked call (single use).
    pub fn resume(&self, key: &SessionKey, state: &str, binding: &str) -> Result<Parked, StateError> {
        let (signed, tag) = state.rsplit_once('.').ok_or(StateError::Invalid)?;
        let body = signed.strip_prefix(STATE_PREFIX).ok_or(StateError::Invalid)?;
        if !key.verify(signed, tag) {
            return Err(StateError::Invalid);
        }
        let raw = URL_SAFE_NO_PAD.decode(body).map_err(|_| StateError::Invalid)?;
        let sealed: Sealed = serde_json::from_slice(&raw).map_err(|_| StateError::Invalid)?;
        if sealed.e < now_ms() {
            return Err(StateError::Expired);
        }
        if sealed.b != binding {
            return Err(StateError::Mismatch);
        }
        let mut parked = lock(&self.inner.parked);
        let call = parked.remove(&sealed.p).ok_or(StateError::Spent)?;
        if call.expires <= Instant::now() {
            return Err(StateError::Expired);
        }
        Ok(call)
    }

    /// Calls parked now (for tests and the UI).
    pub fn parked_count(&self) -> usize {
        lock(&self.inner.parked).len()
    }

    /// Expects the answer of a legacy session to the server → client request `id`.
    pub fn expect_answer(&self, sid: &str, id: &Value) -> oneshot::Receiver<Message> {
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.answers).insert((sid.to_owned(), id.to_string()), tx);
        rx
    }

    /// Forgets an expected answer (the call ended first).
    pub fn forget_answer(&self, sid: &str, id: &Value) {
        lock(&self.inner.answers).remove(&(sid.to_owned(), id.to_string()));
    }

    /// Delivers a legacy session's response to a server → client request; `false` when no
    /// call on this instance waits for it.
    pub fn answer(&self, sid: &str, msg: Message) -> bool {
        let Some(id) = msg.id() else { return false };
        let tx = lock(&self.inner.answers).remove(&(sid.to_owned(), id.to_value().to_string()));
        tx.is_some_and(|tx| tx.send(msg).is_ok())
    }

    /// A bridge remembering at most `max_levels` session log levels (tests).
    pub fn with_max_levels(max_levels: usize) -> Self {
        Bridge { inner: Arc::new(Inner { max_levels, ..Inner::default() }) }
    }

    /// Records the level a legacy session set with `logging/setLevel`, kept at most
    /// `max_age` (the longest life of a session). Refused when [`MAX_SESSION_LEVELS`]
    /// sessions that may still be alive have one already.
    pub fn set_level(&self, sid: &str, level: &str, max_age: Duration) -> Result<(), LevelsFull> {
        let now = now_ms();
        let until = now.saturating_add(u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX));
        let key = crate::session::tag_of(sid);
        let mut levels = lock(&self.inner.levels);
        if levels.len() >= self.inner.max_levels && !levels.contains_key(key) {
            levels.retain(|_, (_, until)| *until > now);
            if levels.len() >= self.inner.max_levels {
                return Err(LevelsFull(self.inner.max_levels));
            }
        }
        levels.insert(key.to_owned(), (level.to_owned(), until));
        Ok(())
    }

    /// The level a legacy session set, if any (on this instance).
    pub fn level(&self, sid: &str) -> Option<String> {
        lock(&self.inner.levels).get(crate::session::tag_of(sid)).map(|(l, _)| l.clone())
    }

    /// Forgets a session's state (it ended).
    pub fn end_session(&self, sid: &str) {
        lock(&self.inner.levels).remove(crate::session::tag_of(sid));
        lock(&self.inner.answers).retain(|(s, _), _| s != sid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bindings_ignore_key_order_but_not_values() {
        let a = json!({"name": "t", "arguments": {"x": 1, "y": [1, {"b": 2, "a": 1}]}});
        let b = json!({"arguments": {"y": [1, {"a": 1, "b": 2}], "x": 1}, "name": "t"});
        let c = json!({"name": "t", "arguments": {"x": 2}});
        let m = |v: &Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(binding("tools/call", &m(&a)), binding("tools/call", &m(&b)));
        assert_ne!(binding("tools/call", &m(&a)), binding("tools/call", &m(&c)));
        assert_ne!(binding("tools/call", &m(&a)), binding("prompts/get", &m(&a)));
    }

    #[test]
    fn session_levels_are_bounded() {
        let b = Bridge::with_max_levels(2);
        let day = Duration::from_secs(86_400);
        b.set_level("s1.t1", "info", day).unwrap();
        b.set_level("s2.t2", "debug", day).unwrap();
        assert_eq!(b.set_level("s3.t3", "error", day), Err(LevelsFull(2)));
        assert_eq!(b.level("s3.t3"), None);
        assert_eq!(b.level("s1.t1").as_deref(), Some("info"), "a full map forgets nobody's level");
        b.set_level("s1.t1", "error", day).unwrap();
        assert_eq!(b.level("s1.t1").as_deref(), Some("error"), "a known session may change its level");
        b.end_session("s2.t2");
        b.set_level("s3.t3", "error", day).unwrap();
        // Entries past their session's maximum age make room.
        let b = Bridge::with_max_levels(1);
        b.set_level("old.t", "info", Duration::ZERO).unwrap();
        b.set_level("new.u", "info", day).unwrap();
        assert_eq!(b.level("new.u").as_deref(), Some("info"));
    }

    #[test]
    fn levels_rank() {
        assert!(level_rank("error") > level_rank("info"));
        assert_eq!(level_rank("nonsense"), 0);
    }
}
