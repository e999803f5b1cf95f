//! Flow files: the serde model ([`FlowFile`]), and [`Flow`], a flow that passed every load-time check.
//!
//! All checking happens here, once, so that the engine never meets a dangling edge, a cycle, a reference
//! to a node that has not run, or arguments that plainly cannot satisfy the tool's input schema. Every
//! problem found is reported (not just the first), each naming the node and the field.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::condition::When;
use crate::error::{FlowError, Issue};
use crate::invoker::{ToolBinding, ToolInfo, ToolInvoker};
use crate::reference::{Reference, Root, is_ident_char};
use crate::schema;
use crate::template::Template;

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

/// One load: the file, what has been learned about it so far, and the issues found.
struct Validation<'a> {
    source_name: &'a str,
    file: &'a FlowFile,
    invoker: &'a dyn ToolInvoker,
    issues: Vec<Issue>,
    /// Node id → index in `file.nodes` (first occurrence).
    index: HashMap<&'a str, usize>,
}

impl<'a> Validation<'a> {
    fn new(source_name: &'a str, file: &'a FlowFile, invoker: &'a dyn ToolInvoker) -> Self {
        Self { source_name, file, invoker, issues: Vec::new(), index: HashMap::new() }
    }

    fn run(mut self) -> Result<Flow, FlowError> {
        let file = self.file;
        if file.name.trim().is_empty() {
            self.issues.push(Issue::flow("name", "must not be empty"));
        }
        let input_validator = match schema::compile(&file.input) {
            Ok(v) => Some(v),
            Err(e) => {
                self.issues.push(Issue::flow("input", e));
                None
            }
        };
        if file.nodes.is_empty() {
            self.issues.push(Issue::flow("nodes", "a flow needs at least one node"));
        }
        self.check_ids();
        let edges = self.check_edges();
        let order = self.order(&edges);
        let ancestors = ancestors(file.nodes.len(), &edges);

        // Resolve and compile every node (in file order, so issues come in file order).
        let mut nodes: Vec<Option<Node>> = Vec::with_capacity(file.nodes.len());
        let mut resolved: Vec<Option<ToolInfo>> = Vec::with_capacity(file.nodes.len());
        for spec in &file.nodes {
            resolved.push(self.resolve(spec));
        }
        for (i, spec) in file.nodes.iter().enumerate() {
            nodes.push(self.node(i, spec, &resolved, &ancestors));
        }
        for (i, (edge, spec)) in edges.iter().zip(&file.edges).enumerate() {
            if let Some((from, _, when)) = edge {
                self.check_condition(i, spec, *from, when, &resolved, &ancestors);
            }
        }

        if !self.issues.is_empty() {
            return Err(FlowError::Invalid { source_name: self.source_name.to_owned(), issues: self.issues });
        }
        // No issues: every node and edge compiled, and `order` covers every node.
        let edges: Vec<(usize, usize, When)> = edges.into_iter().flatten().collect();
        let mut nodes: Vec<Node> = nodes.into_iter().flatten().collect();
        for (e, (_, to, _)) in edges.iter().enumerate() {
            if let Some(node) = nodes.get_mut(*to) {
                node.incoming.push(e);
            }
        }
        let mut slots: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
        let nodes = order.iter().filter_map(|&i| slots.get_mut(i).and_then(Option::take)).collect();
        let edges = edges
            .into_iter()
            .map(|(from, to, when)| Edge {
                from: file.nodes[from].id.clone(),
                to: file.nodes[to].id.clone(),
                when,
            })
            .collect();
        let Some(input_validator) = input_validator else {
            return Err(FlowError::Invalid { source_name: self.source_name.to_owned(), issues: Vec::new() });
        };
        Ok(Flow {
            name: file.name.clone(),
            description: file.description.clone(),
            source: self.source_name.to_owned(),
            input_schema: file.input.clone(),
            input_validator,
            nodes,
            edges,
        })
    }

    fn check_ids(&mut self) {
        for (i, node) in self.file.nodes.iter().enumerate() {
            if node.id.is_empty() || !node.id.chars().all(is_ident_char) {
                self.issues.push(Issue::flow(
                    format!("nodes[{i}].id"),
                    format!("`{}` is not a valid node id; use letters, digits, `_` and `-`", node.id),
                ));
            } else if self.index.insert(&node.id, i).is_some() {
                self.issues.push(Issue::node(&node.id, "id", "duplicate node id; ids must be unique"));
                // Keep the first occurrence.
                if let Some(first) = self.file.nodes.iter().position(|n| n.id == node.id) {
                    self.index.insert(&node.id, first);
                }
            }
        }
    }

