//! Self-contained 2025-11-25 session ids for the `/mcp` endpoint.
//!
//! A session id is `base64url(JSON {v, caps, info, at, n}) "." base64url(HMAC-SHA256)`, sealed
//! under a key held in [`crate::config::EndpointConfig`]. `n` is a 128-bit nonce from the OS
//! random source, so two identical `initialize` requests in the same millisecond still get
//! different ids (ending one never ends the other). Any router instance holding the same key
//! can serve the session, so no session table sits on the request path. Ending a session
//! (`DELETE /mcp`) records its id in a bounded revocation set that lives **in this instance
//! only**: another instance with the same key still accepts the id until it reaches its
//! maximum age.
//!
//! The key is random per process unless one is configured ([`SESSION_KEY_ENV`], or
//! `[endpoint].session_key_file`), which lets several instances and restarts share sessions.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

/// Environment variable holding the session key that instances serving the same sessions
/// share (wins over `[endpoint].session_key_file`).
pub const SESSION_KEY_ENV: &str = "SWITCHBOARD_SESSION_KEY";

/// Shortest configured session key, in bytes (256 bits, e.g. `openssl rand -base64 32`).
pub const MIN_SESSION_KEY_LEN: usize = 32;

/// Longest configured session key, in bytes.
pub const MAX_SESSION_KEY_LEN: usize = 1024;

/// Ended session ids remembered at once on one instance ([`Revocations`]).
pub const MAX_REVOCATIONS: usize = 100_000;

/// Why a session key or a session id could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionKeyError {
    /// A configured key is shorter than [`MIN_SESSION_KEY_LEN`] or longer than [`MAX_SESSION_KEY_LEN`].
    #[error(
        "the session key from {source_name} is {len} bytes long: use {MIN_SESSION_KEY_LEN} to \
         {MAX_SESSION_KEY_LEN} bytes (e.g. the output of `openssl rand -base64 32`)"
    )]
    Length {
        /// Where the key came from (the variable or the file).
        source_name: String,
        /// Its length after trimming whitespace.
        len: usize,
    },
    /// The key file could not be read.
    #[error("cannot read the session key file {path}: {source}")]
    File {
        /// The configured path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The OS random source failed.
    #[error("the OS random source failed: {0}")]
    Random(String),
}

/// Bytes from the OS random source.
fn random_bytes<const N: usize>() -> Result<[u8; N], SessionKeyError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| SessionKeyError::Random(e.to_string()))?;
    Ok(bytes)
}

/// The key sealing session ids (an HMAC-SHA256 keyed once). Its `Debug` does not show the bytes.
#[derive(Clone)]
pub struct SessionKey(Hmac<Sha256>);

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

impl SessionKey {
    /// A key from configured bytes, [`MIN_SESSION_KEY_LEN`] to [`MAX_SESSION_KEY_LEN`] long;
    /// `source_name` names where they came from in the error.
    pub fn from_bytes(bytes: &[u8], source_name: &str) -> Result<Self, SessionKeyError> {
        let len = bytes.len();
        if !(MIN_SESSION_KEY_LEN..=MAX_SESSION_KEY_LEN).contains(&len) {
            return Err(SessionKeyError::Length { source_name: source_name.to_owned(), len });
        }
        // HMAC takes keys of any length; the range check above is ours.
        Hmac::<Sha256>::new_from_slice(bytes)
            .map(SessionKey)
            .map_err(|_| SessionKeyError::Length { source_name: source_name.to_owned(), len })
    }

    /// A fresh 256-bit key from the OS random source.
    pub fn try_random() -> Result<Self, SessionKeyError> {
        let bytes: [u8; 32] = random_bytes()?;
        SessionKey::from_bytes(&bytes, "the OS random source")
    }

    /// A fresh key from the OS random source.
    ///
    /// # Panics
    /// When the OS random source fails (it does not on supported systems); use
    /// [`SessionKey::try_random`] to handle that.
    pub fn random() -> Self {
        match SessionKey::try_random() {
            Ok(k) => k,
            Err(e) => panic!("{e}"),
        }
    }

