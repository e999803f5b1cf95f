//! Flow files: the serde model ([`FlowFile`]), and [`Flow`], a flow that passed every load-time check.
//!
//! All checking happens here, once, so that the engine never meets a dangling edge, a cycle, a reference
//! to a node that has not run, or arguments that plainly cannot satisfy the tool's input schema. Every
//! problem found is reported (not just the first), each naming the node and the field.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::condition::When;
use crate::error::FlowError;
use crate::invoker::{ToolBinding, ToolInfo, ToolInvoker};
use crate::schema;
use crate::template::Template;

mod validation;

use self::validation::Validation;

/// Per-attempt timeout of a node that does not set `timeout_ms`.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Retry policy default: one attempt.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 1;
/// Upper bound on the delay between attempts, however many there are.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// A flow file as written (TOML or JSON, same model). Unknown fields are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowFile {
    /// The flow's name; runs are recorded under it.
    pub name: String,
    /// What the flow is for.
    #[serde(default)]
    pub description: Option<String>,
    /// JSON Schema of the run input; runs whose input does not match are refused. Defaults to any object.
    #[serde(default = "any_object")]
    pub input: Value,
    /// The nodes, in any order; they run in a topological order of the edges (file order among equals).
    pub nodes: Vec<NodeFile>,
    /// The edges. A node without incoming edges runs first.
    #[serde(default)]
    pub edges: Vec<EdgeFile>,
}

/// A node as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeFile {
    /// Unique id (letters, digits, `_`, `-`); references use it (`$nodes.<id>.output`).
    pub id: String,
    /// What the node does.
    #[serde(default)]
    pub description: Option<String>,
    /// Tool name: namespaced on its own, or the tool's own name within `capability`.
    #[serde(default)]
    pub tool: Option<String>,
    /// Capability label the tool is looked up by.
    #[serde(default)]
    pub capability: Option<String>,
    /// The arguments template (see [`crate::template`]).
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Per-attempt timeout in milliseconds; default [`DEFAULT_TIMEOUT_MS`].
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Retrying on timeouts and transport failures; default: no retry.
    #[serde(default)]
    pub retry: Option<RetryFile>,
    /// Also retry when the tool itself reports failure (`isError`). Off by default: a tool that says the
    /// input is bad will say so again.
    #[serde(default)]
    pub retry_tool_errors: bool,
}

/// A node's retry policy as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryFile {
    /// Calls at most, including the first; at least 1.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Delay before the second attempt; doubled for each further one (capped at [`MAX_BACKOFF`]).
    #[serde(default)]
    pub backoff_ms: u64,
    /// Failures that are retried; default both.
    #[serde(default = "default_retry_on")]
    pub on: Vec<RetryOn>,
}

/// A failure kind that a retry policy can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RetryOn {
    /// The node's timeout expired, or the invoker reported a timeout.
    Timeout,
    /// The invoker reported a transport failure.
    Transport,
}

/// An edge as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeFile {
    /// Source node id.
    pub from: String,
    /// Target node id.
    pub to: String,
    /// `ok` (default), `error`, or a comparison (see [`crate::condition`]).
    #[serde(default)]
    pub when: Option<String>,
}

fn any_object() -> Value {
    serde_json::json!({"type": "object"})
}
fn empty_object() -> Value {
    Value::Object(Map::new())
}
fn default_max_attempts() -> u32 {
    DEFAULT_MAX_ATTEMPTS
}
fn default_retry_on() -> Vec<RetryOn> {
    vec![RetryOn::Timeout, RetryOn::Transport]
}

/// A node's effective retry policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Calls at most, including the first (≥ 1).
    pub max_attempts: u32,
    /// Delay before the second attempt.
    pub backoff: Duration,
    /// Failure kinds retried.
    pub on: Vec<RetryOn>,
    /// Whether tool errors (`isError`) are retried too.
    pub tool_errors: bool,
}

impl RetryPolicy {
    /// Delay before attempt `next` (2, 3, …): `backoff · 2^(next-2)`, capped at [`MAX_BACKOFF`].
    pub fn delay_before(&self, next: u32) -> Duration {
        let doublings = next.saturating_sub(2).min(16);
        self.backoff.saturating_mul(1 << doublings).min(MAX_BACKOFF)
    }
}

