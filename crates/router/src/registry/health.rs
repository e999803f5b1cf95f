//! Health: active probes of a connected upstream and its circuit breaker.
//!
//! Every connected server is probed every `probe_interval` (an HTTP server's own health path
//! when its config names one, `[servers.X] health_path`; else MCP `ping` for a 2025-11-25
//! server, `server/discover` for a 2026-07-28 one, both over the server's existing client),
//! each probe bounded by `probe_timeout`. Failures feed a [`Breaker`]: `failure_threshold`
//! failures in a row — or one refused connection, which is decisive — open it (the server is
//! `unavailable`, nothing is routed to it); after a backoff it is half-open: one probe, whose
//! success closes it (the server is `ready` again and re-listed) and whose failure opens it
//! again with the backoff doubled, capped at [`MAX_BACKOFF`]. A slow probe (over half the
//! timeout) or a failure below the threshold makes the server `degraded`, not `unavailable`.
//!
//! The breaker is plain data driven by the supervisor (`supervise`), which owns the state
//! changes; this module never touches the registry.

use std::time::Duration;

use serde_json::json;
use switchboard_transport::McpClient;
use switchboard_transport::client::ClientError;
use switchboard_wire::{Era, method};
use tokio::time::Instant;

/// Longest wait between half-open probes.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BreakerState {
    /// Calls flow; failures are counted.
    Closed,
    /// No calls; the next probe is due at the instant.
    Open {
        /// When the half-open probe is due.
        until: Instant,
    },
    /// One probe decides.
    HalfOpen,
}

/// A per-upstream circuit breaker (closed → open → half-open).
#[derive(Debug, Clone)]
pub(crate) struct Breaker {
    state: BreakerState,
    threshold: u32,
    failures: u32,
    initial: Duration,
    backoff: Duration,
    /// Wall-clock milliseconds of the first failure of the current run.
    first_failure_ms: Option<i64>,
}

/// What a probe outcome did to the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Healthy (or recovered: `recovered` is true when it was open or half-open).
    Healthy {
        /// The breaker was not closed before.
        recovered: bool,
    },
    /// A failure that did not open the breaker.
    Failing,
    /// The breaker is (now, or still) open.
    Opened,
}

impl Breaker {
    /// A closed breaker opening after `threshold` failures in a row, first backoff `initial`.
    pub(crate) fn new(threshold: u32, initial: Duration) -> Self {
        Breaker {
            state: BreakerState::Closed,
            threshold: threshold.max(1),
            failures: 0,
            initial,
            backoff: initial,
            first_failure_ms: None,
        }
    }

    /// The current state, with an open breaker turned half-open once its backoff passed.
    pub(crate) fn state(&mut self, now: Instant) -> BreakerState {
        if let BreakerState::Open { until } = self.state
            && now >= until
        {
            self.state = BreakerState::HalfOpen;
        }
        self.state
    }

    /// The backoff an open breaker waits now.
    pub(crate) fn backoff(&self) -> Duration {
        self.backoff
    }

    /// Failures in a row so far.
    pub(crate) fn failures(&self) -> u32 {
        self.failures
    }

    /// Wall-clock milliseconds of the first failure of the current run.
    pub(crate) fn first_failure_ms(&self) -> Option<i64> {
        self.first_failure_ms
    }

    /// A probe or call succeeded.
    pub(crate) fn success(&mut self) -> Verdict {
        let recovered = self.state != BreakerState::Closed;
        self.state = BreakerState::Closed;
        self.failures = 0;
        self.backoff = self.initial;
        self.first_failure_ms = None;
        Verdict::Healthy { recovered }
    }

    /// A probe or call failed at `now` (`decisive`: a refused connection).
    pub(crate) fn failure(&mut self, now: Instant, now_ms: i64, decisive: bool) -> Verdict {
        self.failures = self.failures.saturating_add(1);
        self.first_failure_ms.get_or_insert(now_ms);
        match self.state(now) {
            BreakerState::HalfOpen => {
                // The trial failed: open again, waiting twice as long.
                self.backoff = self.backoff.saturating_mul(2).min(MAX_BACKOFF);
                self.state = BreakerState::Open { until: now + self.backoff };
                Verdict::Opened
            }
            BreakerState::Open { .. } => Verdict::Opened,
            BreakerState::Closed if decisive || self.failures >= self.threshold => {
                self.backoff = self.initial;
                self.state = BreakerState::Open { until: now + self.backoff };
                Verdict::Opened
            }
            BreakerState::Closed => Verdict::Failing,
        }
    }
}

/// Why a probe failed.
#[derive(Debug, Clone)]
pub(crate) struct ProbeFailure {
    /// Caller-safe: "connection refused", "no answer within 2000 ms", ….
    pub(crate) reason: String,
    /// A refused connection: the server is not there at all.
    pub(crate) decisive: bool,
}

/// Whether a transport error text says the connection was refused.
pub(crate) fn is_refused(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("connection refused") || t.contains("refused")
}

