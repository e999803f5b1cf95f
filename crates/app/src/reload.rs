//! Configuration reload: the config file is watched (its modification time and a hash of its
//! text, polled every second — portable, and a file rewritten within one timestamp tick is
//! still seen), re-read with the same `mcp.json` files and `serve` flags as at start, and
//! applied without dropping calls in flight:
//!
//! - servers added, removed or changed (a changed one is removed and added again, alone);
//!   a server leaving first drains: no new calls, the ones in flight finish (bounded by
//!   [`ReloadConfig::drain_wait`]), then it is removed;
//! - the `[router]` registration, label and scheduler settings are swapped at once
//!   ([`crate::App::router_settings`], and the registration service's settings).
//!
//! A file that does not parse or validate changes nothing: the old configuration stays, the
//! error is logged and published ([`ReloadStatus::error`], [`crate::App::reloads`]). Keys that
//! shape listeners, the store or the registry's own timings (`[endpoint]`, `[store]`, the
//! registration paths, `[router]` refresh/probe/handshake settings) take effect at the next
//! start. Servers that registered themselves or were added through the admin API are not the
//! file's and are left alone.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use switchboard_gateway::registration::Registration;
use switchboard_router::{Registry, ServerSpec};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::{AppConfig, RouterSettings, ServeFlags};

/// Default period of the file check.
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// Default time a leaving server's calls get to finish.
pub const DEFAULT_DRAIN_WAIT: Duration = Duration::from_secs(30);
/// How often a drain looks at the calls still in flight.
const DRAIN_POLL: Duration = Duration::from_millis(10);

/// What to watch and how to re-read it.
#[derive(Debug, Clone)]
pub struct ReloadConfig {
    /// The config file.
    pub path: PathBuf,
    /// The extra `mcp.json` files given at start.
    pub mcp_json: Vec<PathBuf>,
    /// The `--db` override given at start.
    pub db: Option<PathBuf>,
    /// The `serve` flags given at start (applied to every reloaded configuration).
    pub flags: Option<ServeFlags>,
    /// Period of the file check.
    pub poll: Duration,
    /// How long a leaving server's calls may take.
    pub drain_wait: Duration,
}

impl ReloadConfig {
    /// Watches `path` with the default period and drain wait.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ReloadConfig {
            path: path.into(),
            mcp_json: Vec::new(),
            db: None,
            flags: None,
            poll: DEFAULT_POLL,
            drain_wait: DEFAULT_DRAIN_WAIT,
        }
    }
}

/// The outcome of the last reload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadStatus {
    /// Reloads attempted (a changed file that did not parse counts).
    pub attempts: u64,
    /// Reloads applied.
    pub applied: u64,
    /// Servers the last applied reload added, removed and replaced.
    pub added: Vec<String>,
    /// See `added`.
    pub removed: Vec<String>,
    /// See `added`.
    pub changed: Vec<String>,
    /// Why the last attempt was refused (the old configuration stayed), or a server it could
    /// not add; `None` when it went through.
    pub error: Option<String>,
}

/// The watcher's handles on the running app.
pub(crate) struct Reloader {
    pub(crate) registry: Registry,
    pub(crate) registration: Registration,
    pub(crate) settings: watch::Sender<Arc<RouterSettings>>,
    pub(crate) status: watch::Sender<ReloadStatus>,
    pub(crate) current: AppConfig,
    pub(crate) config: ReloadConfig,
    /// The file as it was when watching began (read before the task starts, so a change made
    /// right after `watch_config` is never taken for the baseline).
    pub(crate) baseline: Fingerprint,
}

/// What identifies a version of the file.
pub(crate) type Fingerprint = Option<(SystemTime, [u8; 32])>;

pub(crate) fn fingerprint(path: &std::path::Path) -> Fingerprint {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    let text = std::fs::read(path).ok()?;
    Some((modified, Sha256::digest(&text).into()))
}

impl Reloader {
    /// Watches until `cancel`.
    pub(crate) async fn run(mut self, cancel: CancellationToken) {
        let mut last = self.baseline;
        let mut last_hash = last.map(|(_, h)| h);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(self.config.poll) => {}
            }
            let now = fingerprint(&self.config.path);
            if now == last {
                continue;
            }
            last = now;
            // Touched but not changed: nothing to do.
            let hash = now.map(|(_, h)| h);
            if hash == last_hash || hash.is_none() {
                continue;
            }
            last_hash = hash;
            self.reload().await;
        }
    }

    /// Re-reads the file and applies it, or keeps the old configuration and says why.
    pub(crate) async fn reload(&mut self) {
        let c = &self.config;
        let loaded = crate::config::load(Some(&c.path), &c.mcp_json, c.db.as_deref()).and_then(|mut new| {
            if let Some(flags) = &c.flags {
                new.apply_serve_flags(flags.clone())?;
            }
            Ok(new)
        });
        let new = match loaded {
            Ok(n) => n,
            Err(e) => {
                let error = format!("{e:#}");
                tracing::warn!(file = %c.path.display(), %error, "config reload refused; the running configuration stays");
                self.status.send_modify(|s| {
                    s.attempts += 1;
                    s.error = Some(error);
                });
                return;
            }
        };
        self.apply(new).await;
    }

    async fn apply(&mut self, new: AppConfig) {
        let by_name = |c: &AppConfig| -> BTreeMap<String, ServerSpec> {
            c.servers.iter().map(|s| (s.name.clone(), s.clone())).collect()
        };
        let (old, next) = (by_name(&self.current), by_name(&new));
        let removed: Vec<String> = old.keys().filter(|n| !next.contains_key(*n)).cloned().collect();
        let added: Vec<String> = next.keys().filter(|n| !old.contains_key(*n)).cloned().collect();
        let changed: Vec<String> = next
            .iter()
            .filter(|(n, s)| old.get(*n).is_some_and(|o| o != *s))
            .map(|(n, _)| n.clone())
            .collect();
        for name in removed.iter().chain(&changed) {
            self.drain_and_remove(name).await;
        }
        let mut errors = Vec::new();
        for name in added.iter().chain(&changed) {
            if let Err(e) = self.registry.add(next[name].clone()).await {
                errors.push(e.to_string());
            }
        }
        self.registration.set_config(new.router.registration.clone());
        self.registry.scheduler().set_config(new.router.scheduler.clone());
        self.settings.send_replace(Arc::new(new.router.clone()));
        tracing::info!(?added, ?removed, ?changed, "config reloaded");
        let error = (!errors.is_empty()).then(|| errors.join("; "));
        if let Some(e) = &error {
            tracing::warn!(error = %e, "config reload: some servers could not be added");
        }
        self.current = new;
        self.status.send_modify(|s| {
            s.attempts += 1;
            s.applied += 1;
            (s.added, s.removed, s.changed, s.error) = (added, removed, changed, error);
        });
    }

    /// No new calls for `name`, the ones in flight finish (bounded), then it goes.
    async fn drain_and_remove(&self, name: &str) {
        let Some(entry) = self.registry.entry(name) else { return };
        self.registry.set_draining(name, true);
        let deadline = tokio::time::Instant::now() + self.config.drain_wait;
        while entry.load().in_flight() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(DRAIN_POLL).await;
        }
        let left = entry.load().in_flight();
        if left > 0 {
            tracing::warn!(server = %name, left, "config reload: calls still in flight after the drain wait; cancelling them");
        }
        self.registry.remove(name).await;
    }
}
