//! CPU time of this process and of named groups of its threads, read from `/proc`.
//!
//! The router runs on a runtime of its own whose threads carry a known name prefix, so the
//! CPU it spends per call can be told apart from the load generator's and the in-process
//! upstream's in the same process. Off Linux every reading is `None` and the report says so.

use std::time::Duration;

/// Clock ticks per second of `/proc/*/stat` times (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

/// utime + stime of one `stat` line, in ticks. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted from the last `)`.
fn ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After `)`: state(3) ppid(4) pgrp(5) session(6) tty(7) tpgid(8) flags(9) minflt(10)
    // cminflt(11) majflt(12) cmajflt(13) utime(14) stime(15).
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

fn to_duration(ticks: u64) -> Duration {
    Duration::from_secs_f64(ticks as f64 / TICKS_PER_SEC)
}

/// CPU time (user + system) this whole process has used.
pub fn process() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    ticks(&stat).map(to_duration)
}

/// CPU time used by this process's live threads whose name starts with one of `prefixes`.
pub fn threads(prefixes: &[&str]) -> Option<Duration> {
    let mut total = 0u64;
    let mut any = false;
    for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let dir = entry.path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else { continue };
        if !prefixes.iter().any(|p| comm.trim_end().starts_with(p)) {
            continue;
        }
        if let Some(t) = std::fs::read_to_string(dir.join("stat")).ok().as_deref().and_then(ticks) {
            total += t;
            any = true;
        }
    }
    any.then(|| to_duration(total))
}

/// CPU spent over `calls` calls, per call, in µs.
pub fn per_call_us(spent: Option<Duration>, calls: usize) -> Option<f64> {
    let spent = spent?;
    (calls > 0).then(|| spent.as_secs_f64() * 1e6 / calls as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "4242 (sb router) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        assert_eq!(ticks(line), Some(300));
    }

    #[test]
    fn named_threads_are_measured_apart() {
        if process().is_none() {
            return; // not Linux
        }
        let t = std::thread::Builder::new()
            .name("cpu-probe-x".into())
            .spawn(|| {
                let started = std::time::Instant::now();
                let mut x = 0u64;
                while started.elapsed() < Duration::from_millis(50) {
                    x = x.wrapping_mul(31).wrapping_add(1);
                }
                let seen = threads(&["cpu-probe"]);
                (x, seen)
            })
            .expect("spawn");
        let (_, seen) = t.join().expect("join");
        assert!(seen.is_some(), "the named thread is found while it runs");
        assert!(threads(&["no-such-thread-name"]).is_none());
        assert_eq!(per_call_us(Some(Duration::from_millis(1)), 10), Some(100.0));
        assert_eq!(per_call_us(None, 10), None);
    }
}
