//! The load-time checks of a flow file: ids, edges, order (no cycles), tool resolution, references
//! into earlier nodes' outputs, arguments against the tool's input schema and edge conditions.
//!
//! One [`Validation`] per load collects every issue (not just the first), each naming the node and
//! the field, and builds the [`Flow`] only when there is none.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::Duration;

use serde_json::{Map, Value};

use super::{
    DEFAULT_MAX_ATTEMPTS, DEFAULT_TIMEOUT_MS, Edge, EdgeFile, Flow, FlowFile, Node, NodeFile, RetryFile,
    RetryPolicy, default_retry_on,
};
use crate::condition::When;
use crate::error::{FlowError, Issue};
use crate::invoker::{ToolBinding, ToolInfo, ToolInvoker};
use crate::reference::{Reference, Root, is_ident_char};
use crate::schema;
use crate::template::Template;

/// One load: the file, what has been learned about it so far, and the issues found.
pub(super) struct Validation<'a> {
    source_name: &'a str,
    file: &'a FlowFile,
    invoker: &'a dyn ToolInvoker,
    issues: Vec<Issue>,
    /// Node id → index in `file.nodes` (first occurrence).
    index: HashMap<&'a str, usize>,
}

impl<'a> Validation<'a> {
    pub(super) fn new(source_name: &'a str, file: &'a FlowFile, invoker: &'a dyn ToolInvoker) -> Self {
        Self { source_name, file, invoker, issues: Vec::new(), index: HashMap::new() }
    }

    pub(super) fn run(mut self) -> Result<Flow, FlowError> {
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
