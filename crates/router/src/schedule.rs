//! The scheduler behind [`crate::RouteTable::route`]: replica groups ([`groups`]), then per call
//! three layers over the group's members —
//!
//! 1. **capability match**: the member is ready (not draining), offers the item, and has the
//!    route's core and optional capability labels;
//! 2. **load score** `in_flight*10 + ewma_latency_ms + cpu_percent*2` (in flight and latency as
//!    this router observes them, cpu from a fresh status report), overloaded above
//!    [`SchedulerConfig::overload_threshold`];
//! 3. **session affinity**: a key stays on its upstream within the window while the key's
//!    success rate there stays at or above [`SchedulerConfig::min_success_rate`]; otherwise,
//!    and for new keys, the lowest score among those not overloaded wins (ties in turn).
//!
//! When nobody passes layer 1, fallback drops optional capabilities one at a time, then core
//! ones (the call is then *degraded*), at most [`SchedulerConfig::max_fallback_retries`] steps;
//! then the call fails with every candidate's rejection. Every decision ([`Decision`]) is
//! published as [`crate::Event::Route`] and kept in a bounded ring for the admin API.

pub mod affinity;
pub mod config;
pub mod groups;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

pub use self::config::SchedulerConfig;
use self::groups::{Group, Member};
pub use crate::decision::{self, Candidate, Decision, KeySource, Layer, fingerprint};
use crate::events::{Event, EventBus, now_ms};

/// Decisions kept for the admin API.
pub const DECISIONS_KEPT: usize = 2048;

/// What a call asks of the scheduler besides its name.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ask<'a> {
    /// The affinity key (an empty string is no key).
    pub key: Option<&'a str>,
    /// Where the key came from.
    pub key_source: Option<KeySource>,
    /// Capability labels the upstream must have (fallback may drop them: degraded).
    pub core: &'a [String],
    /// Capability labels it should have (fallback drops these first).
    pub optional: &'a [String],
    /// Upstreams an earlier attempt of this call failed on.
    pub exclude: &'a [String],
    /// 0 for the first attempt.
    pub attempt: u32,
}

/// What an item a call names needs of a member.
pub(crate) trait Offers {
    /// `None` when the member offers it, else why not.
    fn missing(&self, member: &Member) -> Option<String>;
}

/// The scheduler's live state (shared by every route table of one registry).
#[derive(Debug)]
pub struct Scheduler {
    config: RwLock<SchedulerConfig>,
    affinity: affinity::Affinity,
    ring: Mutex<VecDeque<Arc<Decision>>>,
    turn: AtomicU64,
    events: EventBus,
    /// Detection signatures of servers when they were last ready.
    signatures: Mutex<std::collections::HashMap<String, (String, [u8; 16])>>,
}

impl Scheduler {
    /// A scheduler publishing on `events`.
    pub fn new(config: SchedulerConfig, events: EventBus) -> Self {
        Scheduler {
            config: RwLock::new(config),
            affinity: affinity::Affinity::default(),
            ring: Mutex::new(VecDeque::with_capacity(64)),
            turn: AtomicU64::new(0),
            events,
            signatures: Mutex::default(),
        }
    }

    /// The settings in force.
    pub fn config(&self) -> SchedulerConfig {
        self.config.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Swaps the settings (a config reload); bindings are kept.
    pub fn set_config(&self, config: SchedulerConfig) {
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = config;
    }

    /// The bindings of affinity keys.
    pub fn affinity(&self) -> &affinity::Affinity {
        &self.affinity
    }

    /// The newest decisions, newest first, at most `limit`; only those matching `keep`.
    pub fn decisions(&self, limit: usize, keep: impl Fn(&Decision) -> bool) -> Vec<Arc<Decision>> {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        ring.iter().rev().filter(|d| keep(d)).take(limit).cloned().collect()
    }

    /// One decision by id, while it is kept.
    pub fn decision(&self, id: &str) -> Option<Arc<Decision>> {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        ring.iter().rev().find(|d| d.id == id).cloned()
    }

    /// How a routed call went on its upstream: feeds the key's success rate there.
    pub fn outcome(&self, decision: &Decision, ok: bool) {
        if let (Some(key), Some(server)) = (&decision.key, &decision.chosen) {
            self.affinity.outcome(&decision.group, key, server, ok);
        }
    }

    pub(crate) fn remember_signature(
        &self,
        server: &str,
        sig: Option<(String, [u8; 16])>,
    ) -> Option<(String, [u8; 16])> {
        let mut known = self.signatures.lock().unwrap_or_else(PoisonError::into_inner);
        match sig {
            Some(s) => {
                known.insert(server.to_owned(), s.clone());
                Some(s)
            }
            None => known.get(server).cloned(),
        }
    }

    pub(crate) fn forget_signatures_except(&self, servers: &std::collections::HashSet<&str>) {
        self.signatures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|s, _| servers.contains(s.as_str()));
    }

