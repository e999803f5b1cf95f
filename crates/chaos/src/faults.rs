//! Faults: the run-time switches that make a replica misbehave, and the handle that flips them.
//!
//! Every fault lives in one [`FaultSettings`] value held in a `tokio::sync::watch` channel, so
//! the HTTP gate, the MCP handler and the registration client all read the same state and
//! whoever waits on a fault (a request held by `partition`) wakes the moment it changes. The
//! control API (`POST /chaos/faults`) merges a [`FaultPatch`] into it; the library API offers
//! the same through [`Faults`] setters. `crash` is not a setting but an event: it cancels a
//! token the serving loop watches.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::tools::TOOL_NAMES;

/// Longest `slow_handshake_ms` / `slow_tools_ms` accepted (60 s), so a typo cannot hang a run.
pub const MAX_DELAY_MS: u64 = 60_000;
/// Capabilities `disable_capability` may remove besides single tools.
pub const CAPABILITY_NAMES: [&str; 2] = ["tools", "resources"];

/// How `fail_tools` picks the calls it fails.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FailTools {
    /// Each call fails with this probability (0.0..=1.0).
    Rate(f64),
    /// Every `n`-th call fails (the n-th, 2n-th, … since the fault was set); `n >= 1`.
    Every(u64),
}

/// The complete fault state of one replica; `Default` is a healthy replica.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSettings {
    /// `tools/call` is refused before execution with HTTP 503 + `Retry-After`; status reports
    /// claim 100 % cpu and extra pending requests.
    pub overload: bool,
    /// Tools (by name) or capabilities (`tools`, `resources`) removed from the catalogue.
    pub disable_capability: Vec<String>,
    /// At registration, claim only an encoding no router knows (`["protobuf"]`).
    pub bad_encoding: bool,
    /// `/mcp` holds every request unanswered until healed; status reports stop.
    pub partition: bool,
    /// Delay (ms) before `initialize` and `server/discover` are answered.
    pub slow_handshake_ms: u64,
    /// Delay (ms) before each tool body runs.
    pub slow_tools_ms: u64,
    /// Tool calls failing with a JSON-RPC internal error before their body runs.
    pub fail_tools: Option<FailTools>,
}

impl FaultSettings {
    /// Whether the `tools` capability is on.
    pub fn tools_enabled(&self) -> bool {
        !self.disabled("tools")
    }

    /// Whether the `resources` capability is on.
    pub fn resources_enabled(&self) -> bool {
        !self.disabled("resources")
    }

    fn disabled(&self, name: &str) -> bool {
        self.disable_capability.iter().any(|disabled| disabled == name)
    }

    /// The tools `tools/list` serves, in order.
    pub fn visible_tools(&self) -> Vec<&'static str> {
        if !self.tools_enabled() {
            return Vec::new();
        }
        TOOL_NAMES.into_iter().filter(|name| !self.disabled(name)).collect()
    }
}

/// A partial update of [`FaultSettings`]: absent fields stay as they are; `fail_tools: null`
/// clears that fault. `crash: true` crashes the replica.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultPatch {
    /// See [`FaultSettings::overload`].
    pub overload: Option<bool>,
    /// Replaces the whole list (see [`FaultSettings::disable_capability`]).
    pub disable_capability: Option<Vec<String>>,
    /// See [`FaultSettings::bad_encoding`].
    pub bad_encoding: Option<bool>,
    /// See [`FaultSettings::partition`].
    pub partition: Option<bool>,
    /// See [`FaultSettings::slow_handshake_ms`].
    pub slow_handshake_ms: Option<u64>,
    /// See [`FaultSettings::slow_tools_ms`].
    pub slow_tools_ms: Option<u64>,
    /// `Some(None)` (JSON `null`) clears the fault.
    #[serde(default, deserialize_with = "double_option")]
    pub fail_tools: Option<Option<FailTools>>,
    /// `true`: exit at once (binary) or close the listener and every connection (library).
    pub crash: Option<bool>,
}

fn double_option<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<FailTools>>, D::Error> {
    Option::<FailTools>::deserialize(deserializer).map(Some)
}

/// A fault setting the control API refuses, with the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultError {
    /// `disable_capability` names neither a tool nor a capability.
    #[error(
        "disable_capability: unknown name {0:?} (tools: read, put, append, work, whoami; capabilities: tools, resources)"
    )]
    UnknownCapability(String),
    /// A delay above [`MAX_DELAY_MS`].
    #[error("{field}: {value} ms is above the limit of {MAX_DELAY_MS} ms")]
    DelayTooLong {
        /// The field.
        field: &'static str,
        /// The value asked for.
        value: u64,
    },
    /// `fail_tools.rate` outside 0..=1 or `fail_tools.every` of 0.
    #[error("fail_tools: rate must be within 0.0..=1.0 and every must be at least 1")]
    BadFailTools,
    /// `crash` among the initial faults.
    #[error("crash cannot be an initial fault")]
    CrashAtStart,
}

