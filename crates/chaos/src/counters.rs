//! Execution counters: how often each tool body actually RAN on this replica, and how often
//! `append` ran per key. A call a fault refused first (`overload`, `fail_tools`, a disabled
//! tool) is not an execution; those refusals have counters of their own. This is what tests use
//! to prove that a router never executed a non-idempotent call twice.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

/// Most distinct keys counted for `append`; later keys go to `append_keys_overflow`.
pub const MAX_COUNTED_KEYS: usize = 10_000;

/// A snapshot of the counters (the `counters` object of `GET /chaos`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CounterSnapshot {
    /// Executions per tool name (only tools that ran at least once).
    pub executions: BTreeMap<String, u64>,
    /// `append` executions per key.
    pub append_by_key: BTreeMap<String, u64>,
    /// `append` executions whose key did not fit in `append_by_key`.
    pub append_keys_overflow: u64,
    /// `tools/call` requests refused by `overload` (never executed).
    pub refused_overload: u64,
    /// `tools/call` requests failed by `fail_tools` (never executed).
    pub failed_injected: u64,
    /// Requests `partition` held.
    pub held_partition: u64,
}

impl CounterSnapshot {
    /// Executions of `tool`.
    pub fn executions(&self, tool: &str) -> u64 {
        self.executions.get(tool).copied().unwrap_or(0)
    }

    /// Executions of `append` for `key`.
    pub fn appends(&self, key: &str) -> u64 {
        self.append_by_key.get(key).copied().unwrap_or(0)
    }
}

/// The cloneable handle on a replica's counters.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    inner: Arc<Mutex<CounterSnapshot>>,
}

impl Counters {
    fn with<T>(&self, change: impl FnOnce(&mut CounterSnapshot) -> T) -> T {
        change(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A copy of the counters now.
    pub fn snapshot(&self) -> CounterSnapshot {
        self.with(|counters| counters.clone())
    }

    /// Zeroes every counter.
    pub fn reset(&self) {
        self.with(|counters| *counters = CounterSnapshot::default());
    }

    /// Counts one execution of `tool` (`key`: the key of an `append`).
    pub fn executed(&self, tool: &'static str, append_key: Option<&str>) {
        self.with(|counters| {
            *counters.executions.entry(tool.to_owned()).or_default() += 1;
            if let Some(key) = append_key {
                if let Some(count) = counters.append_by_key.get_mut(key) {
                    *count += 1;
                } else if counters.append_by_key.len() < MAX_COUNTED_KEYS {
                    counters.append_by_key.insert(key.to_owned(), 1);
                } else {
                    counters.append_keys_overflow += 1;
                }
            }
        });
    }

    /// Counts a call refused by `overload`.
    pub fn refused_overload(&self) {
        self.with(|counters| counters.refused_overload += 1);
    }

    /// Counts a call failed by `fail_tools`.
    pub fn failed_injected(&self) {
        self.with(|counters| counters.failed_injected += 1);
    }

    /// Counts a request held by `partition`.
    pub fn held_partition(&self) {
        self.with(|counters| counters.held_partition += 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_keys_are_bounded() {
        let counters = Counters::default();
        for n in 0..=MAX_COUNTED_KEYS {
            counters.executed("append", Some(&format!("k{n}")));
        }
        counters.executed("append", Some("k0"));
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.append_by_key.len(), MAX_COUNTED_KEYS);
        assert_eq!(snapshot.append_keys_overflow, 1);
        assert_eq!(snapshot.appends("k0"), 2);
        assert_eq!(snapshot.executions("append"), MAX_COUNTED_KEYS as u64 + 2);
    }
}
