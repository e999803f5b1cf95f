//! Running a flow: [`Engine::run`] walks the nodes in topological order and records everything it does.
//!
//! Nodes run one at a time, in the order [`Flow::nodes`] gives. A node runs when it has no incoming edge or
//! at least one incoming edge fires (see [`When`](crate::condition::When)), and every node its arguments
//! read has an output; otherwise it is `skipped`. So a failure stops everything downstream of it along `ok`
//! edges, while `error` edges lead to handler nodes that run *because* of it. Any failure fails the run
//! (the first one is the run's error), whether or not a handler ran.
//!
//! Each call gets a child of the run's cancellation token: the node's timeout and the run's cancellation
//! both cancel it, and the engine waits up to [`CANCEL_GRACE`] for the invoker to wind the call down
//! (e.g. send `notifications/cancelled` upstream) before dropping it. Nothing is spawned, so nothing
//! outlives `run`.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{FlowError, InvokeError};
use crate::flow::{Flow, Node, RetryOn};
use crate::invoker::{ProgressSink, ToolInvoker, ToolOutput};
pub use crate::record::RunObserver;
use crate::record::{NodeOutcome, NodeRecord, RunEvent, RunOutcome, RunRecord};
use crate::reference::{Root, State};
use crate::schema;
use crate::sink::RunSink;

/// How long a cancelled or timed-out call may take to wind down before the engine drops it.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Per-run options.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Cancels the run: running calls are cancelled, nodes not yet started are skipped, the run's outcome
    /// is `cancelled`.
    pub cancel: CancellationToken,
    /// Where [`RunEvent`]s go, in order. Lifecycle events wait for room in the channel (a stalled
    /// receiver stalls the run); progress events are dropped when it is full.
    pub events: Option<mpsc::Sender<RunEvent>>,
    /// The run id to use, e.g. one already handed to a client; generated when `None`.
    pub run_id: Option<String>,
}

/// Runs flows against a [`ToolInvoker`], recording them in an optional [`RunSink`] and telling an
/// optional [`RunObserver`]. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    invoker: Arc<dyn ToolInvoker>,
    sink: Option<Arc<dyn RunSink>>,
    observer: Option<Arc<dyn RunObserver>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("sink", &self.sink.is_some())
            .field("observer", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine calling tools through `invoker`, recording nothing.
    pub fn new(invoker: Arc<dyn ToolInvoker>) -> Self {
        Self { invoker, sink: None, observer: None }
    }

    /// Tells `observer` every event of every run (see [`RunObserver`]).
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn RunObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Records every run in `sink` as it goes.
    #[must_use]
    pub fn with_sink(mut self, sink: Arc<dyn RunSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Loads and validates a flow file against this engine's tools (see [`Flow::load`]).
    ///
    /// # Errors
    /// As [`Flow::load`].
    pub fn load(&self, path: &Path) -> Result<Flow, FlowError> {
        Flow::load(path, self.invoker.as_ref())
    }

    /// Runs `flow` on `input` to the end and returns its record. Never fails as a Rust call: a refused
    /// input, a failed node or a cancellation is the record's outcome and error. Sink failures are logged and
    /// do not affect the run.
    pub async fn run(&self, flow: &Flow, input: Value, options: RunOptions) -> RunRecord {
        let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
        let record = RunRecord {
            run_id,
            flow: flow.name().to_owned(),
            input: input.clone(),
            started_at_ms: now_ms(),
            finished_at_ms: None,
            outcome: RunOutcome::Running,
            error: None,
            nodes: flow
                .nodes()
                .iter()
                .map(|n| NodeRecord {
                    id: n.id.clone(),
                    tool: n.tool.name.clone(),
                    input: None,
                    output: None,
                    latency_ms: 0,
                    attempts: 0,
                    outcome: NodeOutcome::Pending,
                    error: None,
                })
                .collect(),
        };
        let mut run = Run {
            engine: self,
            flow,
            options,
            record,
            state: State { input, ..State::default() },
            positions: flow.nodes().iter().enumerate().map(|(i, n)| (n.id.clone(), i)).collect(),
        };
        run.go().await;
        run.record
    }
}

/// One run in progress.
struct Run<'a> {
    engine: &'a Engine,
    flow: &'a Flow,
    options: RunOptions,
    record: RunRecord,
    state: State,
    positions: HashMap<String, usize>,
}

/// How one attempt at a call ended.
enum Attempt {
    Success(ToolOutput),
    Cancelled,
    Failure { kind: FailureKind, message: String, output: Option<Value> },
}

/// What kind of failure an attempt was, for the retry policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailureKind {
    Timeout,
    Transport,
    Tool,
    Other,
}

