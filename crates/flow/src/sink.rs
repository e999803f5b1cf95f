//! Where run records go: the [`RunSink`] trait, and [`StoreSink`], the implementation over the
//! switchboard store.
//!
//! The engine reports a run three times (started, each node settled, finished) rather than once at the
//! end, so that a run in progress is visible and a crash leaves a partial record instead of nothing.

use std::str::FromStr;

use serde_json::Value;
use switchboard_store::{Store, StoredRun, StoredRunNode};

use crate::record::{NodeOutcome, NodeRecord, RunOutcome, RunRecord};

/// A sink's failure; the engine logs it and carries on.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Receives a run's record as the run goes.
#[async_trait::async_trait]
pub trait RunSink: Send + Sync {
    /// The run started (`outcome` is `running`; nodes are `pending`).
    async fn run_started(&self, run: &RunRecord) -> Result<(), SinkError>;
    /// `run.nodes[position]` settled.
    async fn node_finished(&self, run: &RunRecord, position: usize) -> Result<(), SinkError>;
    /// The run ended; `run` is final.
    async fn run_finished(&self, run: &RunRecord) -> Result<(), SinkError>;
}

/// Default for [`StoreSink::max_inline_bytes`].
pub const DEFAULT_MAX_INLINE_BYTES: usize = 64 * 1024;

/// Records runs in the switchboard store (`runs` and `run_nodes` tables).
#[derive(Debug, Clone)]
pub struct StoreSink {
    store: Store,
    /// Strings longer than this (in bytes) in inputs and outputs are stored as a short placeholder: an image
    /// passed as base64 would otherwise be kept twice per run (run input and node input) for thousands of
    /// runs. The records the engine returns are never altered.
    pub max_inline_bytes: usize,
}

impl StoreSink {
    /// A sink writing to `store`, eliding strings above [`DEFAULT_MAX_INLINE_BYTES`].
    pub fn new(store: Store) -> Self {
        Self { store, max_inline_bytes: DEFAULT_MAX_INLINE_BYTES }
    }

    /// Reads a run back as a [`RunRecord`] (with elided strings as stored).
    ///
    /// # Errors
    /// The store's error, or an outcome the store holds that this version does not know.
    pub async fn load(&self, run_id: &str) -> Result<Option<RunRecord>, SinkError> {
        let Some((run, nodes)) = self.store.run(run_id).await? else {
            return Ok(None);
        };
        let nodes = nodes
            .into_iter()
            .map(|n| {
                Ok(NodeRecord {
                    outcome: NodeOutcome::from_str(&n.outcome)?,
                    id: n.node_id,
                    tool: n.tool.unwrap_or_default(),
                    input: n.input,
                    output: n.output,
                    latency_ms: u64::try_from(n.latency_ms).unwrap_or(0),
                    attempts: u32::try_from(n.attempts).unwrap_or(0),
                    error: n.error,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Some(RunRecord {
            outcome: RunOutcome::from_str(&run.outcome)?,
            run_id: run.run_id,
            flow: run.flow,
            input: run.input,
            started_at_ms: run.started_at_ms,
            finished_at_ms: run.finished_at_ms,
            error: run.error,
            nodes,
        }))
    }

    fn elide(&self, value: &Value) -> Value {
        elide(value, self.max_inline_bytes)
    }
}

#[async_trait::async_trait]
impl RunSink for StoreSink {
    async fn run_started(&self, run: &RunRecord) -> Result<(), SinkError> {
        self.store
            .insert_run(&StoredRun {
                run_id: run.run_id.clone(),
                flow: run.flow.clone(),
                input: self.elide(&run.input),
                started_at_ms: run.started_at_ms,
                finished_at_ms: run.finished_at_ms,
                outcome: run.outcome.as_str().to_owned(),
                error: run.error.clone(),
            })
            .await?;
        Ok(())
    }

    async fn node_finished(&self, run: &RunRecord, position: usize) -> Result<(), SinkError> {
        let node =
            run.nodes.get(position).ok_or_else(|| format!("run {} has no node #{position}", run.run_id))?;
        self.store
            .insert_run_node(&StoredRunNode {
                run_id: run.run_id.clone(),
                node_id: node.id.clone(),
                position: i64::try_from(position)?,
                tool: Some(node.tool.clone()),
                input: node.input.as_ref().map(|v| self.elide(v)),
                output: node.output.as_ref().map(|v| self.elide(v)),
                latency_ms: i64::try_from(node.latency_ms)?,
                attempts: i64::from(node.attempts),
                outcome: node.outcome.as_str().to_owned(),
                error: node.error.clone(),
            })
            .await?;
        Ok(())
    }

    async fn run_finished(&self, run: &RunRecord) -> Result<(), SinkError> {
        let finished = run.finished_at_ms.unwrap_or(run.started_at_ms);
        self.store.finish_run(&run.run_id, finished, run.outcome.as_str(), run.error.as_deref()).await?;
        Ok(())
    }
}

/// `value` with every string longer than `max` bytes replaced by `"<elided: N bytes>"`.
fn elide(value: &Value, max: usize) -> Value {
    match value {
        Value::String(s) if s.len() > max => Value::String(format!("<elided: {} bytes>", s.len())),
        Value::Array(items) => Value::Array(items.iter().map(|v| elide(v, max)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), elide(v, max))).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_strings_are_elided_everywhere() {
        let big = "A".repeat(100);
        let out = elide(&json!({"image": big, "list": [big, "short"], "n": 1}), 10);
        assert_eq!(
            out,
            json!({"image": "<elided: 100 bytes>", "list": ["<elided: 100 bytes>", "short"], "n": 1})
        );
    }
}