    /// The configured key: the value of [`SESSION_KEY_ENV`] when set and non-empty, else the
    /// contents of `file`, each trimmed of surrounding whitespace; `None` when neither is given.
    pub fn configured(file: Option<&Path>) -> Result<Option<Self>, SessionKeyError> {
        SessionKey::configured_from(std::env::var(SESSION_KEY_ENV).ok(), file)
    }

    /// [`SessionKey::configured`] with the variable's value passed in.
    pub fn configured_from(
        env: Option<String>,
        file: Option<&Path>,
    ) -> Result<Option<Self>, SessionKeyError> {
        if let Some(v) = env.filter(|v| !v.trim().is_empty()) {
            return SessionKey::from_bytes(v.trim().as_bytes(), &format!("${SESSION_KEY_ENV}")).map(Some);
        }
        let Some(path) = file else { return Ok(None) };
        let text = std::fs::read(path)
            .map_err(|source| SessionKeyError::File { path: path.display().to_string(), source })?;
        SessionKey::from_bytes(text.trim_ascii(), &path.display().to_string()).map(Some)
    }

    /// The configured key, else a random one (sessions then live only as long as this process).
    pub fn configured_or_random(file: Option<&Path>) -> Result<Self, SessionKeyError> {
        match SessionKey::configured(file)? {
            Some(k) => Ok(k),
            None => SessionKey::try_random(),
        }
    }

    /// The base64url HMAC tag of `body`.
    pub(crate) fn sign(&self, body: &str) -> String {
        let mut mac = self.0.clone();
        mac.update(body.as_bytes());
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// Whether `tag` (base64url) is this key's HMAC of `body`, compared in constant time.
    pub(crate) fn verify(&self, body: &str, tag: &str) -> bool {
        let Ok(tag) = URL_SAFE_NO_PAD.decode(tag) else { return false };
        let mut mac = self.0.clone();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).is_ok()
    }
}

/// What a session id carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// The negotiated protocol version.
    #[serde(rename = "v")]
    pub version: String,
    /// The client's capabilities from `initialize`.
    #[serde(rename = "caps", default)]
    pub capabilities: Value,
    /// The client's `clientInfo`.
    #[serde(rename = "info", default)]
    pub client_info: Value,
    /// Creation time, milliseconds since the epoch.
    #[serde(rename = "at")]
    pub created_at_ms: u64,
    /// 128 bits from the OS random source (base64url): what makes the id unique.
    #[serde(rename = "n")]
    pub nonce: String,
}

fn now_ms() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis())
        .unwrap_or(u64::MAX)
}

/// The HMAC tag of a session id: short, and unique to the session (it covers the nonce), so
/// per-session state on this instance is keyed by it rather than by the whole id (which
/// carries the client's capabilities and can be long).
pub(crate) fn tag_of(id: &str) -> &str {
    id.rsplit_once('.').map_or(id, |(_, tag)| tag)
}

/// Why an id was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Malformed, tampered or sealed under another key.
    Invalid,
    /// Older than the maximum age.
    Expired,
    /// Ended by `DELETE` on this instance.
    Ended,
}

impl Session {
    /// A session created now, with a fresh nonce.
    pub fn new(version: &str, capabilities: Value, client_info: Value) -> Result<Self, SessionKeyError> {
        let nonce = URL_SAFE_NO_PAD.encode(random_bytes::<16>()?);
        Ok(Session { version: version.to_owned(), capabilities, client_info, created_at_ms: now_ms(), nonce })
    }

    /// The sealed id.
    pub fn seal(&self, key: &SessionKey) -> String {
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default());
        let tag = key.sign(&body);
        format!("{body}.{tag}")
    }

    /// Opens an id sealed under `key`, no older than `max_age`.
    pub fn open(id: &str, key: &SessionKey, max_age: Duration) -> Result<Session, Refused> {
        let (body, tag) = id.split_once('.').ok_or(Refused::Invalid)?;
        if !key.verify(body, tag) {
            return Err(Refused::Invalid);
        }
        let raw = URL_SAFE_NO_PAD.decode(body).map_err(|_| Refused::Invalid)?;
        let s: Session = serde_json::from_slice(&raw).map_err(|_| Refused::Invalid)?;
        let max = u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX);
        if now_ms().saturating_sub(s.created_at_ms) > max {
            return Err(Refused::Expired);
        }
        Ok(s)
    }
}

