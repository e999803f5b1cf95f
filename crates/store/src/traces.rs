//! The `traces` table: one row per request a downstream client sent to the federated endpoint.
//!
//! A trace says who asked (client name/version, transport, peer address), what (era, method, tool/prompt
//! name or resource URI), where it went (the upstream chosen), how long it took and how it ended. The
//! table is a bounded log: [`Store::insert_traces`] writes a batch and drops the oldest rows beyond the
//! caller's bound in the same transaction, so the request path never waits on SQLite (the app batches
//! off the request path).

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::pool::Store;

const TABLE: &str = "traces";

/// Default number of traces kept.
pub const TRACES_KEPT: i64 = 10_000;

/// How a traced request ended.
pub mod outcome {
    /// A result.
    pub const OK: &str = "ok";
    /// A JSON-RPC error (see `error_code`) or an HTTP failure.
    pub const ERROR: &str = "error";
    /// The client cancelled it or went away before the end.
    pub const CANCELLED: &str = "cancelled";
    /// The router's per-request deadline expired.
    pub const TIMEOUT: &str = "timeout";
}

/// One downstream request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct TraceRecord {
    /// Row id; `None` before inserting.
    pub id: Option<i64>,
    /// When the request arrived (unix ms).
    pub at_ms: i64,
    /// `http`, `ws` or `stdio`.
    pub transport: String,
    /// The client's address (`ip:port`) when it has one.
    pub peer: Option<String>,
    /// `clientInfo.name` (from `_meta`, `initialize` or the session).
    pub client_name: Option<String>,
    /// `clientInfo.version`.
    pub client_version: Option<String>,
    /// The protocol version the request was served under, when known.
    pub era: Option<String>,
    /// The JSON-RPC method (`(invalid)` when the body did not parse).
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub name: Option<String>,
    /// The upstream server the request was forwarded to; `None` when the router answered itself.
    pub upstream: Option<String>,
    /// Arrival to the end of the response (the last SSE event for streams), in milliseconds.
    pub latency_ms: f64,
    /// Arrival to the response head, in milliseconds.
    pub first_byte_ms: Option<f64>,
    /// Whether the response was an SSE stream.
    pub streamed: bool,
    /// The HTTP status of the response.
    pub http_status: Option<i64>,
    /// One of [`outcome`].
    pub outcome: String,
    /// The JSON-RPC error code, for errors, timeouts and cancellations answered with one.
    pub error_code: Option<i64>,
    /// The error message.
    pub error: Option<String>,
    /// The scheduler's decision for the upstream that served it (or the last one tried): the
    /// candidates, each layer's verdict, their scores, the chosen upstream and why.
    #[serde(default)]
    #[ts(type = "JsonValue | null")]
    pub route: Option<serde_json::Value>,
    /// Attempts on other upstreams that failed before the last one (retries).
    #[serde(default)]
    pub retries: u32,
}

#[derive(sqlx::FromRow)]
struct TraceRow {
    id: i64,
    at_ms: i64,
    transport: String,
    peer: Option<String>,
    client_name: Option<String>,
    client_version: Option<String>,
    era: Option<String>,
    method: String,
    name: Option<String>,
    upstream: Option<String>,
    latency_ms: f64,
    first_byte_ms: Option<f64>,
    streamed: i64,
    http_status: Option<i64>,
    outcome: String,
    error_code: Option<i64>,
    error: Option<String>,
    route: Option<String>,
    retries: i64,
}

impl From<TraceRow> for TraceRecord {
    fn from(r: TraceRow) -> Self {
        TraceRecord {
            id: Some(r.id),
            at_ms: r.at_ms,
            transport: r.transport,
            peer: r.peer,
            client_name: r.client_name,
            client_version: r.client_version,
            era: r.era,
            method: r.method,
            name: r.name,
            upstream: r.upstream,
            latency_ms: r.latency_ms,
            first_byte_ms: r.first_byte_ms,
            streamed: r.streamed != 0,
            http_status: r.http_status,
            outcome: r.outcome,
            error_code: r.error_code,
            error: r.error,
            route: r.route.and_then(|t| serde_json::from_str(&t).ok()),
            retries: u32::try_from(r.retries).unwrap_or(u32::MAX),
        }
    }
}