/// A node of a loaded flow, bound to a resolved tool.
#[derive(Debug, Clone)]
pub struct Node {
    /// The node id.
    pub id: String,
    /// How the file named the tool.
    pub binding: ToolBinding,
    /// The tool it resolved to when the flow was loaded.
    pub tool: ToolInfo,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Retry policy.
    pub retry: RetryPolicy,
    pub(crate) arguments: Template,
    pub(crate) validator: Arc<jsonschema::Validator>,
    /// Indices into [`Flow::edges`] of the edges ending here.
    pub(crate) incoming: Vec<usize>,
}

/// An edge of a loaded flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// Source node id.
    pub from: String,
    /// Target node id.
    pub to: String,
    /// When it fires.
    pub when: When,
}

/// A validated flow, ready to run. Tools were resolved when it was loaded: reload it when the tool catalog
/// changes.
#[derive(Clone)]
pub struct Flow {
    name: String,
    description: Option<String>,
    source: String,
    input_schema: Value,
    input_validator: Arc<jsonschema::Validator>,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
}

impl fmt::Debug for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flow")
            .field("name", &self.name)
            .field("source", &self.source)
            .field("nodes", &self.nodes.iter().map(|n| (&n.id, &n.tool.name)).collect::<Vec<_>>())
            .field("edges", &self.edges)
            .finish_non_exhaustive()
    }
}

impl Flow {
    /// Loads a `.toml` or `.json` flow file and validates it, resolving tools through `invoker`.
    ///
    /// # Errors
    /// [`FlowError::Read`], [`FlowError::UnknownFormat`], [`FlowError::Parse`] or [`FlowError::Invalid`].
    pub fn load(path: &Path, invoker: &dyn ToolInvoker) -> Result<Flow, FlowError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| FlowError::Read { path: path.to_owned(), source })?;
        let name = path.display().to_string();
        match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => Flow::from_toml(&name, &text, invoker),
            Some("json") => Flow::from_json(&name, &text, invoker),
            _ => Err(FlowError::UnknownFormat { path: path.to_owned() }),
        }
    }

    /// Parses and validates a TOML flow; `source_name` labels it in messages.
    ///
    /// # Errors
    /// [`FlowError::Parse`] or [`FlowError::Invalid`].
    pub fn from_toml(source_name: &str, text: &str, invoker: &dyn ToolInvoker) -> Result<Flow, FlowError> {
        let file: FlowFile = toml::from_str(text).map_err(|e| FlowError::Parse {
            source_name: source_name.to_owned(),
            format: "toml",
            message: e.to_string().trim().replace('\n', " "),
        })?;
        Flow::from_file(source_name, file, invoker)
    }

    /// Parses and validates a JSON flow; `source_name` labels it in messages.
    ///
    /// # Errors
    /// [`FlowError::Parse`] or [`FlowError::Invalid`].
    pub fn from_json(source_name: &str, text: &str, invoker: &dyn ToolInvoker) -> Result<Flow, FlowError> {
        let file: FlowFile = serde_json::from_str(text).map_err(|e| FlowError::Parse {
            source_name: source_name.to_owned(),
            format: "json",
            message: e.to_string(),
        })?;
        Flow::from_file(source_name, file, invoker)
    }

    /// Validates an already parsed flow.
    ///
    /// # Errors
    /// [`FlowError::Invalid`] listing every problem.
    pub fn from_file(
        source_name: &str,
        file: FlowFile,
        invoker: &dyn ToolInvoker,
    ) -> Result<Flow, FlowError> {
        Validation::new(source_name, &file, invoker).run()
    }

    /// The flow's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The flow's description, if any.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Where it was loaded from (file path or label).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The JSON Schema of the run input.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// The nodes in execution (topological) order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The edges in file order.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// Checks a run input against the flow's input schema.
    ///
    /// # Errors
    /// [`FlowError::InvalidInput`] listing every violation with its JSON pointer.
    pub fn check_input(&self, input: &Value) -> Result<(), FlowError> {
        let problems = schema::violations(&self.input_validator, input);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(FlowError::InvalidInput { flow: self.name.clone(), problems })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            max_attempts: 30,
            backoff: Duration::from_millis(100),
            on: default_retry_on(),
            tool_errors: false,
        };
        assert_eq!(policy.delay_before(2), Duration::from_millis(100));
        assert_eq!(policy.delay_before(4), Duration::from_millis(400));
        assert_eq!(policy.delay_before(30), MAX_BACKOFF);
    }

    #[test]
    fn unknown_fields_are_refused_by_the_model() {
        let err = toml::from_str::<FlowFile>("name = \"x\"\nnodes = []\ncolour = \"red\"\n").unwrap_err();
        assert!(err.to_string().contains("colour"), "{err}");
    }
}
