//! The `servers` table: the router's registry of upstream MCP servers.
//!
//! A row is keyed by the stable `server_id` (a hash of name + normalised config computed by the router), so a
//! server keeps its identity, history and snapshots across restarts. The store never interprets `state`,
//! `transport` or `era`: the router owns those vocabularies, the store only keeps them.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::pool::Store;

const TABLE: &str = "servers";

/// One registered upstream server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Stable identity (hash of name and normalised config); the primary key.
    pub server_id: String,
    /// Operator-facing name; listings are ordered by it.
    pub name: String,
    /// `"stdio"`, `"http"` or `"ws"`.
    pub transport: String,
    /// The server's configuration as the router normalised it.
    pub config: serde_json::Value,
    /// Health state (`pending`, `ready`, `degraded`, `unavailable`, …), owned by the router.
    pub state: String,
    /// Why the server is in `state`, when that needs explaining.
    pub state_reason: Option<String>,
    /// Protocol era learned from the last handshake (e.g. the negotiated revision), if known.
    pub era: Option<String>,
    /// When the server was first stored (unix ms). [`Store::upsert_server`] never changes it.
    pub created_at_ms: i64,
    /// When the record or its state last changed (unix ms).
    pub updated_at_ms: i64,
}

/// The row as stored: JSON columns are text.
#[derive(sqlx::FromRow)]
struct ServerRow {
    server_id: String,
    name: String,
    transport: String,
    config: String,
    state: String,
    state_reason: Option<String>,
    era: Option<String>,
    created_at_ms: i64,
    updated_at_ms: i64,
}

impl TryFrom<ServerRow> for ServerRecord {
    type Error = Error;

    fn try_from(row: ServerRow) -> Result<Self, Error> {
        let config =
            serde_json::from_str(&row.config).map_err(|e| Error::json(TABLE, "config", &row.server_id, e))?;
        Ok(ServerRecord {
            server_id: row.server_id,
            name: row.name,
            transport: row.transport,
            config,
            state: row.state,
            state_reason: row.state_reason,
            era: row.era,
            created_at_ms: row.created_at_ms,
            updated_at_ms: row.updated_at_ms,
        })
    }
}

impl Store {
    /// Inserts the server, or updates every field of an existing one except `created_at_ms`.
    ///
    /// An update is an `UPDATE`, not a delete-and-insert, so the server's snapshots and handshakes stay.
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails.
    pub async fn upsert_server(&self, s: &ServerRecord) -> Result<(), Error> {
        sqlx::query(
            "INSERT INTO servers (server_id, name, transport, config, state, state_reason, era, \
                                  created_at_ms, updated_at_ms) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (server_id) DO UPDATE SET \
                 name = excluded.name, transport = excluded.transport, config = excluded.config, \
                 state = excluded.state, state_reason = excluded.state_reason, era = excluded.era, \
                 updated_at_ms = excluded.updated_at_ms",
        )
        .bind(&s.server_id)
        .bind(&s.name)
        .bind(&s.transport)
        .bind(s.config.to_string())
        .bind(&s.state)
        .bind(&s.state_reason)
        .bind(&s.era)
        .bind(s.created_at_ms)
        .bind(s.updated_at_ms)
        .execute(&self.pool)
        .await
        .map_err(|e| Error::query(TABLE, format!("upserting server {}", s.server_id), e))?;
        Ok(())
    }

    /// Records a state change (and its reason, cleared when `None`) at `at_ms`, which becomes `updated_at_ms`.
    ///
    /// # Errors
    /// [`Error::UnknownServer`] when no such server is stored; [`Error::Query`] when the statement fails.
    pub async fn set_server_state(
        &self,
        server_id: &str,
        state: &str,
        reason: Option<&str>,
        at_ms: i64,
    ) -> Result<(), Error> {
        let done = sqlx::query(
            "UPDATE servers SET state = ?, state_reason = ?, updated_at_ms = ? WHERE server_id = ?",
        )
        .bind(state)
        .bind(reason)
        .bind(at_ms)
        .bind(server_id)
        .execute(&self.pool)
        .await
        .map_err(|e| Error::query(TABLE, format!("setting the state of server {server_id}"), e))?;
        if done.rows_affected() == 0 {
            return Err(Error::UnknownServer { table: TABLE, server_id: server_id.to_owned() });
        }
        Ok(())
    }