impl Store {
    /// Appends `batch` and drops the oldest rows so that at most `keep` remain, in one transaction.
    ///
    /// # Errors
    /// [`Error::Query`] when a statement fails (an unknown `outcome` or a non-finite latency included).
    pub async fn insert_traces(&self, batch: &[TraceRecord], keep: i64) -> Result<(), Error> {
        if batch.is_empty() {
            return Ok(());
        }
        let failed = |e| Error::query(TABLE, format!("recording {} trace(s)", batch.len()), e);
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        let mut last = 0;
        for t in batch {
            let inserted = sqlx::query(
                "INSERT INTO traces (at_ms, transport, peer, client_name, client_version, era, method, name, \
                     upstream, latency_ms, first_byte_ms, streamed, http_status, outcome, error_code, error, route, retries) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(t.at_ms)
            .bind(&t.transport)
            .bind(&t.peer)
            .bind(&t.client_name)
            .bind(&t.client_version)
            .bind(&t.era)
            .bind(&t.method)
            .bind(&t.name)
            .bind(&t.upstream)
            .bind(t.latency_ms)
            .bind(t.first_byte_ms)
            .bind(i64::from(t.streamed))
            .bind(t.http_status)
            .bind(&t.outcome)
            .bind(t.error_code)
            .bind(&t.error)
            .bind(t.route.as_ref().map(serde_json::Value::to_string))
            .bind(i64::from(t.retries))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
            last = inserted.last_insert_rowid();
        }
        sqlx::query("DELETE FROM traces WHERE id <= ?")
            .bind(last.saturating_sub(keep.max(1)))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)
    }

    /// Up to `limit` traces, newest (`at_ms`, then id) first.
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails.
    pub async fn traces(&self, limit: u32) -> Result<Vec<TraceRecord>, Error> {
        let rows: Vec<TraceRow> = sqlx::query_as(
            "SELECT id, at_ms, transport, peer, client_name, client_version, era, method, name, upstream, \
                 latency_ms, first_byte_ms, streamed, http_status, outcome, error_code, error, route, retries \
             FROM traces ORDER BY at_ms DESC, id DESC LIMIT ?",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| Error::query(TABLE, "listing traces", e))?;
        Ok(rows.into_iter().map(TraceRecord::from).collect())
    }

    /// How many traces are stored.
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails.
    pub async fn trace_count(&self) -> Result<i64, Error> {
        sqlx::query_scalar("SELECT COUNT(*) FROM traces")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| Error::query(TABLE, "counting traces", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(at_ms: i64) -> TraceRecord {
        TraceRecord {
            id: None,
            at_ms,
            transport: "http".into(),
            peer: Some("127.0.0.1:5000".into()),
            client_name: Some("test".into()),
            client_version: Some("1".into()),
            era: Some("2026-07-28".into()),
            method: "tools/call".into(),
            name: Some("echo".into()),
            upstream: Some("alpha".into()),
            latency_ms: 1.5,
            first_byte_ms: Some(1.0),
            streamed: false,
            http_status: Some(200),
            outcome: outcome::OK.into(),
            error_code: None,
            error: None,
            route: None,
            retries: 0,
        }
    }

    #[tokio::test]
    async fn round_trip_and_newest_first() {
        let store = Store::open_in_memory().await.unwrap();
        let mut late = trace(30);
        late.outcome = outcome::TIMEOUT.into();
        late.error_code = Some(-32053);
        store.insert_traces(&[trace(20), trace(10), late.clone()], 100).await.unwrap();
        let got = store.traces(10).await.unwrap();
        assert_eq!(got.iter().map(|t| t.at_ms).collect::<Vec<_>>(), [30, 20, 10]);
        late.id = got[0].id;
        assert_eq!(got[0], late);
        assert_eq!(store.traces(1).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn retention_keeps_the_newest_rows() {
        let store = Store::open_in_memory().await.unwrap();
        for chunk in (0..25).collect::<Vec<i64>>().chunks(4) {
            let batch: Vec<TraceRecord> = chunk.iter().map(|at| trace(*at)).collect();
            store.insert_traces(&batch, 10).await.unwrap();
        }
        assert_eq!(store.trace_count().await.unwrap(), 10);
        let times: Vec<i64> = store.traces(100).await.unwrap().iter().map(|t| t.at_ms).collect();
        assert_eq!(times, (15..25).rev().collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn an_unknown_outcome_is_refused() {
        let store = Store::open_in_memory().await.unwrap();
        let mut t = trace(1);
        t.outcome = "maybe".into();
        let err = store.insert_traces(&[t], 10).await.unwrap_err();
        assert!(err.to_string().contains("traces"), "{err}");
    }
}