/// A caller-safe short reason for a failed request.
pub(crate) fn failure_of(e: &ClientError) -> ProbeFailure {
    let text = e.to_string();
    if is_refused(&text) {
        return ProbeFailure { reason: "connection refused".into(), decisive: true };
    }
    let reason = match e {
        ClientError::Transport(t) if t.is_fatal() => "connection failed".to_owned(),
        ClientError::Transport(switchboard_transport::Error::Timeout(d)) => {
            format!("no answer within {} ms", d.as_millis())
        }
        ClientError::Rpc { .. } => "probe answered with an error".to_owned(),
        _ => "probe failed".to_owned(),
    };
    ProbeFailure { reason, decisive: false }
}

/// One probe: `ping` (2025-11-25) or `server/discover` (2026-07-28) over `client`, bounded by
/// `timeout`. Ok holds how long the answer took.
pub(crate) async fn probe(client: &McpClient, timeout: Duration) -> Result<Duration, ProbeFailure> {
    let started = Instant::now();
    let m = if client.era() == Era::Modern { method::SERVER_DISCOVER } else { method::PING };
    match tokio::time::timeout(timeout, client.request(m, json!({}))).await {
        Err(_) => Err(ProbeFailure {
            reason: format!("no answer within {} ms", timeout.as_millis()),
            decisive: false,
        }),
        Ok(Ok(_)) => Ok(started.elapsed()),
        // A server that answers with an error is alive.
        Ok(Err(ClientError::Rpc { .. })) => Ok(started.elapsed()),
        Ok(Err(e)) => Err(failure_of(&e)),
    }
}

/// A probe of an HTTP server's own health endpoint: `GET <its origin><path>`, healthy on 2xx,
/// bounded by `timeout`. Ok holds how long the answer took.
pub(crate) async fn http_probe(url: &str, path: &str, timeout: Duration) -> Result<Duration, ProbeFailure> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let client = CLIENT.get_or_init(reqwest::Client::new);
    let target = reqwest::Url::parse(url).and_then(|u| u.join(path)).map_err(|e| ProbeFailure {
        reason: format!("health path {path:?} does not make a URL: {e}"),
        decisive: false,
    })?;
    let started = Instant::now();
    match tokio::time::timeout(timeout, client.get(target).send()).await {
        Err(_) => Err(ProbeFailure {
            reason: format!("no answer within {} ms", timeout.as_millis()),
            decisive: false,
        }),
        Ok(Ok(r)) if r.status().is_success() => Ok(started.elapsed()),
        Ok(Ok(r)) => Err(ProbeFailure {
            reason: format!("health path {path} answered HTTP {}", r.status().as_u16()),
            decisive: false,
        }),
        Ok(Err(e)) if e.is_connect() => {
            Err(ProbeFailure { reason: "connection refused".into(), decisive: true })
        }
        Ok(Err(_)) => Err(ProbeFailure { reason: "health check failed".into(), decisive: false }),
    }
}

/// "HH:MM:SS" (UTC) of wall-clock milliseconds.
pub(crate) fn clock(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// The caller-safe reason of an open breaker.
pub(crate) fn unavailable_reason(server: &str, why: &str, breaker: &Breaker) -> String {
    let since = breaker.first_failure_ms().map(clock).unwrap_or_else(|| "now".into());
    let n = breaker.failures();
    let probes = if n == 1 { "probe" } else { "probes" };
    format!("server {server} is unavailable: {why} ({n} {probes} failed since {since})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn threshold_opens_and_half_open_backoff_doubles_capped() {
        let mut b = Breaker::new(3, Duration::from_secs(1));
        let t0 = Instant::now();
        assert_eq!(b.failure(t0, 0, false), Verdict::Failing);
        assert_eq!(b.failure(t0, 0, false), Verdict::Failing);
        assert_eq!(b.failure(t0, 0, false), Verdict::Opened);
        assert_eq!(b.state(Instant::now()), BreakerState::Open { until: t0 + Duration::from_secs(1) });
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(b.state(Instant::now()), BreakerState::HalfOpen);
        assert_eq!(b.failure(Instant::now(), 0, false), Verdict::Opened);
        assert_eq!(b.backoff(), Duration::from_secs(2));
        tokio::time::advance(Duration::from_millis(1999)).await;
        assert!(matches!(b.state(Instant::now()), BreakerState::Open { .. }));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(b.state(Instant::now()), BreakerState::HalfOpen);
        assert_eq!(b.failure(Instant::now(), 0, false), Verdict::Opened);
        assert_eq!(b.backoff(), Duration::from_secs(4));
        for _ in 0..10 {
            tokio::time::advance(b.backoff()).await;
            b.failure(Instant::now(), 0, false);
        }
        assert_eq!(b.backoff(), MAX_BACKOFF);
        assert_eq!(b.success(), Verdict::Healthy { recovered: true });
        assert_eq!(b.backoff(), Duration::from_secs(1));
        assert_eq!(b.state(Instant::now()), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_connection_is_decisive() {
        let mut b = Breaker::new(3, Duration::from_secs(1));
        assert_eq!(b.failure(Instant::now(), 3_723_000, true), Verdict::Opened);
        let r = unavailable_reason("x", "connection refused", &b);
        assert_eq!(r, "server x is unavailable: connection refused (1 probe failed since 01:02:03)");
    }
}