/// What changed in the catalogue, for `notifications/tools/list_changed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListChange {
    /// The set of tools changed.
    Tools,
}

/// The cloneable handle on a replica's faults.
#[derive(Debug, Clone)]
pub struct Faults {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: watch::Sender<FaultSettings>,
    changes: broadcast::Sender<ListChange>,
    crashed: CancellationToken,
    /// Tool calls seen by `fail_tools` since it was last set.
    fail_seq: AtomicU64,
    /// xorshift state for `fail_tools.rate`.
    rng: AtomicU64,
}

impl Default for Faults {
    fn default() -> Self {
        Self::new()
    }
}

impl Faults {
    /// A healthy replica's faults.
    pub fn new() -> Self {
        let mut seed = [0u8; 8];
        let seed = match getrandom::fill(&mut seed) {
            Ok(()) => u64::from_le_bytes(seed) | 1,
            Err(_) => 0x9E37_79B9_7F4A_7C15,
        };
        let (changes, _) = broadcast::channel(16);
        Self {
            inner: Arc::new(Inner {
                settings: watch::Sender::new(FaultSettings::default()),
                changes,
                crashed: CancellationToken::new(),
                fail_seq: AtomicU64::new(0),
                rng: AtomicU64::new(seed),
            }),
        }
    }

    /// The current settings.
    pub fn current(&self) -> FaultSettings {
        self.inner.settings.borrow().clone()
    }

    /// A receiver that sees every change of the settings.
    pub fn watch(&self) -> watch::Receiver<FaultSettings> {
        self.inner.settings.subscribe()
    }

    /// Catalogue changes (tools disabled or enabled).
    pub fn list_changes(&self) -> broadcast::Receiver<ListChange> {
        self.inner.changes.subscribe()
    }

    /// Cancelled once the replica crashed.
    pub fn crashed(&self) -> &CancellationToken {
        &self.inner.crashed
    }

    /// Merges `patch` into the settings (all or nothing) and returns the new settings;
    /// `crash: true` crashes after the merge.
    pub fn apply(&self, patch: FaultPatch) -> Result<FaultSettings, FaultError> {
        let mut next = self.current();
        if let Some(value) = patch.overload {
            next.overload = value;
        }
        if let Some(names) = patch.disable_capability {
            for name in &names {
                if !TOOL_NAMES.contains(&name.as_str()) && !CAPABILITY_NAMES.contains(&name.as_str()) {
                    return Err(FaultError::UnknownCapability(name.clone()));
                }
            }
            let mut names = names;
            names.sort();
            names.dedup();
            next.disable_capability = names;
        }
        if let Some(value) = patch.bad_encoding {
            next.bad_encoding = value;
        }
        if let Some(value) = patch.partition {
            next.partition = value;
        }
        if let Some(value) = patch.slow_handshake_ms {
            next.slow_handshake_ms = check_delay("slow_handshake_ms", value)?;
        }
        if let Some(value) = patch.slow_tools_ms {
            next.slow_tools_ms = check_delay("slow_tools_ms", value)?;
        }
        if let Some(value) = patch.fail_tools {
            match value {
                Some(FailTools::Rate(rate)) if !(0.0..=1.0).contains(&rate) => {
                    return Err(FaultError::BadFailTools);
                }
                Some(FailTools::Every(0)) => return Err(FaultError::BadFailTools),
                _ => {}
            }
            next.fail_tools = value;
        }
        self.replace(next.clone());
        if patch.crash == Some(true) {
            self.crash();
        }
        Ok(next)
    }

    /// Back to a healthy replica (a crash cannot be undone).
    pub fn reset(&self) {
        self.replace(FaultSettings::default());
    }

    fn replace(&self, next: FaultSettings) {
        let mut tools_changed = false;
        self.inner.settings.send_modify(|settings| {
            tools_changed = settings.visible_tools() != next.visible_tools();
            if settings.fail_tools != next.fail_tools {
                self.inner.fail_seq.store(0, Ordering::Relaxed);
            }
            *settings = next;
        });
        if tools_changed {
            // No receiver (no session yet) is fine.
            let _ = self.inner.changes.send(ListChange::Tools);
        }
    }

    fn update(&self, change: impl FnOnce(&mut FaultSettings)) {
        let mut next = self.current();
        change(&mut next);
        self.replace(next);
    }

    /// Turns `overload` on or off.
    pub fn set_overload(&self, on: bool) {
        self.update(|settings| settings.overload = on);
    }

    /// Removes (`disabled = true`) or restores a tool or capability; unknown names are refused.
    pub fn set_disabled(&self, name: &str, disabled: bool) -> Result<(), FaultError> {
        let mut names = self.current().disable_capability;
        names.retain(|existing| existing != name);
        if disabled {
            names.push(name.to_owned());
        }
        self.apply(FaultPatch { disable_capability: Some(names), ..FaultPatch::default() }).map(drop)
    }