    fn record(&self, decision: Decision) -> Arc<Decision> {
        let d = Arc::new(decision);
        {
            let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
            if ring.len() >= DECISIONS_KEPT {
                ring.pop_front();
            }
            ring.push_back(d.clone());
        }
        self.events.publish_with(|| Event::Route { decision: Box::new((*d).clone()) });
        d
    }

    /// Chooses the member of `group` that serves `item` (described as `target` in the
    /// decision). `Err` carries the recorded decision whose reason lists every rejection.
    pub(crate) fn choose(
        &self,
        group: &Group,
        target: String,
        item: &dyn Offers,
        ask: &Ask<'_>,
    ) -> Result<Arc<Decision>, Arc<Decision>> {
        let cfg = self.config();
        let key = ask.key.filter(|k| !k.is_empty()).map(fingerprint);
        let key_source = match (&key, ask.key_source) {
            (None, _) => KeySource::None,
            (Some(_), Some(s)) => s,
            (Some(_), None) => KeySource::Header,
        };
        let report_age = cfg.report_max_age();
        let mut core: Vec<String> = ask.core.to_vec();
        let mut optional: Vec<String> = ask.optional.to_vec();
        let mut dropped = Vec::new();
        let mut degraded = false;
        let mut step = 0u32;
        let (candidates, passed) = loop {
            let candidates: Vec<Candidate> = group
                .members
                .iter()
                .map(|m| {
                    let rejected = reject(m, item, &core, &optional, ask.exclude);
                    let in_flight = m.load.in_flight();
                    let ewma_ms = m.load.ewma_ms();
                    let cpu_percent = m.load.fresh_report(report_age).map(|r| r.cpu_usage_percent);
                    let score = rejected.is_none().then(|| {
                        in_flight as f64 * 10.0 + ewma_ms.unwrap_or(0.0) + cpu_percent.unwrap_or(0.0) * 2.0
                    });
                    Candidate {
                        server: m.server.clone(),
                        rejected,
                        overloaded: score.is_some_and(|s| s > cfg.overload_threshold),
                        score,
                        in_flight,
                        ewma_ms,
                        cpu_percent,
                        affinity: None,
                    }
                })
                .collect();
            if candidates.iter().any(|c| c.score.is_some()) {
                break (candidates, true);
            }
            let relax =
                if step < cfg.max_fallback_retries { optional.pop().map(|l| (l, false)) } else { None };
            let relax = relax.or_else(|| {
                (step < cfg.max_fallback_retries).then(|| core.pop().map(|l| (l, true))).flatten()
            });
            match relax {
                Some((label, is_core)) => {
                    dropped.push(label);
                    degraded |= is_core;
                    step += 1;
                }
                None => break (candidates, false),
            }
        };
        let mut d = Decision {
            id: crate::decision::next_id(),
            at_ms: now_ms(),
            target,
            group: group.name.clone(),
            key,
            key_source,
            candidates,
            chosen: None,
            layer: Layer::None,
            reason: String::new(),
            degraded,
            dropped,
            attempt: ask.attempt,
            excluded: ask.exclude.to_vec(),
        };
        if passed {
            // Layers 2 and 3 choose, and say which one did.
            self.settle(&mut d, &cfg, step > 0);
            return Ok(self.record(d));
        }
        let why: Vec<String> = d
            .candidates
            .iter()
            .map(|c| format!("{}: {}", c.server, c.rejected.as_deref().unwrap_or("rejected")))
            .collect();
        d.reason = if why.is_empty() {
            format!("no upstream in {:?}", group.name)
        } else {
            format!("no upstream of {:?} can serve {}: {}", group.name, d.target, why.join("; "))
        };
        Err(self.record(d))
    }