/// Ids ended on this instance, each kept until it would have expired anyway; at most
/// [`MAX_REVOCATIONS`] (or the capacity given) at once.
#[derive(Debug, Clone)]
pub struct Revocations {
    ended: Arc<Mutex<HashMap<String, u64>>>,
    capacity: usize,
}

impl Default for Revocations {
    fn default() -> Self {
        Revocations::with_capacity(MAX_REVOCATIONS)
    }
}

/// [`Revocations::end`] found the set full of ids that have not expired yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "this instance already remembers {0} ended sessions that have not expired; the session stays \
     valid until its maximum age (try ending it again later)"
)]
pub struct RevocationsFull(pub usize);

impl Revocations {
    /// A set holding at most `capacity` ids.
    pub fn with_capacity(capacity: usize) -> Self {
        Revocations { ended: Arc::default(), capacity }
    }

    /// Records `id` as ended; it is forgotten after `until_ms` (epoch ms). Refused when the
    /// set is full of unexpired ids: forgetting one of them would let it be used again.
    pub fn end(&self, id: &str, until_ms: u64) -> Result<(), RevocationsFull> {
        let now = now_ms();
        let mut m = self.ended.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if m.len() >= self.capacity {
            m.retain(|_, until| *until > now);
        }
        let key = tag_of(id);
        if m.len() >= self.capacity && !m.contains_key(key) {
            return Err(RevocationsFull(self.capacity));
        }
        m.insert(key.to_owned(), until_ms);
        Ok(())
    }

    /// Whether `id` was ended here.
    pub fn is_ended(&self, id: &str) -> bool {
        self.ended.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains_key(tag_of(id))
    }
}

/// Requests of sessions in flight on this instance, so `notifications/cancelled` can stop
/// them. Keyed by session id and the JSON of the request id.
#[derive(Debug, Clone, Default)]
pub struct InFlight {
    calls: Arc<Mutex<HashMap<(String, String), tokio_util::sync::CancellationToken>>>,
}

/// Unregisters its request when dropped.
#[derive(Debug)]
pub struct InFlightGuard {
    set: InFlight,
    key: (String, String),
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.set.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.key);
    }
}

