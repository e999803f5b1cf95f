//! Session affinity: which upstream of a group an affinity key is bound to, since when, and how
//! the key's calls there went. Bounded: at most [`MAX_BINDINGS`] keys; a full table drops the
//! expired bindings, then the least recently used one.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Most keys remembered at once.
pub const MAX_BINDINGS: usize = 10_000;

/// One key's upstream in one group.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    /// The upstream.
    pub server: String,
    /// When the key was bound there.
    pub since: Instant,
    /// Its last call.
    pub last: Instant,
    /// Calls of the key that succeeded there.
    pub ok: u64,
    /// Calls of the key that failed there.
    pub failed: u64,
}

impl Binding {
    /// Share of the key's calls that succeeded there (1.0 before any).
    pub fn success_rate(&self) -> f64 {
        let n = self.ok + self.failed;
        if n == 0 { 1.0 } else { self.ok as f64 / n as f64 }
    }
}

/// The table of bindings, keyed by (group, key fingerprint).
#[derive(Debug, Default)]
pub struct Affinity {
    map: Mutex<HashMap<(String, String), Binding>>,
}

impl Affinity {
    /// The key's binding in `group`, when its last call is within `window`.
    pub fn get(&self, group: &str, key: &str, window: Duration) -> Option<Binding> {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let k = (group.to_owned(), key.to_owned());
        match map.get(&k) {
            Some(b) if b.last.elapsed() <= window => Some(b.clone()),
            Some(_) => {
                map.remove(&k);
                None
            }
            None => None,
        }
    }

    /// Binds the key to `server` (a new binding starts its counts afresh), or marks its use.
    pub fn bind(&self, group: &str, key: &str, server: &str, window: Duration) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let k = (group.to_owned(), key.to_owned());
        if let Some(b) = map.get_mut(&k)
            && b.server == server
        {
            b.last = now;
            return;
        }
        if map.len() >= MAX_BINDINGS && !map.contains_key(&k) {
            map.retain(|_, b| b.last.elapsed() <= window);
            if map.len() >= MAX_BINDINGS
                && let Some(oldest) = map.iter().min_by_key(|(_, b)| b.last).map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(k, Binding { server: server.to_owned(), since: now, last: now, ok: 0, failed: 0 });
    }

    /// Counts the outcome of one of the key's calls on `server` (ignored when the key has moved).
    pub fn outcome(&self, group: &str, key: &str, server: &str, ok: bool) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(b) = map.get_mut(&(group.to_owned(), key.to_owned()))
            && b.server == server
        {
            if ok {
                b.ok += 1;
            } else {
                b.failed += 1;
            }
        }
    }

    /// Keys bound now.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether no key is bound.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every binding (for the admin API), newest use first, at most `limit`.
    pub fn snapshot(&self, limit: usize) -> Vec<(String, String, Binding)> {
        let map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<_> = map.iter().map(|((g, k), b)| (g.clone(), k.clone(), b.clone())).collect();
        all.sort_by_key(|b| std::cmp::Reverse(b.2.last));
        all.truncate(limit);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Duration = Duration::from_secs(300);

    #[tokio::test(start_paused = true)]
    async fn a_binding_lasts_its_window_from_the_last_call() {
        let a = Affinity::default();
        a.bind("g", "k", "s1", W);
        tokio::time::advance(Duration::from_secs(200)).await;
        a.bind("g", "k", "s1", W);
        tokio::time::advance(Duration::from_secs(200)).await;
        assert_eq!(a.get("g", "k", W).map(|b| b.server), Some("s1".into()), "used 200 s ago");
        tokio::time::advance(Duration::from_secs(101)).await;
        assert_eq!(a.get("g", "k", W), None, "301 s since its last call");
        assert!(a.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn outcomes_count_for_the_bound_upstream_only_and_rebinding_resets() {
        let a = Affinity::default();
        a.bind("g", "k", "s1", W);
        for _ in 0..19 {
            a.outcome("g", "k", "s1", true);
        }
        a.outcome("g", "k", "s1", false);
        a.outcome("g", "k", "s2", false);
        let b = a.get("g", "k", W).expect("bound");
        assert_eq!((b.ok, b.failed), (19, 1));
        assert!((b.success_rate() - 0.95).abs() < 1e-9);
        a.bind("g", "k", "s2", W);
        assert_eq!(a.get("g", "k", W).map(|b| (b.server, b.ok, b.failed)), Some(("s2".into(), 0, 0)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_is_bounded() {
        let a = Affinity::default();
        for i in 0..MAX_BINDINGS + 5 {
            a.bind("g", &format!("k{i}"), "s", W);
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        assert_eq!(a.len(), MAX_BINDINGS);
        assert_eq!(a.get("g", "k0", W), None, "the least recently used went first");
        assert!(a.get("g", &format!("k{}", MAX_BINDINGS + 4), W).is_some());
    }
}
