//! Where request traces go: the event bus at once, and the store in batches off the request path.
//!
//! [`TraceSink::record`] never blocks and never waits on SQLite: it publishes the record on the
//! registry's event bus (for live viewers) and offers it to a bounded channel. A writer task
//! drains the channel in batches into the `traces` table, which keeps the newest
//! [`TracesConfig::keep`] rows. When the channel is full (the disk is slower than the traffic) the
//! record is dropped from storage — it was still published — and counted; the writer logs the
//! count once it catches up, and [`TraceSink::dropped`] reports it.
//!
//! Downstream handshakes (a client's `initialize` or `server/discover` through the gateway)
//! take the same way ([`TraceSink::handshake`]): published as `Event::Handshake`, queued on the
//! same bounded channel, stored by the same writer in the `handshakes` table (leg
//! `downstream`, no `server_id`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use switchboard_router::{Event, EventBus};
use switchboard_store::{HandshakeRecord, Store, TRACES_KEPT, TraceRecord};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Default capacity of the channel between requests and the writer.
pub const DEFAULT_QUEUE: usize = 4096;
/// Largest batch written in one transaction.
const BATCH: usize = 256;

/// How traces are kept.
#[derive(Debug, Clone)]
pub struct TracesConfig {
    /// Rows kept in the store (the oldest go first).
    pub keep: i64,
    /// Records waiting for the writer before new ones are dropped.
    pub queue: usize,
}

impl Default for TracesConfig {
    fn default() -> Self {
        TracesConfig { keep: TRACES_KEPT, queue: DEFAULT_QUEUE }
    }
}

/// What the writer stores.
#[derive(Debug)]
enum Stored {
    Trace(TraceRecord),
    Handshake(HandshakeRecord),
}

/// Cloneable handle that requests hand their trace to.
#[derive(Debug, Clone)]
pub struct TraceSink {
    tx: Option<mpsc::Sender<Stored>>,
    bus: Option<EventBus>,
    dropped: Arc<AtomicU64>,
}

impl TraceSink {
    /// A sink that stores through a writer task on `store` and publishes on `bus`. The task ends
    /// when `cancel` fires (after writing what is queued) or when every sink is dropped.
    pub fn spawn(
        store: Option<Store>,
        bus: Option<EventBus>,
        config: &TracesConfig,
        cancel: CancellationToken,
    ) -> (TraceSink, tokio::task::JoinHandle<()>) {
        let dropped = Arc::new(AtomicU64::new(0));
        let Some(store) = store else {
            let sink = TraceSink { tx: None, bus, dropped };
            return (sink, tokio::spawn(async {}));
        };
        let (tx, rx) = mpsc::channel(config.queue.max(1));
        let task = tokio::spawn(write(store, rx, config.keep, dropped.clone(), cancel));
        (TraceSink { tx: Some(tx), bus, dropped }, task)
    }

    /// Publishes and queues a record; never blocks.
    pub fn record(&self, record: TraceRecord) {
        tracing::debug!(
            target: "switchboard::trace",
            method = %record.method,
            name = ?record.name,
            upstream = ?record.upstream,
            outcome = %record.outcome,
            ms = format!("{:.2}", record.latency_ms),
            "request"
        );
        if let Some(bus) = &self.bus {
            bus.publish(Event::Trace { record: Box::new(record.clone()) });
        }
        self.queue(Stored::Trace(record));
    }

    /// Publishes and queues a downstream client's handshake with the router; never blocks.
    pub fn handshake(&self, record: HandshakeRecord) {
        if let Some(bus) = &self.bus {
            bus.publish(Event::Handshake { server: String::new(), record: Box::new(record.clone()) });
        }
        self.queue(Stored::Handshake(record));
    }

