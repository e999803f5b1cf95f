//! The seam between the engine and the tools: [`ToolInvoker`], implemented by the app over the router.
//!
//! The flow crate does not depend on the router: flows are tested against fakes, and the app decides how a
//! capability label maps to a tool (labels in the server config, namespacing) and how cancellation reaches the
//! upstream server (`notifications/cancelled`). Everything the engine needs from a tool is in [`ToolInfo`]
//! (its schemas, checked against the flow at load) and [`ToolOutput`].

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::InvokeError;
use crate::record::{RunEvent, RunObserver};

/// How a node names its tool, as written in the flow file. At least one field is set (checked at load).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolBinding {
    /// A tool name: exact and namespaced (`vision__analyze_thermal_image`), or, together with a capability,
    /// the tool's own name within that capability (`analyze_thermal_image`).
    pub tool: Option<String>,
    /// A capability label (`vision`, `rag`, `reasoning`) the app maps to servers.
    pub capability: Option<String>,
}

impl fmt::Display for ToolBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.capability, &self.tool) {
            (Some(cap), Some(tool)) => write!(f, "tool `{tool}` of capability `{cap}`"),
            (Some(cap), None) => write!(f, "capability `{cap}`"),
            (None, Some(tool)) => write!(f, "tool `{tool}`"),
            (None, None) => f.write_str("no tool"),
        }
    }
}

/// A resolved tool: the name to call and its declared schemas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// The name [`ToolInvoker::call`] accepts (normally the router's namespaced name).
    pub name: String,
    /// The tool's `inputSchema`; arguments are checked against it at load (statically) and before each call.
    pub input_schema: Value,
    /// The tool's `outputSchema`, if it declares one; references into the node's output are checked against
    /// it at load.
    pub output_schema: Option<Value>,
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// `structuredContent`, when the tool sent it; it becomes the node's output.
    pub structured: Option<Value>,
    /// The `content` blocks as JSON. Without `structured`, a single text block holding JSON becomes the
    /// output, else the content array itself.
    pub content: Value,
    /// The tool reported failure (`isError: true`); the text of `content` becomes the node's error.
    pub is_error: bool,
}

impl ToolOutput {
    /// The value other nodes see as `$nodes.<id>.output`.
    pub fn value(&self) -> Value {
        if let Some(structured) = &self.structured {
            return structured.clone();
        }
        if let Some([block]) = self.content.as_array().map(Vec::as_slice)
            && let Some(text) = block.get("text").and_then(Value::as_str)
            && let Ok(parsed) = serde_json::from_str::<Value>(text)
        {
            return parsed;
        }
        self.content.clone()
    }

    /// The text blocks of `content`, joined; used as the error message of a tool error.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .as_array()
            .map(|blocks| blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect())
            .unwrap_or_default();
        if texts.is_empty() { self.content.to_string() } else { texts.join("\n") }
    }
}

/// Resolves and calls tools for the engine; the app implements it over the router.
#[async_trait::async_trait]
pub trait ToolInvoker: Send + Sync {
    /// Resolves a binding to one tool. With only `tool`, it is an exact (namespaced) name; with only
    /// `capability`, the capability must offer exactly one tool; with both, the tool of that name within the
    /// capability. Called once per node when a flow is loaded.
    ///
    /// # Errors
    /// [`InvokeError::Unresolved`] saying why (no such tool, no server with the capability, ambiguous).
    fn resolve(&self, binding: &ToolBinding) -> Result<ToolInfo, InvokeError>;

    /// Calls `tool` (a [`ToolInfo::name`]) with `arguments`. Progress notifications of the call go to
    /// `progress`. When `cancel` fires the implementation should cancel the request upstream and return
    /// [`InvokeError::Cancelled`] promptly; the engine waits a short grace period for that, then drops the call.
    ///
    /// # Errors
    /// [`InvokeError`] when the call could not be completed; a tool-level failure is `Ok` with
    /// [`ToolOutput::is_error`].
    async fn call(
        &self,
        tool: &str,
        arguments: Value,
        progress: ProgressSink,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, InvokeError>;
}

/// Where an invoker reports a call's progress; becomes [`RunEvent::NodeProgress`] events. Cheap to clone.
#[derive(Clone, Default)]
pub struct ProgressSink {
    target: Option<Arc<ProgressTarget>>,
}

struct ProgressTarget {
    events: Option<mpsc::Sender<RunEvent>>,
    observer: Option<Arc<dyn RunObserver>>,
    run_id: String,
    node: String,
}

impl ProgressSink {
    /// A sink that drops every report (no one is listening).
    pub fn disabled() -> Self {
        Self::default()
    }

    pub(crate) fn new(
        events: Option<mpsc::Sender<RunEvent>>,
        observer: Option<Arc<dyn RunObserver>>,
        run_id: &str,
        node: &str,
    ) -> Self {
        if events.is_none() && observer.is_none() {
            return Self::disabled();
        }
        let target = ProgressTarget { events, observer, run_id: run_id.to_owned(), node: node.to_owned() };
        Self { target: Some(Arc::new(target)) }
    }

    /// Reports progress. Never blocks: when the event channel is full the report is dropped (progress is
    /// superseded by the next one anyway).
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(target) = &self.target else { return };
        let observer = target.observer.as_ref().filter(|o| o.active());
        if observer.is_none() && target.events.is_none() {
            return;
        }
        let event = RunEvent::NodeProgress {
            run_id: target.run_id.clone(),
            node: target.node.clone(),
            progress,
            total,
            message,
        };
        if let Some(observer) = observer {
            observer.observe(&event);
        }
        if let Some(events) = &target.events
            && events.try_send(event).is_err()
        {
            tracing::trace!(node = %target.node, "progress report dropped: event channel full or closed");
        }
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressSink").field("enabled", &self.target.is_some()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_prefers_structured_then_json_text_then_content() {
        let structured =
            ToolOutput { structured: Some(json!({"a": 1})), content: json!([]), is_error: false };
        assert_eq!(structured.value(), json!({"a": 1}));
        let text = ToolOutput {
            structured: None,
            content: json!([{"type": "text", "text": "{\"b\": 2}"}]),
            is_error: false,
        };
        assert_eq!(text.value(), json!({"b": 2}));
        let plain =
            ToolOutput { structured: None, content: json!([{"type": "text", "text": "hi"}]), is_error: true };
        assert_eq!(plain.value(), json!([{"type": "text", "text": "hi"}]));
        assert_eq!(plain.text(), "hi");
    }

    #[test]
    fn binding_display_names_what_was_asked_for() {
        let b = ToolBinding { tool: Some("search_manual".into()), capability: Some("rag".into()) };
        assert_eq!(b.to_string(), "tool `search_manual` of capability `rag`");
    }
}
