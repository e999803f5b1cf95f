//! The `handshakes` table: every MCP handshake the router took part in, on both legs.
//!
//! The UI's handshake view and post-mortems read it: versions offered and chosen, capabilities on each side,
//! peer info, timing and the failure reason. It is a bounded log (the newest [`HANDSHAKES_KEPT`] rows), and
//! rows outlive their server: removing a server clears their `server_id` instead of deleting history.

use serde::{Deserialize, Serialize};

use crate::error::{Error, is_foreign_key_violation};
use crate::pool::Store;

const TABLE: &str = "handshakes";

/// How many handshakes are kept overall; inserting one more drops the oldest.
pub const HANDSHAKES_KEPT: i64 = 10_000;

/// One handshake, successful or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct HandshakeRecord {
    /// Row id; `None` before inserting ([`Store::insert_handshake`] ignores it and returns the new one).
    pub id: Option<i64>,
    /// The upstream server, which must be stored already; `None` for a downstream client or a probe of a
    /// server not yet registered. Cleared when the server is removed.
    pub server_id: Option<String>,
    /// `"upstream"` (router → server) or `"downstream"` (client → router).
    pub leg: String,
    /// The transport the handshake ran over.
    pub transport: String,
    /// Protocol era (e.g. the handshake style of a revision), if determined.
    pub era: Option<String>,
    /// Protocol versions the initiating side offered.
    pub offered_versions: Vec<String>,
    /// The version agreed on; `None` when negotiation failed.
    pub chosen_version: Option<String>,
    /// Capabilities the client declared.
    pub client_capabilities: serde_json::Value,
    /// Capabilities the server granted.
    pub server_capabilities: serde_json::Value,
    /// The client's `clientInfo`.
    pub client_info: serde_json::Value,
    /// The server's `serverInfo`.
    pub server_info: serde_json::Value,
    /// Tools seen right after the handshake, if listed.
    pub tool_count: Option<i64>,
    /// Wall time the handshake took, in milliseconds; must be finite.
    pub duration_ms: f64,
    /// Why the handshake failed; `None` on success.
    pub error: Option<String>,
    /// When it happened (unix ms); listings are newest first by this.
    pub at_ms: i64,
}

/// The row as stored: JSON columns are text.
#[derive(sqlx::FromRow)]
struct HandshakeRow {
    id: i64,
    server_id: Option<String>,
    leg: String,
    transport: String,
    era: Option<String>,
    offered_versions: String,
    chosen_version: Option<String>,
    client_capabilities: String,
    server_capabilities: String,
    client_info: String,
    server_info: String,
    tool_count: Option<i64>,
    duration_ms: f64,
    error: Option<String>,
    at_ms: i64,
}

impl TryFrom<HandshakeRow> for HandshakeRecord {
    type Error = Error;

    fn try_from(row: HandshakeRow) -> Result<Self, Error> {
        let id = row.id;
        let value = |column: &'static str, text: &str| -> Result<serde_json::Value, Error> {
            serde_json::from_str(text).map_err(|e| Error::json(TABLE, column, id, e))
        };
        Ok(HandshakeRecord {
            offered_versions: serde_json::from_str(&row.offered_versions)
                .map_err(|e| Error::json(TABLE, "offered_versions", id, e))?,
            client_capabilities: value("client_capabilities", &row.client_capabilities)?,
            server_capabilities: value("server_capabilities", &row.server_capabilities)?,
            client_info: value("client_info", &row.client_info)?,
            server_info: value("server_info", &row.server_info)?,
            id: Some(id),
            server_id: row.server_id,
            leg: row.leg,
            transport: row.transport,
            era: row.era,
            chosen_version: row.chosen_version,
            tool_count: row.tool_count,
            duration_ms: row.duration_ms,
            error: row.error,
            at_ms: row.at_ms,
        })
    }
}

