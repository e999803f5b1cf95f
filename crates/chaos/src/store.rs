//! The replica's key/value store behind `read`, `put` and `append`: one string value and one
//! list of items per key, all bounded so that no caller can grow the process without limit.
//! Each replica has its own store; replicas do not share state (tests look at which replica
//! answered).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 256;
/// Longest value or item, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Most keys.
pub const MAX_KEYS: usize = 10_000;
/// Most items per key.
pub const MAX_ITEMS: usize = 100_000;
/// Most bytes held in values and items altogether.
pub const MAX_TOTAL_BYTES: usize = 32 * 1024 * 1024;

/// Why the store refused a write (a tool error, `isError: true`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A key or value over its size limit.
    #[error("{what} is {len} bytes, above the limit of {limit}")]
    TooLarge {
        /// `key`, `value` or `item`.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The store is full (keys, items or bytes).
    #[error("the store is full ({0})")]
    Full(&'static str),
}

#[derive(Debug, Default)]
struct Entry {
    value: Option<String>,
    items: Vec<String>,
}

/// What `read` sees for a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The value last `put`.
    pub value: Option<String>,
    /// How many items were appended.
    pub length: usize,
}

/// The bounded store.
#[derive(Debug, Default)]
pub struct Store {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    bytes: usize,
}

/// Checks a key's size.
pub fn check_key(key: &str) -> Result<(), StoreError> {
    check("key", key, MAX_KEY_BYTES)
}

fn check(what: &'static str, text: &str, limit: usize) -> Result<(), StoreError> {
    if text.len() > limit { Err(StoreError::TooLarge { what, len: text.len(), limit }) } else { Ok(()) }
}

impl Store {
    fn with<T>(&self, change: impl FnOnce(&mut Inner) -> T) -> T {
        change(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The value and list length under `key`.
    pub fn read(&self, key: &str) -> Read {
        self.with(|inner| match inner.entries.get(key) {
            Some(entry) => Read { value: entry.value.clone(), length: entry.items.len() },
            None => Read { value: None, length: 0 },
        })
    }

    /// Sets the value under `key`.
    pub fn put(&self, key: &str, value: &str) -> Result<(), StoreError> {
        check_key(key)?;
        check("value", value, MAX_VALUE_BYTES)?;
        self.with(|inner| {
            let old = inner.entries.get(key).and_then(|entry| entry.value.as_ref()).map_or(0, String::len);
            if !inner.entries.contains_key(key) && inner.entries.len() >= MAX_KEYS {
                return Err(StoreError::Full("keys"));
            }
            if inner.bytes - old + value.len() > MAX_TOTAL_BYTES {
                return Err(StoreError::Full("bytes"));
            }
            inner.bytes = inner.bytes - old + value.len();
            inner.entries.entry(key.to_owned()).or_default().value = Some(value.to_owned());
            Ok(())
        })
    }

    /// Appends `item` to the list under `key`; returns the new length.
    pub fn append(&self, key: &str, item: &str) -> Result<usize, StoreError> {
        check_key(key)?;
        check("item", item, MAX_VALUE_BYTES)?;
        self.with(|inner| {
            if !inner.entries.contains_key(key) && inner.entries.len() >= MAX_KEYS {
                return Err(StoreError::Full("keys"));
            }
            if inner.bytes + item.len() > MAX_TOTAL_BYTES {
                return Err(StoreError::Full("bytes"));
            }
            let entry = inner.entries.entry(key.to_owned()).or_default();
            if entry.items.len() >= MAX_ITEMS {
                return Err(StoreError::Full("items"));
            }
            entry.items.push(item.to_owned());
            let length = entry.items.len();
            inner.bytes += item.len();
            Ok(length)
        })
    }

    /// Empties the store.
    pub fn clear(&self) {
        self.with(|inner| *inner = Inner::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_append_read_and_limits() {
        let store = Store::default();
        store.put("a", "1").expect("put");
        assert_eq!(store.append("a", "x"), Ok(1));
        assert_eq!(store.append("a", "y"), Ok(2));
        assert_eq!(store.read("a"), Read { value: Some("1".into()), length: 2 });
        assert_eq!(store.read("missing"), Read { value: None, length: 0 });
        let long_key = "k".repeat(MAX_KEY_BYTES + 1);
        assert!(matches!(store.put(&long_key, "v"), Err(StoreError::TooLarge { what: "key", .. })));
        let long_value = "v".repeat(MAX_VALUE_BYTES + 1);
        assert!(matches!(store.append("a", &long_value), Err(StoreError::TooLarge { what: "item", .. })));
    }
}
