//! Self-contained 2025-11-25 session ids for the `/mcp` endpoint.
//!
//! A session id is `base64url(JSON {v, caps, info, at}) "." base64url(HMAC-SHA256)`, sealed
//! under a key held in [`crate::endpoint::EndpointConfig`]. Any router instance holding the
//! same key can serve the session, so no session table sits on the request path. Ending a
//! session (`DELETE /mcp`) records its id in a small revocation set that lives **in this
//! instance only**: another instance with the same key still accepts the id until it
//! reaches its maximum age.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Environment variable holding the secret that instances serving the same sessions share.
pub const SESSION_SECRET_ENV: &str = "SWITCHBOARD_SESSION_SECRET";

/// The key sealing session ids. Its `Debug` does not show the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKey([u8; 32]);

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

impl SessionKey {
    /// A key from bytes (e.g. configured so several instances share sessions).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        SessionKey(bytes)
    }

    /// A key derived (SHA-256) from a shared secret, so several instances share sessions.
    pub fn from_secret(secret: &str) -> Self {
        SessionKey(Sha256::digest(secret.as_bytes()).into())
    }

    /// The key named by the `SWITCHBOARD_SESSION_SECRET` environment variable, or a random
    /// one (sessions then live only as long as this process).
    pub fn from_env_or_random() -> Self {
        match std::env::var(SESSION_SECRET_ENV) {
            Ok(s) if !s.is_empty() => SessionKey::from_secret(&s),
            _ => SessionKey::random(),
        }
    }

    /// A fresh key from the OS-seeded hasher keys of std, the clock and the process id.
    pub fn random() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut h = Sha256::new();
        for i in 0..8u64 {
            let mut s = std::collections::hash_map::RandomState::new().build_hasher();
            s.write_u64(i);
            h.update(s.finish().to_le_bytes());
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        h.update(now.as_nanos().to_le_bytes());
        h.update(std::process::id().to_le_bytes());
        SessionKey(h.finalize().into())
    }

    /// The base64url HMAC tag of `body`.
    pub(crate) fn sign(&self, body: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(body.as_bytes()))
    }

    /// Whether `tag` (base64url) is this key's HMAC of `body`, compared in constant time.
    pub(crate) fn verify(&self, body: &str, tag: &str) -> bool {
        let Ok(tag) = URL_SAFE_NO_PAD.decode(tag) else { return false };
        let expected = self.mac(body.as_bytes());
        tag.len() == expected.len() && tag.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }

    fn mac(&self, data: &[u8]) -> [u8; 32] {
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&self.0);
        let ipad: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
        let opad: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
        let inner = Sha256::new().chain_update(&ipad).chain_update(data).finalize();
        Sha256::new().chain_update(&opad).chain_update(inner).finalize().into()
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
}

fn now_ms() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis())
        .unwrap_or(u64::MAX)
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
    /// A session created now.
    pub fn new(version: &str, capabilities: Value, client_info: Value) -> Self {
        Session { version: version.to_owned(), capabilities, client_info, created_at_ms: now_ms() }
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

/// Ids ended on this instance, each kept until it would have expired anyway.
#[derive(Debug, Clone, Default)]
pub struct Revocations {
    ended: Arc<Mutex<HashMap<String, u64>>>,
}

impl Revocations {
    /// Records `id` as ended; it is forgotten after `until_ms` (epoch ms).
    pub fn end(&self, id: &str, until_ms: u64) {
        let now = now_ms();
        let mut m = self.ended.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        m.retain(|_, until| *until > now);
        m.insert(id.to_owned(), until_ms);
    }

    /// Whether `id` was ended here.
    pub fn is_ended(&self, id: &str) -> bool {
        self.ended.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains_key(id)
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

    #[test]
    fn seal_open_and_tamper() {
        let key = SessionKey::random();
        let s = Session::new("2025-11-25", json!({"roots": {}}), json!({"name": "c"}));
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
        let shared = Session::new("2025-11-25", json!({}), json!({})).seal(&SessionKey::from_secret("s"));
        assert!(Session::open(&shared, &SessionKey::from_secret("s"), Duration::from_secs(60)).is_ok());
        assert!(Session::open(&shared, &SessionKey::from_secret("t"), Duration::from_secs(60)).is_err());
    }
}
