//! The process sampler: CPU and memory of the router and of every supervised stdio child, as
//! [`Event::ProcessStats`] on the bus.
//!
//! The registry owns one sampler, started with it and stopped by its cancellation. Every
//! [`RegistryConfig::stats_interval`](crate::RegistryConfig::stats_interval) it checks whether
//! anybody subscribes to the bus; only then does it read `/proc` (`/proc/PID/stat` for user and
//! system CPU time, `/proc/PID/statm` for resident pages) and publish one event per process. CPU
//! use is the change in CPU time over the wall time between two samples of the same process, so a
//! sampling pause (nobody listening) starts the deltas anew. Off Linux there is no `/proc`: the
//! sampler publishes nothing.
//!
//! [`SamplerCounters`] tells how often it woke and how many files it read, so tests (and the
//! curious) can see that an unobserved router reads nothing.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::events::{Event, EventBus, now_ms};

/// What the sampler has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SamplerCounters {
    /// Periods that passed (sampled or not).
    pub ticks: u64,
    /// `/proc` files read.
    pub proc_reads: u64,
}

/// Shared counters of one sampler.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    ticks: AtomicU64,
    proc_reads: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> SamplerCounters {
        SamplerCounters {
            ticks: self.ticks.load(Ordering::Relaxed),
            proc_reads: self.proc_reads.load(Ordering::Relaxed),
        }
    }
}

/// One process to sample: whose it is and its pid.
pub(crate) type Target = (Option<String>, u32);

/// CPU time (in clock ticks) of a process at an instant.
#[derive(Debug, Clone, Copy)]
struct Seen {
    cpu_ticks: u64,
    at: Instant,
}

/// Runs the sampler until `cancel` fires. `targets` lists the stdio children to sample (the
/// router's own process is always sampled).
pub(crate) async fn run(
    bus: EventBus,
    interval: Duration,
    counters: Arc<Counters>,
    targets: impl Fn() -> Vec<Target> + Send + 'static,
    cancel: CancellationToken,
) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let interval = interval.max(Duration::from_millis(10));
    let mut previous: HashMap<u32, Seen> = HashMap::new();
    let mut lost_before = bus.lost();
    loop {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = cancel.cancelled() => return,
        }
        counters.ticks.fetch_add(1, Ordering::Relaxed);
        if !bus.active() {
            // Nobody listens: read nothing, and start the CPU deltas anew when somebody does.
            previous.clear();
            lost_before = bus.lost();
            continue;
        }
        let lost = bus.lost();
        let mut all = vec![(None, std::process::id())];
        all.extend(targets());
        let mut now_seen = HashMap::with_capacity(all.len());
        for (server, pid) in all {
            let Some(sample) = read_process(pid, &counters) else { continue };
            let at = Instant::now();
            let cpu_percent = previous.get(&pid).map_or(0.0, |p| cpu_percent(p, sample.cpu_ticks, at));
            now_seen.insert(pid, Seen { cpu_ticks: sample.cpu_ticks, at });
            let events_lost = server.is_none().then(|| lost.saturating_sub(lost_before));
            bus.publish(Event::ProcessStats {
                server,
                pid,
                rss_bytes: sample.rss_bytes,
                cpu_percent,
                events_lost,
                at_ms: now_ms(),
            });
        }
        previous = now_seen;
        lost_before = lost;
    }
}

/// Percent of one core used between `before` and (`cpu_ticks`, `at`).
fn cpu_percent(before: &Seen, cpu_ticks: u64, at: Instant) -> f64 {
    let wall = at.duration_since(before.at).as_secs_f64();
    if wall <= 0.0 {
        return 0.0;
    }
    let cpu = cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / clock_ticks_per_second() as f64;
    cpu / wall * 100.0
}

/// What `/proc` says about one process.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ProcSample {
    /// `utime + stime`, in clock ticks.
    cpu_ticks: u64,
    rss_bytes: u64,
}

/// Reads `/proc/PID/stat` and `/proc/PID/statm`; `None` when the process is gone.
fn read_process(pid: u32, counters: &Counters) -> Option<ProcSample> {
    counters.proc_reads.fetch_add(2, Ordering::Relaxed);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    Some(ProcSample { cpu_ticks: cpu_ticks(&stat)?, rss_bytes: resident_pages(&statm)? * page_size() })
}

/// `utime + stime` from a `/proc/PID/stat` line. The command name (field 2) is in parentheses
/// and may hold spaces and parentheses itself, so fields are counted from the last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state (field 3), …, utime (field 14), stime (field 15).
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Resident pages: the second field of `/proc/PID/statm`.
fn resident_pages(statm: &str) -> Option<u64> {
    statm.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(target_os = "linux")]
fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

#[cfg(not(target_os = "linux"))]
fn page_size() -> u64 {
    4096
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
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let stat = "4242 (my (odd) server) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150 25 0 0 20 0 4 0 100 \
                    1000000 300 18446744073709551615";
        assert_eq!(cpu_ticks(stat), Some(175));
        assert_eq!(resident_pages("2500 300 200 10 0 400 0\n"), Some(300));
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_resident_set() {
        let counters = Counters::default();
        let sample = read_process(std::process::id(), &counters).expect("own /proc entry");
        assert!(sample.rss_bytes > 0);
        assert_eq!(counters.snapshot().proc_reads, 2);
    }
}