    /// Layers 2 and 3 over the candidates that passed layer 1.
    fn settle(&self, d: &mut Decision, cfg: &SchedulerConfig, fell_back: bool) {
        let passing: Vec<usize> =
            (0..d.candidates.len()).filter(|i| d.candidates[*i].score.is_some()).collect();
        let fallback_note = || {
            if d.dropped.is_empty() {
                String::new()
            } else {
                format!(
                    " after dropping {} {}",
                    if d.degraded { "capabilities" } else { "optional capabilities" },
                    d.dropped.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>().join(", ")
                )
            }
        };
        if d.candidates.len() == 1 && passing.len() == 1 {
            d.chosen = Some(d.candidates[0].server.clone());
            d.layer = if fell_back { Layer::Fallback } else { Layer::Only };
            d.reason = format!(
                "{} is the only upstream of {:?}{}",
                d.candidates[0].server,
                d.group,
                fallback_note()
            );
            return;
        }
        // Layer 3: the key's binding.
        let mut moved = None;
        if let Some(key) = &d.key
            && let Some(b) = self.affinity.get(&d.group, key, cfg.affinity_window)
        {
            {
                let idx = d.candidates.iter().position(|c| c.server == b.server);
                let rate = b.success_rate();
                let note = format!(
                    "bound {:.0} s ago, {} ok / {} failed ({:.0} %)",
                    b.since.elapsed().as_secs_f64(),
                    b.ok,
                    b.failed,
                    rate * 100.0
                );
                if let Some(i) = idx {
                    d.candidates[i].affinity = Some(note.clone());
                }
                match idx {
                    Some(i) if d.candidates[i].score.is_some() && rate >= cfg.min_success_rate => {
                        d.chosen = Some(b.server.clone());
                        d.layer = if fell_back { Layer::Fallback } else { Layer::Affinity };
                        d.reason =
                            format!("affinity: key {key} stays on {} ({note}){}", b.server, fallback_note());
                        self.affinity.bind(&d.group, key, &b.server, cfg.affinity_window);
                        return;
                    }
                    Some(i) if d.candidates[i].score.is_some() => {
                        moved = Some(format!(
                            "key {key} moved off {}: its success rate for the key fell to {:.0} % (< {:.0} %)",
                            b.server,
                            rate * 100.0,
                            cfg.min_success_rate * 100.0
                        ));
                    }
                    Some(i) => {
                        moved = Some(format!(
                            "key {key} moved off {}: {}",
                            b.server,
                            d.candidates[i].rejected.as_deref().unwrap_or("not a candidate")
                        ));
                    }
                    None => moved = Some(format!("key {key} moved off {}: it left the group", b.server)),
                }
            }
        }
        // Layer 2: the lowest score among those not overloaded (all overloaded: the lowest).
        let scores: Vec<f64> = d.candidates.iter().map(|c| c.score.unwrap_or(f64::INFINITY)).collect();
        let score = |i: usize| scores[i];
        let calm: Vec<usize> = passing.iter().copied().filter(|i| !d.candidates[*i].overloaded).collect();
        let pool = if calm.is_empty() { &passing } else { &calm };
        let best = pool.iter().map(|i| score(*i)).fold(f64::INFINITY, f64::min);
        let tied: Vec<usize> = pool.iter().copied().filter(|i| score(*i) <= best + 1e-9).collect();
        let pick = tied[(self.turn.fetch_add(1, Ordering::Relaxed) as usize) % tied.len()];
        let server = d.candidates[pick].server.clone();
        let mut reason = match (&d.key, &moved) {
            (_, Some(m)) => format!("{m}; lowest load score {best:.1} is {server}"),
            (Some(key), None) => format!("new key {key}: lowest load score {best:.1} is {server}"),
            (None, None) => format!("no affinity key: lowest load score {best:.1} is {server}"),
        };
        if tied.len() > 1 {
            reason.push_str(&format!(" ({} tied, taken in turn)", tied.len()));
        }
        if calm.is_empty() {
            reason.push_str(&format!("; every candidate is overloaded (> {})", cfg.overload_threshold));
        } else if calm.len() < passing.len() {
            let hot: Vec<&str> = passing
                .iter()
                .filter(|i| d.candidates[**i].overloaded)
                .map(|i| d.candidates[*i].server.as_str())
                .collect();
            reason.push_str(&format!("; overloaded, no new keys: {}", hot.join(", ")));
        }
        reason.push_str(&fallback_note());
        if let Some(key) = &d.key {
            self.affinity.bind(&d.group, key, &server, cfg.affinity_window);
        }
        d.chosen = Some(server);
        d.layer = if fell_back { Layer::Fallback } else { Layer::Score };
        d.reason = reason;
    }
}

/// Layer 1 for one member.
fn reject(
    m: &Member,
    item: &dyn Offers,
    core: &[String],
    optional: &[String],
    exclude: &[String],
) -> Option<String> {
    if exclude.iter().any(|s| s == &m.server) {
        return Some("an earlier attempt of this call failed there".into());
    }
    if m.load.draining() {
        return Some("draining (deregistered)".into());
    }
    if m.state != crate::state::ServerState::Ready {
        return Some(format!("{}: {}", m.state.as_str(), m.reason));
    }
    if let Some(why) = item.missing(m) {
        return Some(why);
    }
    let lacks: Vec<&String> = core.iter().chain(optional).filter(|l| !m.labels.contains(l)).collect();
    if !lacks.is_empty() {
        let list: Vec<String> = lacks.iter().map(|l| format!("{l:?}")).collect();
        return Some(format!("lacks capability {}", list.join(", ")));
    }
    None
}

#[cfg(test)]
mod tests;
