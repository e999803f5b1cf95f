//! This replica's load, as its status reports and `GET /chaos` state it: requests pending,
//! the mean response time of the tool calls finished since the last sample, the process's cpu
//! (from `/proc/self/stat`) and uptime. The `overload` fault forces the figures high so that a
//! router scoring by them sees the replica as overloaded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

/// The cpu a replica under `overload` reports.
pub const OVERLOAD_CPU_PERCENT: f64 = 100.0;
/// Pending requests an `overload`ed replica adds to its real count.
pub const OVERLOAD_EXTRA_PENDING: u64 = 100;

/// One sample of the load (the body of a status report, without `server_id`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSample {
    /// Requests in progress or held.
    pub pending_requests: u64,
    /// Mean duration of the tool calls finished since the previous sample (the previous mean
    /// when none finished).
    pub avg_response_time_ms: f64,
    /// Cpu used by this process since the previous sample, in percent of one core.
    pub cpu_usage_percent: f64,
    /// Seconds since the replica started.
    pub uptime_seconds: u64,
}

/// The cloneable load meter.
#[derive(Debug, Clone)]
pub struct LoadMeter {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    started: Instant,
    pending: AtomicU64,
    window: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    total: Duration,
    count: u64,
    last_mean_ms: f64,
    cpu_ticks: Option<u64>,
    at: Instant,
}

/// Decrements the pending count when dropped.
#[derive(Debug)]
pub struct Pending {
    meter: LoadMeter,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.meter.inner.pending.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Default for LoadMeter {
    fn default() -> Self {
        let now = Instant::now();
        Self {
            inner: Arc::new(Inner {
                started: now,
                pending: AtomicU64::new(0),
                window: Mutex::new(Window {
                    total: Duration::ZERO,
                    count: 0,
                    last_mean_ms: 0.0,
                    cpu_ticks: process_cpu_ticks(),
                    at: now,
                }),
            }),
        }
    }
}

impl LoadMeter {
    /// Counts one pending request until the guard is dropped.
    pub fn pending(&self) -> Pending {
        self.inner.pending.fetch_add(1, Ordering::Relaxed);
        Pending { meter: self.clone() }
    }

    /// Records one finished tool call.
    pub fn finished(&self, took: Duration) {
        let mut window = self.inner.window.lock().unwrap_or_else(PoisonError::into_inner);
        window.total += took;
        window.count += 1;
    }

    /// Samples the load and starts a new window; `overloaded` forces the figures high.
    pub fn sample(&self, overloaded: bool) -> LoadSample {
        let now = Instant::now();
        let ticks = process_cpu_ticks();
        let mut window = self.inner.window.lock().unwrap_or_else(PoisonError::into_inner);
        if window.count > 0 {
            #[allow(clippy::cast_precision_loss, reason = "a window holds far fewer than 2^52 calls")]
            let mean = window.total.as_secs_f64() * 1000.0 / window.count as f64;
            window.last_mean_ms = mean;
        }
        let wall = now.duration_since(window.at).as_secs_f64();
        let cpu = match (window.cpu_ticks, ticks) {
            #[allow(clippy::cast_precision_loss, reason = "tick counts are far below 2^52")]
            (Some(before), Some(after)) if wall > 0.0 => {
                after.saturating_sub(before) as f64 / clock_ticks_per_second() as f64 / wall * 100.0
            }
            _ => 0.0,
        };
        let sample = LoadSample {
            pending_requests: self.inner.pending.load(Ordering::Relaxed)
                + if overloaded { OVERLOAD_EXTRA_PENDING } else { 0 },
            avg_response_time_ms: window.last_mean_ms,
            cpu_usage_percent: if overloaded { OVERLOAD_CPU_PERCENT } else { (cpu * 10.0).round() / 10.0 },
            uptime_seconds: now.duration_since(self.inner.started).as_secs(),
        };
        window.total = Duration::ZERO;
        window.count = 0;
        window.cpu_ticks = ticks;
        window.at = now;
        sample
    }

    /// Requests pending now.
    pub fn pending_now(&self) -> u64 {
        self.inner.pending.load(Ordering::Relaxed)
    }
}

/// `utime + stime` of this process in clock ticks; `None` off Linux.
fn process_cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    cpu_ticks(&stat)
}

/// `utime + stime` from a `/proc/PID/stat` line; the command name may hold spaces and
/// parentheses, so fields are counted from the last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(target_os = "linux")]
fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second().max(1)
}

#[cfg(not(target_os = "linux"))]
fn clock_ticks_per_second() -> u64 {
    100
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        assert_eq!(cpu_ticks(line), Some(300));
    }

    #[test]
    fn samples_count_pending_and_mean_and_overload_forces_them_high() {
        let meter = LoadMeter::default();
        let guard = meter.pending();
        meter.finished(Duration::from_millis(10));
        meter.finished(Duration::from_millis(30));
        let sample = meter.sample(false);
        assert_eq!(sample.pending_requests, 1);
        assert!((sample.avg_response_time_ms - 20.0).abs() < 1e-9);
        drop(guard);
        let sample = meter.sample(true);
        assert_eq!(sample.pending_requests, OVERLOAD_EXTRA_PENDING);
        assert!((sample.avg_response_time_ms - 20.0).abs() < 1e-9, "no new calls: the previous mean stays");
        assert!((sample.cpu_usage_percent - OVERLOAD_CPU_PERCENT).abs() < 1e-9);
    }
}
