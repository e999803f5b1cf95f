//! `GET /api/overview`: the router at a glance — servers by state, the calls of the last
//! minute (from the stored traces), the event stream's subscribers and losses.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use switchboard_router::ServerState;
use switchboard_store::traces::outcome;
use ts_rs::TS;

use crate::AdminState;

/// The window the call figures cover, in milliseconds.
pub const WINDOW_MS: i64 = 60_000;

/// Traces read to compute the call figures (the newest ones).
const TRACES_READ: u32 = 10_000;

/// The answer of `GET /api/overview` (also the snapshot's `overview`).
#[derive(Debug, Clone, Serialize, TS)]
pub struct Overview {
    /// The router process.
    pub router: RouterInfo,
    /// Servers by state.
    pub servers: ServerCounts,
    /// Downstream calls over the last [`WINDOW_MS`].
    pub calls: CallStats,
    /// The event stream.
    pub events: EventStats,
}

/// The router process.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RouterInfo {
    /// Switchboard's version.
    pub version: String,
    /// Time since the admin API started, in milliseconds.
    pub uptime_ms: u64,
    /// The listeners' addresses (`ip:port`).
    pub listen: Vec<String>,
    /// The protocol revisions the endpoint speaks, newest first.
    pub revisions: Vec<String>,
}

/// Servers by state.
#[derive(Debug, Clone, Default, Serialize, TS)]
pub struct ServerCounts {
    /// Routable.
    pub ready: usize,
    /// Restarting, reconnecting or failing refreshes.
    pub degraded: usize,
    /// Not routable until they recover.
    pub unavailable: usize,
    /// Not connected yet (or disabled).
    pub pending: usize,
}

/// Downstream calls over a window.
#[derive(Debug, Clone, Default, Serialize, TS)]
pub struct CallStats {
    /// Requests traced in the window.
    pub total: usize,
    /// Of them, the ones that did not end `ok`.
    pub errors: usize,
    /// Requests per second over the window.
    pub per_s: f64,
    /// Median latency, in milliseconds (`null` without calls).
    pub p50_ms: Option<f64>,
    /// 99th percentile latency, in milliseconds (`null` without calls).
    pub p99_ms: Option<f64>,
}

/// The event stream.
#[derive(Debug, Clone, Serialize, TS)]
pub struct EventStats {
    /// Subscribers now (viewers, the frame ring's recorder, the logs).
    pub subscribers: usize,
    /// Events subscribers lost by falling behind, all together, since start.
    pub lost: u64,
}

/// The revisions the endpoint speaks, newest first.
pub fn revisions() -> Vec<String> {
    switchboard_wire::era::MODERN_VERSIONS.iter().copied().chain(["2025-11-25"]).map(str::to_owned).collect()
}

/// The value at quantile `q` (0..=1) of sorted `values`.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(rank.min(sorted.len() - 1)).copied()
}

/// Builds the overview.
pub async fn overview(state: &AdminState) -> Overview {
    let cfg = state.config();
    let mut servers = ServerCounts::default();
    for v in cfg.registry.servers() {
        match v.state {
            ServerState::Ready => servers.ready += 1,
            ServerState::Degraded => servers.degraded += 1,
            ServerState::Unavailable => servers.unavailable += 1,
            ServerState::Pending => servers.pending += 1,
        }
    }
    let since = switchboard_router::events::now_ms() - WINDOW_MS;
    let traces = cfg.store.traces(TRACES_READ).await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "overview: could not read traces");
        Vec::new()
    });
    let recent: Vec<_> = traces.iter().filter(|t| t.at_ms >= since).collect();
    let mut latencies: Vec<f64> = recent.iter().map(|t| t.latency_ms).filter(|l| l.is_finite()).collect();
    latencies.sort_by(f64::total_cmp);
    let calls = CallStats {
        total: recent.len(),
        errors: recent.iter().filter(|t| t.outcome != outcome::OK).count(),
        per_s: recent.len() as f64 / (WINDOW_MS as f64 / 1000.0),
        p50_ms: quantile(&latencies, 0.5),
        p99_ms: quantile(&latencies, 0.99),
    };
    Overview {
        router: RouterInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            uptime_ms: u64::try_from(state.inner.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            listen: cfg.listeners.all().iter().map(ToString::to_string).collect(),
            revisions: revisions(),
        },
        servers,
        calls,
        events: EventStats { subscribers: cfg.events.subscribers(), lost: cfg.events.lost() },
    }
}

/// `GET /api/overview`.
pub async fn get_overview(State(state): State<AdminState>) -> Response {
    Json(overview(&state).await).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_sorted_latencies() {
        assert_eq!(quantile(&[], 0.5), None);
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(51.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(revisions(), ["2026-07-28", "2025-11-25"]);
    }
}