impl InFlight {
    /// Registers a request; its token fires on [`InFlight::cancel`].
    pub fn register(&self, sid: &str, id: &Value) -> (tokio_util::sync::CancellationToken, InFlightGuard) {
        let key = (sid.to_owned(), id.to_string());
        let token = tokio_util::sync::CancellationToken::new();
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key.clone(), token.clone());
        (token, InFlightGuard { set: self.clone(), key })
    }

    /// Cancels the request, if it is in flight here; `true` when it was.
    pub fn cancel(&self, sid: &str, id: &Value) -> bool {
        let calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        calls.get(&(sid.to_owned(), id.to_string())).map(|t| t.cancel()).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shared_key(text: &str) -> SessionKey {
        SessionKey::from_bytes(text.as_bytes(), "test").unwrap()
    }

    #[test]
    fn seal_open_and_tamper() {
        let key = SessionKey::random();
        let s = Session::new("2025-11-25", json!({"roots": {}}), json!({"name": "c"})).unwrap();
        let id = s.seal(&key);
        assert_eq!(Session::open(&id, &key, Duration::from_secs(60)), Ok(s.clone()));
        assert_eq!(Session::open(&id, &SessionKey::random(), Duration::from_secs(60)), Err(Refused::Invalid));
        let mut bad = id.clone();
        bad.insert(0, 'A');
        assert_eq!(Session::open(&bad, &key, Duration::from_secs(60)), Err(Refused::Invalid));
        assert_eq!(Session::open("nonsense", &key, Duration::from_secs(60)), Err(Refused::Invalid));
        let mut old = s;
        old.created_at_ms -= 120_000;
        assert_eq!(Session::open(&old.seal(&key), &key, Duration::from_secs(60)), Err(Refused::Expired));
        let a = "a".repeat(32);
        let shared = Session::new("2025-11-25", json!({}), json!({})).unwrap().seal(&shared_key(&a));
        assert!(Session::open(&shared, &shared_key(&a), Duration::from_secs(60)).is_ok());
        assert!(Session::open(&shared, &shared_key(&"b".repeat(32)), Duration::from_secs(60)).is_err());
    }

    #[test]
    fn identical_sessions_get_distinct_ids() {
        let key = SessionKey::random();
        let ids: std::collections::HashSet<String> = (0..1000)
            .map(|_| Session::new("2025-11-25", json!({}), json!({"name": "same"})).unwrap().seal(&key))
            .collect();
        assert_eq!(ids.len(), 1000);
    }

    /// The tag is the standard HMAC-SHA256 (RFC 4231 test case 2 with a long-enough key is not
    /// available, so check against an independent computation of the construction).
    #[test]
    fn sign_is_hmac_sha256_and_verify_is_strict() {
        use sha2::Digest;
        let secret = "k".repeat(40);
        let k = shared_key(&secret);
        let mut block = [0u8; 64];
        block[..40].copy_from_slice(secret.as_bytes());
        let ipad: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
        let opad: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
        let inner = Sha256::new().chain_update(&ipad).chain_update(b"body").finalize();
        let expected: [u8; 32] = Sha256::new().chain_update(&opad).chain_update(inner).finalize().into();
        let tag = k.sign("body");
        assert_eq!(tag, URL_SAFE_NO_PAD.encode(expected));
        assert!(k.verify("body", &tag));
        assert!(!k.verify("body2", &tag));
        assert!(!k.verify("body", &tag[..tag.len() - 1]));
        assert!(!k.verify("body", "not base64 !"));
        assert!(!shared_key(&"j".repeat(40)).verify("body", &tag));
    }

    #[test]
    fn configured_keys_are_validated() {
        let e = SessionKey::from_bytes(b"short", "$SWITCHBOARD_SESSION_KEY").unwrap_err().to_string();
        assert!(e.contains("$SWITCHBOARD_SESSION_KEY") && e.contains("5 bytes") && e.contains("32"), "{e}");
        assert!(SessionKey::from_bytes(&[7u8; MAX_SESSION_KEY_LEN + 1], "x").is_err());
        assert!(SessionKey::configured_from(None, None).unwrap().is_none());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, format!("{}\n", "f".repeat(44))).unwrap();
        let from_file = SessionKey::configured_from(None, Some(&file)).unwrap().unwrap();
        let same = shared_key(&"f".repeat(44));
        assert!(same.verify("x", &from_file.sign("x")), "the file's trailing newline is not part of the key");
        let from_env = SessionKey::configured_from(Some("e".repeat(32)), Some(&file)).unwrap().unwrap();
        assert!(
            shared_key(&"e".repeat(32)).verify("x", &from_env.sign("x")),
            "the variable wins over the file"
        );
        std::fs::write(&file, "tiny").unwrap();
        let e = SessionKey::configured_from(None, Some(&file)).unwrap_err().to_string();
        assert!(e.contains(&file.display().to_string()) && e.contains("4 bytes"), "{e}");
        let e = SessionKey::configured_from(None, Some(&dir.path().join("missing"))).unwrap_err().to_string();
        assert!(e.contains("cannot read the session key file"), "{e}");
    }

    #[test]
    fn revocations_are_bounded_and_refuse_when_full() {
        let r = Revocations::with_capacity(3);
        let later = now_ms() + 60_000;
        for id in ["a", "b", "c"] {
            r.end(id, later).unwrap();
        }
        assert_eq!(r.end("d", later), Err(RevocationsFull(3)));
        assert!(!r.is_ended("d"));
        assert!(r.is_ended("a"), "a full set forgets nothing that is still valid");
        r.end("a", later).unwrap();
        // Expired entries make room.
        let r = Revocations::with_capacity(2);
        r.end("old", now_ms().saturating_sub(1)).unwrap();
        r.end("b", later).unwrap();
        r.end("c", later).unwrap();
        assert!(r.is_ended("c") && !r.is_ended("old"));
    }
}
