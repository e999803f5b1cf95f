//! The `runs` and `run_nodes` tables: what the flow engine did, one row per run and one per node of it.
//!
//! The two tables share a module because a node row has no meaning without its run (it is deleted with it).
//! A run is inserted when it starts (outcome `"running"`), its nodes as they settle, and it is finished once;
//! so after a crash the partial run is still there to look at, and [`Store::interrupt_running_runs`] marks it
//! failed at the next start. The store does not interpret outcomes beyond the vocabulary the migration
//! checks; the flow engine owns their meaning. Only the newest [`RUNS_KEPT`] runs are kept.

use serde::{Deserialize, Serialize};

use crate::error::{Error, is_foreign_key_violation};
use crate::pool::Store;

const RUNS: &str = "runs";
const RUN_NODES: &str = "run_nodes";

/// How many runs are kept overall; inserting one more drops the oldest (and its nodes).
pub const RUNS_KEPT: i64 = 5_000;

/// The error recorded on runs that were still `running` when switchboard stopped.
pub const INTERRUPTED: &str = "interrupted: switchboard stopped before the run finished";

/// One flow run, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    /// The engine's id for the run; unique.
    pub run_id: String,
    /// Name of the flow that ran.
    pub flow: String,
    /// The run input as given (possibly with large strings elided by the writer).
    pub input: serde_json::Value,
    /// When the run started (unix ms); listings are newest first by this.
    pub started_at_ms: i64,
    /// When it finished; `None` while running.
    pub finished_at_ms: Option<i64>,
    /// `"running"`, `"ok"`, `"failed"` or `"cancelled"` (the migration refuses anything else).
    pub outcome: String,
    /// Why the run failed or was cancelled.
    pub error: Option<String>,
}

/// One node of a run, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRunNode {
    /// The run it belongs to, which must be stored already.
    pub run_id: String,
    /// The node's id in the flow.
    pub node_id: String,
    /// The node's place in the flow's execution order; a run's nodes are listed by it.
    pub position: i64,
    /// The tool the node called (`None` when it was never bound, e.g. skipped before resolution).
    pub tool: Option<String>,
    /// The rendered arguments; `None` when the node never got that far.
    pub input: Option<serde_json::Value>,
    /// What the tool returned; `None` when it returned nothing.
    pub output: Option<serde_json::Value>,
    /// Time spent on the node over all attempts, in milliseconds.
    pub latency_ms: i64,
    /// Calls made (0 when the node did not run).
    pub attempts: i64,
    /// `"pending"`, `"ok"`, `"failed"`, `"skipped"` or `"cancelled"`.
    pub outcome: String,
    /// Why the node failed, was skipped or was cancelled.
    pub error: Option<String>,
}

/// A `runs` row as stored: JSON columns are text.
#[derive(sqlx::FromRow)]
struct RunRow {
    run_id: String,
    flow: String,
    input: String,
    started_at_ms: i64,
    finished_at_ms: Option<i64>,
    outcome: String,
    error: Option<String>,
}

impl TryFrom<RunRow> for StoredRun {
    type Error = Error;

    fn try_from(row: RunRow) -> Result<Self, Error> {
        let input =
            serde_json::from_str(&row.input).map_err(|e| Error::json(RUNS, "input", &row.run_id, e))?;
        Ok(StoredRun {
            input,
            run_id: row.run_id,
            flow: row.flow,
            started_at_ms: row.started_at_ms,
            finished_at_ms: row.finished_at_ms,
            outcome: row.outcome,
            error: row.error,
        })
    }
}

/// A `run_nodes` row as stored.
#[derive(sqlx::FromRow)]
struct RunNodeRow {
    run_id: String,
    node_id: String,
    position: i64,
    tool: Option<String>,
    input: Option<String>,
    output: Option<String>,
    latency_ms: i64,
    attempts: i64,
    outcome: String,
    error: Option<String>,
}

impl TryFrom<RunNodeRow> for StoredRunNode {
    type Error = Error;

