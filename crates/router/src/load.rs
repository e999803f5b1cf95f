//! What the scheduler knows of one server's load: the calls in flight through this router, an
//! exponentially weighted moving average of their latency, the last status report the server
//! sent (self-registered servers report `{pending_requests, avg_response_time_ms,
//! cpu_usage_percent, uptime_seconds}` every load-sampling interval), and whether it is
//! draining (deregistered: no new calls, the ones in flight finish).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// Weight of the newest latency sample in the moving average.
const EWMA_ALPHA: f64 = 0.2;

/// A server's own account of its load (the body of a status report).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Requests the server is working on (all clients, not only this router's).
    pub pending_requests: u64,
    /// Its average response time.
    pub avg_response_time_ms: f64,
    /// Its CPU use, 0–100 per core.
    pub cpu_usage_percent: f64,
    /// Seconds since it started.
    pub uptime_seconds: u64,
}

/// Live load of one server (shared by the registry entry and the calls in flight).
#[derive(Debug, Default)]
pub struct Load {
    in_flight: AtomicU64,
    /// Latency average in microseconds; `u64::MAX` until the first sample.
    ewma_us: AtomicU64,
    samples: AtomicU64,
    report: Mutex<Option<(LoadReport, Instant)>>,
    draining: AtomicBool,
}

/// One call in flight on a server: counted from [`Load::begin`] until dropped.
#[derive(Debug)]
pub struct InFlight {
    load: Arc<Load>,
    started: Instant,
}

impl InFlight {
    /// Ends the call and feeds its latency to the average (a call that failed before the
    /// server answered should be dropped instead, so its latency does not count).
    pub fn finish(self) -> Duration {
        let took = self.started.elapsed();
        self.load.observe(took);
        took
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.load.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Load {
    /// A call starts.
    pub fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight { load: self.clone(), started: Instant::now() }
    }

    /// Calls in flight through this router.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Feeds one latency sample to the moving average.
    pub fn observe(&self, latency: Duration) {
        let sample = latency.as_micros().min(u128::from(u64::MAX - 1)) as u64;
        let n = self.samples.fetch_add(1, Ordering::AcqRel);
        let _ = self.ewma_us.fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
            if n == 0 || old == u64::MAX {
                return Some(sample);
            }
            Some((EWMA_ALPHA * sample as f64 + (1.0 - EWMA_ALPHA) * old as f64) as u64)
        });
    }

    /// The latency average in milliseconds, `None` before the first call.
    pub fn ewma_ms(&self) -> Option<f64> {
        (self.samples.load(Ordering::Acquire) > 0)
            .then(|| self.ewma_us.load(Ordering::Acquire) as f64 / 1000.0)
    }

    /// Stores a status report, stamped now.
    pub fn report(&self, report: LoadReport) {
        *self.report.lock().unwrap_or_else(PoisonError::into_inner) = Some((report, Instant::now()));
    }

    /// The last status report, when it is younger than `max_age`.
    pub fn fresh_report(&self, max_age: Duration) -> Option<LoadReport> {
        let r = self.report.lock().unwrap_or_else(PoisonError::into_inner);
        r.as_ref().filter(|(_, at)| at.elapsed() <= max_age).map(|(r, _)| *r)
    }

    /// Whether the server is draining (no new calls).
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Starts or stops draining; `true` when that changed something.
    pub(crate) fn set_draining(&self, on: bool) -> bool {
        self.draining.swap(on, Ordering::AcqRel) != on
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn in_flight_counts_and_latency_averages() {
        let load = Arc::new(Load::default());
        assert_eq!(load.ewma_ms(), None);
        let a = load.begin();
        let b = load.begin();
        assert_eq!(load.in_flight(), 2);
        tokio::time::advance(Duration::from_millis(10)).await;
        assert_eq!(a.finish(), Duration::from_millis(10));
        assert_eq!(load.ewma_ms(), Some(10.0));
        tokio::time::advance(Duration::from_millis(10)).await;
        b.finish();
        assert!((load.ewma_ms().unwrap() - 12.0).abs() < 0.01, "{:?}", load.ewma_ms());
        assert_eq!(load.in_flight(), 0);
        let dropped = load.begin();
        drop(dropped);
        assert_eq!(load.in_flight(), 0);
        assert!((load.ewma_ms().unwrap() - 12.0).abs() < 0.01, "a dropped call is not a sample");
    }

    #[tokio::test(start_paused = true)]
    async fn a_status_report_goes_stale() {
        let load = Load::default();
        let r = LoadReport {
            pending_requests: 3,
            avg_response_time_ms: 5.0,
            cpu_usage_percent: 40.0,
            uptime_seconds: 9,
        };
        load.report(r);
        assert_eq!(load.fresh_report(Duration::from_secs(15)), Some(r));
        tokio::time::advance(Duration::from_secs(16)).await;
        assert_eq!(load.fresh_report(Duration::from_secs(15)), None);
    }
}