    fn known_ids(&self) -> String {
        self.file.nodes.iter().map(|n| format!("`{}`", n.id)).collect::<Vec<_>>().join(", ")
    }

    /// Checks each edge; `None` for an edge that could not be understood (its issue is recorded).
    fn check_edges(&mut self) -> Vec<Option<(usize, usize, When)>> {
        let mut out = Vec::new();
        for (i, edge) in self.file.edges.iter().enumerate() {
            let end = |field: &str, id: &str, issues: &mut Vec<Issue>| match self.index.get(id) {
                Some(&n) => Some(n),
                None => {
                    issues.push(Issue::flow(
                        format!("edges[{i}].{field}"),
                        format!("no node `{id}` (nodes: {})", self.known_ids()),
                    ));
                    None
                }
            };
            let mut issues = Vec::new();
            let from = end("from", &edge.from, &mut issues);
            let to = end("to", &edge.to, &mut issues);
            self.issues.append(&mut issues);
            let when = match When::parse(edge.when.as_deref()) {
                Ok(when) => Some(when),
                Err(e) => {
                    self.issues.push(Issue::flow(format!("edges[{i}].when"), e));
                    None
                }
            };
            if from.is_some() && from == to {
                self.issues.push(Issue::flow(
                    format!("edges[{i}]"),
                    format!("edge from `{}` to itself; a flow must be acyclic", edge.from),
                ));
                out.push(None);
                continue;
            }
            out.push(match (from, to, when) {
                (Some(from), Some(to), Some(when)) => Some((from, to, when)),
                _ => None,
            });
        }
        out
    }

    /// A topological order (file order among nodes that are free to go), reporting a cycle if there is one.
    fn order(&mut self, edges: &[Option<(usize, usize, When)>]) -> Vec<usize> {
        let n = self.file.nodes.len();
        let mut indegree = vec![0usize; n];
        let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (from, to, _) in edges.iter().flatten() {
            indegree[*to] += 1;
            out[*from].push(*to);
        }
        let mut ready: BTreeSet<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(i) = ready.pop_first() {
            order.push(i);
            for &to in &out[i] {
                indegree[to] -= 1;
                if indegree[to] == 0 {
                    ready.insert(to);
                }
            }
        }
        if order.len() < n {
            let stuck: Vec<String> =
                (0..n).filter(|i| indegree[*i] > 0).map(|i| format!("`{}`", self.file.nodes[i].id)).collect();
            self.issues.push(Issue::flow(
                "edges",
                format!("the edges form a cycle through nodes {}; a flow must be acyclic", stuck.join(", ")),
            ));
        }
        order
    }

    fn resolve(&mut self, spec: &NodeFile) -> Option<ToolInfo> {
        let binding = ToolBinding { tool: spec.tool.clone(), capability: spec.capability.clone() };
        if binding.tool.is_none() && binding.capability.is_none() {
            self.issues.push(Issue::node(
                &spec.id,
                "tool",
                "no tool: set `tool` (a tool name), `capability` (a capability label), or both",
            ));
            return None;
        }
        let field = if binding.capability.is_some() { "capability" } else { "tool" };
        match self.invoker.resolve(&binding) {
            Ok(info) => Some(info),
            Err(e) => {
                self.issues.push(Issue::node(&spec.id, field, format!("cannot resolve {binding}: {e}")));
                None
            }
        }
    }

