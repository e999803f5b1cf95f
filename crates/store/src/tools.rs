//! The `tool_snapshots` table: what each server offered the last times the router listed it.
//!
//! A snapshot is the raw `tools/list` result (plus the tools quarantined for bad schemas, and the resource
//! and prompt lists), kept as JSON so the router can diff refreshes and start from the last known catalog
//! before a slow server answers. Only the newest [`TOOL_SNAPSHOTS_KEPT`] per server are kept; they go when
//! their server is removed.

use serde::{Deserialize, Serialize};

use crate::error::{Error, is_foreign_key_violation};
use crate::pool::Store;

const TABLE: &str = "tool_snapshots";

/// How many snapshots are kept per server; saving one more drops the oldest.
pub const TOOL_SNAPSHOTS_KEPT: u32 = 20;

/// One listing of a server's tools, resources and prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSnapshot {
    /// Row id; `None` before saving ([`Store::save_tool_snapshot`] ignores it and returns the new one).
    pub id: Option<i64>,
    /// The server listed; it must be stored already.
    pub server_id: String,
    /// When the listing was taken (unix ms); "latest" means the greatest `taken_at_ms`.
    pub taken_at_ms: i64,
    /// JSON array of the raw `Tool` objects, exactly as the server sent them.
    pub tools: serde_json::Value,
    /// JSON array of `{name, error}` for tools quarantined because their schema did not compile.
    pub quarantined: serde_json::Value,
    /// The server's resources listing.
    pub resources: serde_json::Value,
    /// The server's prompts listing.
    pub prompts: serde_json::Value,
}

/// The row as stored: JSON columns are text.
#[derive(sqlx::FromRow)]
struct SnapshotRow {
    id: i64,
    server_id: String,
    taken_at_ms: i64,
    tools: String,
    quarantined: String,
    resources: String,
    prompts: String,
}

impl TryFrom<SnapshotRow> for ToolSnapshot {
    type Error = Error;

    fn try_from(row: SnapshotRow) -> Result<Self, Error> {
        let id = row.id;
        let parse = |column: &'static str, text: &str| {
            serde_json::from_str(text).map_err(|e| Error::json(TABLE, column, id, e))
        };
        Ok(ToolSnapshot {
            tools: parse("tools", &row.tools)?,
            quarantined: parse("quarantined", &row.quarantined)?,
            resources: parse("resources", &row.resources)?,
            prompts: parse("prompts", &row.prompts)?,
            id: Some(id),
            server_id: row.server_id,
            taken_at_ms: row.taken_at_ms,
        })
    }
}

impl Store {
    /// Saves a snapshot and prunes the server's older ones beyond [`TOOL_SNAPSHOTS_KEPT`], in one transaction.
    /// Returns the new row id.
    ///
    /// # Errors
    /// [`Error::UnknownServer`] when the server is not stored; [`Error::Query`] when a statement fails.
    pub async fn save_tool_snapshot(&self, snap: &ToolSnapshot) -> Result<i64, Error> {
        let server_id = snap.server_id.as_str();
        let failed = |e| Error::query(TABLE, format!("saving a snapshot of server {server_id}"), e);
        // IMMEDIATE: take the write lock up front so the busy timeout, not an instant SQLITE_BUSY, governs
        // contention with other writers.
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        let inserted = sqlx::query(
            "INSERT INTO tool_snapshots (server_id, taken_at_ms, tools, quarantined, resources, prompts) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(server_id)
        .bind(snap.taken_at_ms)
        .bind(snap.tools.to_string())
        .bind(snap.quarantined.to_string())
        .bind(snap.resources.to_string())
        .bind(snap.prompts.to_string())
        .execute(&mut *tx)
        .await
        .map_err(|e| {
            if is_foreign_key_violation(&e) {
                Error::UnknownServer { table: TABLE, server_id: server_id.to_owned() }
            } else {
                failed(e)
            }
        })?;
        let id = inserted.last_insert_rowid();
        sqlx::query(
            "DELETE FROM tool_snapshots WHERE server_id = ? AND id NOT IN ( \
                 SELECT id FROM tool_snapshots WHERE server_id = ? \
                 ORDER BY taken_at_ms DESC, id DESC LIMIT ?)",
        )
        .bind(server_id)
        .bind(server_id)
        .bind(TOOL_SNAPSHOTS_KEPT)
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(id)
    }

    /// The server's snapshot with the greatest `taken_at_ms` (the last saved, on a tie), if any.
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails; [`Error::Json`] when a stored column is not JSON.
    pub async fn latest_tool_snapshot(&self, server_id: &str) -> Result<Option<ToolSnapshot>, Error> {
        let row: Option<SnapshotRow> = sqlx::query_as(
            "SELECT id, server_id, taken_at_ms, tools, quarantined, resources, prompts FROM tool_snapshots \
             WHERE server_id = ? ORDER BY taken_at_ms DESC, id DESC LIMIT 1",
        )
        .bind(server_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| Error::query(TABLE, format!("reading the latest snapshot of server {server_id}"), e))?;
        row.map(ToolSnapshot::try_from).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_snapshot_of_an_unknown_server_is_refused() {
        let store = Store::open_in_memory().await.unwrap();
        let snap = ToolSnapshot {
            id: None,
            server_id: "ghost".into(),
            taken_at_ms: 1,
            tools: json!([]),
            quarantined: json!([]),
            resources: json!([]),
            prompts: json!([]),
        };
        let err = store.save_tool_snapshot(&snap).await.unwrap_err();
        assert!(matches!(err, Error::UnknownServer { ref server_id, .. } if server_id == "ghost"), "{err:?}");
        assert!(store.latest_tool_snapshot("ghost").await.unwrap().is_none());
    }
}