    /// Turns `bad_encoding` on or off.
    pub fn set_bad_encoding(&self, on: bool) {
        self.update(|settings| settings.bad_encoding = on);
    }

    /// Partitions (`true`) or heals (`false`) the replica.
    pub fn set_partition(&self, on: bool) {
        self.update(|settings| settings.partition = on);
    }

    /// Delays handshakes by `delay` (capped at [`MAX_DELAY_MS`]).
    pub fn set_slow_handshake(&self, delay: Duration) {
        let ms = capped_ms(delay);
        self.update(|settings| settings.slow_handshake_ms = ms);
    }

    /// Delays every tool body by `delay` (capped at [`MAX_DELAY_MS`]).
    pub fn set_slow_tools(&self, delay: Duration) {
        let ms = capped_ms(delay);
        self.update(|settings| settings.slow_tools_ms = ms);
    }

    /// Sets or clears `fail_tools`.
    pub fn set_fail_tools(&self, fail: Option<FailTools>) -> Result<(), FaultError> {
        self.apply(FaultPatch { fail_tools: Some(fail), ..FaultPatch::default() }).map(drop)
    }

    /// Crashes the replica: the process exits (binary) or the listener and every connection
    /// close (library).
    pub fn crash(&self) {
        self.inner.crashed.cancel();
    }

    /// Whether the tool call about to run must fail (`fail_tools`); advances the sequence.
    pub fn should_fail(&self) -> bool {
        let Some(fail) = self.inner.settings.borrow().fail_tools else {
            return false;
        };
        match fail {
            FailTools::Every(n) => {
                (self.inner.fail_seq.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(n.max(1))
            }
            FailTools::Rate(rate) => self.next_unit() < rate,
        }
    }

    /// A pseudo-random number in [0, 1).
    fn next_unit(&self) -> f64 {
        let step = |mut x: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let previous =
            self.inner.rng.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(step(x))).unwrap_or(1);
        #[allow(clippy::cast_precision_loss, reason = "53 random bits fit an f64 exactly")]
        let unit = (step(previous) >> 11) as f64 / (1u64 << 53) as f64;
        unit
    }
}

fn check_delay(field: &'static str, value: u64) -> Result<u64, FaultError> {
    if value > MAX_DELAY_MS { Err(FaultError::DelayTooLong { field, value }) } else { Ok(value) }
}

fn capped_ms(delay: Duration) -> u64 {
    u64::try_from(delay.as_millis()).unwrap_or(u64::MAX).min(MAX_DELAY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_merge_and_validate_all_or_nothing() {
        let faults = Faults::new();
        let patch: FaultPatch =
            serde_json::from_str(r#"{"overload": true, "fail_tools": {"every": 2}}"#).expect("patch");
        let settings = faults.apply(patch).expect("valid");
        assert!(settings.overload);
        assert_eq!(settings.fail_tools, Some(FailTools::Every(2)));
        let bad: FaultPatch =
            serde_json::from_str(r#"{"partition": true, "disable_capability": ["nope"]}"#).expect("patch");
        assert_eq!(faults.apply(bad), Err(FaultError::UnknownCapability("nope".into())));
        assert!(!faults.current().partition, "a refused patch changes nothing");
        let clear: FaultPatch = serde_json::from_str(r#"{"fail_tools": null}"#).expect("patch");
        assert_eq!(faults.apply(clear).expect("valid").fail_tools, None);
        assert!(faults.current().overload, "absent fields stay");
        assert!(serde_json::from_str::<FaultPatch>(r#"{"overlaod": true}"#).is_err());
    }

    #[test]
    fn every_nth_call_fails() {
        let faults = Faults::new();
        faults.set_fail_tools(Some(FailTools::Every(3))).expect("valid");
        let failed: Vec<bool> = (0..6).map(|_| faults.should_fail()).collect();
        assert_eq!(failed, [false, false, true, false, false, true]);
        faults.set_fail_tools(Some(FailTools::Rate(1.0))).expect("valid");
        assert!(faults.should_fail());
        faults.set_fail_tools(Some(FailTools::Rate(0.0))).expect("valid");
        assert!(!faults.should_fail());
    }

    #[test]
    fn disabling_hides_tools() {
        let mut settings = FaultSettings { disable_capability: vec!["append".into()], ..Default::default() };
        assert_eq!(settings.visible_tools(), ["read", "put", "work", "whoami"]);
        settings.disable_capability = vec!["tools".into()];
        assert!(settings.visible_tools().is_empty() && settings.resources_enabled());
    }

    #[test]
    fn disabling_a_tool_announces_a_list_change() {
        let faults = Faults::new();
        let mut changes = faults.list_changes();
        faults.set_disabled("append", true).expect("known tool");
        assert_eq!(changes.try_recv().ok(), Some(ListChange::Tools));
        faults.set_overload(true);
        assert!(changes.try_recv().is_err(), "overload does not change the catalogue");
        assert!(faults.set_disabled("nope", true).is_err());
    }
}