impl Store {
    /// Appends a handshake and drops the oldest rows beyond [`HANDSHAKES_KEPT`], in one transaction.
    /// Returns the new row id.
    ///
    /// # Errors
    /// [`Error::UnknownServer`] when `server_id` names a server that is not stored; [`Error::Query`] when a
    /// statement fails (including a non-finite `duration_ms`, which SQLite cannot store).
    pub async fn insert_handshake(&self, h: &HandshakeRecord) -> Result<i64, Error> {
        let whose = match &h.server_id {
            Some(id) => format!("server {id}"),
            None => format!("a {} peer", h.leg),
        };
        let failed = |e| Error::query(TABLE, format!("recording a handshake with {whose}"), e);
        let offered = serde_json::Value::Array(
            h.offered_versions.iter().cloned().map(serde_json::Value::String).collect(),
        );
        // IMMEDIATE: take the write lock up front so the busy timeout governs contention with other writers.
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        let inserted = sqlx::query(
            "INSERT INTO handshakes (server_id, leg, transport, era, offered_versions, chosen_version, \
                 client_capabilities, server_capabilities, client_info, server_info, tool_count, duration_ms, \
                 error, at_ms) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&h.server_id)
        .bind(&h.leg)
        .bind(&h.transport)
        .bind(&h.era)
        .bind(offered.to_string())
        .bind(&h.chosen_version)
        .bind(h.client_capabilities.to_string())
        .bind(h.server_capabilities.to_string())
        .bind(h.client_info.to_string())
        .bind(h.server_info.to_string())
        .bind(h.tool_count)
        .bind(h.duration_ms)
        .bind(&h.error)
        .bind(h.at_ms)
        .execute(&mut *tx)
        .await
        .map_err(|e| match &h.server_id {
            Some(server_id) if is_foreign_key_violation(&e) => {
                Error::UnknownServer { table: TABLE, server_id: server_id.clone() }
            }
            _ => failed(e),
        })?;
        let id = inserted.last_insert_rowid();
        // Ids are contiguous (rowid = max + 1, deletions only at the old end; see the migration), so the
        // newest HANDSHAKES_KEPT rows are exactly those above `id - HANDSHAKES_KEPT`: a range delete on the
        // primary key instead of a count.
        sqlx::query("DELETE FROM handshakes WHERE id <= ?")
            .bind(id.saturating_sub(HANDSHAKES_KEPT))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(id)
    }

    /// Up to `limit` handshakes, newest (`at_ms`, then id) first; only those of `server_id` when given.
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails; [`Error::Json`] when a stored column is not JSON.
    pub async fn handshakes(
        &self,
        server_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<HandshakeRecord>, Error> {
        let rows: Vec<HandshakeRow> = match server_id {
            Some(server_id) => sqlx::query_as(
                "SELECT id, server_id, leg, transport, era, offered_versions, chosen_version, \
                     client_capabilities, server_capabilities, client_info, server_info, tool_count, \
                     duration_ms, error, at_ms \
                 FROM handshakes WHERE server_id = ? ORDER BY at_ms DESC, id DESC LIMIT ?",
            )
            .bind(server_id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| Error::query(TABLE, format!("listing handshakes of server {server_id}"), e))?,
            None => sqlx::query_as(
                "SELECT id, server_id, leg, transport, era, offered_versions, chosen_version, \
                     client_capabilities, server_capabilities, client_info, server_info, tool_count, \
                     duration_ms, error, at_ms \
                 FROM handshakes ORDER BY at_ms DESC, id DESC LIMIT ?",
            )
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| Error::query(TABLE, "listing handshakes", e))?,
        };
        rows.into_iter().map(HandshakeRecord::try_from).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn downstream(at_ms: i64) -> HandshakeRecord {
        HandshakeRecord {
            id: None,
            server_id: None,
            leg: "downstream".into(),
            transport: "http".into(),
            era: Some("2025-11-25".into()),
            offered_versions: vec!["2025-11-25".into(), "2025-06-18".into()],
            chosen_version: Some("2025-11-25".into()),
            client_capabilities: json!({"sampling": {}}),
            server_capabilities: json!({"tools": {"listChanged": true}}),
            client_info: json!({"name": "inspector", "version": "1.0"}),
            server_info: json!({"name": "switchboard", "version": "0.1.0"}),
            tool_count: None,
            duration_ms: 1.5,
            error: None,
            at_ms,
        }
    }

    #[tokio::test]
    async fn listing_is_newest_first_by_time_not_by_insertion() {
        let store = Store::open_in_memory().await.unwrap();
        for at in [20, 10, 30] {
            store.insert_handshake(&downstream(at)).await.unwrap();
        }
        let times: Vec<i64> = store.handshakes(None, 10).await.unwrap().iter().map(|h| h.at_ms).collect();
        assert_eq!(times, [30, 20, 10]);
        assert_eq!(store.handshakes(None, 2).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_handshake_naming_an_unknown_server_is_refused() {
        let store = Store::open_in_memory().await.unwrap();
        let mut h = downstream(1);
        h.leg = "upstream".into();
        h.server_id = Some("ghost".into());
        let err = store.insert_handshake(&h).await.unwrap_err();
        assert!(matches!(err, Error::UnknownServer { ref server_id, .. } if server_id == "ghost"), "{err:?}");
    }

    #[tokio::test]
    async fn a_non_finite_duration_is_an_error_not_a_panic() {
        let store = Store::open_in_memory().await.unwrap();
        let mut h = downstream(1);
        h.duration_ms = f64::NAN;
        let err = store.insert_handshake(&h).await.unwrap_err();
        assert!(err.to_string().contains("handshakes"), "{err}");
    }
}