    /// Records the protocol era learned from a handshake. `updated_at_ms` is left alone: no time is given,
    /// and the era is an observation, not a change to the server's configuration or state.
    ///
    /// # Errors
    /// [`Error::UnknownServer`] when no such server is stored; [`Error::Query`] when the statement fails.
    pub async fn set_server_era(&self, server_id: &str, era: &str) -> Result<(), Error> {
        let done = sqlx::query("UPDATE servers SET era = ? WHERE server_id = ?")
            .bind(era)
            .bind(server_id)
            .execute(&self.pool)
            .await
            .map_err(|e| Error::query(TABLE, format!("setting the era of server {server_id}"), e))?;
        if done.rows_affected() == 0 {
            return Err(Error::UnknownServer { table: TABLE, server_id: server_id.to_owned() });
        }
        Ok(())
    }

    /// Every stored server, ordered by name (then id, for servers sharing a name).
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails; [`Error::Json`] when a stored config is not JSON.
    pub async fn servers(&self) -> Result<Vec<ServerRecord>, Error> {
        let rows: Vec<ServerRow> = sqlx::query_as(
            "SELECT server_id, name, transport, config, state, state_reason, era, created_at_ms, updated_at_ms \
             FROM servers ORDER BY name, server_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(|e| Error::query(TABLE, "listing servers", e))?;
        rows.into_iter().map(ServerRecord::try_from).collect()
    }

    /// The server with this id, if stored.
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails; [`Error::Json`] when the stored config is not JSON.
    pub async fn server(&self, server_id: &str) -> Result<Option<ServerRecord>, Error> {
        let row: Option<ServerRow> = sqlx::query_as(
            "SELECT server_id, name, transport, config, state, state_reason, era, created_at_ms, updated_at_ms \
             FROM servers WHERE server_id = ?",
        )
        .bind(server_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| Error::query(TABLE, format!("reading server {server_id}"), e))?;
        row.map(ServerRecord::try_from).transpose()
    }

    /// Removes the server; its tool snapshots go with it and its handshakes keep their rows with
    /// `server_id` cleared. Returns whether a server was removed.
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails.
    pub async fn remove_server(&self, server_id: &str) -> Result<bool, Error> {
        let done = sqlx::query("DELETE FROM servers WHERE server_id = ?")
            .bind(server_id)
            .execute(&self.pool)
            .await
            .map_err(|e| Error::query(TABLE, format!("removing server {server_id}"), e))?;
        Ok(done.rows_affected() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(id: &str, name: &str) -> ServerRecord {
        ServerRecord {
            server_id: id.into(),
            name: name.into(),
            transport: "stdio".into(),
            config: json!({"command": "mcp-server-everything", "args": ["stdio"]}),
            state: "pending".into(),
            state_reason: None,
            era: None,
            created_at_ms: 1_000,
            updated_at_ms: 1_000,
        }
    }

    #[tokio::test]
    async fn upsert_keeps_created_at_and_replaces_the_rest() {
        let store = Store::open_in_memory().await.unwrap();
        store.upsert_server(&record("s1", "alpha")).await.unwrap();
        let mut changed = record("s1", "alpha-renamed");
        changed.created_at_ms = 9_999;
        changed.updated_at_ms = 2_000;
        changed.transport = "http".into();
        changed.config = json!({"url": "http://127.0.0.1:9/mcp"});
        store.upsert_server(&changed).await.unwrap();

        let got = store.server("s1").await.unwrap().unwrap();
        assert_eq!(got.created_at_ms, 1_000);
        assert_eq!(got.updated_at_ms, 2_000);
        assert_eq!(got.name, "alpha-renamed");
        assert_eq!(got.transport, "http");
        assert_eq!(got.config, json!({"url": "http://127.0.0.1:9/mcp"}));
        assert_eq!(store.servers().await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn state_and_era_of_a_missing_server_are_errors() {
        let store = Store::open_in_memory().await.unwrap();
        let err = store.set_server_state("ghost", "ready", None, 5).await.unwrap_err();
        assert!(matches!(err, Error::UnknownServer { ref server_id, .. } if server_id == "ghost"), "{err}");
        let err = store.set_server_era("ghost", "2025-11-25").await.unwrap_err();
        assert!(err.to_string().contains("ghost"), "{err}");
    }

    #[tokio::test]
    async fn servers_are_listed_by_name() {
        let store = Store::open_in_memory().await.unwrap();
        for (id, name) in [("c", "zeta"), ("a", "beta"), ("b", "alpha")] {
            store.upsert_server(&record(id, name)).await.unwrap();
        }
        let names: Vec<String> = store.servers().await.unwrap().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["alpha", "beta", "zeta"]);
    }
}