    fn queue(&self, item: Stored) {
        if let Some(tx) = &self.tx
            && tx.try_send(item).is_err()
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records that could not be queued for storage so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

async fn write(
    store: Store,
    mut rx: mpsc::Receiver<Stored>,
    keep: i64,
    dropped: Arc<AtomicU64>,
    cancel: CancellationToken,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut reported = 0u64;
    loop {
        let n = tokio::select! {
            n = rx.recv_many(&mut batch, BATCH) => Some(n),
            () = cancel.cancelled() => None,
        };
        let Some(n) = n else {
            // Shutting down: store what is queued, then stop.
            rx.close();
            while rx.recv_many(&mut batch, BATCH).await > 0 {
                flush(&store, &mut batch, keep).await;
            }
            flush(&store, &mut batch, keep).await;
            break;
        };
        if n == 0 {
            break;
        }
        flush(&store, &mut batch, keep).await;
        let now = dropped.load(Ordering::Relaxed);
        if now > reported {
            tracing::warn!(
                dropped = now - reported,
                total = now,
                "trace writer fell behind; traces were not stored"
            );
            reported = now;
        }
    }
}

async fn flush(store: &Store, batch: &mut Vec<Stored>, keep: i64) {
    let mut traces = Vec::with_capacity(batch.len());
    for item in batch.drain(..) {
        match item {
            Stored::Trace(t) => traces.push(t),
            Stored::Handshake(h) => {
                if let Err(e) = store.insert_handshake(&h).await {
                    tracing::warn!(error = %e, "storing a downstream handshake failed");
                }
            }
        }
    }
    if let Err(e) = store.insert_traces(&traces, keep).await {
        tracing::warn!(error = %e, lost = traces.len(), "storing traces failed");
    }
}

/// Traces as a table, newest first; a routed request's decision (its id, the layer that chose,
/// the reason) on the line under it.
pub fn render(rows: &[TraceRecord]) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{:<23} {:<6} {:<22} {:<10} {:<16} {:<24} {:<12} {:>9}  {}\n",
        "time (UTC)", "via", "client", "era", "method", "name", "upstream", "ms", "outcome"
    );
    for t in rows {
        let client = match (&t.client_name, &t.client_version) {
            (Some(n), Some(v)) => format!("{n} {v}"),
            (Some(n), None) => n.clone(),
            _ => t.peer.clone().unwrap_or_else(|| "-".into()),
        };
        let outcome = match (&t.error_code, &t.error) {
            (Some(c), Some(m)) => format!("{} {c}: {m}", t.outcome),
            (None, Some(m)) => format!("{}: {m}", t.outcome),
            _ => t.outcome.clone(),
        };
        let _ = writeln!(
            out,
            "{:<23} {:<6} {:<22} {:<10} {:<16} {:<24} {:<12} {:>9.1}  {}",
            utc(t.at_ms),
            t.transport,
            clip(&client, 22),
            t.era.as_deref().unwrap_or("-"),
            clip(&t.method, 16),
            clip(t.name.as_deref().unwrap_or("-"), 24),
            clip(t.upstream.as_deref().unwrap_or("-"), 12),
            t.latency_ms,
            outcome
        );
        // The routing decision under its request: which layer chose, and why.
        if let Some(route) = &t.route {
            let text = |k: &str| route.get(k).and_then(serde_json::Value::as_str).unwrap_or("-");
            let retries = if t.retries > 0 {
                format!(" ({} failed attempt(s) before)", t.retries)
            } else {
                String::new()
            };
            let degraded = if route.get("degraded").and_then(serde_json::Value::as_bool) == Some(true) {
                " [degraded]"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{:<23} └ route {} {}: {}{degraded}{retries}",
                "",
                text("id"),
                text("layer"),
                text("reason")
            );
        }
    }
    out
}

fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_owned()
    } else {
        let mut c: String = s.chars().take(width.saturating_sub(1)).collect();
        c.push('…');
        c
    }
}

/// `YYYY-MM-DD HH:MM:SS.mmm` in UTC from unix milliseconds.
fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{milli:03}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(at_ms: i64) -> TraceRecord {
        TraceRecord {
            id: None,
            at_ms,
            transport: "http".into(),
            peer: None,
            client_name: None,
            client_version: None,
            era: None,
            method: "ping".into(),
            name: None,
            upstream: None,
            latency_ms: 0.1,
            first_byte_ms: None,
            streamed: false,
            http_status: Some(200),
            outcome: "ok".into(),
            error_code: None,
            error: None,
            route: None,
            retries: 0,
        }
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_instead_of_blocking() {
        let store = Store::open_in_memory().await.unwrap();
        let bus = EventBus::new(100);
        let mut events = bus.subscribe();
        let cancel = CancellationToken::new();
        let config = TracesConfig { keep: 1000, queue: 4 };
        let (sink, writer) = TraceSink::spawn(Some(store.clone()), Some(bus), &config, cancel.clone());
        // No await in between: the writer cannot drain (current-thread runtime), the queue fills.
        for at in 0..10 {
            sink.record(record(at));
        }
        assert_eq!(sink.dropped(), 6);
        // Every record was still published.
        let mut published = 0;
        while events.try_recv().is_ok() {
            published += 1;
        }
        assert_eq!(published, 10);
        cancel.cancel();
        writer.await.unwrap();
        assert_eq!(store.trace_count().await.unwrap(), 4);
    }

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00.000");
        assert_eq!(utc(1_798_502_400_123), "2026-12-29 00:00:00.123");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00.000");
    }
}
