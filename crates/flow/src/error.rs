//! The flow crate's errors: loading a flow file ([`FlowError`]), and what a [`ToolInvoker`] may report
//! ([`InvokeError`]).
//!
//! They are separate because they cross different seams: a `FlowError` goes to whoever loads a flow (the
//! app, a person editing the file), so it names the file, the node and the field; an `InvokeError` comes *from*
//! the app's tool plumbing and is classified by the engine's retry policy. Failures of a *run* are neither:
//! they are data in the [`RunRecord`](crate::RunRecord), because a failed diagnosis is a result, not a bug.
//!
//! [`ToolInvoker`]: crate::ToolInvoker

use std::fmt;
use std::path::PathBuf;

/// One problem found while validating a flow: where (node and field) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// The node the problem is in; `None` for flow-level fields and edges.
    pub node: Option<String>,
    /// The field, as a path in the file (`arguments.top_k`, `edges[1].to`, `input`).
    pub field: String,
    /// What is wrong, lowercase, ideally with the fix.
    pub message: String,
}

impl Issue {
    /// An issue in a node's field.
    pub fn node(node: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { node: Some(node.to_owned()), field: field.into(), message: message.into() }
    }

    /// An issue in a flow-level field.
    pub fn flow(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { node: None, field: field.into(), message: message.into() }
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.node {
            Some(node) => write!(f, "node `{node}`, field `{}`: {}", self.field, self.message),
            None => write!(f, "field `{}`: {}", self.field, self.message),
        }
    }
}

/// Why a flow could not be loaded, or a run input was refused before the run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FlowError {
    /// The flow file could not be read.
    #[error("cannot read flow file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },

    /// The file name does not say which format it is in.
    #[error("flow file {} has neither a .toml nor a .json extension; rename it", path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },

    /// The file is not valid TOML/JSON, or does not have the shape of a flow (unknown or missing field,
    /// wrong type).
    #[error("flow file {source_name} is not a valid {format} flow: {message}")]
    Parse {
        /// The file (or the label given to an in-memory flow).
        source_name: String,
        /// `"toml"` or `"json"`.
        format: &'static str,
        /// The parser's message, with the line and column where it has one.
        message: String,
    },

    /// The file parsed but the flow is not usable; every problem found is listed.
    #[error("flow file {source_name} is not a usable flow: {}", join(issues))]
    Invalid {
        /// The file (or the label given to an in-memory flow).
        source_name: String,
        /// The problems, in file order.
        issues: Vec<Issue>,
    },

    /// A run input does not match the flow's `input` schema.
    #[error("run input does not match the input schema of flow `{flow}`: {}", problems.join("; "))]
    InvalidInput {
        /// The flow's name.
        flow: String,
        /// One entry per violation: the JSON pointer into the input and the violation.
        problems: Vec<String>,
    },
}

impl FlowError {
    /// The validation issues, when this is [`FlowError::Invalid`]; empty otherwise.
    pub fn issues(&self) -> &[Issue] {
        match self {
            FlowError::Invalid { issues, .. } => issues,
            _ => &[],
        }
    }
}

fn join(issues: &[Issue]) -> String {
    issues.iter().map(Issue::to_string).collect::<Vec<_>>().join("; ")
}

/// What a [`ToolInvoker`](crate::ToolInvoker) reports when it cannot resolve or complete a call.
///
/// A tool that ran and reported failure (`isError: true`) is *not* an `InvokeError`: it is a
/// [`ToolOutput`](crate::ToolOutput) with `is_error` set. The variant decides retrying: only
/// [`InvokeError::Timeout`] and [`InvokeError::Transport`] can be retried (when the node's retry policy lists
/// them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvokeError {
    /// No tool matches the binding (unknown name, no server with the capability, or several candidates).
    #[error("{0}")]
    Unresolved(String),
    /// The call did not reach the tool or its answer did not come back (connection lost, server crashed).
    #[error("transport failure: {0}")]
    Transport(String),
    /// The tool or a hop on the way gave up waiting.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The call was refused at the protocol level (JSON-RPC error: invalid params, unknown tool, …).
    #[error("the call was refused: {0}")]
    Refused(String),
    /// The call stopped because its cancellation token fired.
    #[error("the call was cancelled")]
    Cancelled,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_start_lowercase_and_name_file_node_and_field() {
        let err = FlowError::Invalid {
            source_name: "flows/x.toml".into(),
            issues: vec![
                Issue::node("vision", "arguments.top_k", "3.5 is not of type \"integer\""),
                Issue::flow("edges[0].to", "no node `ghost`"),
            ],
        };
        let msg = err.to_string();
        assert!(msg.starts_with("flow file flows/x.toml"), "{msg}");
        assert!(msg.contains("node `vision`, field `arguments.top_k`"), "{msg}");
        assert!(msg.contains("field `edges[0].to`: no node `ghost`"), "{msg}");
        for err in [
            FlowError::UnknownFormat { path: "a.yaml".into() },
            FlowError::InvalidInput { flow: "f".into(), problems: vec!["/image: missing".into()] },
        ] {
            assert!(err.to_string().starts_with(|c: char| c.is_lowercase()), "{err}");
        }
        assert!(InvokeError::Cancelled.to_string().starts_with("the"));
    }
}