    fn node(
        &mut self,
        i: usize,
        spec: &NodeFile,
        resolved: &[Option<ToolInfo>],
        ancestors: &[HashSet<usize>],
    ) -> Option<Node> {
        let id = spec.id.as_str();
        let mut ok = true;
        let timeout_ms = spec.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms == 0 {
            self.issues.push(Issue::node(id, "timeout_ms", "must be greater than 0"));
            ok = false;
        }
        let retry = spec.retry.clone().unwrap_or(RetryFile {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            backoff_ms: 0,
            on: default_retry_on(),
        });
        if retry.max_attempts == 0 {
            self.issues.push(Issue::node(id, "retry.max_attempts", "must be at least 1 (1 means no retry)"));
            ok = false;
        }
        if !spec.arguments.is_object() {
            self.issues.push(Issue::node(id, "arguments", "must be a table (json object) of tool arguments"));
            return None;
        }
        let arguments = match Template::compile(&spec.arguments, "arguments") {
            Ok(t) => t,
            Err((field, message)) => {
                self.issues.push(Issue::node(id, field, message));
                return None;
            }
        };
        for (field, reference) in arguments.references("arguments") {
            ok &= self.check_reference(id, &field, reference, i, false, resolved, ancestors);
        }
        let tool = resolved.get(i).cloned().flatten()?;
        let validator = match schema::compile(&tool.input_schema) {
            Ok(v) => v,
            Err(e) => {
                self.issues.push(Issue::node(
                    id,
                    "tool",
                    format!("the input schema of tool `{}` is unusable: {e}", tool.name),
                ));
                return None;
            }
        };
        ok &= self.check_arguments(id, &tool, &arguments, resolved);
        ok.then(|| Node {
            id: id.to_owned(),
            binding: ToolBinding { tool: spec.tool.clone(), capability: spec.capability.clone() },
            tool,
            timeout: Duration::from_millis(timeout_ms),
            retry: RetryPolicy {
                max_attempts: retry.max_attempts,
                backoff: Duration::from_millis(retry.backoff_ms),
                on: retry.on,
                tool_errors: spec.retry_tool_errors,
            },
            arguments,
            validator,
            incoming: Vec::new(),
        })
    }

    /// Checks that a reference reads the input or a node that runs before `at` (or is `at`'s edge source
    /// when `inclusive`), and that the path exists in the schema. Returns whether it passed.
    #[allow(clippy::too_many_arguments)]
    fn check_reference(
        &mut self,
        node: &str,
        field: &str,
        reference: &Reference,
        at: usize,
        inclusive: bool,
        resolved: &[Option<ToolInfo>],
        ancestors: &[HashSet<usize>],
    ) -> bool {
        let issue = |message: String| Issue::node(node, field, format!("`${reference}`: {message}"));
        match &reference.root {
            Root::Input => match schema::walk(&self.file.input, &self.file.input, &reference.path) {
                Ok(_) => true,
                Err(e) => {
                    self.issues.push(issue(format!("{e} in the flow's input schema")));
                    false
                }
            },
            Root::Output(other) | Root::Error(other) => {
                let Some(&m) = self.index.get(other.as_str()) else {
                    self.issues.push(issue(format!("no node `{other}` (nodes: {})", self.known_ids())));
                    return false;
                };
                let precedes = ancestors.get(at).is_some_and(|a| a.contains(&m)) || (inclusive && m == at);
                if m == at && !inclusive {
                    self.issues.push(issue("a node cannot read its own output".into()));
                    return false;
                }
                if !precedes {
                    self.issues.push(issue(format!(
                        "node `{other}` does not precede node `{}`; add edges leading from `{other}` to it",
                        self.file.nodes[at].id
                    )));
                    return false;
                }
                let Root::Output(_) = reference.root else { return true };
                let Some(Some(tool)) = resolved.get(m) else { return true };
                let Some(output) = &tool.output_schema else { return true };
                match schema::walk(output, output, &reference.path) {
                    Ok(_) => true,
                    Err(e) => {
                        self.issues.push(issue(format!("{e} in the output schema of tool `{}`", tool.name)));
                        false
                    }
                }
            }
        }
    }