impl Run<'_> {
    async fn go(&mut self) {
        let run_id = self.record.run_id.clone();
        self.emit(RunEvent::RunStarted { run_id: run_id.clone(), flow: self.record.flow.clone() }).await;
        if let Some(sink) = &self.engine.sink
            && let Err(error) = sink.run_started(&self.record).await
        {
            tracing::warn!(run_id, %error, "recording the start of a run failed");
        }

        let flow = self.flow;
        let refused = flow.check_input(&self.state.input).err().map(|e| e.to_string());
        let mut failure = refused.clone();
        let mut cancelled = false;
        for (position, node) in flow.nodes().iter().enumerate() {
            let skip = if refused.is_some() {
                Some("not run: the run input was refused".to_owned())
            } else if self.options.cancel.is_cancelled() {
                cancelled = true;
                Some("not run: the run was cancelled".to_owned())
            } else {
                self.blocked(node).err()
            };
            match skip {
                Some(reason) => self.settle(position, NodeOutcome::Skipped, Some(reason)),
                None => self.execute(position, node).await,
            }
            let settled = &self.record.nodes[position];
            match settled.outcome {
                NodeOutcome::Ok => {
                    self.state.outputs.insert(node.id.clone(), settled.output.clone().unwrap_or(Value::Null));
                }
                NodeOutcome::Failed => {
                    let error = settled.error.clone().unwrap_or_default();
                    if failure.is_none() {
                        failure = Some(format!("node `{}` failed: {error}", node.id));
                    }
                    self.state.errors.insert(node.id.clone(), error);
                }
                NodeOutcome::Cancelled => cancelled = true,
                NodeOutcome::Skipped | NodeOutcome::Pending => {}
            }
            let settled = &self.record.nodes[position];
            self.emit(RunEvent::NodeFinished {
                run_id: run_id.clone(),
                node: node.id.clone(),
                outcome: settled.outcome,
                latency_ms: settled.latency_ms,
                error: settled.error.clone(),
            })
            .await;
            if let Some(sink) = &self.engine.sink
                && let Err(error) = sink.node_finished(&self.record, position).await
            {
                tracing::warn!(run_id, node = %node.id, %error, "recording a node of a run failed");
            }
        }

        let (outcome, error) = if cancelled {
            let running = self.record.nodes.iter().find(|n| n.outcome == NodeOutcome::Cancelled);
            let error = match running {
                Some(node) => format!("the run was cancelled while node `{}` was running", node.id),
                None => "the run was cancelled".to_owned(),
            };
            (RunOutcome::Cancelled, Some(failure.unwrap_or(error)))
        } else if let Some(failure) = failure {
            (RunOutcome::Failed, Some(failure))
        } else {
            (RunOutcome::Ok, None)
        };
        self.record.outcome = outcome;
        self.record.error = error.clone();
        self.record.finished_at_ms = Some(now_ms());
        self.emit(RunEvent::RunFinished { run_id: run_id.clone(), outcome, error }).await;
        if let Some(sink) = &self.engine.sink
            && let Err(error) = sink.run_finished(&self.record).await
        {
            tracing::warn!(run_id, %error, "recording the end of a run failed");
        }
    }

    /// `Err(reason)` when the node must be skipped.
    fn blocked(&self, node: &Node) -> Result<(), String> {
        if !node.incoming.is_empty() {
            let mut upstream = Vec::new();
            let mut fired = false;
            for &e in &node.incoming {
                let edge = &self.flow.edges()[e];
                let outcome = self.outcome_of(&edge.from);
                fired |= match outcome {
                    NodeOutcome::Ok => edge.when.fires(true, &self.state),
                    NodeOutcome::Failed => edge.when.fires(false, &self.state),
                    _ => false,
                };
                upstream.push(format!("`{}` {outcome} (edge when {})", edge.from, edge.when));
            }
            if !fired {
                return Err(format!("not reached: no incoming edge fired ({})", upstream.join(", ")));
            }
        }
        for (_, reference) in node.arguments.references("arguments") {
            if let Root::Output(other) = &reference.root
                && !self.state.outputs.contains_key(other)
            {
                return Err(format!("not reached: `{other}` has no output ({})", self.outcome_of(other)));
            }
        }
        Ok(())
    }

    fn outcome_of(&self, id: &str) -> NodeOutcome {
        self.positions.get(id).map_or(NodeOutcome::Pending, |&p| self.record.nodes[p].outcome)
    }

    fn settle(&mut self, position: usize, outcome: NodeOutcome, error: Option<String>) {
        let node = &mut self.record.nodes[position];
        node.outcome = outcome;
        node.error = error;
    }

    async fn execute(&mut self, position: usize, node: &Node) {
        let started = Instant::now();
        let arguments = match node.arguments.render(&self.state) {
            Ok(arguments) => arguments,
            Err(e) => {
                self.settle(position, NodeOutcome::Failed, Some(format!("cannot build the arguments: {e}")));
                return;
            }
        };
        self.record.nodes[position].input = Some(arguments.clone());
        let problems = schema::violations(&node.validator, &arguments);
        if !problems.is_empty() {
            let error = format!(
                "the arguments do not match the input schema of tool `{}`: {}",
                node.tool.name,
                problems.join("; ")
            );
            self.settle(position, NodeOutcome::Failed, Some(error));
            return;
        }

        let run_id = self.record.run_id.clone();
        self.emit(RunEvent::NodeStarted {
            run_id: run_id.clone(),
            node: node.id.clone(),
            tool: node.tool.name.clone(),
        })
        .await;
        let mut attempt = 0;
        let (outcome, output, error) = loop {
            attempt += 1;
            match self.attempt(node, &arguments).await {
                Attempt::Success(out) => break (NodeOutcome::Ok, Some(out.value()), None),
                Attempt::Cancelled => {
                    break (NodeOutcome::Cancelled, None, Some("cancelled while running".to_owned()));
                }
                Attempt::Failure { kind, message, output } => {
                    let retryable = match kind {
                        FailureKind::Timeout => node.retry.on.contains(&RetryOn::Timeout),
                        FailureKind::Transport => node.retry.on.contains(&RetryOn::Transport),
                        FailureKind::Tool => node.retry.tool_errors,
                        FailureKind::Other => false,
                    };
                    if !retryable || attempt >= node.retry.max_attempts {
                        let message = if attempt > 1 {
                            format!("{message} (after {attempt} attempts)")
                        } else {
                            message
                        };
                        break (NodeOutcome::Failed, output, Some(message));
                    }
                    let delay = node.retry.delay_before(attempt + 1);
                    self.emit(RunEvent::NodeRetrying {
                        run_id: run_id.clone(),
                        node: node.id.clone(),
                        attempt,
                        error: message,
                        delay_ms: millis(delay),
                    })
                    .await;
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = self.options.cancel.cancelled() => {
                            break (NodeOutcome::Cancelled, None, Some("cancelled while waiting to retry".to_owned()));
                        }
                    }
                }
            }
        };
        let record = &mut self.record.nodes[position];
        record.outcome = outcome;
        record.output = output;
        record.error = error;
        record.attempts = attempt;
        record.latency_ms = millis(started.elapsed());
    }

    async fn attempt(&self, node: &Node, arguments: &Value) -> Attempt {
        let token = self.options.cancel.child_token();
        let progress = ProgressSink::new(
            self.options.events.clone(),
            self.engine.observer.clone(),
            &self.record.run_id,
            &node.id,
        );
        let call = self.engine.invoker.call(&node.tool.name, arguments.clone(), progress, token.clone());
        tokio::pin!(call);
        let finished = tokio::select! {
            biased;
            () = self.options.cancel.cancelled() => None,
            result = tokio::time::timeout(node.timeout, &mut call) => Some(result),
        };
        let result = match finished {
            None => {
                token.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
                return Attempt::Cancelled;
            }
            Some(Err(_elapsed)) => {
                token.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
                return Attempt::Failure {
                    kind: FailureKind::Timeout,
                    message: format!("timed out after {} ms", millis(node.timeout)),
                    output: None,
                };
            }
            Some(Ok(result)) => result,
        };
        let tool = &node.tool.name;
        match result {
            Ok(out) if !out.is_error => Attempt::Success(out),
            Ok(out) => Attempt::Failure {
                kind: FailureKind::Tool,
                message: format!("tool `{tool}` reported an error: {}", out.text()),
                output: Some(out.value()),
            },
            Err(InvokeError::Cancelled) if self.options.cancel.is_cancelled() => Attempt::Cancelled,
            Err(e) => {
                let kind = match e {
                    InvokeError::Timeout(_) => FailureKind::Timeout,
                    InvokeError::Transport(_) => FailureKind::Transport,
                    _ => FailureKind::Other,
                };
                Attempt::Failure { kind, message: format!("calling tool `{tool}`: {e}"), output: None }
            }
        }
    }

    async fn emit(&self, event: RunEvent) {
        if let Some(observer) = &self.engine.observer
            && observer.active()
        {
            observer.observe(&event);
        }
        if let Some(events) = &self.options.events {
            // A receiver that went away just stops listening; the run goes on.
            let _ = events.send(event).await;
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Unix time in ms.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A fresh run id: the start time in hex (so ids sort by time) and 64 random bits.
fn new_run_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded per process from the OS; hashing a counter gives distinct values per call.
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:012x}-{:016x}", now_ms(), hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_distinct_and_time_ordered() {
        let a = new_run_id();
        let b = new_run_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 29);
        assert!(a[..12] <= b[..12]);
    }
}
