//! The record of one routing decision: which upstreams were candidates, what each layer said of
//! each, their scores, the one chosen and why. Every decision is published as
//! [`crate::Event::Route`], kept in the scheduler's bounded ring ([`crate::schedule::Scheduler::decisions`])
//! and stored with the request's trace.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use sha2::{Digest, Sha256};
use ts_rs::TS;

/// Where a call's affinity key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// The caller's 2025-11-25 session (`Mcp-Session-Id`, or its WebSocket/stdio session).
    Session,
    /// The `Switchboard-Affinity-Key` header of a 2026-07-28 request.
    Header,
    /// `params._meta["switchboard/affinity-key"]` of a 2026-07-28 request.
    Meta,
    /// No key: the call is scheduled by score alone.
    None,
}

/// Which layer settled a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// One candidate only (a server of its own, or a name with its server's prefix).
    Only,
    /// The key's upstream, still within the window and healthy for the key.
    Affinity,
    /// The lowest load score.
    Score,
    /// Nobody passed the capability match: capabilities were dropped.
    Fallback,
    /// Nobody could serve the call.
    None,
}

/// What the scheduler saw of one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Candidate {
    /// The upstream server.
    pub server: String,
    /// Layer 1: `null` when it matched, else why not (state, a missing tool or label).
    pub rejected: Option<String>,
    /// Layer 2: `in_flight*10 + ewma_ms + cpu*2`, for candidates that matched.
    pub score: Option<f64>,
    /// Calls in flight through this router.
    pub in_flight: u64,
    /// Latency average (ms), once it served a call.
    pub ewma_ms: Option<f64>,
    /// CPU from its last fresh status report.
    pub cpu_percent: Option<f64>,
    /// Its score is above the overload threshold: no new keys.
    pub overloaded: bool,
    /// Layer 3, for the key's upstream: what the binding says (age, success rate).
    pub affinity: Option<String>,
}

/// One routing decision.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Decision {
    /// Unique id (a random per-process prefix and a counter).
    pub id: String,
    /// Unix milliseconds.
    pub at_ms: i64,
    /// What was routed (`tool "read"`, `resource "file:///a"`, `capability "vision"`).
    pub target: String,
    /// The replica group (or the server of its own) the name belongs to.
    pub group: String,
    /// A fingerprint of the affinity key (`k:` and 12 hex digits of its SHA-256), never the key.
    pub key: Option<String>,
    /// Where the key came from.
    pub key_source: KeySource,
    /// Every member of the group, with each layer's verdict.
    pub candidates: Vec<Candidate>,
    /// The chosen upstream.
    pub chosen: Option<String>,
    /// The layer that chose.
    pub layer: Layer,
    /// Why, in one sentence.
    pub reason: String,
    /// The call runs without capabilities it asked for (core ones dropped by fallback).
    pub degraded: bool,
    /// Capability labels fallback dropped, in order.
    pub dropped: Vec<String>,
    /// 0 for the first choice, then one more per retry elsewhere.
    pub attempt: u32,
    /// Upstreams left out because an earlier attempt of this call failed on them.
    pub excluded: Vec<String>,
}

/// The fingerprint of an affinity key shown in decisions (`k:` and 12 hex digits).
pub fn fingerprint(key: &str) -> String {
    let d = Sha256::digest(key.as_bytes());
    let mut s = String::with_capacity(14);
    s.push_str("k:");
    for b in d.iter().take(6) {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A new decision id: a random per-process prefix (from the OS) and a counter.
pub(crate) fn next_id() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let prefix = PREFIX.get_or_init(|| {
        let mut b = [0u8; 6];
        if getrandom::fill(&mut b).is_err() {
            // No OS randomness: the clock still tells processes apart.
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |t| t.as_nanos());
            b.copy_from_slice(&now.to_le_bytes()[..6]);
        }
        b.iter().map(|x| format!("{x:02x}")).collect()
    });
    format!("r-{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_hide_the_key_and_ids_are_unique() {
        let f = fingerprint("session-123");
        assert_eq!(f.len(), 14);
        assert!(!f.contains("session"));
        assert_eq!(f, fingerprint("session-123"));
        assert_ne!(f, fingerprint("session-124"));
        assert_ne!(next_id(), next_id());
    }
}