    fn try_from(row: RunNodeRow) -> Result<Self, Error> {
        let key = format!("{}/{}", row.run_id, row.node_id);
        let parse = |column: &'static str, text: Option<&str>| {
            text.map(serde_json::from_str).transpose().map_err(|e| Error::json(RUN_NODES, column, &key, e))
        };
        Ok(StoredRunNode {
            input: parse("input", row.input.as_deref())?,
            output: parse("output", row.output.as_deref())?,
            run_id: row.run_id,
            node_id: row.node_id,
            position: row.position,
            tool: row.tool,
            latency_ms: row.latency_ms,
            attempts: row.attempts,
            outcome: row.outcome,
            error: row.error,
        })
    }
}

impl Store {
    /// Inserts a run (normally with outcome `"running"`) and drops the oldest runs beyond [`RUNS_KEPT`] with
    /// their nodes, in one transaction.
    ///
    /// # Errors
    /// [`Error::Query`] when a statement fails, including a duplicate `run_id` or an outcome outside the
    /// vocabulary.
    pub async fn insert_run(&self, run: &StoredRun) -> Result<(), Error> {
        let failed = |e| Error::query(RUNS, format!("recording run {}", run.run_id), e);
        // IMMEDIATE: take the write lock up front so the busy timeout governs contention with other writers.
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        let inserted = sqlx::query(
            "INSERT INTO runs (run_id, flow, input, started_at_ms, finished_at_ms, outcome, error) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&run.run_id)
        .bind(&run.flow)
        .bind(run.input.to_string())
        .bind(run.started_at_ms)
        .bind(run.finished_at_ms)
        .bind(&run.outcome)
        .bind(&run.error)
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
        let id = inserted.last_insert_rowid();
        // Contiguous ids (see the migration): the newest RUNS_KEPT runs are those above `id - RUNS_KEPT`.
        sqlx::query("DELETE FROM runs WHERE id <= ?")
            .bind(id.saturating_sub(RUNS_KEPT))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(())
    }

    /// Records how a run ended.
    ///
    /// # Errors
    /// [`Error::UnknownRun`] when the run is not stored (never inserted, or dropped by retention);
    /// [`Error::Query`] when the statement fails.
    pub async fn finish_run(
        &self,
        run_id: &str,
        finished_at_ms: i64,
        outcome: &str,
        error: Option<&str>,
    ) -> Result<(), Error> {
        let done = sqlx::query("UPDATE runs SET finished_at_ms = ?, outcome = ?, error = ? WHERE run_id = ?")
            .bind(finished_at_ms)
            .bind(outcome)
            .bind(error)
            .bind(run_id)
            .execute(&self.pool)
            .await
            .map_err(|e| Error::query(RUNS, format!("finishing run {run_id}"), e))?;
        if done.rows_affected() == 0 {
            return Err(Error::UnknownRun { table: RUNS, run_id: run_id.to_owned() });
        }
        Ok(())
    }

    /// Inserts or replaces the record of one node of a run (a node is written again when it changes, e.g. a
    /// pending node that is later skipped).
    ///
    /// # Errors
    /// [`Error::UnknownRun`] when the run is not stored; [`Error::Query`] when the statement fails.
    pub async fn insert_run_node(&self, node: &StoredRunNode) -> Result<(), Error> {
        let json = |v: &Option<serde_json::Value>| v.as_ref().map(serde_json::Value::to_string);
        sqlx::query(
            "INSERT OR REPLACE INTO run_nodes (run_id, node_id, position, tool, input, output, latency_ms, \
                 attempts, outcome, error) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&node.run_id)
        .bind(&node.node_id)
        .bind(node.position)
        .bind(&node.tool)
        .bind(json(&node.input))
        .bind(json(&node.output))
        .bind(node.latency_ms)
        .bind(node.attempts)
        .bind(&node.outcome)
        .bind(&node.error)
        .execute(&self.pool)
        .await
        .map_err(|e| {
            if is_foreign_key_violation(&e) {
                Error::UnknownRun { table: RUN_NODES, run_id: node.run_id.clone() }
            } else {
                Error::query(RUN_NODES, format!("recording node {} of run {}", node.node_id, node.run_id), e)
            }
        })?;
        Ok(())
    }

    /// A run and its nodes (in execution order), if stored.
    ///
    /// # Errors
    /// [`Error::Query`] when a statement fails; [`Error::Json`] when a stored column is not JSON.
    pub async fn run(&self, run_id: &str) -> Result<Option<(StoredRun, Vec<StoredRunNode>)>, Error> {
        let row: Option<RunRow> = sqlx::query_as(
            "SELECT run_id, flow, input, started_at_ms, finished_at_ms, outcome, error FROM runs WHERE run_id = ?",
        )
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| Error::query(RUNS, format!("reading run {run_id}"), e))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let nodes: Vec<RunNodeRow> = sqlx::query_as(
            "SELECT run_id, node_id, position, tool, input, output, latency_ms, attempts, outcome, error \
             FROM run_nodes WHERE run_id = ? ORDER BY position, node_id",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| Error::query(RUN_NODES, format!("reading the nodes of run {run_id}"), e))?;
        let nodes = nodes.into_iter().map(StoredRunNode::try_from).collect::<Result<_, _>>()?;
        Ok(Some((StoredRun::try_from(row)?, nodes)))
    }

    /// Up to `limit` runs without their nodes, newest (`started_at_ms`, then insertion) first.
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails; [`Error::Json`] when a stored column is not JSON.
    pub async fn runs(&self, limit: u32) -> Result<Vec<StoredRun>, Error> {
        let rows: Vec<RunRow> = sqlx::query_as(
            "SELECT run_id, flow, input, started_at_ms, finished_at_ms, outcome, error FROM runs \
                 ORDER BY started_at_ms DESC, id DESC LIMIT ?",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| Error::query(RUNS, "listing runs", e))?;
        rows.into_iter().map(StoredRun::try_from).collect()
    }

    /// Marks every run still `"running"` as failed with [`INTERRUPTED`] at `at_ms`; call it at start-up,
    /// before any run starts. Returns how many runs it marked.
    ///
    /// # Errors
    /// [`Error::Query`] when the statement fails.
    pub async fn interrupt_running_runs(&self, at_ms: i64) -> Result<u64, Error> {
        let done = sqlx::query(
            "UPDATE runs SET outcome = 'failed', finished_at_ms = ?, error = ? WHERE outcome = 'running'",
        )
        .bind(at_ms)
        .bind(INTERRUPTED)
        .execute(&self.pool)
        .await
        .map_err(|e| Error::query(RUNS, "marking interrupted runs", e))?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(run_id: &str, started_at_ms: i64) -> StoredRun {
        StoredRun {
            run_id: run_id.into(),
            flow: "thermal-diagnosis".into(),
            input: json!({"image": "a.jpg"}),
            started_at_ms,
            finished_at_ms: None,
            outcome: "running".into(),
            error: None,
        }
    }

    #[tokio::test]
    async fn an_outcome_outside_the_vocabulary_is_refused() {
        let store = Store::open_in_memory().await.unwrap();
        let mut bad = run("r1", 1);
        bad.outcome = "exploded".into();
        let err = store.insert_run(&bad).await.unwrap_err();
        assert!(err.to_string().contains("run r1"), "{err}");
        assert!(store.run("r1").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn finishing_an_unknown_run_names_it() {
        let store = Store::open_in_memory().await.unwrap();
        let err = store.finish_run("ghost", 2, "ok", None).await.unwrap_err();
        assert!(matches!(err, Error::UnknownRun { ref run_id, .. } if run_id == "ghost"), "{err:?}");
    }

    #[tokio::test]
    async fn a_node_of_an_unknown_run_is_refused() {
        let store = Store::open_in_memory().await.unwrap();
        let node = StoredRunNode {
            run_id: "ghost".into(),
            node_id: "vision".into(),
            position: 0,
            tool: None,
            input: None,
            output: None,
            latency_ms: 0,
            attempts: 0,
            outcome: "skipped".into(),
            error: None,
        };
        let err = store.insert_run_node(&node).await.unwrap_err();
        assert!(matches!(err, Error::UnknownRun { ref run_id, .. } if run_id == "ghost"), "{err:?}");
    }
}
