//! What a run leaves behind ([`RunRecord`]) and what it tells listeners while it goes ([`RunEvent`], to a
//! [`RunObserver`]).
//!
//! Both are plain serde data so the app can hand them to the UI and the store as they are.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Watches every run of an [`Engine`](crate::Engine) as it goes: the process-wide view of runs (the app's event
/// bus implements it), next to the per-run [`RunOptions::events`](crate::RunOptions::events) channel a caller reads.
///
/// An observer is a callback, not a channel, so the engine does not depend on who listens: the
/// flow crate stays free of the router, and the router's event bus implements this trait the way it
/// implements the transport's frame sink.
pub trait RunObserver: Send + Sync {
    /// `false` when nobody listens now; the engine then hands the observer nothing. Called before
    /// every event, so it must be cheap (an atomic load).
    fn active(&self) -> bool {
        true
    }

    /// One event of a run, in the order the run produced it. Must not block: the run waits for it.
    fn observe(&self, event: &RunEvent);
}

/// How a run ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOutcome {
    /// Still going; only seen by a [`RunSink`](crate::RunSink) when the run starts.
    Running,
    /// Every node that ran succeeded.
    Ok,
    /// A node failed, or the input was refused; [`RunRecord::error`] says which and why.
    Failed,
    /// The run's cancellation token fired.
    Cancelled,
}

/// How a node ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeOutcome {
    /// Not settled yet.
    Pending,
    /// The tool returned a result.
    Ok,
    /// The node failed (after its retries); the run fails.
    Failed,
    /// The node did not run: no incoming edge fired, an upstream node failed, or the run was cancelled
    /// before it started.
    Skipped,
    /// The node was running when the run was cancelled.
    Cancelled,
}

macro_rules! vocabulary {
    ($ty:ty { $($variant:ident => $text:literal),* $(,)? }) => {
        impl $ty {
            /// The lowercase name used in records, events and the store.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),* }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok(Self::$variant),)*
                    other => Err(format!("`{other}` is not a {}", stringify!($ty))),
                }
            }
        }
    };
}

vocabulary!(RunOutcome { Running => "running", Ok => "ok", Failed => "failed", Cancelled => "cancelled" });
vocabulary!(NodeOutcome {
    Pending => "pending", Ok => "ok", Failed => "failed", Skipped => "skipped", Cancelled => "cancelled",
});

/// Everything about one run of a flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Unique id of the run (time-ordered text).
    pub run_id: String,
    /// The flow's name.
    pub flow: String,
    /// The run input as given.
    pub input: Value,
    /// Start, unix ms.
    pub started_at_ms: i64,
    /// End, unix ms; `None` only while running.
    pub finished_at_ms: Option<i64>,
    /// How it ended.
    pub outcome: RunOutcome,
    /// Why it failed or was cancelled, naming the node.
    pub error: Option<String>,
    /// Every node of the flow, in execution order, whether it ran or not.
    pub nodes: Vec<NodeRecord>,
}

/// What one node did in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// The node id.
    pub id: String,
    /// The tool it was bound to.
    pub tool: String,
    /// The rendered arguments; `None` when the node did not get that far.
    pub input: Option<Value>,
    /// The tool's result (for a tool error, the content it returned); `None` when there was none.
    pub output: Option<Value>,
    /// Time spent on the node over all attempts and backoffs, in ms.
    pub latency_ms: u64,
    /// Calls made.
    pub attempts: u32,
    /// How it ended.
    pub outcome: NodeOutcome,
    /// Why it failed, was skipped or was cancelled.
    pub error: Option<String>,
}

/// Progress of a run, sent on [`RunOptions::events`](crate::RunOptions::events) as it happens, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEvent {
    /// The run began.
    RunStarted {
        /// The run.
        run_id: String,
        /// The flow's name.
        flow: String,
    },
    /// A node's first call is about to be made.
    NodeStarted {
        /// The run.
        run_id: String,
        /// The node id.
        node: String,
        /// The tool called.
        tool: String,
    },
    /// The tool reported progress (MCP `notifications/progress`).
    NodeProgress {
        /// The run.
        run_id: String,
        /// The node id.
        node: String,
        /// Progress so far.
        progress: f64,
        /// Total, when known.
        total: Option<f64>,
        /// The tool's message.
        message: Option<String>,
    },
    /// An attempt failed and another one will be made after `delay_ms`.
    NodeRetrying {
        /// The run.
        run_id: String,
        /// The node id.
        node: String,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// Why it failed.
        error: String,
        /// Backoff before the next attempt.
        delay_ms: u64,
    },
    /// A node settled (also sent for skipped nodes, with `latency_ms` 0).
    NodeFinished {
        /// The run.
        run_id: String,
        /// The node id.
        node: String,
        /// How it ended.
        outcome: NodeOutcome,
        /// Time spent on it.
        latency_ms: u64,
        /// Why it failed, was skipped or cancelled.
        error: Option<String>,
    },
    /// The run ended; always the last event.
    RunFinished {
        /// The run.
        run_id: String,
        /// How it ended.
        outcome: RunOutcome,
        /// Why it failed or was cancelled.
        error: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabularies_round_trip_and_match_serde() {
        for outcome in [RunOutcome::Running, RunOutcome::Ok, RunOutcome::Failed, RunOutcome::Cancelled] {
            assert_eq!(outcome.as_str().parse::<RunOutcome>().unwrap(), outcome);
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.as_str());
        }
        for outcome in [NodeOutcome::Pending, NodeOutcome::Skipped, NodeOutcome::Cancelled] {
            assert_eq!(outcome.as_str().parse::<NodeOutcome>().unwrap(), outcome);
        }
        assert!("exploded".parse::<NodeOutcome>().is_err());
    }

    #[test]
    fn events_are_tagged_for_the_ui() {
        let e = RunEvent::RunStarted { run_id: "r".into(), flow: "f".into() };
        assert_eq!(serde_json::to_value(e).unwrap()["type"], "run_started");
    }
}