    /// The static part of checking arguments against the tool's input schema: required arguments present,
    /// no undeclared arguments when the schema forbids them, constants valid, reference types compatible.
    fn check_arguments(
        &mut self,
        node: &str,
        tool: &ToolInfo,
        arguments: &Template,
        resolved: &[Option<ToolInfo>],
    ) -> bool {
        let root = &tool.input_schema;
        let top = schema::deref(root, root);
        let props: Vec<(String, Template)> = match arguments {
            Template::Object(props) => props.clone(),
            Template::Const(Value::Object(map)) => {
                map.iter().map(|(k, v)| (k.clone(), Template::Const(v.clone()))).collect()
            }
            _ => return true,
        };
        let before = self.issues.len();
        let declared = top.get("properties").and_then(Value::as_object);
        for required in top.get("required").and_then(Value::as_array).into_iter().flatten() {
            if let Some(name) = required.as_str()
                && !props.iter().any(|(k, _)| k == name)
            {
                self.issues.push(Issue::node(
                    node,
                    "arguments",
                    format!("required argument `{name}` of tool `{}` is missing", tool.name),
                ));
            }
        }
        let closed = top.get("additionalProperties") == Some(&Value::Bool(false));
        // Constants are validated against the whole schema minus `required` (so `$ref`s and `$defs` work).
        let mut relaxed = root.clone();
        if let Some(obj) = relaxed.as_object_mut() {
            obj.remove("required");
        }
        let relaxed = schema::compile(&relaxed).ok();
        for (key, template) in &props {
            let field = format!("arguments.{key}");
            let Some(prop) = declared.and_then(|d| d.get(key)) else {
                if closed {
                    let names: Vec<&str> =
                        declared.map(|d| d.keys().map(String::as_str).collect()).unwrap_or_default();
                    self.issues.push(Issue::node(
                        node,
                        field,
                        format!(
                            "tool `{}` takes no argument `{key}` (it takes: {})",
                            tool.name,
                            names.join(", ")
                        ),
                    ));
                }
                continue;
            };
            let prop = schema::deref(root, prop);
            let have: Option<Vec<String>> = match template {
                Template::Const(value) => {
                    if let Some(validator) = &relaxed {
                        let probe = Value::Object(Map::from_iter([(key.clone(), value.clone())]));
                        for problem in schema::violations(validator, &probe) {
                            self.issues.push(Issue::node(
                                node,
                                &field,
                                format!(
                                    "constant does not match the input schema of tool `{}`: {problem}",
                                    tool.name
                                ),
                            ));
                        }
                    }
                    None
                }
                Template::Interpolate(_) => Some(vec!["string".to_owned()]),
                Template::Ref(reference) => self.referenced_types(reference, resolved),
                Template::Array(_) => Some(vec!["array".to_owned()]),
                Template::Object(_) => Some(vec!["object".to_owned()]),
            };
            if let (Some(have), Some(want)) = (have, schema::types(prop)) {
                let have: Vec<&str> = have.iter().map(String::as_str).collect();
                if !schema::types_overlap(&have, &want) {
                    self.issues.push(Issue::node(
                        node,
                        field,
                        format!(
                            "gives a value of type {} but tool `{}` expects {}",
                            have.join(" or "),
                            tool.name,
                            want.join(" or ")
                        ),
                    ));
                }
            }
        }
        self.issues.len() == before
    }

    /// The declared types of what a reference reads, when the schemas say.
    fn referenced_types(&self, reference: &Reference, resolved: &[Option<ToolInfo>]) -> Option<Vec<String>> {
        let found = match &reference.root {
            Root::Error(_) => return Some(vec!["string".to_owned()]),
            Root::Input => {
                schema::walk(&self.file.input, &self.file.input, &reference.path).ok().flatten()?
            }
            Root::Output(id) => {
                let m = *self.index.get(id.as_str())?;
                let output = resolved.get(m)?.as_ref()?.output_schema.as_ref()?;
                schema::walk(output, output, &reference.path).ok().flatten()?
            }
        };
        schema::types(found).map(|ts| ts.into_iter().map(str::to_owned).collect())
    }

    fn check_condition(
        &mut self,
        i: usize,
        spec: &EdgeFile,
        from: usize,
        when: &When,
        resolved: &[Option<ToolInfo>],
        ancestors: &[HashSet<usize>],
    ) {
        if let When::Compare { left, .. } = when {
            let field = format!("edges[{i}].when");
            // Edge issues are flow-level; report them under the edge, not under the source node.
            let before = self.issues.len();
            self.check_reference(&spec.from, &field, left, from, true, resolved, ancestors);
            for issue in &mut self.issues[before..] {
                issue.node = None;
            }
        }
    }
}

/// For each node, the set of nodes with a path to it.
fn ancestors(n: usize, edges: &[Option<(usize, usize, When)>]) -> Vec<HashSet<usize>> {
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (from, to, _) in edges.iter().flatten() {
        parents[*to].push(*from);
    }
    (0..n)
        .map(|start| {
            let mut seen = HashSet::new();
            let mut queue: VecDeque<usize> = parents[start].iter().copied().collect();
            while let Some(p) = queue.pop_front() {
                if seen.insert(p) {
                    queue.extend(parents[p].iter().copied());
                }
            }
            seen
        })
        .collect()
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
